#include "fs_ops.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/uio.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "fs_error.h"

namespace blosc2fs {

namespace {

FsContext& context(fuse_req_t req) { return *static_cast<FsContext*>(fuse_req_userdata(req)); }

std::string describe(fuse_req_t req, fuse_ino_t ino) {
  try {
    return context(req).volume.path_of(ino);
  } catch (...) {
    return "inode " + std::to_string(ino);
  }
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
  } catch (const std::exception& e) {  // std::out_of_range of a decoder too: a fault, not a missing file
    log_failure(req, op, ino, std::string("internal error: ") + e.what());
  } catch (...) {
    log_failure(req, op, ino, "internal error");
  }
  fuse_reply_err(req, error);
}

OpenFile* handle(fuse_file_info* fi) { return fi ? reinterpret_cast<OpenFile*>(fi->fh) : nullptr; }

fuse_entry_param entry_of(FsContext& c, uint64_t ino) {
  fuse_entry_param e{};
  e.ino = ino;
  e.generation = 1;
  e.attr = c.volume.attributes(ino);
  e.attr_timeout = c.timeout;
  e.entry_timeout = c.timeout;
  return e;
}

// Replies with an entry the kernel now holds a reference to.
void reply_entry(fuse_req_t req, FsContext& c, uint64_t ino) {
  fuse_entry_param e = entry_of(c, ino);
  c.volume.remember(ino);
  if (fuse_reply_entry(req, &e) != 0) c.volume.forget(ino, 1);
}

// Notes made while answering a request that may hold kernel locks: sent
// without waiting, never about `self`'s pages (a write() holds them).
void send_later(FsContext& c, KernelNotes notes, uint64_t self = 0) {
  if (self) std::erase(notes.inodes, self);
  c.notifier.send(std::move(notes), KernelNotifier::Wait::none);
}

// Notes of a change the caller must see once the request returns (a rename
// onto a layer changes frame.json's size, a truncation of data chunks/N's):
// waits for the inode invalidations, which take no lock a request holds, not
// for the name invalidations (a rename or unlink holds its directories' locks).
void send_waiting_for_inodes(FsContext& c, KernelNotes notes, uint64_t self = 0) {
  if (self) std::erase(notes.inodes, self);
  c.notifier.send(std::move(notes), KernelNotifier::Wait::inodes);
}

// Every change inside a dataset that cannot change (a read-only mount, a
// store's embedded leaf, a remote one) answers EROFS, before any other check
// of the tree's, as the kernel answers for a read-only mount.
void refuse_if_read_only(FsContext& c, uint64_t ino) {
  if (c.volume.read_only_at(ino)) throw FsError{EROFS};
}

void refresh(FsContext& c) {
  KernelNotes notes;
  c.volume.maybe_refresh(notes);
  c.notifier.send(std::move(notes), KernelNotifier::Wait::none);
}

// --- lifecycle ---

void op_init(void* userdata, fuse_conn_info* conn) {
  auto want = [conn](unsigned cap) {
    if (conn->capable & cap) conn->want |= cap;
  };
  want(FUSE_CAP_ASYNC_READ);
  want(FUSE_CAP_READDIRPLUS);
  want(FUSE_CAP_READDIRPLUS_AUTO);
  want(FUSE_CAP_PARALLEL_DIROPS);
  // open(O_TRUNC) arrives as one request, so `echo x > f` is one edit, not
  // a commit of an empty file followed by another.
  want(FUSE_CAP_ATOMIC_O_TRUNC);
  // Writes go through as they come (no writeback cache): a write() that makes
  // attrs/ text invalid fails itself.
  conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
  // Big requests: libfuse derives max_pages from max_write, which sets the
  // largest read the kernel sends too.
  conn->max_write = 1 << 20;
  conn->time_gran = 1;
  FsContext& c = *static_cast<FsContext*>(userdata);
  if (c.unchanging && (conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT)) {
    conn->want |= FUSE_CAP_NO_OPENDIR_SUPPORT;
    c.no_opendir = true;
  }
  spdlog::debug("FUSE protocol {}.{}, max_write {}, max_readahead {}", conn->proto_major, conn->proto_minor,
                conn->max_write, conn->max_readahead);
}

// --- names and attributes ---

void op_lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  guarded(req, "lookup", parent, [&] {
    FsContext& c = context(req);
    refresh(c);
    if (std::optional<uint64_t> child = c.volume.lookup(parent, name)) return reply_entry(req, c, *child);
    fuse_entry_param e{};  // ino 0, not cached: names appear with commits and other writers
    fuse_reply_entry(req, &e);
  });
}

void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
  context(req).volume.forget(ino, nlookup);
  fuse_reply_none(req);
}

void op_forget_multi(fuse_req_t req, size_t count, fuse_forget_data* forgets) {
  for (size_t i = 0; i < count; ++i) context(req).volume.forget(forgets[i].ino, forgets[i].nlookup);
  fuse_reply_none(req);
}

void op_getattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  guarded(req, "getattr", ino, [&] {
    FsContext& c = context(req);
    refresh(c);
    struct stat st = c.volume.attributes(ino);
    fuse_reply_attr(req, &st, c.timeout);
  });
}

// chmod, chown and utimens are accepted and ignored (cp -a, editors' backups
// and sed -i set them) once the kernel has allowed them: with
// default_permissions it checks them against the tree's owner and modes as
// for any file (chown: root; chmod and explicit times: the owner; touch:
// whoever may write). A size is an edit.
void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set, fuse_file_info* fi) {
  guarded(req, "setattr", ino, [&] {
    FsContext& c = context(req);
    refuse_if_read_only(c, ino);
    std::optional<int64_t> size;
    if (to_set & FUSE_SET_ATTR_SIZE) size = int64_t(attr->st_size);
    KernelNotes notes;
    struct stat st;
    try {
      st = c.volume.setattr(ino, handle(fi), size, notes);
    } catch (...) {
      send_later(c, std::move(notes), ino);
      throw;
    }
    send_waiting_for_inodes(c, std::move(notes), ino);
    fuse_reply_attr(req, &st, c.timeout);
  });
}

void op_readlink(fuse_req_t req, fuse_ino_t ino) {
  guarded(req, "readlink", ino, [&] {
    const std::string target = context(req).volume.readlink(ino);
    fuse_reply_readlink(req, target.c_str());
  });
}

void op_statfs(fuse_req_t req, fuse_ino_t ino) {
  guarded(req, "statfs", ino, [&] {
    FsContext& c = context(req);
    struct statvfs st {};
    st.f_bsize = 4096;
    st.f_frsize = 4096;
    st.f_namemax = 255;
    st.f_files = fsfilcnt_t(16 + 2 * std::max<int64_t>(c.volume.nchunks(), 0));
    // The space that commits can use is the frame's file system's.
    struct statvfs under {};
    if (c.volume.underlying_statfs(under)) {
      const double scale = double(under.f_frsize) / 4096.0;
      st.f_blocks = fsblkcnt_t(double(under.f_blocks) * scale);
      st.f_bfree = fsblkcnt_t(double(under.f_bfree) * scale);
      st.f_bavail = fsblkcnt_t(double(under.f_bavail) * scale);
    }
    st.f_flag = c.volume.writable() ? 0 : ST_RDONLY;
    fuse_reply_statfs(req, &st);
  });
}

// --- directories ---

void op_opendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  guarded(req, "opendir", ino, [&] {
    FsContext& c = context(req);
    // ENOSYS: from now on the kernel opens directories itself, keeping their
    // listings (only for trees that never change, see FsContext).
    if (c.no_opendir) throw FsError{ENOSYS};
    refresh(c);
    std::optional<Node> node = c.volume.node(ino);
    if (!node) throw FsError{ENOENT};
    if (!is_directory(node->kind)) throw FsError{ENOTDIR};
    fi->cache_readdir = 1;
    fi->keep_cache = c.volume.cache_still_valid(ino) ? 1 : 0;
    fuse_reply_open(req, fi);
  });
}

// Cookies: 0 "." 1 ".." then 2 + the volume's cookies. Each call walks only
// as far as the reply buffer holds, so a million chunks stream.
void list_directory(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset, bool plus) {
  FsContext& c = context(req);
  std::optional<Node> dir = c.volume.node(ino);
  if (!dir) throw FsError{ENOENT};
  if (!is_directory(dir->kind)) throw FsError{ENOTDIR};
  size = std::min<size_t>(size, 1 << 20);
  // The kernel asks for up to a megabyte per call (its max_pages): a listing of
  // a few names must not pay for zeroing that much (a store's thousands of
  // small directories spent most of their time there). Left uninitialized,
  // only the pages the entries are written to are ever touched.
  std::unique_ptr<char[]> reply = std::make_unique_for_overwrite<char[]>(size);
  char* const buf = reply.get();
  size_t used = 0;
  // Adds one entry; false when it does not fit (it will come in the next call).
  auto add = [&](const std::string& name, uint64_t child, bool directory, bool self_or_parent, off_t next,
                 bool symlink = false) {
    size_t need;
    bool referenced = false;
    if (plus) {
      fuse_entry_param e{};
      if (self_or_parent) {
        e.attr.st_ino = child;
        e.attr.st_mode = S_IFDIR;  // ino 0: the kernel takes no reference
      } else {
        try {
          e = entry_of(c, child);
          referenced = true;
        } catch (...) {  // attributes unknown now: a later lookup reports the error
          e = fuse_entry_param{};
          e.attr.st_ino = child;
          e.attr.st_mode = directory ? S_IFDIR : symlink ? S_IFLNK : S_IFREG;
        }
      }
      need = fuse_add_direntry_plus(req, buf + used, size - used, name.c_str(), &e, next);
    } else {
      struct stat st {};
      st.st_ino = child;
      st.st_mode = directory ? S_IFDIR : symlink ? S_IFLNK : S_IFREG;
      need = fuse_add_direntry(req, buf + used, size - used, name.c_str(), &st, next);
    }
    if (need > size - used) return false;
    used += need;
    if (referenced) c.volume.remember(child);
    return true;
  };
  int64_t pos = offset;
  if (pos == 0) {
    if (!add(".", ino, true, true, 1)) throw FsError{EINVAL};
    pos = 1;
  }
  if (pos == 1) {
    if (add("..", kRootIno, true, true, 2)) pos = 2;
  }
  if (pos >= 2) {
    for (int64_t cookie = pos - 2;;) {
      std::optional<DirEntry> entry = c.volume.entry(ino, cookie);
      if (!entry || !add(entry->name, entry->ino, entry->directory, false, off_t(entry->next + 2), entry->symlink)) break;
      cookie = entry->next;
    }
  }
  fuse_reply_buf(req, buf, used);
}

void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset, fuse_file_info*) {
  guarded(req, "readdir", ino, [&] { list_directory(req, ino, size, offset, false); });
}

void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset, fuse_file_info*) {
  guarded(req, "readdirplus", ino, [&] { list_directory(req, ino, size, offset, true); });
}

void op_releasedir(fuse_req_t req, fuse_ino_t, fuse_file_info*) { fuse_reply_err(req, 0); }

void op_fsyncdir(fuse_req_t req, fuse_ino_t, int, fuse_file_info*) { fuse_reply_err(req, 0); }

// --- files ---

void op_open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  guarded(req, "open", ino, [&] {
    FsContext& c = context(req);
    c.read_ahead.apply_once();
    KernelNotes refreshed;
    c.volume.maybe_refresh(refreshed);
    // Wait: the reader that opens must not see the old pages or size.
    c.notifier.send(std::move(refreshed), KernelNotifier::Wait::inodes);
    if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) refuse_if_read_only(c, ino);
    KernelNotes notes;
    bool keep_cache = false, direct_io = false;
    std::unique_ptr<OpenFile> file = c.volume.open(ino, fi->flags, keep_cache, direct_io, notes);
    // The open that draws preview.png changes its size from the bound stat showed:
    // the kernel forgets the old size before the opener can ask (fstat, SEEK_HOLE).
    // Attributes alone: no lock the open holds is needed.
    c.notifier.send(std::move(notes), KernelNotifier::Wait::inodes);
    fi->keep_cache = keep_cache;
    fi->direct_io = direct_io;
    file->direct_io = direct_io;
    fi->noflush = !file->writable;
    fi->fh = reinterpret_cast<uint64_t>(file.get());
    if (fuse_reply_open(req, fi) == 0) {
      file.release();
    } else {  // the opener is gone: no release will come
      KernelNotes ignored;
      c.volume.release(std::move(file), ignored);
    }
  });
}

void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset, fuse_file_info* fi) {
  guarded(req, "read", ino, [&] {
    FsContext& c = context(req);
    const OpenFile* file = handle(fi);
    if (!file) throw FsError{EBADF};
    size = std::min<size_t>(size, 64 << 20);
    // Chunk bytes go from the chunk cache straight into the kernel's copy.
    ReadPieces pieces;
    c.volume.read_pieces(ino, *file, offset, size, pieces);
    const std::vector<ByteSpan>& spans = pieces.pieces();
    if (spans.size() > ReadPieces::kReplyPieces) {
      // Many tiny chunks: writev takes at most IOV_MAX pieces, and one copy is cheaper.
      const ByteSpan joined = pieces.joined();
      fuse_reply_buf(req, reinterpret_cast<const char*>(joined.data()), joined.size());
      return;
    }
    std::array<iovec, ReadPieces::kReplyPieces> iov;
    for (size_t k = 0; k < spans.size(); ++k) iov[k] = {const_cast<uint8_t*>(spans[k].data()), spans[k].size()};
    if (spans.empty()) fuse_reply_buf(req, nullptr, 0);
    else fuse_reply_iov(req, iov.data(), int(spans.size()));
  });
}

void op_write(fuse_req_t req, fuse_ino_t ino, const char* data, size_t size, off_t offset, fuse_file_info* fi) {
  guarded(req, "write", ino, [&] {
    FsContext& c = context(req);
    OpenFile* file = handle(fi);
    if (!file) throw FsError{EBADF};
    KernelNotes notes;
    try {
      c.volume.write(*file, offset, ByteSpan(reinterpret_cast<const uint8_t*>(data), size), notes);
    } catch (...) {
      send_later(c, std::move(notes), ino);
      throw;
    }
    send_later(c, std::move(notes), ino);
    fuse_reply_write(req, size);
  });
}

// close() and fsync(): the file's edits are committed now; the reply waits
// for the kernel to drop what the commit made stale.
void commit_and_reply(fuse_req_t req, const char* op, fuse_ino_t ino, fuse_file_info* fi, bool fsync) {
  guarded(req, op, ino, [&] {
    FsContext& c = context(req);
    OpenFile* file = handle(fi);
    if (!file) throw FsError{EBADF};
    KernelNotes notes;
    int error = 0;
    try {
      c.volume.flush(*file, notes, fsync);
    } catch (const FsError& e) {
      error = e.error;
    }
    c.notifier.send(std::move(notes), KernelNotifier::Wait::all);
    fuse_reply_err(req, error);
  });
}

void op_flush(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) { commit_and_reply(req, "flush", ino, fi, false); }

void op_fsync(fuse_req_t req, fuse_ino_t ino, int, fuse_file_info* fi) {
  commit_and_reply(req, "fsync", ino, fi, true);
}

void op_release(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  guarded(req, "release", ino, [&] {
    FsContext& c = context(req);
    std::unique_ptr<OpenFile> file(handle(fi));
    KernelNotes notes;
    if (file) c.volume.release(std::move(file), notes);
    c.notifier.send(std::move(notes), KernelNotifier::Wait::all);
    fuse_reply_err(req, 0);
  });
}

void op_create(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, fuse_file_info* fi) {
  guarded(req, "create", parent, [&] {
    FsContext& c = context(req);
    refuse_if_read_only(c, parent);
    if (!S_ISREG(mode) && (mode & S_IFMT) != 0) throw FsError{EPERM};
    KernelNotes notes;
    auto [ino, file] = c.volume.create(parent, name, fi->flags, notes);
    send_later(c, std::move(notes));
    fuse_entry_param e = entry_of(c, ino);
    fi->keep_cache = 0;
    fi->direct_io = 0;
    fi->noflush = !file->writable;
    fi->fh = reinterpret_cast<uint64_t>(file.get());
    c.volume.remember(ino);
    if (fuse_reply_create(req, &e, fi) == 0) {
      file.release();
    } else {
      c.volume.forget(ino, 1);
      KernelNotes ignored;
      c.volume.release(std::move(file), ignored);
    }
  });
}

void op_mknod(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, dev_t) {
  guarded(req, "mknod", parent, [&] {
    FsContext& c = context(req);
    refuse_if_read_only(c, parent);
    if (!S_ISREG(mode)) throw FsError{EPERM};
    KernelNotes notes;
    auto [ino, file] = c.volume.create(parent, name, O_WRONLY | O_EXCL, notes);
    // The file exists once mknod returns: its empty content is committed now,
    // and a name that cannot be empty (attrs/ is JSON, raw/ a chunk) fails here.
    file->wrote = true;
    try {
      c.volume.flush(*file, notes);
    } catch (...) {
      c.volume.release(std::move(file), notes);
      send_later(c, std::move(notes));
      throw;
    }
    c.volume.release(std::move(file), notes);
    send_later(c, std::move(notes));
    reply_entry(req, c, ino);
  });
}

void op_unlink(fuse_req_t req, fuse_ino_t parent, const char* name) {
  guarded(req, "unlink", parent, [&] {
    FsContext& c = context(req);
    refuse_if_read_only(c, parent);
    KernelNotes notes;
    try {
      c.volume.unlink(parent, name, notes);
    } catch (...) {
      send_later(c, std::move(notes));
      throw;
    }
    send_waiting_for_inodes(c, std::move(notes));
    fuse_reply_err(req, 0);
  });
}

void op_rename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t new_parent, const char* new_name,
               unsigned flags) {
  guarded(req, "rename", parent, [&] {
    FsContext& c = context(req);
    refuse_if_read_only(c, parent);
    refuse_if_read_only(c, new_parent);
    // RENAME_EXCHANGE, RENAME_WHITEOUT: an argument no entry can take.
    if (flags & ~unsigned(RENAME_NOREPLACE)) throw FsError{EINVAL};
    KernelNotes notes;
    try {
      c.volume.rename(parent, name, new_parent, new_name, flags, notes);
    } catch (...) {
      send_later(c, std::move(notes));
      throw;
    }
    send_waiting_for_inodes(c, std::move(notes));
    fuse_reply_err(req, 0);
  });
}

// Directories, links and special files cannot be part of a frame: EPERM, or
// EROFS where nothing can change.
void refuse(fuse_req_t req, const char* op, fuse_ino_t parent) {
  guarded(req, op, parent, [&] {
    refuse_if_read_only(context(req), parent);
    throw FsError{EPERM};
  });
}

void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char*, mode_t) { refuse(req, "mkdir", parent); }
void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char*) { refuse(req, "rmdir", parent); }
void op_symlink(fuse_req_t req, const char*, fuse_ino_t parent, const char*) { refuse(req, "symlink", parent); }
void op_link(fuse_req_t req, fuse_ino_t, fuse_ino_t new_parent, const char*) { refuse(req, "link", new_parent); }
void op_fallocate(fuse_req_t req, fuse_ino_t, int, off_t, off_t, fuse_file_info*) {
  fuse_reply_err(req, EOPNOTSUPP);
}

// --- extended attributes: none. ENOSYS makes the kernel stop asking, which
// spares `ls -l` two round trips per file.

void op_getxattr(fuse_req_t req, fuse_ino_t, const char*, size_t) { fuse_reply_err(req, ENOSYS); }
void op_listxattr(fuse_req_t req, fuse_ino_t, size_t) { fuse_reply_err(req, ENOSYS); }
void op_setxattr(fuse_req_t req, fuse_ino_t, const char*, const char*, size_t, int) { fuse_reply_err(req, ENOSYS); }
void op_removexattr(fuse_req_t req, fuse_ino_t, const char*) { fuse_reply_err(req, ENOSYS); }

fuse_lowlevel_ops make_operations() {
  fuse_lowlevel_ops ops{};
  ops.init = op_init;
  ops.lookup = op_lookup;
  ops.forget = op_forget;
  ops.forget_multi = op_forget_multi;
  ops.getattr = op_getattr;
  ops.setattr = op_setattr;
  // No access(): with default_permissions (always on) the kernel answers
  // access(2) itself, from the modes the tree shows.
  ops.readlink = op_readlink;
  ops.statfs = op_statfs;
  ops.opendir = op_opendir;
  ops.readdir = op_readdir;
  ops.readdirplus = op_readdirplus;
  ops.releasedir = op_releasedir;
  ops.fsyncdir = op_fsyncdir;
  ops.open = op_open;
  ops.read = op_read;
  ops.write = op_write;
  ops.flush = op_flush;
  ops.fsync = op_fsync;
  ops.release = op_release;
  ops.create = op_create;
  ops.mknod = op_mknod;
  ops.unlink = op_unlink;
  ops.rename = op_rename;
  ops.mkdir = op_mkdir;
  ops.rmdir = op_rmdir;
  ops.symlink = op_symlink;
  ops.link = op_link;
  ops.fallocate = op_fallocate;
  ops.getxattr = op_getxattr;
  ops.listxattr = op_listxattr;
  ops.setxattr = op_setxattr;
  ops.removexattr = op_removexattr;
  return ops;
}

}  // namespace

const fuse_lowlevel_ops& lowlevel_operations() {
  static const fuse_lowlevel_ops ops = make_operations();
  return ops;
}

}  // namespace blosc2fs
