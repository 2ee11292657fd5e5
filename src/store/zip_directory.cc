#include "zip_directory.h"

#include <algorithm>
#include <map>

#include "bytes.h"
#include "error.h"
#include "store_key.h"

namespace blosc2fs {

namespace {

constexpr uint32_t kLocalHeaderSig = 0x04034b50;
constexpr uint32_t kCentralHeaderSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr int64_t kEndLen = 22;
constexpr int64_t kZip64EndLen = 56;
constexpr int64_t kZip64LocatorLen = 20;
constexpr int64_t kCentralHeaderLen = 46;
constexpr int64_t kLocalHeaderLen = 30;
constexpr int64_t kMaxCommentLen = 0xFFFF;

struct EndRecord {
  int64_t position = 0;  // where the (zip64) end record starts: the directory must end before it
  int64_t entries = 0;
  int64_t cd_size = 0;
  int64_t cd_offset = 0;
};

[[noreturn]] void fail(const ByteSource& file, const std::string& why) {
  throw FormatError(file.name() + ": not a readable zip archive: " + why);
}

EndRecord find_end_record(const ByteSource& file, int64_t size) {
  if (size < kEndLen) fail(file, "shorter than an end-of-central-directory record");
  int64_t tail_len = std::min<int64_t>(size, kEndLen + kMaxCommentLen);
  int64_t tail_start = size - tail_len;
  Bytes tail = file.read_bytes(tail_start, size_t(tail_len), "zip end record");
  // The last record whose comment ends within the file (Python's zipfile looks there too).
  for (int64_t i = tail_len - kEndLen; i >= 0; --i) {
    const uint8_t* p = tail.data() + i;
    if (load_le32(p) != kEndSig) continue;
    if (i + kEndLen + load_le16(p + 20) > tail_len) continue;
    EndRecord end;
    end.position = tail_start + i;
    uint16_t disk = load_le16(p + 4), cd_disk = load_le16(p + 6);
    uint16_t disk_entries = load_le16(p + 8), entries = load_le16(p + 10);
    end.entries = entries;
    end.cd_size = load_le32(p + 12);
    end.cd_offset = load_le32(p + 16);
    bool zip64 = entries == 0xFFFF || end.cd_size == 0xFFFFFFFF || end.cd_offset == 0xFFFFFFFF;
    if (zip64) {
      if (end.position < kZip64LocatorLen) fail(file, "zip64 end record locator missing");
      Bytes loc = file.read_bytes(end.position - kZip64LocatorLen, kZip64LocatorLen, "zip64 locator");
      if (load_le32(loc.data()) != kZip64LocatorSig) fail(file, "zip64 end record locator missing");
      uint64_t rec = load_le64(loc.data() + 8);
      if (rec > uint64_t(end.position - kZip64LocatorLen) ||
          int64_t(rec) + kZip64EndLen > end.position - kZip64LocatorLen)
        fail(file, "zip64 end record outside the file");
      Bytes z = file.read_bytes(int64_t(rec), kZip64EndLen, "zip64 end record");
      if (load_le32(z.data()) != kZip64EndSig) fail(file, "bad zip64 end record signature");
      disk = uint16_t(std::min<uint32_t>(load_le32(z.data() + 16), 0xFFFF));
      cd_disk = uint16_t(std::min<uint32_t>(load_le32(z.data() + 20), 0xFFFF));
      uint64_t entries64 = load_le64(z.data() + 32), size64 = load_le64(z.data() + 40), off64 = load_le64(z.data() + 48);
      if (entries64 > uint64_t(size) || size64 > uint64_t(size) || off64 > uint64_t(size))
        fail(file, "zip64 end record claims more than the file holds");
      end.entries = int64_t(entries64);
      end.cd_size = int64_t(size64);
      end.cd_offset = int64_t(off64);
      end.position = int64_t(rec);
      disk_entries = uint16_t(std::min<uint64_t>(load_le64(z.data() + 24), 0xFFFF));
    }
    if (disk != 0 || cd_disk != 0 || (!zip64 && disk_entries != entries))
      fail(file, "the archive spans several disks");
    return end;
  }
  fail(file, "no end-of-central-directory record");
}

// The zip64 extended-information extra field fills in the fields saved as 0xFFFFFFFF.
void apply_zip64_extra(ByteSpan extra, int64_t& size, int64_t& stored_size, int64_t& offset, bool& bad) {
  size_t pos = 0;
  while (pos + 4 <= extra.size()) {
    uint16_t id = load_le16(extra.data() + pos), len = load_le16(extra.data() + pos + 2);
    pos += 4;
    if (pos + len > extra.size()) {
      bad = true;
      return;
    }
    if (id == 0x0001) {
      size_t f = pos, end = pos + len;
      for (int64_t* field : {&size, &stored_size, &offset}) {
        if (*field != 0xFFFFFFFF) continue;
        if (f + 8 > end) {
          bad = true;
          return;
        }
        uint64_t v = load_le64(extra.data() + f);
        if (v > uint64_t(INT64_MAX)) {
          bad = true;
          return;
        }
        *field = int64_t(v);
        f += 8;
      }
    }
    pos += len;
  }
}

}  // namespace

bool looks_like_zip(const ByteSource& file) {
  uint8_t magic[4] = {};
  if (file.read_at(0, magic) != 4) return false;
  uint32_t sig = load_le32(magic);
  return sig == kLocalHeaderSig || sig == kEndSig;
}

ZipDirectory read_zip_directory(const ByteSource& file) {
  const int64_t size = file.size();
  EndRecord end = find_end_record(file, size);
  if (end.cd_offset > end.position || end.cd_size > end.position - end.cd_offset)
    fail(file, "the central directory lies outside the file");
  if (end.cd_size > kMaxZipCentralDirectory) fail(file, "a central directory over 256 MiB");
  if (end.entries > end.cd_size / kCentralHeaderLen) fail(file, "more entries than the central directory holds");
  Bytes cd = file.read_bytes(end.cd_offset, size_t(end.cd_size), "zip central directory");

  ZipDirectory dir;
  std::vector<ZipMember> found;
  size_t pos = 0;
  for (int64_t i = 0; i < end.entries; ++i) {
    if (pos + kCentralHeaderLen > cd.size() || load_le32(cd.data() + pos) != kCentralHeaderSig)
      fail(file, "central directory entry " + std::to_string(i) + " is cut short or has a bad signature");
    const uint8_t* h = cd.data() + pos;
    uint16_t flags = load_le16(h + 8), method = load_le16(h + 10);
    int64_t stored_size = load_le32(h + 20), full_size = load_le32(h + 24);
    size_t name_len = load_le16(h + 28), extra_len = load_le16(h + 30), comment_len = load_le16(h + 32);
    uint16_t disk_start = load_le16(h + 34);
    int64_t header_offset = load_le32(h + 42);
    if (pos + kCentralHeaderLen + name_len + extra_len + comment_len > cd.size())
      fail(file, "central directory entry " + std::to_string(i) + " runs past the directory");
    std::string name(reinterpret_cast<const char*>(h + kCentralHeaderLen), name_len);
    ByteSpan extra(h + kCentralHeaderLen + name_len, extra_len);
    pos += kCentralHeaderLen + name_len + extra_len + comment_len;

    auto skip = [&](const std::string& why) {
      std::string shown = name.substr(0, 80);
      for (char& c : shown)
        if (uint8_t(c) < 0x20) c = '?';
      dir.skipped.push_back("zip member '" + shown + "': " + why);
    };
    bool bad_extra = false;
    apply_zip64_extra(extra, full_size, stored_size, header_offset, bad_extra);
    if (bad_extra) {
      skip("a malformed zip64 extra field");
      continue;
    }
    if (!name.empty() && name.back() == '/') continue;  // a directory entry: the tree comes from the names
    if (auto why = bad_relative_path(name)) {
      skip(*why);
      continue;
    }
    if (flags & 0x0001) {
      skip("encrypted");
      continue;
    }
    if (disk_start != 0) {
      skip("on another disk");
      continue;
    }
    if (header_offset > end.cd_offset - kLocalHeaderLen) {
      skip("its local header lies past the central directory");
      continue;
    }
    Bytes local = file.read_bytes(header_offset, kLocalHeaderLen, "zip local header");
    if (load_le32(local.data()) != kLocalHeaderSig) {
      skip("no local header at offset " + std::to_string(header_offset));
      continue;
    }
    size_t local_name_len = load_le16(local.data() + 26), local_extra_len = load_le16(local.data() + 28);
    int64_t data_offset = header_offset + kLocalHeaderLen + int64_t(local_name_len) + int64_t(local_extra_len);
    if (data_offset > end.cd_offset || stored_size > end.cd_offset - data_offset) {
      skip("its data runs past the central directory");
      continue;
    }
    Bytes local_name = file.read_bytes(header_offset + kLocalHeaderLen, local_name_len, "zip local name");
    if (std::string(local_name.begin(), local_name.end()) != name || load_le16(local.data() + 8) != method) {
      skip("the central directory disagrees with the local header (name or method)");
      continue;
    }
    int64_t local_stored = load_le32(local.data() + 18);
    if (!(load_le16(local.data() + 6) & 0x0008) && local_stored != 0xFFFFFFFF && local_stored != stored_size) {
      skip("the central directory disagrees with the local header (size)");
      continue;
    }
    if (method == 0 && stored_size != full_size) {
      skip("a stored member whose sizes differ");
      continue;
    }
    found.push_back(ZipMember{std::move(name), header_offset, data_offset, stored_size, full_size, method});
  }

  // Duplicates: the last entry wins, as in Python's zipfile (NameToInfo).
  std::map<std::string, size_t> last;
  for (size_t i = 0; i < found.size(); ++i) last[found[i].name] = i;
  std::vector<bool> keep(found.size(), true);
  for (size_t i = 0; i < found.size(); ++i)
    if (last[found[i].name] != i) {
      keep[i] = false;
      dir.skipped.push_back("zip member '" + found[i].name.substr(0, 80) + "': a duplicate name (a later entry is used)");
    }
  // Overlaps: a member whose bytes (local header included) overlap another's serves neither.
  std::vector<size_t> order;
  for (size_t i = 0; i < found.size(); ++i)
    if (keep[i]) order.push_back(i);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return found[a].header_offset < found[b].header_offset; });
  std::vector<bool> overlaps(found.size(), false);
  int64_t reach = -1;
  size_t reach_owner = 0;
  for (size_t i : order) {
    const ZipMember& m = found[i];
    if (m.header_offset < reach) {
      overlaps[i] = overlaps[reach_owner] = true;
    }
    int64_t m_end = m.data_offset + m.stored_size;
    if (m_end > reach) {
      reach = m_end;
      reach_owner = i;
    }
  }
  for (size_t i = 0; i < found.size(); ++i) {
    if (!keep[i]) continue;
    if (overlaps[i]) {
      dir.skipped.push_back("zip member '" + found[i].name.substr(0, 80) + "': overlaps another member");
      continue;
    }
    dir.members.push_back(std::move(found[i]));
  }
  return dir;
}

}  // namespace blosc2fs
