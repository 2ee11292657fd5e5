#include "byte_source.h"

#include <algorithm>
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

class LocalDirectory final : public SourceDirectory {
 public:
  explicit LocalDirectory(fs::path root) : root_(std::move(root)) {}
  std::shared_ptr<const ByteSource> open(const std::string& relative) const override {
    check(relative);
    return open_local_file(root_ / relative);
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
  std::shared_ptr<const SourceDirectory> subdirectory(const std::string& relative) const override {
    check(relative);
    return open_local_directory(root_ / relative);
  }
  std::string name() const override { return root_.string(); }

 private:
  void check(const std::string& relative) const {
    if (!is_safe_relative_name(relative))
      throw IoError(root_.string() + ": \"" + relative + "\" is not a name inside it", EINVAL);
  }
  fs::path root_;
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
  bool prefetch(int64_t offset, int64_t length) const override {
    if (offset < 0 || offset >= length_) return true;
    return whole_->prefetch(offset_ + offset, std::min(length, length_ - offset));
  }
  bool remote() const override { return whole_->remote(); }

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

std::shared_ptr<const SourceDirectory> open_local_directory(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec))
    throw IoError(path.string() + ": not a directory", ec ? ec.value() : ENOTDIR);
  return std::make_shared<LocalDirectory>(path);
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
