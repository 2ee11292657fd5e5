// The command line: blosc2fs [OPTIONS] FRAME MOUNTPOINT, with FUSE's
// conventions (-o a,b=c repeatable, -f, -d, -s, -h, -V) and everything that
// /etc/fstab and mount.fuse3 pass (x-*, noauto, _netdev, nofail, user, ...).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "chunk_codec.h"
#include "dynamic_plugins.h"

namespace blosc2fs {

// A command line that cannot be used; the message is one line for the user.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Options of a mount of a URL (http://, https://, s3://): where and how the
// bytes are fetched. Never a credential: those come from the environment,
// files named here, or .netrc.
struct RemoteMountOptions {
  std::string s3_endpoint;  // a non-AWS S3 store (path-style addressing)
  std::string s3_region;
  std::filesystem::path ca_file;           // a private CA for TLS
  std::filesystem::path http_header_file;  // "Name: value" lines sent with every request (a bearer token)
  std::optional<unsigned> connect_timeout;  // seconds
  std::optional<unsigned> timeout;          // seconds without a byte before a request is given up
  std::optional<unsigned> retries;          // attempts per request
  std::optional<uint64_t> prefetch;         // bytes fetched ahead of sequential readers
  std::filesystem::path cache_dir;          // the persistent disk cache (off when empty)
  std::optional<uint64_t> cache_dir_size;
  std::filesystem::path caterva2_login_file;  // a Caterva2 user and password (caterva2+ URLs)
  std::optional<unsigned> list_ttl;            // seconds a collection's (or Caterva2) listing is trusted
};

// Whether a FRAME argument names remote data: http://, https:// or s3://.
bool is_remote_url(const std::string& argument);
// FRAME as messages may show it: a URL without a user name, password or query
// string (which may hold a signature), whatever else is wrong with it.
std::string frame_for_messages(const std::string& argument);

// -o create and the parameters of the frame it creates.
struct CreateOptions {
  bool create = false;
  CompressParams cparams;  // codec, clevel, typesize, blocksize, filters
  int32_t chunksize = 1 << 20;
  bool sparse = false;
  // A new array's chunk and block shapes (cp x.npy MOUNT/array.npy); absent:
  // chosen as python-blosc2 chooses them (b2nd_partition.h).
  std::optional<std::vector<int64_t>> chunkshape, blockshape;
};

// -o io_uring: the kernel's FUSE requests over io_uring where it offers them
// (automatic), or the mount fails where it cannot have them (on), or always
// through /dev/fuse (off).
enum class IoUringMode { automatic, on, off };

struct Options {
  enum class Action { mount, help, version, info, thumbnail };
  Action action = Action::mount;

  std::filesystem::path frame;
  std::filesystem::path mountpoint;
  // --thumbnail FRAME OUTPUT SIZE (thumbnail.h).
  std::filesystem::path thumbnail_output;
  int64_t thumbnail_size = 0;

  bool foreground = false;
  bool debug = false;
  bool single_threaded = false;
  std::optional<bool> read_only;  // -o ro / rw; unset: the default rule
  std::optional<uint64_t> cache_size;
  std::optional<uint64_t> read_ahead;  // bytes; 0: the kernel's default
  std::string log_level = "info";  // trace, debug, info, warn, error
  CreateOptions create;
  RemoteMountOptions remote;
  // -o plugin_path=NAME:LIB: the plugin library of a codec loaded at run time
  // (otherwise the Python on PATH is asked, as c-blosc2 does).
  std::vector<PluginPathOption> plugin_paths;

  // Applied to stat, as sshfs does.
  std::optional<uid_t> uid;
  std::optional<gid_t> gid;
  std::optional<mode_t> umask;

  // The multi-threaded loop.
  unsigned max_idle_threads = 10;
  std::optional<size_t> max_open;  // datasets of a collection (and leaves of a store) kept open at once
  unsigned max_threads = 0;  // 0: kDefaultMaxThreads
  bool clone_fd = true;
  IoUringMode io_uring = IoUringMode::automatic;

  // Passed to fuse_session_new as "-o NAME[=VALUE]" (allow_other, fsname=, nodev, ...).
  std::vector<std::string> fuse_options;
};

// Parses argv. Throws UsageError on anything unusable.
Options parse_command_line(int argc, const char* const* argv);

// The -o list handed to libfuse: rw or ro, default_permissions (always),
// fsname= (FSNAME unless given), subtype=blosc2fs (unless given), then the
// FUSE options given, values escaped for fuse_opt.
std::string fuse_option_list(const Options& options, const std::string& fsname, bool writable);

// "256M", "2G", "1.5G", "4096": a byte count (K, M, G, T are powers of 1024;
// an optional trailing "B" or "iB" is accepted). Throws UsageError.
uint64_t parse_size(const std::string& text, const std::string& what);

// The most threads of libfuse's /dev/fuse loop, and of the pool that answers
// long requests (request_pool.h), without -o max_threads: libfuse's default.
constexpr unsigned kDefaultMaxThreads = 10;

// The kernel readahead window set on the mount (see read_ahead.h).
constexpr uint64_t kDefaultReadAhead = 4 << 20;

// The default cache budget: 1/8 of physical memory, at least 64 MiB, at most 4 GiB.
uint64_t default_cache_size();

std::string usage_text(const std::string& program);

}  // namespace blosc2fs
