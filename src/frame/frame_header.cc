// Frame header and trailer: parsing and c-blosc2-identical serialization
// (format-notes §1.1, §1.2).
#include <cstring>

#include "frame.h"

namespace blosc2fs {

namespace {

constexpr uint8_t kMagic[8] = {'b', '2', 'f', 'r', 'a', 'm', 'e', 0};
constexpr int kFiltersOffset = 71;  // after the fixext16 marker (69) and its type byte (70)
constexpr int kMetalayerSectionOffset = kFrameHeaderMinLen;

int32_t load_be_i32(const uint8_t* p) { return int32_t(load_be32(p)); }
int64_t load_be_i64(const uint8_t* p) { return int64_t(load_be64(p)); }

// Reads a fixstr name (at most 31 bytes) at the reader's position.
std::string read_fixstr(ByteReader& in, const char* what) {
  uint8_t marker = in.u8();
  if ((marker & 0xE0) != 0xA0) in.fail(std::string("expected a fixstr ") + what);
  ByteSpan name = in.take(marker & 0x1F);
  return std::string(name.begin(), name.end());
}

// A name/offset map (DE n [fixstr D2 i32]*) followed by the contents each offset
// points to (C6 u32 len bytes), offsets measured from `base` within `data`.
struct NamedContent {
  std::string name;
  ByteSpan content;
};

std::vector<NamedContent> read_named_contents(ByteReader& in, ByteSpan data, int64_t base, size_t limit,
                                              size_t max_count, const std::string& context) {
  in.expect(0xDE, "a map16 (DE) of names");
  size_t n = in.be16();
  if (n > max_count)
    in.fail(std::to_string(n) + " entries, more than the " + std::to_string(max_count) + " allowed");
  std::vector<NamedContent> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    std::string name = read_fixstr(in, "name");
    in.expect(0xD2, "an int32 (D2) offset");
    int64_t offset = int32_t(in.be32());
    int64_t pos = offset - base;
    if (offset < 0 || pos < 0 || size_t(pos) >= limit)
      in.fail("offset " + std::to_string(offset) + " of '" + name + "' is out of bounds");
    ByteReader at(data.first(limit), context + " '" + name + "'");
    at.seek(size_t(pos));
    at.expect(0xC6, "a bin32 (C6) marker");
    uint32_t len = at.be32();
    if (len > at.remaining()) at.fail("content of " + std::to_string(len) + " bytes does not fit");
    out.push_back({std::move(name), at.take(len)});
  }
  return out;
}

void append_fixstr(Bytes& out, const std::string& name, const char* what) {
  if (name.size() > size_t(kMaxMetalayerNameLen))
    throw FormatError(std::string(what) + " name '" + name + "' is longer than 31 bytes");
  out.push_back(uint8_t(0xA0 | name.size()));
  out.insert(out.end(), name.begin(), name.end());
}

// Map of names to offsets, then the array of contents; offsets are
// `position in out` + `offset_bias`.
void append_named_contents(Bytes& out, const std::vector<std::pair<const std::string*, ByteSpan>>& items,
                           int64_t offset_bias, const char* what) {
  if (items.size() > 0xFFFF) throw FormatError(std::string("too many ") + what + "s");
  out.push_back(0xDE);
  append_be16(out, uint16_t(items.size()));
  std::vector<size_t> offset_slots;
  for (const auto& [name, content] : items) {
    append_fixstr(out, *name, what);
    out.push_back(0xD2);
    offset_slots.push_back(out.size());
    append_be32(out, 0);
  }
  out.push_back(0xDC);
  append_be16(out, uint16_t(items.size()));
  for (size_t i = 0; i < items.size(); ++i) {
    int64_t offset = int64_t(out.size()) + offset_bias;
    if (offset > INT32_MAX) throw FormatError(std::string(what) + " offsets exceed 2 GiB");
    store_be32(out.data() + offset_slots[i], uint32_t(offset));
    ByteSpan content = items[i].second;
    if (content.size() > size_t(INT32_MAX))
      throw FormatError(std::string(what) + " '" + *items[i].first + "' is larger than 2 GiB");
    out.push_back(0xC6);
    append_be32(out, uint32_t(content.size()));
    out.insert(out.end(), content.begin(), content.end());
  }
}

}  // namespace

ParsedHeader parse_frame_header(ByteSpan header) {
  const std::string context = "frame header";
  if (header.size() < size_t(kFrameHeaderMinLen))
    throw FormatError(context + ": " + std::to_string(header.size()) + " bytes, shorter than the 87-byte minimum");
  const uint8_t* p = header.data();
  // c-blosc2 skips the magic for files; we check it so that a random file is
  // reported as "not a Blosc2 frame" rather than as some corrupt field.
  if (std::memcmp(p + 2, kMagic, sizeof kMagic) != 0)
    throw FormatError("not a Blosc2 frame (no \"b2frame\" magic at byte 2)");

  ParsedHeader parsed;
  FrameHeader& h = parsed.fixed;
  h.header_len = load_be_i32(p + 11);
  h.frame_len = load_be_i64(p + 16);
  h.general_flags = p[25];
  h.frame_type = p[26];
  h.codec_flags = p[27];
  h.other_flags = p[28];
  h.nbytes = load_be_i64(p + 30);
  h.cbytes = load_be_i64(p + 39);
  h.typesize = load_be_i32(p + 48);
  h.blocksize = load_be_i32(p + 53);
  h.chunksize = load_be_i32(p + 58);
  h.nthreads_comp = int16_t(load_be16(p + 63));
  h.nthreads_decomp = int16_t(load_be16(p + 66));
  h.has_vlmetalayers = p[68] == 0xC3;
  int nfilters = p[70];
  h.udcodec = p[kFiltersOffset + kMaxFilters];
  h.compcode_meta = p[kFiltersOffset + kMaxFilters + 1];
  h.other_flags2 = p[85];

  if (h.version() > 3)
    throw FormatError(context + ": format version " + std::to_string(h.version()) + " is newer than 3");
  if (h.header_len < kFrameHeaderMinLen || size_t(h.header_len) > header.size())
    throw FormatError(context + ": header_len " + std::to_string(h.header_len) + " is out of range");
  if (h.typesize <= 0) throw FormatError(context + ": typesize " + std::to_string(h.typesize) + " is not positive");
  if (nfilters > kMaxFilters) throw FormatError(context + ": " + std::to_string(nfilters) + " filters, more than 6");
  if (h.nbytes < 0 || h.cbytes < 0) throw FormatError(context + ": negative uncompressed or compressed size");
  for (int i = 0; i < nfilters; ++i) {
    h.filters[i] = p[kFiltersOffset + i];
    h.filters_meta[i] = p[kFiltersOffset + kMaxFilters + 2 + i];
  }

  // Old writers may end the header right after the fixed part.
  if (h.header_len == kFrameHeaderMinLen) return parsed;
  ByteSpan whole = header.first(size_t(h.header_len));
  ByteReader in(whole, context + " metalayers");
  in.seek(kMetalayerSectionOffset + 1);  // the fixarray marker is not checked, as in c-blosc2
  in.expect(0xCD, "a uint16 (CD) index size");
  in.be16();
  for (auto& item : read_named_contents(in, whole, 0, whole.size(), kMaxMetalayers, "metalayer"))
    parsed.metalayers.push_back({std::move(item.name), Bytes(item.content.begin(), item.content.end())});
  return parsed;
}

std::vector<Vlmetalayer> parse_frame_trailer(ByteSpan trailer) {
  ByteReader in(trailer, "frame trailer");
  if (trailer.size() < size_t(kFrameTrailerMinLen)) in.fail("shorter than 25 bytes");
  in.seek(3);  // fixarray, trailer version and the index fixarray are not checked, as in c-blosc2
  in.expect(0xCD, "a uint16 (CD) index size");
  in.be16();
  std::vector<Vlmetalayer> out;
  for (auto& item : read_named_contents(in, trailer, 0, trailer.size(), kMaxVlmetalayersRead, "vlmetalayer"))
    out.push_back({std::move(item.name), Bytes(item.content.begin(), item.content.end())});
  return out;
}

Bytes serialize_frame_header(const FrameHeader& h, const std::vector<Metalayer>& metalayers) {
  if (metalayers.size() > size_t(kMaxMetalayers)) throw FormatError("more than 16 metalayers");
  Bytes out;
  out.reserve(256);
  out.push_back(0x9E);
  out.push_back(0xA8);
  out.insert(out.end(), kMagic, kMagic + sizeof kMagic);
  out.push_back(0xD2);
  append_be32(out, 0);  // header_len, patched below
  out.push_back(0xCF);
  append_be64(out, uint64_t(h.frame_len));
  out.push_back(0xA4);
  out.push_back(h.general_flags);
  out.push_back(h.frame_type);
  out.push_back(h.codec_flags);
  out.push_back(h.other_flags);
  out.push_back(0xD3);
  append_be64(out, uint64_t(h.nbytes));
  out.push_back(0xD3);
  append_be64(out, uint64_t(h.cbytes));
  for (int32_t v : {h.typesize, h.blocksize, h.chunksize}) {
    out.push_back(0xD2);
    append_be32(out, uint32_t(v));
  }
  for (int16_t v : {h.nthreads_comp, h.nthreads_decomp}) {
    out.push_back(0xD1);
    append_be16(out, uint16_t(v));
  }
  out.push_back(h.has_vlmetalayers ? 0xC3 : 0xC2);
  out.push_back(0xD8);
  out.push_back(uint8_t(kMaxFilters));
  out.insert(out.end(), h.filters.begin(), h.filters.end());
  out.push_back(h.udcodec);
  out.push_back(h.compcode_meta);
  out.insert(out.end(), h.filters_meta.begin(), h.filters_meta.end());
  out.push_back(h.other_flags2);
  out.push_back(0);

  // Metalayer section; its index size counts from the 93 byte to the end of the map.
  out.push_back(0x93);
  out.push_back(0xCD);
  size_t idx_size_at = out.size();
  append_be16(out, 0);
  std::vector<std::pair<const std::string*, ByteSpan>> items;
  for (const Metalayer& m : metalayers) items.emplace_back(&m.name, ByteSpan(m.content));
  size_t map_start = out.size();
  append_named_contents(out, items, 0, "metalayer");
  size_t map_len = 3;
  for (const Metalayer& m : metalayers) map_len += 1 + m.name.size() + 5;
  store_be16(out.data() + idx_size_at, uint16_t(map_start + map_len - kMetalayerSectionOffset));
  if (out.size() > size_t(INT32_MAX)) throw FormatError("frame header larger than 2 GiB");
  store_be32(out.data() + 11, uint32_t(out.size()));
  return out;
}

Bytes serialize_frame_trailer(const std::vector<Vlmetalayer>& vlmetalayers) {
  Bytes out{0x94, 0x01, 0x93, 0xCD, 0, 0};
  std::vector<std::pair<const std::string*, ByteSpan>> items;
  size_t map_len = 3;
  for (const Vlmetalayer& v : vlmetalayers) {
    items.emplace_back(&v.name, ByteSpan(v.stored));
    map_len += 1 + v.name.size() + 5;
  }
  // The trailer's index size excludes the 93 byte, unlike the header's.
  if (map_len + 3 > 0xFFFF) throw FormatError("too many vlmetalayers");
  store_be16(out.data() + 4, uint16_t(3 + map_len));
  append_named_contents(out, items, 0, "vlmetalayer");
  size_t total = out.size() + 5 + 18;
  if (total > size_t(INT32_MAX)) throw FormatError("frame trailer larger than 2 GiB");
  out.push_back(0xCE);
  append_be32(out, uint32_t(total));
  out.push_back(0xD8);
  out.push_back(0x00);
  out.insert(out.end(), 16, 0);
  return out;
}

}  // namespace blosc2fs
