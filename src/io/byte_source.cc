#include "byte_source.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <map>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <utility>

#include "error.h"
#include "file.h"

namespace blosc2fs {

namespace fs = std::filesystem;

void ByteSource::read_exact(int64_t offset, MutableByteSpan out, const char* what) const {
  const size_t got = read_at(offset, out);
  if (got != out.size())
    throw FormatError(name() + ": " + what + " at offset " + std::to_string(offset) + " needs " +
                      std::to_string(out.size()) + " bytes, the source ends after " + std::to_string(got));
}

Bytes ByteSource::read_bytes(int64_t offset, size_t n, const char* what) const {
  // Capped by what the source holds, whatever a header claimed.
  if (offset < 0 || offset > size() || int64_t(n) > size() - offset)
    throw FormatError(name() + ": " + what + " of " + std::to_string(n) + " bytes at offset " +
                      std::to_string(offset) + " is past the end (" + std::to_string(size()) + " bytes)");
  Bytes out(n);
  read_exact(offset, out, what);
  return out;
}

std::vector<ListedEntry> SourceDirectory::list_entries(const std::string& relative) const {
  throw UnsupportedError(name() + (relative.empty() ? "" : "/" + relative) + ": this place cannot be listed one directory at a time");
}

bool is_safe_relative_name(const std::string& name) {
  if (name.empty() || name.front() == '/' || name.find('\0') != std::string::npos) return false;
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('/', start);
    if (end == std::string::npos) end = name.size();
    const std::string_view part(name.data() + start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

namespace {

class LocalFileSource final : public ByteSource {
 public:
  explicit LocalFileSource(File file) : file_(std::move(file)), size_(file_.size()) {}
  int64_t size() const override { return size_; }
  size_t read_at(int64_t offset, MutableByteSpan out) const override { return file_.read_at(offset, out); }
  std::string name() const override { return file_.path().string(); }

 private:
  File file_;
  int64_t size_;
};

// Files open relative to the directory held since it was opened, not to its
// path: a sparse frame whose directory a replacement exchanges with a new one
// (renameat2) keeps reading its own chunk files, never the new frame's under
// the same names.
class LocalDirectory final : public SourceDirectory {
 public:
  LocalDirectory(fs::path root, UniqueFd dir, size_t max_entries)
      : root_(std::move(root)), dir_(std::move(dir)), max_entries_(max_entries) {}
  std::shared_ptr<const ByteSource> open(const std::string& relative) const override {
    check(relative);
    return std::make_shared<LocalFileSource>(File::open_read_at(dir_.get(), relative, root_ / relative));
  }
  std::vector<std::string> list() const override {
    std::vector<std::string> names;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(root_, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      if (it->is_regular_file(ec)) names.push_back(it->path().lexically_relative(root_).generic_string());
    }
    if (ec) throw IoError(root_.string() + ": cannot list it: " + ec.message(), ec.value());
    std::sort(names.begin(), names.end());
    return names;
  }
  // lstat of each entry: a symlink is listed as one with its target text,
  // never followed; fifos, sockets and devices are left out.
  std::vector<ListedEntry> list_entries(const std::string& relative) const override {
    if (!relative.empty()) check(relative);
    const fs::path dir = relative.empty() ? root_ : root_ / relative;
    DIR* d = ::opendir(dir.c_str());
    if (!d) throw_errno("cannot list " + dir.string());
    std::unique_ptr<DIR, int (*)(DIR*)> closer(d, ::closedir);
    std::vector<ListedEntry> out;
    const int fd = ::dirfd(d);
    for (;;) {
      errno = 0;
      const dirent* e = ::readdir(d);
      if (!e) {
        if (errno) throw_errno("cannot list " + dir.string());
        break;
      }
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      if (out.size() >= max_entries_)
        throw IoError(dir.string() + ": more than " + count_text(max_entries_) + " entries: refused", EFBIG);
      struct stat st;
      if (::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone since readdir
      ListedEntry entry;
      entry.name = name;
      if (S_ISREG(st.st_mode)) {
        entry.type = ListedEntry::Type::file;
        entry.size = int64_t(st.st_size);
      } else if (S_ISDIR(st.st_mode)) {
        entry.type = ListedEntry::Type::directory;
      } else if (S_ISLNK(st.st_mode)) {
        entry.type = ListedEntry::Type::symlink;
        char target[PATH_MAX];
        const ssize_t n = ::readlinkat(fd, name.c_str(), target, sizeof target);
        if (n < 0) continue;
        entry.link_target.assign(target, size_t(n));
        entry.size = n;
      } else {
        continue;  // a fifo, a socket, a device: not data
      }
      out.push_back(std::move(entry));
    }
    std::sort(out.begin(), out.end(), [](const ListedEntry& a, const ListedEntry& b) { return a.name < b.name; });
    return out;
  }
  std::shared_ptr<const SourceDirectory> subdirectory(const std::string& relative) const override {
    check(relative);
    return open_local_directory(root_ / relative, max_entries_);
  }
  std::string name() const override { return root_.string(); }

 private:
  void check(const std::string& relative) const {
    if (!is_safe_relative_name(relative))
      throw IoError(root_.string() + ": \"" + relative + "\" is not a name inside it", EINVAL);
  }
  fs::path root_;
  UniqueFd dir_;  // O_PATH
  size_t max_entries_;
};

class SliceSource final : public ByteSource {
 public:
  SliceSource(std::shared_ptr<const ByteSource> whole, int64_t offset, int64_t length)
      : whole_(std::move(whole)), offset_(offset), length_(length) {}
  int64_t size() const override { return length_; }
  size_t read_at(int64_t offset, MutableByteSpan out) const override {
    if (offset < 0 || offset >= length_) return 0;
    const size_t n = size_t(std::min<int64_t>(int64_t(out.size()), length_ - offset));
    return whole_->read_at(offset_ + offset, out.first(n));
  }
  std::string name() const override { return whole_->name(); }
  void will_read(int64_t offset, int64_t length) const override {
    if (offset < 0 || offset >= length_) return;
    whole_->will_read(offset_ + offset, std::min(length, length_ - offset));
  }
  void will_read_only(int64_t offset, int64_t length) const override {
    if (offset < 0 || offset >= length_) return;
    whole_->will_read_only(offset_ + offset, std::min(length, length_ - offset));
  }
  bool prefetch(int64_t offset, int64_t length) const override {
    if (offset < 0 || offset >= length_) return true;
    return whole_->prefetch(offset_ + offset, std::min(length, length_ - offset));
  }
  bool remote() const override { return whole_->remote(); }
  bool held(int64_t offset, int64_t length) const override {
    if (offset < 0 || offset >= length_) return true;
    return whole_->held(offset_ + offset, std::min(length, length_ - offset));
  }
  HeldBytes view_at(int64_t offset, size_t length, bool fetch) const override {
    if (offset < 0 || offset > length_ || int64_t(length) > length_ - offset) return {};
    return whole_->view_at(offset_ + offset, length, fetch);
  }

 private:
  std::shared_ptr<const ByteSource> whole_;
  int64_t offset_, length_;
};

class MemorySource final : public ByteSource {
 public:
  MemorySource(Bytes bytes, std::string name) : bytes_(std::move(bytes)), name_(std::move(name)) {}
  int64_t size() const override { return int64_t(bytes_.size()); }
  size_t read_at(int64_t offset, MutableByteSpan out) const override {
    if (offset < 0 || offset >= size()) return 0;
    const size_t n = std::min(out.size(), bytes_.size() - size_t(offset));
    std::memcpy(out.data(), bytes_.data() + offset, n);
    return n;
  }
  std::string name() const override { return name_; }

 private:
  Bytes bytes_;
  std::string name_;
};

}  // namespace

std::shared_ptr<const ByteSource> open_local_file(const fs::path& path) {
  return std::make_shared<LocalFileSource>(File::open_read(path));
}

std::shared_ptr<const ByteSource> open_local_file_beneath(const fs::path& root, const std::string& relative) {
  if (!is_safe_relative_name(relative))
    throw IoError(root.string() + ": \"" + relative + "\" is not a name inside it", EINVAL);
  return std::make_shared<LocalFileSource>(File::open_read_beneath(root, relative));
}

std::vector<ListedEntry> entries_below(const std::vector<std::string>& paths, const std::string& dir) {
  const std::string prefix = dir.empty() ? "" : dir + "/";
  std::map<std::string, ListedEntry> found;
  for (const std::string& path : paths) {
    if (!path.starts_with(prefix) || path.size() == prefix.size()) continue;
    const std::string rest = path.substr(prefix.size());
    const size_t slash = rest.find('/');
    ListedEntry e;
    e.name = rest.substr(0, slash);
    if (e.name.empty() || e.name == "." || e.name == "..") continue;
    e.type = slash == std::string::npos ? ListedEntry::Type::file : ListedEntry::Type::directory;
    // A name listed both as a file and as a directory is the directory (as mountpoint-s3 shows it).
    auto [it, made] = found.try_emplace(e.name, e);
    if (!made && e.type == ListedEntry::Type::directory) it->second = e;
  }
  std::vector<ListedEntry> out;
  out.reserve(found.size());
  for (auto& [name, e] : found) out.push_back(std::move(e));
  return out;
}

std::shared_ptr<const SourceDirectory> open_local_directory(const fs::path& path, size_t max_entries) {
  return std::make_shared<LocalDirectory>(path, open_directory_handle(path), max_entries);
}

std::shared_ptr<const ByteSource> slice_source(std::shared_ptr<const ByteSource> whole, int64_t offset,
                                               int64_t length) {
  if (offset < 0 || length < 0 || offset > whole->size() || length > whole->size() - offset)
    throw FormatError(whole->name() + ": bytes " + std::to_string(offset) + " + " + std::to_string(length) +
                      " are not inside its " + std::to_string(whole->size()) + " bytes");
  return std::make_shared<SliceSource>(std::move(whole), offset, length);
}

std::shared_ptr<const ByteSource> memory_source(Bytes bytes, std::string name) {
  return std::make_shared<MemorySource>(std::move(bytes), std::move(name));
}

}  // namespace blosc2fs
