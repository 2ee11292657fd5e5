// A sparse frame rewritten whole (array.npy replaced): the new frame is a
// complete directory written beside the old one, made durable, then swapped
// with it in one step by renameat2(RENAME_EXCHANGE). A rename cannot replace a
// non-empty directory, and replacing it piece by piece would leave a mix; the
// exchange leaves the path naming the old frame or the new one at every instant.
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>

#include "error.h"
#include "frame_editor_internal.h"
#include "unique_fd.h"

namespace blosc2fs::editor {

namespace {

constexpr const char* kSparseIndexName = "chunks.b2frame";

std::filesystem::path parent_of(const std::filesystem::path& path) {
  std::filesystem::path dir = path.parent_path();
  return dir.empty() ? std::filesystem::path(".") : dir;
}

// Whether a file of a sparse frame's tree is one a rewrite may remove.
bool sparse_tree_file(const std::string& name) {
  if (name == kSparseIndexName || name == ".b2lock") return true;
  if (name.rfind(std::string(".") + kSparseIndexName + "." + kCommitTempTag + "-", 0) == 0) return true;
  if (name.size() != 14 || name.compare(8, 6, ".chunk") != 0) return false;
  for (size_t i = 0; i < 8; ++i)
    if (!std::isxdigit(static_cast<unsigned char>(name[i])) || std::islower(static_cast<unsigned char>(name[i])))
      return false;
  return true;
}

}  // namespace

int probe_directory_exchange(const std::filesystem::path& frame_dir) {
  const std::filesystem::path parent = parent_of(frame_dir);
  const std::string stem = frame_dir.filename().string();
  // A frame directory that is a mount point of its own cannot be renamed.
  struct statx frame_stx {}, parent_stx {};
  if (::statx(AT_FDCWD, frame_dir.c_str(), AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &frame_stx) == 0 &&
      ::statx(AT_FDCWD, parent.c_str(), 0, STATX_MNT_ID, &parent_stx) == 0 && (frame_stx.stx_mask & STATX_MNT_ID) &&
      (parent_stx.stx_mask & STATX_MNT_ID) && frame_stx.stx_mnt_id != parent_stx.stx_mnt_id)
    return EXDEV;
  const std::filesystem::path a = temp_name(parent, stem, kRewriteTempTag, random_nonce());
  const std::filesystem::path b = temp_name(parent, stem, kRewriteTempTag, random_nonce());
  if (::mkdir(a.c_str(), 0700) != 0) return errno;
  int err = 0;
  if (::mkdir(b.c_str(), 0700) != 0) {
    err = errno;
  } else {
    if (::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) != 0) err = errno;
    ::rmdir(b.c_str());
  }
  ::rmdir(a.c_str());
  return err;
}

void settle_sparse_tree(const std::filesystem::path& temp, const std::filesystem::path& frame_dir, bool sync) {
  FileOwnership file_owner = ownership_of(frame_dir / kSparseIndexName);
  file_owner.mode &= 0666;
  const FileOwnership dir_owner = ownership_of(frame_dir);
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(temp, ec)) {
    const std::filesystem::path& path = entry.path();
    const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd.ok()) throw_errno(path.string() + ": open to make durable");
    apply_ownership(fd.get(), file_owner, path);
    if (sync && ::fsync(fd.get()) != 0) throw_errno(path.string() + ": fsync");
  }
  if (ec) throw IoError(temp.string() + ": list: " + ec.message(), ec.value());
  const UniqueFd dir(::open(temp.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECTORY));
  if (!dir.ok()) throw_errno(temp.string() + ": open to make durable");
  apply_ownership(dir.get(), dir_owner, temp);
  if (sync && ::fsync(dir.get()) != 0 && errno != EINVAL) throw_errno(temp.string() + ": fsync");
}

void exchange_directories(const std::filesystem::path& temp, const std::filesystem::path& frame_dir, bool sync) {
  if (::renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, frame_dir.c_str(), RENAME_EXCHANGE) != 0)
    throw_errno(temp.string() + ": exchange with " + frame_dir.string());
  if (sync) {
    StepExecutor executor;
    executor.run({CommitStep::Kind::fsync_dir, parent_of(frame_dir)});
  }
}

void remove_sparse_tree(const std::filesystem::path& dir) {
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    std::error_code type_ec;
    if (sparse_tree_file(name) && !entry.is_directory(type_ec)) ::unlink(entry.path().c_str());
  }
  ::rmdir(dir.c_str());
}

std::vector<std::filesystem::path> stale_rewrite_dirs(const std::filesystem::path& frame_dir) {
  std::vector<std::filesystem::path> dirs;
  const std::string prefix = "." + frame_dir.filename().string() + "." + kRewriteTempTag + "-";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(parent_of(frame_dir), ec)) {
    const std::string name = entry.path().filename().string();
    std::error_code type_ec;
    if (name.size() == prefix.size() + 16 && name.rfind(prefix, 0) == 0 && entry.is_directory(type_ec) &&
        !entry.is_symlink(type_ec))
      dirs.push_back(entry.path());
  }
  return dirs;
}

}  // namespace blosc2fs::editor
