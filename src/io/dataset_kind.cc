#include "dataset_kind.h"

#include <cctype>
#include <cstring>

namespace blosc2fs {

namespace {

std::string_view last_part(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// Suffixes are compared without case: python-blosc2 and Caterva2 take `.B2ND` too.
bool has_suffix(std::string_view name, std::string_view suffix) {
  if (name.size() <= suffix.size()) return false;
  const std::string_view tail = name.substr(name.size() - suffix.size());
  for (size_t i = 0; i < suffix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(tail[i])) != suffix[i]) return false;
  return true;
}

bool marks_directory(std::string_view path, std::string_view marker) {
  return path.size() > marker.size() + 1 && path.ends_with(marker) && path[path.size() - marker.size() - 1] == '/';
}

bool frame_name(std::string_view name) {
  return has_suffix(name, ".b2nd") || has_suffix(name, ".b2frame") || has_suffix(name, ".b2");
}

}  // namespace

DatasetKind dataset_kind_of_file(std::string_view path) {
  const std::string_view name = last_part(path);
  if (frame_name(name)) return DatasetKind::frame;
  if (has_suffix(name, ".b2z") || has_suffix(name, ".b2e")) return DatasetKind::store;
  return DatasetKind::other;
}

DatasetKind dataset_kind_of_directory_name(std::string_view path) {
  const std::string_view name = last_part(path);
  if (has_suffix(name, ".b2d")) return DatasetKind::store_directory;
  if (frame_name(name)) return DatasetKind::sparse_frame;
  return DatasetKind::other;
}

DatasetKind dataset_kind_of_listed_path(std::string_view path) {
  if (marks_directory(path, kSparseFrameMarker)) return DatasetKind::sparse_frame;
  if (marks_directory(path, kStoreDirectoryMarker)) return DatasetKind::store_directory;
  return dataset_kind_of_file(path);
}

const char* dataset_kind_name(DatasetKind kind, std::string_view path) {
  const std::string_view name = last_part(path);
  switch (kind) {
    case DatasetKind::sparse_frame: return "sparse_frame";
    case DatasetKind::store_directory: return "b2d";
    case DatasetKind::frame: return has_suffix(name, ".b2nd") ? "b2nd" : "b2frame";
    case DatasetKind::store: return has_suffix(name, ".b2e") ? "b2e" : "b2z";
    case DatasetKind::other: break;
  }
  if (has_suffix(name, ".h5") || has_suffix(name, ".hdf5")) return "hdf5";
  return "file";
}

const char* dataset_kind_name(std::string_view path) {
  return dataset_kind_name(dataset_kind_of_listed_path(path), path);
}

bool looks_like_frame_header(ByteSpan head) {
  // A frame header is a msgpack fixarray whose first element is the string "b2frame\0"
  // (format-notes.md, frame-notes): bytes 1 and 2..9.
  static constexpr uint8_t kMagic[8] = {'b', '2', 'f', 'r', 'a', 'm', 'e', 0};
  return head.size() >= kFrameHeaderSniff && (head[0] & 0xF0) == 0x90 &&
         std::memcmp(head.data() + 2, kMagic, sizeof kMagic) == 0;
}

}  // namespace blosc2fs
