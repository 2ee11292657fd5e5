#include "options.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <string_view>

namespace blosc2fs {

namespace {

// Accepted from fstab / mount.fuse3 and ignored: they concern mount(8) or
// systemd. `user` and `users` say who may run mount(8) for an fstab line
// (mount.fuse3 drops them, mount(8) may pass user=NAME); they change nothing
// of who may do what on the mount, which the frame's permissions decide.
constexpr std::array<std::string_view, 16> kIgnored{
    "noauto", "auto", "nofail", "_netdev", "user", "users", "nouser", "owner",
    "group", "defaults", "dev", "suid", "exec", "nonempty", "relatime", "atime"};

// Handed to libfuse as they are (mount options and kernel flags).
// default_permissions is not among them: it is always on (fuse_option_list).
constexpr std::array<std::string_view, 10> kFuseFlags{
    "allow_other", "allow_root", "auto_unmount", "nodev", "nosuid",
    "noexec", "noatime", "nodiratime", "sync", "dirsync"};
constexpr std::array<std::string_view, 8> kFuseValued{
    "fsname", "subtype", "max_read", "blksize", "context", "fscontext", "defcontext", "rootcontext"};

template <size_t N>
bool contains(const std::array<std::string_view, N>& list, std::string_view s) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

uint64_t parse_uint(const std::string& text, const std::string& what, uint64_t max, int base = 10) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, base);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v > max)
    throw UsageError("invalid value for " + what + ": '" + text + "'");
  return v;
}

Codec parse_codec(const std::string& name) {
  if (std::optional<Codec> c = codec_named(name)) return *c;
  throw UsageError("unknown codec '" + name + "' (blosclz, lz4, lz4hc, zlib, zstd)");
}

// "delta+shuffle", "trunc_prec:10+shuffle", "none": filters in the order they
// apply, placed in the last pipeline slots as c-blosc2's defaults are.
void parse_filters(const std::string& text, CompressParams& cp) {
  struct Known {
    std::string_view name;
    uint8_t id;
  };
  constexpr std::array<Known, 6> kKnown{{{"none", kFilterNone},
                                         {"shuffle", kFilterShuffle},
                                         {"bitshuffle", kFilterBitshuffle},
                                         {"delta", kFilterDelta},
                                         {"trunc_prec", kFilterTruncPrec},
                                         {"bytedelta", kFilterBytedelta}}};
  std::vector<std::pair<uint8_t, uint8_t>> pipeline;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('+', start);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(start, end - start);
    std::string meta;
    if (size_t colon = item.find(':'); colon != std::string::npos) {
      meta = item.substr(colon + 1);
      item.resize(colon);
    }
    auto known = std::find_if(kKnown.begin(), kKnown.end(), [&](const Known& k) { return k.name == item; });
    if (known == kKnown.end())
      throw UsageError("unknown filter '" + item + "' (none, shuffle, bitshuffle, delta, trunc_prec, bytedelta)");
    uint8_t meta_value = meta.empty() ? 0 : uint8_t(parse_uint(meta, "filter " + item, 255));
    if (known->id != kFilterNone) pipeline.emplace_back(known->id, meta_value);
    start = end + 1;
  }
  if (pipeline.size() > size_t(kMaxFilters)) throw UsageError("at most 6 filters");
  cp.filters.fill(0);
  cp.filters_meta.fill(0);
  size_t slot = kMaxFilters - pipeline.size();
  for (auto [id, meta] : pipeline) {
    cp.filters[slot] = id;
    cp.filters_meta[slot] = meta;
    ++slot;
  }
}

// Whether the comma before list[from] separates the dimensions of a shape
// (chunkshape=64,64,16) rather than two options: `cur` is a shape option and
// the text up to the next comma is a number.
bool continues_shape(const std::string& cur, const std::string& list, size_t from) {
  if (!cur.starts_with("chunkshape=") && !cur.starts_with("blockshape=")) return false;
  size_t end = list.find(',', from);
  if (end == std::string::npos) end = list.size();
  return end > from && std::all_of(list.begin() + long(from), list.begin() + long(end),
                                   [](char c) { return c >= '0' && c <= '9'; });
}

// Splits "a,b=c" on commas not escaped with a backslash (fsname=a\,b).
std::vector<std::string> split_option_list(const std::string& list) {
  std::vector<std::string> out;
  std::string cur;
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i] == '\\' && i + 1 < list.size()) {
      cur += list[++i];
    } else if (list[i] == ',' && !continues_shape(cur, list, i + 1)) {
      out.push_back(std::move(cur));
      cur.clear();
    } else {
      cur += list[i];
    }
  }
  out.push_back(std::move(cur));
  return out;
}

void apply_option(Options& o, const std::string& option) {
  if (option.empty()) return;
  const size_t eq = option.find('=');
  const std::string name = option.substr(0, eq);
  const bool has_value = eq != std::string::npos;
  const std::string value = has_value ? option.substr(eq + 1) : "";
  auto need_value = [&] {
    if (!has_value || value.empty()) throw UsageError("option '" + name + "' needs a value: -o " + name + "=...");
  };
  auto no_value = [&] {
    if (has_value) throw UsageError("option '" + name + "' takes no value");
  };
  CompressParams& cp = o.create.cparams;

  if (name.starts_with("x-") || name == "comment") return;  // systemd / mount(8) private
  if (contains(kIgnored, name)) return;
  if (name == "ro" || name == "rw") {
    no_value();
    o.read_only = name == "ro";
  } else if (name == "cache_size") {
    need_value();
    o.cache_size = parse_size(value, "cache_size");
  } else if (name == "read_ahead") {
    need_value();
    o.read_ahead = parse_size(value, "read_ahead");
    if (*o.read_ahead > (uint64_t(1) << 30)) throw UsageError("read_ahead is at most 1G");
  } else if (name == "log_level") {
    need_value();
    const std::string level = value == "warning" ? "warn" : value;
    if (level != "trace" && level != "debug" && level != "info" && level != "warn" && level != "error")
      throw UsageError("invalid log_level '" + value + "' (trace, debug, info, warn, error)");
    o.log_level = level;
  } else if (name == "debug") {
    no_value();
    o.debug = o.foreground = true;
    o.log_level = "debug";
  } else if (name == "create") {
    no_value();
    o.create.create = true;
  } else if (name == "sparse") {
    no_value();
    o.create.sparse = true;
  } else if (name == "codec") {
    need_value();
    cp.codec = parse_codec(value);
  } else if (name == "clevel") {
    need_value();
    cp.clevel = int(parse_uint(value, "clevel", 9));
  } else if (name == "typesize") {
    need_value();
    cp.typesize = int32_t(parse_uint(value, "typesize", 1 << 24));
    if (cp.typesize == 0) throw UsageError("invalid value for typesize: '0'");
  } else if (name == "chunksize") {
    need_value();
    uint64_t size = parse_size(value, "chunksize");
    if (size == 0 || size > uint64_t(INT32_MAX - kExtendedHeaderSize))
      throw UsageError("chunksize must be between 1 byte and 2G");
    o.create.chunksize = int32_t(size);
  } else if (name == "blocksize") {
    need_value();
    uint64_t size = parse_size(value, "blocksize");
    if (size > uint64_t(kMaxBlocksize)) throw UsageError("blocksize is at most " + std::to_string(kMaxBlocksize));
    cp.blocksize = int32_t(size);
  } else if (name == "chunkshape" || name == "blockshape") {
    need_value();
    std::vector<int64_t> shape;
    size_t from = 0;
    while (from <= value.size()) {
      size_t end = value.find_first_of(",x:", from);
      if (end == std::string::npos) end = value.size();
      const uint64_t dim = parse_uint(value.substr(from, end - from), name, INT32_MAX);
      if (dim == 0) throw UsageError(name + ": a dimension of 0 items");
      shape.push_back(int64_t(dim));
      if (shape.size() > 16) throw UsageError(name + ": more than 16 dimensions");
      from = end + 1;
    }
    (name == "chunkshape" ? o.create.chunkshape : o.create.blockshape) = std::move(shape);
  } else if (name == "filters") {
    need_value();
    parse_filters(value, cp);
  } else if (name == "uid") {
    need_value();
    o.uid = uid_t(parse_uint(value, "uid", UINT32_MAX - 1));
  } else if (name == "gid") {
    need_value();
    o.gid = gid_t(parse_uint(value, "gid", UINT32_MAX - 1));
  } else if (name == "umask") {
    need_value();
    o.umask = mode_t(parse_uint(value, "umask", 0777, 8));
  } else if (name == "max_open") {
    need_value();
    const size_t n = size_t(parse_uint(value, name, 1'000'000));
    if (n == 0) throw UsageError("max_open is at least 1");
    o.max_open = n;
  } else if (name == "max_idle_threads") {
    need_value();
    o.max_idle_threads = unsigned(parse_uint(value, "max_idle_threads", 100000));
  } else if (name == "max_threads") {
    need_value();
    o.max_threads = unsigned(parse_uint(value, "max_threads", 100000));
    if (o.max_threads == 0) throw UsageError("invalid value for max_threads: '0'");
  } else if (name == "io_uring") {
    if (!has_value || value == "on") o.io_uring = IoUringMode::on;  // libfuse's own spelling: -o io_uring
    else if (value == "auto") o.io_uring = IoUringMode::automatic;
    else if (value == "off") o.io_uring = IoUringMode::off;
    else throw UsageError("invalid value for io_uring: '" + value + "' (auto, on, off)");
  } else if (name == "clone_fd") {
    no_value();
    o.clone_fd = true;
  } else if (name == "s3_endpoint" || name == "s3_region" || name == "ca_file" || name == "http_header_file" ||
             name == "cache_dir") {
    need_value();
    if (name == "s3_endpoint") o.remote.s3_endpoint = value;
    if (name == "s3_region") o.remote.s3_region = value;
    if (name == "ca_file") o.remote.ca_file = value;
    if (name == "http_header_file") o.remote.http_header_file = value;
    if (name == "cache_dir") o.remote.cache_dir = value;
  } else if (name == "plugin_path") {
    need_value();
    const size_t colon = value.find(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == value.size())
      throw UsageError("plugin_path needs NAME:LIB (e.g. -o plugin_path=openzl:/path/libblosc2_openzl.so), not '" +
                       value + "'");
    const std::string plugin = value.substr(0, colon);
    for (char c : plugin)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
        throw UsageError("plugin_path: '" + plugin + "' is not a codec name (letters, digits, _)");
    for (const PluginPathOption& given : o.plugin_paths)
      if (given.name == plugin) throw UsageError("plugin_path names codec " + plugin + " twice");
    o.plugin_paths.push_back({plugin, std::filesystem::absolute(value.substr(colon + 1))});
  } else if (name == "caterva2_login_file") {
    need_value();
    o.remote.caterva2_login_file = value;
  } else if (name == "list_ttl") {
    need_value();
    o.remote.list_ttl = unsigned(parse_uint(value, name, 86400));
  } else if (name == "connect_timeout" || name == "timeout") {
    need_value();
    const unsigned seconds = unsigned(parse_uint(value, name, 3600));
    if (seconds == 0) throw UsageError(name + " is at least 1 (seconds)");
    (name == "timeout" ? o.remote.timeout : o.remote.connect_timeout) = seconds;
  } else if (name == "retries") {
    need_value();
    o.remote.retries = unsigned(parse_uint(value, name, 100));
  } else if (name == "prefetch") {
    need_value();
    o.remote.prefetch = parse_size(value, "prefetch");
  } else if (name == "cache_dir_size") {
    need_value();
    o.remote.cache_dir_size = parse_size(value, "cache_dir_size");
  } else if (contains(kFuseFlags, name)) {
    no_value();
    o.fuse_options.push_back(name);
  } else if (contains(kFuseValued, name)) {
    need_value();
    if (name == "max_read") parse_uint(value, "max_read", UINT32_MAX);
    if (name == "blksize") parse_uint(value, "blksize", UINT32_MAX);
    o.fuse_options.push_back(option);
  } else if (name == "async") {
    no_value();  // the kernel's default; nothing to pass
  } else if (name == "default_permissions") {
    no_value();  // always on: fuse_option_list
  } else {
    throw UsageError("unknown option '" + option + "'");
  }
}

}  // namespace

namespace {

// fuse_opt splits -o lists on commas; a backslash keeps one literal.
std::string escape_option_value(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == ',' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::string fuse_option_list(const Options& o, const std::string& fsname, bool writable) {
  bool has_fsname = false, has_subtype = false;
  for (const std::string& opt : o.fuse_options) {
    has_fsname |= opt.starts_with("fsname=");
    has_subtype |= opt.starts_with("subtype=");
  }
  // default_permissions on every mount: the kernel checks each access against
  // the owner and modes the tree shows (the frame's, tree_access.h). Without
  // it the kernel checks nothing, and with allow_other any local user could
  // write through a daemon that may write the frame (often root's).
  std::string list = writable ? "rw,default_permissions" : "ro,default_permissions";
  if (!has_fsname) list += ",fsname=" + escape_option_value(fsname);
  if (!has_subtype) list += ",subtype=blosc2fs";
  for (const std::string& opt : o.fuse_options) {
    size_t eq = opt.find('=');
    list += "," + (eq == std::string::npos ? opt : opt.substr(0, eq + 1) + escape_option_value(opt.substr(eq + 1)));
  }
  return list;
}

bool is_remote_url(const std::string& argument) {
  for (const char* scheme : {"http://", "https://", "s3://", "caterva2+http://", "caterva2+https://"})
    if (argument.starts_with(scheme)) return true;
  return false;
}

std::string frame_for_messages(const std::string& argument) {
  if (!is_remote_url(argument)) return argument;
  std::string shown = argument;
  const size_t start = shown.find("://") + 3;
  const size_t end = shown.find_first_of("/?#", start);
  const size_t at = shown.rfind('@', end == std::string::npos ? std::string::npos : end);
  if (at != std::string::npos && at >= start) shown.erase(start, at + 1 - start);
  if (const size_t q = shown.find_first_of("?#"); q != std::string::npos) shown.resize(q);
  return shown;
}

uint64_t parse_size(const std::string& text, const std::string& what) {
  auto fail = [&]() -> uint64_t {
    throw UsageError("invalid size for " + what + ": '" + text + "' (e.g. 4096, 256M, 2G)");
  };
  size_t digits = 0;
  while (digits < text.size() && (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.'))
    ++digits;
  if (digits == 0) return fail();
  double number = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + digits, number);
  if (ec != std::errc() || end != text.data() + digits) return fail();
  std::string suffix = text.substr(digits);
  if (suffix.ends_with("iB")) suffix.resize(suffix.size() - 2);
  else if (suffix.ends_with("B") || suffix.ends_with("b")) suffix.resize(suffix.size() - 1);
  double scale = 1;
  if (suffix.size() > 1) return fail();
  if (suffix.size() == 1) {
    switch (suffix[0]) {
      case 'k': case 'K': scale = 1024.0; break;
      case 'm': case 'M': scale = 1024.0 * 1024; break;
      case 'g': case 'G': scale = 1024.0 * 1024 * 1024; break;
      case 't': case 'T': scale = 1024.0 * 1024 * 1024 * 1024; break;
      default: return fail();
    }
  }
  double bytes = std::floor(number * scale);
  if (!(bytes >= 0) || bytes >= 9.2e18) return fail();
  return uint64_t(bytes);
}

uint64_t default_cache_size() {
  constexpr uint64_t kFloor = uint64_t(64) << 20, kCap = uint64_t(4) << 30;
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return kFloor;
  uint64_t eighth = uint64_t(pages) * uint64_t(page_size) / 8;
  return std::clamp(eighth, kFloor, kCap);
}

namespace {

// Options that only a URL's mount takes, and what a URL's mount cannot do.
void check_remote_options(const Options& o) {
  const RemoteMountOptions& r = o.remote;
  if (!is_remote_url(o.frame.string())) {
    const bool any = !r.s3_endpoint.empty() || !r.s3_region.empty() || !r.ca_file.empty() ||
                     !r.http_header_file.empty() || r.connect_timeout || r.timeout || r.retries || r.prefetch ||
                     !r.cache_dir.empty() || r.cache_dir_size || !r.caterva2_login_file.empty();
    if (any) throw UsageError("the options of remote data (s3_endpoint=, cache_dir=, ...) need an http://, https:// "
                              "or s3:// URL as FRAME");
    return;
  }
  if (o.create.create) throw UsageError("-o create needs a local FRAME: remote data is never written");
  if (o.read_only == false) throw UsageError("-o rw: remote data mounts read-only");
  if (r.cache_dir_size && r.cache_dir.empty()) throw UsageError("-o cache_dir_size= needs -o cache_dir=DIR");
  if (!r.s3_endpoint.empty() && !o.frame.string().starts_with("s3://"))
    throw UsageError("-o s3_endpoint= is for s3:// URLs");
  if (!r.caterva2_login_file.empty() && !o.frame.string().starts_with("caterva2+"))
    throw UsageError("-o caterva2_login_file= is for caterva2+http(s):// URLs");
}

}  // namespace

Options parse_command_line(int argc, const char* const* argv) {
  Options o;
  // python-blosc2's defaults for -o create, except a fixed 1 MiB chunk size.
  o.create.cparams.codec = Codec::zstd;
  o.create.cparams.clevel = 1;
  std::vector<std::string> positional;
  bool only_positional = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (only_positional || arg.empty() || arg[0] != '-' || arg == "-") {
      positional.push_back(arg);
    } else if (arg == "--") {
      only_positional = true;
    } else if (arg == "-h" || arg == "--help") {
      o.action = Options::Action::help;
      return o;
    } else if (arg == "-V" || arg == "--version") {
      o.action = Options::Action::version;
      return o;
    } else if (arg == "--info" || arg.starts_with("--info=")) {
      o.action = Options::Action::info;
      if (arg == "--info") {
        if (i + 1 >= argc) throw UsageError("--info needs a FRAME");
        o.frame = argv[++i];
      } else {
        o.frame = arg.substr(7);
      }
    } else if (arg == "--thumbnail") {
      // The freedesktop thumbnailer's Exec line: blosc2fs --thumbnail %i %o %s.
      o.action = Options::Action::thumbnail;
      if (i + 3 >= argc) throw UsageError("--thumbnail needs FRAME OUTPUT SIZE");
      o.frame = argv[++i];
      o.thumbnail_output = argv[++i];
      const std::string size = argv[++i];
      int64_t pixels = 0;
      auto [end, ec] = std::from_chars(size.data(), size.data() + size.size(), pixels);
      if (ec != std::errc() || end != size.data() + size.size() || pixels < 1)
        throw UsageError("--thumbnail: SIZE '" + size + "' is not a number of pixels (1 or more)");
      o.thumbnail_size = pixels;
    } else if (arg == "-o" || (arg.starts_with("-o") && arg.size() > 2)) {
      std::string list;
      if (arg == "-o") {
        if (i + 1 >= argc) throw UsageError("-o needs a list of options");
        list = argv[++i];
      } else {
        list = arg.substr(2);
      }
      for (const std::string& option : split_option_list(list)) apply_option(o, option);
    } else if (arg.size() > 1 && arg[1] != '-' && arg.find_first_not_of("fds", 1) == std::string::npos) {
      for (char c : arg.substr(1)) {
        if (c == 'f') o.foreground = true;
        if (c == 's') o.single_threaded = true;
        if (c == 'd') {
          o.debug = o.foreground = true;
          o.log_level = "debug";
        }
      }
    } else {
      throw UsageError("unknown option '" + arg + "'");
    }
  }
  if (o.action == Options::Action::info || o.action == Options::Action::thumbnail) {
    if (!positional.empty())
      throw UsageError(o.action == Options::Action::info ? "--info takes one FRAME and no MOUNTPOINT"
                                                         : "--thumbnail takes FRAME OUTPUT SIZE and no MOUNTPOINT");
    check_remote_options(o);
    return o;
  }
  if (o.single_threaded && o.io_uring == IoUringMode::on)
    throw UsageError("-o io_uring=on serves on a thread per CPU: it cannot be -s (single-threaded)");
  if (positional.size() < 2)
    throw UsageError(positional.empty() ? "missing FRAME and MOUNTPOINT" : "missing MOUNTPOINT");
  if (positional.size() > 2) throw UsageError("unexpected argument '" + positional[2] + "'");
  o.frame = positional[0];
  o.mountpoint = positional[1];
  check_remote_options(o);
  return o;
}

std::string usage_text(const std::string& program) {
  return "usage: " + program + R"( [OPTIONS] FRAME MOUNTPOINT
       )" + program + R"( --info FRAME
       )" + program + R"( --thumbnail FRAME OUTPUT SIZE

Mounts a Blosc2 frame (a .b2frame/.b2nd file, or a sparse-frame directory), a
python-blosc2 store (.b2d, .b2z, .b2e), local or at a URL, on MOUNTPOINT and shows it as files: frame.json, index.tsv, data, chunks/, raw/,
meta/, vlmeta/, attrs/ and, for N-d arrays, array.npy. Unmount with
'fusermount3 -u MOUNTPOINT'.

general options:
  -o opt[,opt...]        mount options (repeatable; also from /etc/fstab)
  -f                     stay in the foreground (log to stderr)
  -d                     debug: -f, log_level=debug, FUSE request tracing
  -s                     single-threaded
  -h, --help             this text
  -V, --version          the version
  --info FRAME           print FRAME's frame.json and exit
  --thumbnail FRAME OUTPUT SIZE
                         write the preview.png of FRAME's array (a store's first
                         array leaf) as a PNG of at most SIZE pixels a side to
                         OUTPUT, without mounting (the desktop's thumbnailer)

blosc2fs options:
  -o ro                  read-only: every write fails with EROFS
  -o rw                  read-write (the default when this user may write FRAME;
                         otherwise the mount is read-only, with a notice)
  -o cache_size=SIZE     budget of the decompressed-chunk cache: 4096, 256M, 2G
                         (default: 1/8 of the RAM, at least 64M, at most 4G)
  -o read_ahead=SIZE     the kernel's readahead window for the mount's files
                         (default 4M; 0 keeps the kernel's 128K; needs root)
  -o log_level=LEVEL     trace, debug, info (default), warn, error
  -o create              create FRAME when it does not exist (an empty frame, then
                         mounted read-write: cp file MOUNTPOINT/data compresses it) with
     codec=NAME          blosclz, lz4, lz4hc, zlib, zstd (default zstd)
     clevel=N            0..9 (default 1)
     typesize=N          bytes per item (default 8)
     chunksize=SIZE      uncompressed bytes per chunk (default 1M; the first commit
                         fixes it, as c-blosc2 does)
     blocksize=SIZE      0 = automatic (default)
     filters=F[+F...]    none, shuffle, bitshuffle, delta, trunc_prec:BITS, bytedelta,
                         applied in the order given (default shuffle)
     sparse              a sparse frame (a directory)
     chunkshape=N,N...   the chunk shape of the array a .npy copied to array.npy
                         makes (default: as python-blosc2 chooses it)
     blockshape=N,N...   a new array's block shape (default: as python-blosc2)
  -o uid=N,gid=N         owner and group shown for every file (default: the
                         frame's)
  -o umask=OOO           mode bits removed from every file (octal)
  -o max_idle_threads=N  idle worker threads kept (default 10)
  -o max_open=N          datasets of a collection kept open at once (default 64)
  -o list_ttl=SECONDS    how long a collection's listing is trusted (default 2
                         for a local folder, 60 for remote places and Caterva2)
  -o max_threads=N       most worker threads (default 10)
  -o io_uring=MODE       the kernel's requests over io_uring, one queue per CPU
                         (Linux 6.14+): auto (default: where the kernel offers
                         it, else /dev/fuse and a line saying why), on (the
                         mount fails where it cannot have it), off
  -o plugin_path=NAME:LIB  decode codec NAME (openzl) with the Blosc2 plugin
                         library LIB (default: the blosc2_NAME Python package of
                         the python3 on PATH, asked once at mount time)

remote data (FRAME an http://, https:// or s3://bucket/key URL; read-only):
  -o s3_endpoint=URL     a non-AWS S3 store (SeaweedFS, MinIO, Ceph), path-style
  -o s3_region=NAME      the S3 region signed for (default us-east-1)
  -o ca_file=FILE        trust this CA for TLS (TLS is always verified)
  -o http_header_file=F  send the "Name: value" lines of F (a token) with every
                         request; F must not be readable by others
  -o connect_timeout=S   seconds to connect (default 10)
  -o timeout=S           seconds without a byte before a request is retried (30)
  -o retries=N           attempts per request before a read fails with EIO (10)
  -o prefetch=SIZE       bytes fetched ahead of sequential readers, for the
                         whole mount (default 64M; 0: none)
  -o cache_dir=DIR       keep fetched bytes in DIR across mounts (checksummed)
  -o cache_dir_size=SIZE its bound (default 1G)
  -o caterva2_login_file=F  log in to a Caterva2 server as the user and password
                         on F's two lines; F must not be readable by others
  S3 keys come from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/AWS_SESSION_TOKEN or
  AWS_PROFILE and ~/.aws/credentials; HTTP logins from ~/.netrc. Never put a
  credential in an option or a URL.

FUSE options passed through: allow_other, allow_root, auto_unmount,
fsname=, subtype=, max_read=, blksize=, nodev, nosuid, noexec, noatime,
nodiratime, sync, dirsync, context=...
Accepted and ignored (fstab): noauto, auto, nofail, _netdev, user, users, owner,
defaults, dev, suid, exec, x-*, comment=.

Who may do what: every file and directory shows the frame's owner and group
and its read bits; write bits where the frame has them and the mount is
read-write (never on frame.json, index.tsv, array.npy). default_permissions
is always on: the kernel checks every access against these, so with
allow_other other users get exactly what the frame's permissions give them.

Writing: files change as frame operations when they are closed (or fsynced):
vlmeta/ and attrs/ (JSON) layers can be created, written, renamed and removed;
meta/ keeps each metalayer's length; chunks/N and data are recompressed with the
frame's settings; raw/N.chunk takes a complete Blosc chunk. Editors' scratch
files (.name, name~, 4913, sedXXXXXX) stay in memory.

The cache statistics of a mount: cat MOUNTPOINT/.blosc2fs-cache
)";
}

}  // namespace blosc2fs
