// Who may do what on a mount: the owner, group and permission bits of every
// file and directory of the tree, taken from the frame's own. The mount always
// runs with default_permissions (options.cc), so the kernel checks every
// access against them: with allow_other, other users get exactly the access
// the frame's permissions give them, and no more because the daemon (often
// root) is the one that writes.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <filesystem>
#include <optional>

#include "node.h"

namespace blosc2fs {

// What the frame on disk grants: its owner and group, and for each class
// (owner, group, others) whether it may read and whether it may write it.
struct FrameAccess {
  uid_t uid = 0;
  gid_t gid = 0;
  mode_t read = 0;   // within 0444
  mode_t write = 0;  // within 0222
  bool operator==(const FrameAccess&) const = default;
};

// A contiguous frame: its file's owner, group and r/w bits.
FrameAccess frame_access_of_file(const struct stat& file);
// A sparse frame: the directory's owner and group; a class may read when it
// may search the directory and read chunks.b2frame, write when it may search
// and write both (new chunk files, the rename of chunks.b2frame).
FrameAccess frame_access_of_sparse(const struct stat& dir, const struct stat& header);
// Either, from the disk. Throws IoError.
FrameAccess read_frame_access(const std::filesystem::path& frame_path);

// Whether this process may change the frame at `frame_path`: the file, or a
// sparse frame's directory (new chunk files, the rename of chunks.b2frame) and
// its header (access(2), so root may).
bool may_write_frame(const std::filesystem::path& frame_path);

// -o uid=, gid=, umask=: replace the owner and group, remove mode bits.
struct AccessOverrides {
  std::optional<uid_t> uid;
  std::optional<gid_t> gid;
  std::optional<mode_t> umask;
};

struct NodeAccess {
  uid_t uid = 0;
  gid_t gid = 0;
  mode_t mode = 0;  // permission bits only
};

// What a file or directory of the tree shows. Files: the frame's read bits,
// plus its write bits when the file takes writes and the mount is
// read-write. Directories: the same read and write bits, and search (x)
// wherever a class may read or write. Then the overrides.
NodeAccess node_access(NodeKind kind, const FrameAccess& frame, bool writable_mount,
                       const AccessOverrides& overrides);

}  // namespace blosc2fs
