#include "tree_access.h"

#include <unistd.h>

#include <cerrno>

#include "error.h"

namespace blosc2fs {

FrameAccess frame_access_of_file(const struct stat& file) {
  return FrameAccess{file.st_uid, file.st_gid, mode_t(file.st_mode & 0444), mode_t(file.st_mode & 0222)};
}

FrameAccess frame_access_of_sparse(const struct stat& dir, const struct stat& header) {
  FrameAccess access{dir.st_uid, dir.st_gid, 0, 0};
  for (int shift : {6, 3, 0}) {  // owner, group, others
    const mode_t d = (dir.st_mode >> shift) & 7, h = (header.st_mode >> shift) & 7;
    if (!(d & 1)) continue;  // without search, nothing in the directory can be opened
    if ((d & 4) && (h & 4)) access.read |= mode_t(4) << shift;
    if ((d & 2) && (h & 2)) access.write |= mode_t(2) << shift;
  }
  return access;
}

FrameAccess read_frame_access(const std::filesystem::path& frame_path) {
  struct stat st;
  if (::stat(frame_path.c_str(), &st) != 0) throw_errno(frame_path.string() + ": stat");
  if (!S_ISDIR(st.st_mode)) return frame_access_of_file(st);
  const std::filesystem::path header = frame_path / "chunks.b2frame";
  struct stat header_st;
  if (::stat(header.c_str(), &header_st) != 0) throw_errno(header.string() + ": stat");
  return frame_access_of_sparse(st, header_st);
}

NodeAccess node_access(NodeKind kind, const FrameAccess& frame, bool writable_mount,
                       const AccessOverrides& overrides) {
  const mode_t read = frame.read & 0444;
  const mode_t write = writable_mount ? frame.write & 0222 : 0;
  mode_t mode;
  if (is_directory(kind)) mode = read | write | (read >> 2) | (write >> 1);
  else mode = read | (is_writable_file(kind) ? write : 0);
  return NodeAccess{overrides.uid.value_or(frame.uid), overrides.gid.value_or(frame.gid),
                    mode_t(mode & ~overrides.umask.value_or(0))};
}

bool may_write_frame(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return ::access(path.c_str(), W_OK) == 0 && ::access((path / "chunks.b2frame").c_str(), W_OK) == 0;
  return ::access(path.c_str(), W_OK) == 0;
}

}  // namespace blosc2fs
