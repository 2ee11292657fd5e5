#include "mount.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fuse_lowlevel.h>
#include <spdlog/spdlog.h>

#include "caterva2.h"
#include "collection_open.h"
#include "dynamic_plugins.h"
#include "exit_status.h"
#include "notifier.h"
#include "remote_origin.h"
#include "fs_ops.h"
#include "log.h"
#include "offload.h"
#include "request_pool.h"
#include "sd_notify.h"
#include "dataset_opener.h"
#include "thread_name.h"
#include "thumbnail.h"
#include "uring_support.h"

namespace blosc2fs {

namespace fs = std::filesystem;

namespace {

// Leaf frames of a store kept open at once (each with its share of the cache).
constexpr size_t kMaxOpenLeaves = 64;

// A failure that ends the run with `status` after one line on stderr.
struct Failure {
  int status;
  std::string why;
  bool nothing_there = false;  // a URL naming no object and no dataset below it
};

// Opens FRAME; missing or unreadable -> 2, not a frame / corrupt -> 3.
DatasetContent open_frame(const fs::path& path) {
  try {
    return DatasetContent::open_local_frame(path);
  } catch (const IoError& e) {
    std::error_code ec;
    if (e.error_number() == ENOENT && fs::is_directory(path, ec))
      throw Failure{kExitFrameInvalid, "not a sparse Blosc2 frame nor a .b2d store: " + std::string(e.what())};
    throw Failure{kExitFrameMissing, e.what()};
  } catch (const FormatError& e) {
    throw Failure{kExitFrameInvalid, std::string("not a usable Blosc2 frame nor a .b2z/.b2e store: ") + e.what()};
  }
}

void create_empty_frame(const Options& o, const fs::path& path) {
  try {
    blosc2fs::create_empty_frame(path, o.create.cparams, o.create.chunksize, o.create.sparse);
  } catch (const IoError& e) {
    throw Failure{kExitFrameMissing, std::string("cannot create it: ") + e.what()};
  } catch (const FormatError& e) {
    throw Failure{kExitUsage, std::string("cannot create it with these parameters: ") + e.what()};
  }
  spdlog::info("created {} as an empty {} frame", path.string(), o.create.sparse ? "sparse" : "contiguous");
}

RemoteOrigin open_origin(const Options& o) {
  try {
    return open_remote_origin(o);
  } catch (const RemoteOpenError& e) {
    throw Failure{e.status, e.why, e.error == ENOENT};
  }
}

// A caterva2+ URL: a directory's tree, or one dataset's origin.
CollectionMount open_caterva2_mount(const Options& o, uint64_t cache_budget) {
  try {
    return open_caterva2(o, cache_budget);
  } catch (const RemoteOpenError& e) {
    throw Failure{e.status, e.why};
  }
}

// A URL that names no object and no dataset below it: the place as a
// collection, or the failure of both in one line.
CollectionMount open_remote_collection_mount(const Options& o, uint64_t cache_budget, const Failure& no_dataset) {
  try {
    return open_remote_collection(o, cache_budget);
  } catch (const RemoteOpenError& e) {
    throw Failure{no_dataset.status, no_dataset.why + "; as a collection: " + e.why};
  }
}

// Whether a URL's open failed because nothing is there (rather than a
// refusal, wrong keys or an unreachable server): then its place may be a collection.
bool nothing_there(const Failure& f) { return f.nothing_there; }

// A local folder as a collection; exit status 2 when it cannot be listed.
std::unique_ptr<CollectionTree> open_local_collection_tree(const Options& o, const fs::path& path,
                                                           uint64_t cache_budget) {
  try {
    return open_local_collection(o, path, cache_budget);
  } catch (const std::exception& e) {
    throw Failure{kExitFrameMissing, std::string("a folder of datasets that cannot be listed: ") + e.what()};
  }
}

int print_description(CollectionTree& tree) {
  const std::string text = tree.description();
  std::fwrite(text.data(), 1, text.size(), stdout);
  return std::fflush(stdout) == 0 ? kExitOk : kExitInternal;
}

// What a URL holds: a frame, or a python-blosc2 store.
DatasetContent open_remote_content(const RemoteOrigin& origin) {
  try {
    return DatasetContent::open_remote(origin.source);
  } catch (const FormatError& e) {
    throw Failure{kExitFrameInvalid, std::string("not a usable Blosc2 frame nor a python-blosc2 store: ") + e.what()};
  } catch (const IoError& e) {
    throw Failure{kExitFrameMissing, e.what()};
  }
}

int run_remote_info(const Options& o) {
  try {
    RemoteOrigin origin;
    if (is_caterva2_url(o.frame.string())) {
      CollectionMount c2 = open_caterva2_mount(o, default_cache_size());
      if (c2.tree) {  // a directory: its server.json
        const int status = print_description(*c2.tree);
        c2.origin.shutdown();
        return status;
      }
      origin = std::move(c2.origin);
    } else {
      try {
        origin = open_origin(o);
      } catch (const Failure& f) {
        if (!nothing_there(f)) throw;
        CollectionMount place = open_remote_collection_mount(o, default_cache_size(), f);
        const int status = print_description(*place.tree);
        place.origin.shutdown();
        return status;
      }
    }
    const DatasetContent content = open_remote_content(origin);
    const std::string text = content.description(origin.source_json());
    origin.shutdown();
    std::fwrite(text.data(), 1, text.size(), stdout);
    return std::fflush(stdout) == 0 ? kExitOk : kExitInternal;
  } catch (const Failure& f) {
    std::fprintf(stderr, "blosc2fs: cannot read %s: %s\n", frame_for_messages(o.frame.string()).c_str(), f.why.c_str());
    return f.status;
  }
}

// Watches for the end of the FUSE session (an unmount, a signal) and then
// aborts the requests in flight: the session's loop waits for every worker,
// and a worker may be waiting on a slow server.
class SessionEndWatcher {
 public:
  SessionEndWatcher(fuse_session* se, std::function<void()> on_end)
      : thread_([se, on_end = std::move(on_end)](std::stop_token stop) {
          name_this_thread("b2fs-watcher");
          while (!stop.stop_requested()) {
            if (fuse_session_exited(se)) {
              on_end();
              return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
          }
        }) {}

 private:
  std::jthread thread_;
};

void check_mountpoint(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw Failure{kExitMountpoint, "mount point " + path.string() + ": " + std::strerror(errno)};
  if (!S_ISDIR(st.st_mode)) throw Failure{kExitMountpoint, "mount point " + path.string() + " is not a directory"};
  if (::access(path.c_str(), R_OK | X_OK) != 0)
    throw Failure{kExitMountpoint, "mount point " + path.string() + ": " + std::strerror(errno)};
}

// A dataset the mount point covers, or a directory dataset (a sparse frame, a
// store, a folder collection) that holds the mount point, is reached through
// the mount itself once it is made: the daemon's own reads and commits would
// wait on requests only it can answer (over io_uring, for good, its threads
// stuck in the kernel), and its writes would land in its own tree.
void check_dataset_apart(const fs::path& dataset, const fs::path& mountpoint) {
  std::error_code ec;
  auto resolved = [&ec](const fs::path& p) {
    fs::path r = fs::weakly_canonical(p, ec);
    return r.has_filename() || r == r.root_path() ? r : r.parent_path();  // no trailing separator
  };
  const fs::path data = resolved(dataset);
  if (ec) return;  // what cannot be resolved is reported by the opening
  const fs::path mount = resolved(mountpoint);
  if (ec) return;
  auto within = [](const fs::path& inner, const fs::path& outer) {
    return std::mismatch(outer.begin(), outer.end(), inner.begin(), inner.end()).first == outer.end();
  };
  if (data == mount)
    throw Failure{kExitMountpoint, "mount point " + mountpoint.string() + " is " + dataset.string() +
                                       " itself, which the mount would hide from the daemon: mount it elsewhere"};
  if (within(data, mount))
    throw Failure{kExitMountpoint, "mount point " + mountpoint.string() + " holds " + dataset.string() +
                                       ", which the mount would hide from the daemon itself: mount it elsewhere"};
  if (fs::is_directory(data, ec) && within(mount, data))
    throw Failure{kExitMountpoint, "mount point " + mountpoint.string() + " lies inside " + dataset.string() +
                                       ", which the daemon reads and writes: mount it elsewhere"};
}

struct SessionDeleter {
  void operator()(fuse_session* se) const { fuse_session_destroy(se); }
};
struct LoopConfigDeleter {
  void operator()(fuse_loop_config* cfg) const { fuse_loop_cfg_destroy(cfg); }
};

class SignalHandlers {
 public:
  explicit SignalHandlers(fuse_session* se) : se_(se) {
    if (fuse_set_signal_handlers(se_) != 0) throw Failure{kExitInternal, "cannot install signal handlers"};
  }
  ~SignalHandlers() { fuse_remove_signal_handlers(se_); }
  SignalHandlers(const SignalHandlers&) = delete;
  SignalHandlers& operator=(const SignalHandlers&) = delete;

 private:
  fuse_session* se_;
};

// Whether libfuse can run fusermount3, which mounts for users other than root:
// it tries /usr/bin (its FUSERMOUNT_DIR on Debian), then $PATH. Only the
// distribution's fuse3 package installs it setuid, so a pip-installed blosc2fs
// (docs/python.md) may lack it, and the failure must say what to install.
bool fusermount_reachable() {
  if (::access("/usr/bin/fusermount3", X_OK) == 0) return true;
  const char* path = std::getenv("PATH");
  for (std::string_view dirs = path ? path : ""; !dirs.empty();) {
    const size_t colon = dirs.find(':');
    const std::string_view dir = dirs.substr(0, colon);
    if (!dir.empty() && ::access((std::string(dir) + "/fusermount3").c_str(), X_OK) == 0) return true;
    dirs = colon == std::string_view::npos ? std::string_view() : dirs.substr(colon + 1);
  }
  return false;
}

class Mounted {
 public:
  Mounted(fuse_session* se, const fs::path& mountpoint) : se_(se) {
    if (fuse_session_mount(se_, mountpoint.c_str()) != 0) {
      if (::geteuid() != 0 && !fusermount_reachable())
        throw Failure{kExitFuse, "the FUSE mount failed: fusermount3 is missing, which users other than root "
                                 "need (install the distribution's fuse3 package)"};
      throw Failure{kExitFuse, "the FUSE mount failed (is /dev/fuse usable? see the message above)"};
    }
  }
  ~Mounted() { fuse_session_unmount(se_); }
  Mounted(const Mounted&) = delete;
  Mounted& operator=(const Mounted&) = delete;

 private:
  fuse_session* se_;
};

// The argv libfuse parses: mount options plus -d for request tracing.
class FuseArgs {
 public:
  FuseArgs(const Options& o, const fs::path& frame, bool writable, bool io_uring) {
    strings_.push_back("blosc2fs");
    if (o.debug) strings_.push_back("-d");
    strings_.push_back("-o");
    strings_.push_back(fuse_option_list(o, frame.string(), writable));
    if (io_uring) {  // libfuse's own option: it asks for io_uring in its FUSE_INIT reply
      strings_.push_back("-o");
      strings_.push_back("io_uring");
    }
    for (std::string& s : strings_) argv_.push_back(s.data());
    argv_.push_back(nullptr);
    args_ = FUSE_ARGS_INIT(int(strings_.size()), argv_.data());
  }
  ~FuseArgs() { fuse_opt_free_args(&args_); }
  FuseArgs(const FuseArgs&) = delete;
  FuseArgs& operator=(const FuseArgs&) = delete;
  fuse_args* get() { return &args_; }

 private:
  std::vector<std::string> strings_;
  std::vector<char*> argv_;
  fuse_args args_{};
};

// A python-blosc2 store: store.json; exit status 3 when it cannot be read.
int run_store_info(const Options& o, const fs::path& path) {
  try {
    std::string text = DatasetContent::open_local_store(path).description();
    std::fwrite(text.data(), 1, text.size(), stdout);
    return std::fflush(stdout) == 0 ? kExitOk : kExitInternal;
  } catch (const IoError& e) {
    std::fprintf(stderr, "blosc2fs: cannot read %s: %s\n", frame_for_messages(o.frame.string()).c_str(), e.what());
    return kExitFrameMissing;
  } catch (const FormatError& e) {
    std::fprintf(stderr, "blosc2fs: cannot read %s: %s\n", frame_for_messages(o.frame.string()).c_str(), e.what());
    return kExitFrameInvalid;
  }
}

// How long the Python lookup of one plugin may take (it imports the package).
constexpr std::chrono::seconds kPluginLookupTimeout{10};

bool has_allow_other(const Options& o) {
  for (const std::string& opt : o.fuse_options)
    if (opt == "allow_other" || opt == "allow_root") return true;
  return false;
}

// Loads the plugin libraries of the codecs c-blosc2 loads at run time, once, before
// anything is read (dynamic_plugins.h). A -o plugin_path that does not load fails
// the mount; a plugin that is not installed leaves its codec EIO, said once when
// a chunk of it is met. Returns the log lines, written once the mount's log is.
struct PluginLogLine {
  spdlog::level::level_enum level;
  std::string text;
};
std::vector<PluginLogLine> load_plugins(const Options& o) {
  DynamicPluginSetup setup;
  try {
    setup = load_dynamic_plugins(o.plugin_paths, "python3", kPluginLookupTimeout);
  } catch (const PluginLoadError& e) {
    throw Failure{kExitUsage, std::string("plugin_path: ") + e.what()};
  }
  std::vector<PluginLogLine> lines;
  // Other users' reads run this library's code: say which it is where they are served.
  const auto level = has_allow_other(o) ? spdlog::level::warn : spdlog::level::info;
  for (const std::string& line : setup.loaded) lines.push_back({level, "loaded the plugin of " + line});
  for (const std::string& line : setup.refused) lines.push_back({spdlog::level::warn, "plugin not loaded: " + line});
  for (const std::string& line : setup.notes) lines.push_back({spdlog::level::debug, "no plugin: " + line});
  return lines;
}

int run_info(const Options& o) {
  try {
    load_plugins(o);  // --info logs nothing: its stdout is frame.json
  } catch (const Failure& f) {
    std::fprintf(stderr, "blosc2fs: %s\n", f.why.c_str());
    return f.status;
  }
  if (is_remote_url(o.frame.string())) return run_remote_info(o);
  if (is_local_collection(fs::absolute(o.frame))) {
    try {
      Options read_only = o;
      read_only.read_only = true;
      return print_description(*open_local_collection_tree(read_only, fs::absolute(o.frame), default_cache_size()));
    } catch (const Failure& f) {
      std::fprintf(stderr, "blosc2fs: cannot read %s: %s\n", frame_for_messages(o.frame.string()).c_str(), f.why.c_str());
      return f.status;
    }
  }
  if (is_local_store(fs::absolute(o.frame))) return run_store_info(o, fs::absolute(o.frame));
  try {
    std::string text = open_frame(fs::absolute(o.frame)).description();
    std::fwrite(text.data(), 1, text.size(), stdout);
    return std::fflush(stdout) == 0 ? kExitOk : kExitInternal;
  } catch (const Failure& f) {
    std::fprintf(stderr, "blosc2fs: cannot read %s: %s\n", frame_for_messages(o.frame.string()).c_str(), f.why.c_str());
    return f.status;
  } catch (const FormatError& e) {
    std::fprintf(stderr, "blosc2fs: cannot read %s: %s\n", frame_for_messages(o.frame.string()).c_str(), e.what());
    return kExitFrameInvalid;
  }
}

// What a mount serves: a frame's Volume, a store's tree, or a collection (a
// folder, prefix, web index or Caterva2 directory of datasets).
struct ServedTree {
  std::shared_ptr<MountTree> tree;
  const char* counted = "chunks";  // what tree->nchunks() counts, for the line that says the mount is made
  bool names_may_block = false;    // a store's or a collection's names open datasets
  std::string name;  // the frame's path or the URL, for messages and fsname=
  bool writable = false;
  bool unchanging = false;
  std::function<void()> on_session_end;
  std::function<void()> before_fork, after_fork;
};

// A URL's mount: read-only, unchanging, its files owned by the mounting user.
ServedTree open_remote_tree(const Options& o, uint64_t cache_budget) {
  RemoteOrigin origin;
  auto served_collection = [&](CollectionMount place, const char* what) {
    check_mountpoint(fs::absolute(o.mountpoint));
    ServedTree served;
    served.name = place.origin.url;
    served.on_session_end = place.origin.shutdown;
    served.before_fork = place.origin.before_fork;
    served.after_fork = place.origin.after_fork;
    served.tree = std::move(place.tree);
    served.counted = "entries listed";
    served.names_may_block = true;
    spdlog::info("{}: {} mounts read-only: every write fails with EROFS", served.name, what);
    return served;
  };
  if (is_caterva2_url(o.frame.string())) {
    CollectionMount c2 = open_caterva2_mount(o, cache_budget);
    if (c2.tree) return served_collection(std::move(c2), "a Caterva2 directory");
    origin = std::move(c2.origin);
  } else {
    try {
      origin = open_origin(o);
    } catch (const Failure& f) {
      if (!nothing_there(f)) throw;
      return served_collection(open_remote_collection_mount(o, cache_budget, f), "a remote collection");
    }
  }
  check_mountpoint(fs::absolute(o.mountpoint));
  ServedTree served;
  served.name = origin.url;
  served.unchanging = true;
  served.on_session_end = origin.shutdown;
  served.before_fork = origin.before_fork;
  served.after_fork = origin.after_fork;
  VolumeOptions vo;
  vo.access = AccessOverrides{o.uid, o.gid, o.umask};
  vo.fixed_access = FrameAccess{::getuid(), ::getgid(), 0444, 0};
  vo.live_json_fields = origin.source_json;
  vo.more_stats = io_uring_stats;
  vo.cache_budget = cache_budget;
  try {
    OpenedDataset opened = open_remote_dataset(origin.source, origin.url, vo, kMaxOpenLeaves);
    served.tree = std::move(opened.tree);
    served.counted = opened.store ? "keys" : "chunks";
    served.names_may_block = opened.store;
  } catch (const FormatError& e) {
    throw Failure{kExitFrameInvalid, std::string("not a usable Blosc2 frame nor a python-blosc2 store: ") + e.what()};
  } catch (const IoError& e) {
    throw Failure{kExitFrameMissing, e.what()};
  }
  spdlog::info("{}: remote data mounts read-only: every write fails with EROFS", origin.url);
  return served;
}

ServedTree open_local_tree(const Options& o, uint64_t cache_budget) {
  // fuse_daemonize changes to "/", and sparse frames open chunk files by path.
  const fs::path frame_path = fs::absolute(o.frame);
  const fs::path mountpoint = fs::absolute(o.mountpoint);
  check_dataset_apart(frame_path, mountpoint);

  std::error_code ec;
  if (!fs::exists(frame_path, ec)) {
    if (ec && ec != std::errc::no_such_file_or_directory)
      throw Failure{kExitFrameMissing, ec.message()};
    if (!o.create.create) throw Failure{kExitFrameMissing, "no such file or directory (use -o create to create it)"};
    create_empty_frame(o, frame_path);
  }
  if (is_local_collection(frame_path)) {
    // A folder of datasets (neither a sparse frame's directory nor a .b2d store).
    std::unique_ptr<CollectionTree> collection = open_local_collection_tree(o, frame_path, cache_budget);
    check_mountpoint(mountpoint);
    ServedTree served;
    served.name = frame_path.string();
    served.writable = collection->writable();
    served.counted = "entries listed";
    served.names_may_block = true;
    served.tree = std::move(collection);
    return served;
  }
  // A frame that cannot be read refuses the mount with its own exit status.
  const bool store = is_local_store(frame_path);
  if (!store) open_frame(frame_path);
  check_mountpoint(mountpoint);
  VolumeOptions vo;
  vo.access = AccessOverrides{o.uid, o.gid, o.umask};
  vo.more_stats = io_uring_stats;
  vo.cache_budget = cache_budget;
  vo.preferred_chunksize = o.create.chunksize;
  vo.new_array_chunkshape = o.create.chunkshape;
  vo.new_array_blockshape = o.create.blockshape;
  OpenedDataset opened;
  try {
    opened = open_local_dataset(frame_path, o.read_only != true, vo, kMaxOpenLeaves);
  } catch (const FormatError& e) {
    throw Failure{kExitFrameInvalid, e.what()};
  } catch (const IoError& e) {
    throw Failure{kExitFrameMissing, e.what()};
  }
  // Said when writing was asked for; of a .b2z or .b2e only when asked for with -o rw.
  if (!opened.read_only_because.empty() && (o.read_only == false || !(opened.store && opened.unchanging)))
    spdlog::warn("{}: {}: mounting read-only", frame_path.string(), opened.read_only_because);
  ServedTree served;
  served.name = frame_path.string();
  served.writable = opened.writable;
  served.unchanging = opened.unchanging;
  served.counted = opened.store ? "keys" : "chunks";
  served.names_may_block = opened.store;
  served.tree = std::move(opened.tree);
  return served;
}

// Whether to ask for FUSE over io_uring, and when -o io_uring=auto cannot have
// it, the line that says why (logged once the mount is made). =on where it
// cannot be had fails the mount.
struct UringChoice {
  bool ask = false;
  std::string why_not;
};
UringChoice choose_io_uring(const Options& o) {
  if (o.io_uring == IoUringMode::off || o.single_threaded) return {};
  UringSupport support = uring_support();
  if (support.available) return {true, ""};
  if (o.io_uring == IoUringMode::on) throw Failure{kExitFuse, "-o io_uring=on: " + support.why_not};
  return {false, "requests go through /dev/fuse, not io_uring: " + support.why_not};
}

int serve(const Options& o, ServedTree& served, uint64_t cache_budget, const std::vector<PluginLogLine>& plugin_log) {
  const fs::path mountpoint = fs::absolute(o.mountpoint);
  const bool writable = served.writable;
  MountTree& tree = *served.tree;
  KernelNotifier notifier;
  // The canonical path: it is what /proc/self/mountinfo shows once mounted.
  ReadAheadSetter read_ahead(fs::weakly_canonical(mountpoint), o.read_ahead.value_or(kDefaultReadAhead) >> 10);
  FsContext context{tree, notifier, read_ahead};
  context.unchanging = served.unchanging;

  const UringChoice uring = choose_io_uring(o);
  FuseArgs args(o, served.name, writable, uring.ask);
  const fuse_lowlevel_ops& ops = offloading_operations();
  std::unique_ptr<fuse_session, SessionDeleter> session(fuse_session_new(args.get(), &ops, sizeof ops, &context));
  if (!session) throw Failure{kExitUsage, "libfuse refused the mount options (see the message above)"};
  SignalHandlers signals(session.get());
  Mounted mounted(session.get(), mountpoint);
  if (!uring.why_not.empty()) spdlog::info("{}", uring.why_not);

  if (served.before_fork) served.before_fork();
  if (fuse_daemonize(o.foreground ? 1 : 0) != 0) throw Failure{kExitInternal, "cannot start in the background"};
  if (served.after_fork) served.after_fork();
  if (!o.foreground) init_logging(o.log_level, true);
  // Requests that may decode, fetch or commit are answered by pools (offload.h),
  // whose threads start with the first such request, after fuse_daemonize.
  Offload offload;
  offload.names_may_block = served.names_may_block;
  offload.fetches = is_remote_url(o.frame.string());
  offload.io_uring = o.io_uring;
  offload.session = session.get();
  std::optional<RequestPools> pools;
  if (!o.single_threaded) offload.pools = &pools.emplace(o.max_threads ? o.max_threads : kDefaultMaxThreads);
  context.offload = &offload;
  // After fuse_daemonize: threads do not survive its fork.
  std::optional<SessionEndWatcher> end_watcher;
  if (served.on_session_end) end_watcher.emplace(session.get(), served.on_session_end);
  notifier.start(session.get(), [&tree] {
    KernelNotes notes;
    tree.maybe_refresh(notes);
    return notes;
  });
  set_missing_plugin_reporter([](const std::string& line) { spdlog::warn("{}", line); });
  for (const PluginLogLine& line : plugin_log) spdlog::log(line.level, "{}", line.text);
  spdlog::info("mounted {} on {}{}: {} {}, cache budget {} bytes, {}", served.name, mountpoint.string(),
               writable ? "" : " read-only", tree.nchunks(), served.counted, cache_budget,
               o.single_threaded ? "single-threaded" : "multi-threaded");
  notify_systemd(("READY=1\nSTATUS=serving " + served.name + " on " + mountpoint.string()).c_str());

  int ret;
  if (o.single_threaded) {
    ret = fuse_session_loop(session.get());
  } else {
    std::unique_ptr<fuse_loop_config, LoopConfigDeleter> config(fuse_loop_cfg_create());
    if (!config) throw std::bad_alloc();
    fuse_loop_cfg_set_clone_fd(config.get(), o.clone_fd ? 1 : 0);
    fuse_loop_cfg_set_idle_threads(config.get(), o.max_idle_threads);
    if (o.max_threads) fuse_loop_cfg_set_max_threads(config.get(), o.max_threads);
    ret = fuse_session_loop_mt(session.get(), config.get());
  }
  // Every thread that handed them requests has ended, and waited for their answers.
  pools.reset();
  notify_systemd("STOPPING=1");
  notifier.stop();
  tree.shutdown();  // what is still written and not committed, and a compaction when due
  const std::string summary = tree.summary();
  spdlog::info("unmounting {}{}{}", mountpoint.string(), summary.empty() ? "" : ": ", summary);
  if (ret == -ECONNABORTED) {
    // The kernel tore the connection down (an unmount, a lazy detach's last
    // close, an abort) just as a worker had taken a request off the queue:
    // the same end as the ENODEV libfuse treats as an unmount, seen a moment
    // earlier. What was staged is committed above.
    spdlog::info("the kernel closed the connection of {} while a request was in flight", mountpoint.string());
    ret = 0;
  }
  if (ret < 0) {
    spdlog::error("the FUSE loop failed: {}", std::strerror(-ret));
    return kExitInternal;
  }
  return kExitOk;
}

int mount_and_serve(const Options& o) {
  init_logging(o.log_level, false);
  const std::vector<PluginLogLine> plugin_log = load_plugins(o);
  const uint64_t cache_budget = o.cache_size.value_or(default_cache_size());
  ServedTree served = is_remote_url(o.frame.string()) ? open_remote_tree(o, cache_budget)
                                                      : open_local_tree(o, cache_budget);
  return serve(o, served, cache_budget, plugin_log);
}

}  // namespace

int run(const Options& o) {
  switch (o.action) {
    case Options::Action::help:
      std::fputs(usage_text("blosc2fs").c_str(), stdout);
      return kExitOk;
    case Options::Action::version:
      std::printf("blosc2fs %s (libfuse %s)\n", BLOSC2FS_VERSION, fuse_pkgversion());
      return kExitOk;
    case Options::Action::info:
      return run_info(o);
    case Options::Action::thumbnail:
      return run_thumbnail(o);
    case Options::Action::mount:
      break;
  }
  try {
    return mount_and_serve(o);
  } catch (const Failure& f) {
    write_to_stderr("blosc2fs: cannot mount " + frame_for_messages(o.frame.string()) + ": " + f.why + "\n");
    return f.status;
  }
}

}  // namespace blosc2fs
