#include "fs_ops.h"

#include <fcntl.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

namespace blosc2fs {

namespace {

// An errno that is the answer to a request (ENOENT, EROFS, ...), not a failure
// worth a log line.
struct FsError {
  int error;
};

FsContext& context(fuse_req_t req) { return *static_cast<FsContext*>(fuse_req_userdata(req)); }

std::string describe(fuse_req_t req, fuse_ino_t ino) {
  try {
    const Tree& tree = context(req).tree;
    if (std::optional<Node> node = tree.node(ino)) return tree.path(*node);
  } catch (...) {
  }
  return "inode " + std::to_string(ino);
}

// One log line per failure: the kernel repeats a failed read (readahead, then
// the read itself) and tools retry, so the same failure of the same inode is
// logged again at error level only after a minute.
void log_failure(fuse_req_t req, const char* op, fuse_ino_t ino, const std::string& why) {
  using Clock = std::chrono::steady_clock;
  static std::mutex mutex;
  static std::unordered_map<fuse_ino_t, std::pair<std::string, Clock::time_point>> recent;
  bool repeated;
  {
    std::lock_guard lock(mutex);
    if (recent.size() > 4096) recent.clear();
    const Clock::time_point now = Clock::now();
    auto [it, inserted] = recent.try_emplace(ino, why, now);
    repeated = !inserted && it->second.first == why && now - it->second.second < std::chrono::minutes(1);
    if (!repeated) it->second = {why, now};
  }
  spdlog::log(repeated ? spdlog::level::debug : spdlog::level::err, "{} {}: {}", op, describe(req, ino), why);
}

// Runs one operation; whatever it throws becomes the errno reply.
template <class Body>
void guarded(fuse_req_t req, const char* op, fuse_ino_t ino, Body&& body) noexcept {
  int error = EIO;
  try {
    body();
    return;
  } catch (const FsError& e) {
    error = e.error;
  } catch (const FormatError& e) {  // UnsupportedError too
    log_failure(req, op, ino, e.what());
  } catch (const IoError& e) {
    error = e.error_number();
    log_failure(req, op, ino, e.what());
  } catch (const std::bad_alloc&) {
    error = ENOMEM;
    log_failure(req, op, ino, "out of memory");
  } catch (const std::out_of_range& e) {
    error = ENOENT;
    spdlog::debug("{} {}: {}", op, describe(req, ino), e.what());
  } catch (const std::exception& e) {
    log_failure(req, op, ino, std::string("internal error: ") + e.what());
  } catch (...) {
    log_failure(req, op, ino, "internal error");
  }
  fuse_reply_err(req, error);
}

Node resolve(FsContext& c, fuse_ino_t ino) {
  std::optional<Node> node = c.tree.node(ino);
  if (!node) throw FsError{ENOENT};
  return *node;
}

fuse_entry_param entry_of(FsContext& c, Node node) {
  fuse_entry_param e{};
  e.ino = Tree::inode(node);
  e.generation = 1;
  e.attr = c.tree.attributes(node);
  e.attr_timeout = c.timeout;
  e.entry_timeout = c.timeout;
  return e;
}

// --- lifecycle ---

void op_init(void*, fuse_conn_info* conn) {
  auto want = [conn](unsigned cap) {
    if (conn->capable & cap) conn->want |= cap;
  };
  want(FUSE_CAP_ASYNC_READ);
  want(FUSE_CAP_READDIRPLUS);
  want(FUSE_CAP_READDIRPLUS_AUTO);
  want(FUSE_CAP_PARALLEL_DIROPS);
  // Big requests: libfuse derives max_pages from max_write, which sets the
  // largest read the kernel sends too.
  conn->max_write = 1 << 20;
  conn->time_gran = 1;
  spdlog::debug("FUSE protocol {}.{}, max_write {}, max_readahead {}", conn->proto_major, conn->proto_minor,
                conn->max_write, conn->max_readahead);
}

// --- names and attributes ---

void op_lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  guarded(req, "lookup", parent, [&] {
    FsContext& c = context(req);
    Node dir = resolve(c, parent);
    if (!is_directory(dir.kind)) throw FsError{ENOTDIR};
    std::optional<Node> child = c.tree.lookup(dir, name);
    fuse_entry_param e{};
    if (child) {
      e = entry_of(c, *child);
    } else {
      e.entry_timeout = c.timeout;  // ino 0: a cacheable "no such name"
    }
    fuse_reply_entry(req, &e);
  });
}

void op_forget(fuse_req_t req, fuse_ino_t, uint64_t) { fuse_reply_none(req); }

void op_forget_multi(fuse_req_t req, size_t, fuse_forget_data*) { fuse_reply_none(req); }

void op_getattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  guarded(req, "getattr", ino, [&] {
    FsContext& c = context(req);
    struct stat st = c.tree.attributes(resolve(c, ino));
    fuse_reply_attr(req, &st, c.timeout);
  });
}

void op_access(fuse_req_t req, fuse_ino_t ino, int mask) {
  guarded(req, "access", ino, [&] {
    resolve(context(req), ino);
    if (mask & W_OK) throw FsError{EROFS};
    fuse_reply_err(req, 0);
  });
}

void op_readlink(fuse_req_t req, fuse_ino_t ino) {
  guarded(req, "readlink", ino, [&] {
    resolve(context(req), ino);
    throw FsError{EINVAL};
  });
}

void op_statfs(fuse_req_t req, fuse_ino_t ino) {
  guarded(req, "statfs", ino, [&] {
    FsContext& c = context(req);
    const FrameFiles& files = c.tree.files();
    const Frame& frame = files.frame();
    struct statvfs st {};
    st.f_bsize = 4096;
    st.f_frsize = 4096;
    const int64_t stored = std::max(frame.stamp().file_size, frame.header().cbytes);
    st.f_blocks = fsblkcnt_t((std::max<int64_t>(stored, 0) + 4095) / 4096);
    st.f_files = fsfilcnt_t(10 + 2 * files.nchunks() + int64_t(files.metas().size()) +
                            2 * int64_t(files.vlmetas().size()));
    st.f_namemax = 255;
    st.f_flag = ST_RDONLY;
    fuse_reply_statfs(req, &st);
  });
}

// --- directories ---

void op_opendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  guarded(req, "opendir", ino, [&] {
    if (!is_directory(resolve(context(req), ino).kind)) throw FsError{ENOTDIR};
    fi->cache_readdir = 1;  // listings change only through this process
    fi->keep_cache = 1;
    fuse_reply_open(req, fi);
  });
}

// Cookies: 0 "." 1 ".." then 2 + the tree's entry positions. Each call walks
// only as far as the reply buffer holds, so a million chunks stream.
void list_directory(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset, bool plus) {
  FsContext& c = context(req);
  const Node dir = resolve(c, ino);
  if (!is_directory(dir.kind)) throw FsError{ENOTDIR};
  size = std::min<size_t>(size, 1 << 20);
  std::vector<char> buf(size);
  size_t used = 0;
  // Adds one entry; false when it does not fit (it will come in the next call).
  auto add = [&](const std::string& name, Node node, bool self_or_parent, off_t next) {
    size_t need;
    if (plus) {
      fuse_entry_param e{};
      if (self_or_parent) {
        e.attr.st_ino = Tree::inode(node);
        e.attr.st_mode = S_IFDIR;  // ino 0: the kernel takes no reference
      } else {
        try {
          e = entry_of(c, node);
        } catch (const std::runtime_error&) {  // FormatError, IoError
          e = fuse_entry_param{};  // attributes unknown now: a later lookup reports the error
          e.attr.st_ino = Tree::inode(node);
          e.attr.st_mode = is_directory(node.kind) ? S_IFDIR : S_IFREG;
        }
      }
      need = fuse_add_direntry_plus(req, buf.data() + used, size - used, name.c_str(), &e, next);
    } else {
      struct stat st {};
      st.st_ino = Tree::inode(node);
      st.st_mode = is_directory(node.kind) ? S_IFDIR : S_IFREG;
      need = fuse_add_direntry(req, buf.data() + used, size - used, name.c_str(), &st, next);
    }
    if (need > size - used) return false;
    used += need;
    return true;
  };
  int64_t pos = offset;
  if (pos == 0) {
    if (!add(".", dir, true, 1)) throw FsError{EINVAL};
    pos = 1;
  }
  if (pos == 1) {
    if (add("..", c.tree.parent(dir), true, 2)) pos = 2;
  }
  if (pos >= 2) {
    for (int64_t i = pos - 2;;) {
      std::optional<DirEntry> entry = c.tree.entry(dir, i);
      if (!entry || !add(entry->name, entry->node, false, off_t(entry->next + 2))) break;
      i = entry->next;
    }
  }
  fuse_reply_buf(req, buf.data(), used);
}

void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset, fuse_file_info*) {
  guarded(req, "readdir", ino, [&] { list_directory(req, ino, size, offset, false); });
}

void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset, fuse_file_info*) {
  guarded(req, "readdirplus", ino, [&] { list_directory(req, ino, size, offset, true); });
}

void op_releasedir(fuse_req_t req, fuse_ino_t, fuse_file_info*) { fuse_reply_err(req, 0); }

// --- files ---

void op_open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  guarded(req, "open", ino, [&] {
    Node node = resolve(context(req), ino);
    if (is_directory(node.kind)) throw FsError{EISDIR};
    if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) throw FsError{EROFS};
    fi->keep_cache = 1;  // contents change only through this process
    fi->noflush = 1;
    fuse_reply_open(req, fi);
  });
}

void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset, fuse_file_info*) {
  guarded(req, "read", ino, [&] {
    FsContext& c = context(req);
    Node node = resolve(c, ino);
    if (is_directory(node.kind)) throw FsError{EISDIR};
    if (offset < 0) throw FsError{EINVAL};
    size = std::min<size_t>(size, 64 << 20);
    auto buf = std::make_unique_for_overwrite<uint8_t[]>(std::max<size_t>(size, 1));
    size_t got = c.tree.files().read(node, offset, MutableByteSpan(buf.get(), size));
    fuse_reply_buf(req, reinterpret_cast<const char*>(buf.get()), got);
  });
}

void op_release(fuse_req_t req, fuse_ino_t, fuse_file_info*) { fuse_reply_err(req, 0); }

void op_flush(fuse_req_t req, fuse_ino_t, fuse_file_info*) { fuse_reply_err(req, 0); }

void op_fsync(fuse_req_t req, fuse_ino_t, int, fuse_file_info*) { fuse_reply_err(req, 0); }

// --- extended attributes ---

void reply_xattr_value(fuse_req_t req, const std::string& value, size_t size) {
  if (size == 0) fuse_reply_xattr(req, value.size());
  else if (size < value.size()) throw FsError{ERANGE};
  else fuse_reply_buf(req, value.data(), value.size());
}

void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size) {
  // `ls -l` asks every file for security.selinux and system.posix_acl_access:
  // answer those without a detour through exceptions.
  if (ino != FUSE_ROOT_ID || std::strcmp(name, kCacheStatsXattr) != 0) {
    fuse_reply_err(req, ENODATA);
    return;
  }
  guarded(req, "getxattr", ino, [&] {
    reply_xattr_value(req, context(req).tree.files().cache().stats().text(), size);
  });
}

void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size) {
  guarded(req, "listxattr", ino, [&] {
    Node node = resolve(context(req), ino);
    std::string names;
    if (node.kind == NodeKind::root) names.append(kCacheStatsXattr).push_back('\0');
    reply_xattr_value(req, names, size);
  });
}

// --- everything that would change the tree: read-only for now ---

void refuse(fuse_req_t req) { fuse_reply_err(req, EROFS); }

void op_setattr(fuse_req_t req, fuse_ino_t, struct stat*, int, fuse_file_info*) { refuse(req); }
void op_mknod(fuse_req_t req, fuse_ino_t, const char*, mode_t, dev_t) { refuse(req); }
void op_mkdir(fuse_req_t req, fuse_ino_t, const char*, mode_t) { refuse(req); }
void op_unlink(fuse_req_t req, fuse_ino_t, const char*) { refuse(req); }
void op_rmdir(fuse_req_t req, fuse_ino_t, const char*) { refuse(req); }
void op_symlink(fuse_req_t req, const char*, fuse_ino_t, const char*) { refuse(req); }
void op_rename(fuse_req_t req, fuse_ino_t, const char*, fuse_ino_t, const char*, unsigned) { refuse(req); }
void op_link(fuse_req_t req, fuse_ino_t, fuse_ino_t, const char*) { refuse(req); }
void op_write(fuse_req_t req, fuse_ino_t, const char*, size_t, off_t, fuse_file_info*) { refuse(req); }
void op_create(fuse_req_t req, fuse_ino_t, const char*, mode_t, fuse_file_info*) { refuse(req); }
void op_setxattr(fuse_req_t req, fuse_ino_t, const char*, const char*, size_t, int) { refuse(req); }
void op_removexattr(fuse_req_t req, fuse_ino_t, const char*) { refuse(req); }
void op_fallocate(fuse_req_t req, fuse_ino_t, int, off_t, off_t, fuse_file_info*) { refuse(req); }

fuse_lowlevel_ops make_operations() {
  fuse_lowlevel_ops ops{};
  ops.init = op_init;
  ops.lookup = op_lookup;
  ops.forget = op_forget;
  ops.forget_multi = op_forget_multi;
  ops.getattr = op_getattr;
  ops.access = op_access;
  ops.readlink = op_readlink;
  ops.statfs = op_statfs;
  ops.opendir = op_opendir;
  ops.readdir = op_readdir;
  ops.readdirplus = op_readdirplus;
  ops.releasedir = op_releasedir;
  ops.open = op_open;
  ops.read = op_read;
  ops.release = op_release;
  ops.flush = op_flush;
  ops.fsync = op_fsync;
  ops.getxattr = op_getxattr;
  ops.listxattr = op_listxattr;
  ops.setattr = op_setattr;
  ops.mknod = op_mknod;
  ops.mkdir = op_mkdir;
  ops.unlink = op_unlink;
  ops.rmdir = op_rmdir;
  ops.symlink = op_symlink;
  ops.rename = op_rename;
  ops.link = op_link;
  ops.write = op_write;
  ops.create = op_create;
  ops.setxattr = op_setxattr;
  ops.removexattr = op_removexattr;
  ops.fallocate = op_fallocate;
  return ops;
}

}  // namespace

const fuse_lowlevel_ops& lowlevel_operations() {
  static const fuse_lowlevel_ops ops = make_operations();
  return ops;
}

}  // namespace blosc2fs
