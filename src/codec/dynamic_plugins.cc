// Plugin libraries loaded at run time (dynamic_plugins.h; plugin-codecs.md §8 for
// how c-blosc2 finds and calls them).
#include "dynamic_plugins.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstring>
#include <mutex>

#include "codec_registry.h"
#include "error.h"
#include "sanitizers.h"
#include "unique_fd.h"

extern char** environ;

namespace blosc2fs {

namespace fs = std::filesystem;

namespace {

// RTLD_LOCAL keeps the plugin's symbols out of ours; RTLD_DEEPBIND makes the plugin
// call its own copies of zstd and lz4 (blosc2-openzl links them statically and
// exports them) rather than the Debian libraries this program links, of other
// versions. The sanitizer runtimes refuse RTLD_DEEPBIND: there (the fuzz build)
// the plugin gets a link namespace of its own instead, as isolated.
void* open_plugin_library(const fs::path& library) {
#ifdef BLOSC2FS_SANITIZED
  return ::dlmopen(LM_ID_NEWLM, library.c_str(), RTLD_LOCAL | RTLD_NOW);
#else
  return ::dlopen(library.c_str(), RTLD_LOCAL | RTLD_NOW | RTLD_DEEPBIND);
#endif
}

constexpr size_t kMaxSymbolName = 256;
constexpr size_t kMaxLookupOutput = 4096;

bool valid_plugin_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

// A symbol name the plugin's `info` points at: a C identifier, bounded.
std::string symbol_name(const char* p, const char* which, const fs::path& library) {
  if (!p) throw PluginLoadError(library.string() + ": its `info` names no " + which + " function");
  const size_t n = strnlen(p, kMaxSymbolName);
  std::string s(p, n);
  bool ok = n > 0 && n < kMaxSymbolName && !std::isdigit(static_cast<unsigned char>(s[0]));
  for (char c : s) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (!ok) throw PluginLoadError(library.string() + ": its `info` " + which + " name is not a C function name");
  return s;
}

std::mutex registry_mutex;
std::array<std::atomic<const DynamicCodec*>, 256> registry{};
std::vector<std::unique_ptr<DynamicCodec>>& owned() {
  static std::vector<std::unique_ptr<DynamicCodec>> v;
  return v;
}

std::atomic<MissingPluginReporter> missing_reporter{nullptr};
std::array<std::atomic<bool>, 256> missing_reported{};

// The known block of the load-time round trip: a float32 ramp, which every
// lossless codec compresses and whose decoding depends on the typesize.
std::vector<uint8_t> self_test_block() {
  std::vector<uint8_t> block(16384);
  for (size_t i = 0; i < block.size() / 4; ++i) {
    const float v = float(i) * 0.25f;
    std::memcpy(block.data() + 4 * i, &v, 4);
  }
  return block;
}

}  // namespace

DynamicCodec::~DynamicCodec() {
  if (handle_) ::dlclose(handle_);
}

std::unique_ptr<DynamicCodec> DynamicCodec::load(uint8_t id, const std::string& name, const fs::path& library) {
  if (!valid_plugin_name(name)) throw PluginLoadError("'" + name + "' is not a plugin name (letters, digits, _)");
  if (!library.is_absolute()) throw PluginLoadError(library.string() + ": the plugin library must be an absolute path");
  struct stat st{};
  if (::stat(library.c_str(), &st) != 0)
    throw PluginLoadError(library.string() + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw PluginLoadError(library.string() + ": not a regular file");
  std::unique_ptr<DynamicCodec> codec(new DynamicCodec);
  codec->id_ = id;
  codec->name_ = name;
  codec->library_ = library;
  ::dlerror();
  codec->handle_ = open_plugin_library(library);
  if (!codec->handle_) {
    const char* e = ::dlerror();
    throw PluginLoadError(library.string() + ": cannot be loaded: " + (e ? e : "unknown dlopen error"));
  }
  const auto* info = static_cast<const plugin_abi::CodecInfoSymbol*>(::dlsym(codec->handle_, "info"));
  if (!info)
    throw PluginLoadError(library.string() + ": not a Blosc2 codec plugin (it has no `info` symbol naming its encoder "
                          "and decoder)");
  const std::string encoder = symbol_name(info->encoder, "encoder", library);
  const std::string decoder = symbol_name(info->decoder, "decoder", library);
  codec->encoder_ = reinterpret_cast<plugin_abi::Encoder>(::dlsym(codec->handle_, encoder.c_str()));
  codec->decoder_ = reinterpret_cast<plugin_abi::Decoder>(::dlsym(codec->handle_, decoder.c_str()));
  if (!codec->encoder_ || !codec->decoder_)
    throw PluginLoadError(library.string() + ": its `info` names " + (codec->encoder_ ? decoder : encoder) +
                          ", which the library does not define");
  codec->self_test();
  return codec;
}

void DynamicCodec::self_test() const {
  const std::vector<uint8_t> block = self_test_block();
  std::vector<uint8_t> coded(block.size());
  PluginEncodeParams p;
  p.typesize = 4;
  p.blocksize = int32_t(block.size());
  const std::string what = library_.string() + ": the load-time round trip of a " + str(int64_t(block.size())) +
                           "-byte float32 block through its encoder and decoder with " + plugin_abi::kAbiName +
                           " parameters ";
  size_t n = 0;
  try {
    n = encode(p, block, coded);
  } catch (const FormatError& e) {
    throw PluginLoadError(what + "failed: " + e.what());
  }
  if (n == 0) throw PluginLoadError(what + "failed: the encoder compressed nothing (is the plugin built for "
                                    "another c-blosc2 release?)");
  std::vector<uint8_t> decoded(block.size());
  try {
    decode(p.meta, p.typesize, ByteSpan(coded.data(), n), decoded, nullptr);
  } catch (const FormatError& e) {
    throw PluginLoadError(what + "failed: " + e.what() + " (is the plugin built for another c-blosc2 release?)");
  }
  if (decoded != block) throw PluginLoadError(what + "gave other bytes back");
}

void DynamicCodec::decode(uint8_t meta, int32_t typesize, ByteSpan in, MutableByteSpan out,
                          const uint8_t* chunk) const {
  if (in.size() > size_t(INT32_MAX) || out.size() > size_t(INT32_MAX))
    throw FormatError("codec " + name_ + ": stream too large for the plugin interface");
  if (!out.empty()) std::memset(out.data(), 0, out.size());
  plugin_abi::DParams dparams{};
  dparams.nthreads = 1;
  dparams.typesize = typesize;
  const int rc = decoder_(in.data(), int32_t(in.size()), out.data(), int32_t(out.size()), meta, &dparams, chunk);
  if (rc != int64_t(out.size()))
    throw FormatError("codec " + name_ + " (plugin " + library_.string() + ") decoded " + str(int64_t(in.size())) +
                      " bytes to " + (rc < 0 ? "error " + str(rc) : str(rc) + " bytes") + ", not " +
                      str(int64_t(out.size())));
}

size_t DynamicCodec::encode(const PluginEncodeParams& params, ByteSpan in, MutableByteSpan out) const {
  if (in.size() > size_t(INT32_MAX) || out.size() > size_t(INT32_MAX))
    throw FormatError("codec " + name_ + ": stream too large for the plugin interface");
  plugin_abi::CParams cparams{};
  cparams.compcode = id_;
  cparams.compcode_meta = params.meta;
  cparams.clevel = params.clevel;
  cparams.typesize = params.typesize;
  cparams.nthreads = 1;
  cparams.blocksize = params.blocksize;
  cparams.splitmode = params.splitmode;
  std::memcpy(cparams.filters, params.filters.data(), kMaxFilters);
  std::memcpy(cparams.filters_meta, params.filters_meta.data(), kMaxFilters);
  const int rc =
      encoder_(in.data(), int32_t(in.size()), out.data(), int32_t(out.size()), params.meta, &cparams, nullptr);
  if (rc < 0 || size_t(rc) > out.size())
    throw FormatError("codec " + name_ + " (plugin " + library_.string() + ") failed to encode " +
                      str(int64_t(in.size())) + " bytes: it returned " + str(rc) + " for room of " +
                      str(int64_t(out.size())));
  return size_t(rc);
}

void install_dynamic_codec(std::unique_ptr<DynamicCodec> codec) {
  std::lock_guard lock(registry_mutex);
  const uint8_t id = codec->id();
  registry[id].store(codec.get(), std::memory_order_release);
  owned().push_back(std::move(codec));
}

const DynamicCodec* dynamic_codec(uint8_t id) { return registry[id].load(std::memory_order_acquire); }

void clear_dynamic_codecs() {
  std::lock_guard lock(registry_mutex);
  for (auto& slot : registry) slot.store(nullptr, std::memory_order_release);
  for (auto& flag : missing_reported) flag.store(false);
  owned().clear();
}

std::optional<fs::path> find_plugin_with_python(const std::string& name, const std::string& python,
                                                std::chrono::milliseconds timeout, std::string* why) {
  auto fail = [&](const std::string& reason) -> std::optional<fs::path> {
    if (why) *why = reason;
    return std::nullopt;
  };
  if (!valid_plugin_name(name)) return fail("'" + name + "' is not a plugin name");
  const std::string module = "blosc2_" + name;
  // find_spec first: a Python without the package answers without importing anything.
  const std::string script = "import importlib.util, sys\nif importlib.util.find_spec('" + module +
                             "') is None: sys.exit(3)\nimport " + module + " as p\nsys.stdout.write(str(p.get_libpath()))";
  int out_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return fail(std::string("pipe: ") + std::strerror(errno));
  UniqueFd read_end(out_pipe[0]), write_end(out_pipe[1]);  // the pipe's ends
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, write_end.get(), 1);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  std::vector<std::string> args = {python, "-c", script};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, python.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return fail("cannot run " + python + ": " + std::strerror(rc));
  write_end.reset();
  std::string output;
  bool timed_out = false;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{read_end.get(), POLLIN, 0};
    const int r = ::poll(&p, 1, int(std::min<long long>(left, 1000)));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) break;
    if (r == 0) continue;
    char buf[512];
    const ssize_t got = ::read(read_end.get(), buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    output.append(buf, size_t(got));
    if (output.size() > kMaxLookupOutput) break;
  }
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out)
    return fail(python + " did not answer where " + module + " is within " + str(timeout.count()) + " ms");
  if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
    return fail(python + " has no " + module + " (pip install blosc2-" + name + ")");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return fail(python + " cannot import " + module + " or call its get_libpath()");
  if (output.size() > kMaxLookupOutput || output.empty() || output.find('\0') != std::string::npos ||
      output.find('\n') != std::string::npos)
    return fail(python + ": " + module + ".get_libpath() gave no single path");
  const fs::path path(output);
  if (!path.is_absolute()) return fail(python + ": " + module + ".get_libpath() gave a relative path: " + output);
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return fail(python + ": " + module + ".get_libpath() names " + output + ", which is not a file");
  return path;
}

std::string plugin_install_hint(const CodecInfo& c) {
  std::string package = std::string("blosc2-") + c.name;
  for (char& ch : package)
    if (ch == '_') ch = '-';
  return "pip install " + package + ", or -o plugin_path=" + c.name + ":LIB";
}

void set_missing_plugin_reporter(MissingPluginReporter reporter) { missing_reporter.store(reporter); }

void report_missing_plugin(const CodecInfo& c) {
  if (missing_reported[c.id].exchange(true)) return;
  if (MissingPluginReporter r = missing_reporter.load())
    r("codec " + std::string(c.name) + " (" + str(c.id) + ") is loaded at run time and no plugin is loaded: " +
      plugin_install_hint(c));
}

DynamicPluginSetup load_dynamic_plugins(const std::vector<PluginPathOption>& paths, const std::string& python,
                                        std::chrono::milliseconds timeout) {
  DynamicPluginSetup setup;
  const std::vector<const CodecInfo*> runtime = runtime_plugin_codecs();
  auto codec_named = [&](const std::string& name) -> const CodecInfo* {
    for (const CodecInfo* c : runtime)
      if (name == c->name) return c;
    return nullptr;
  };
  for (const PluginPathOption& option : paths) {
    const CodecInfo* c = codec_named(option.name);
    if (!c) {
      std::string names;
      for (const CodecInfo* r : runtime) names += (names.empty() ? "" : ", ") + std::string(r->name);
      throw PluginLoadError("plugin_path=" + option.name + ":...: no codec of that name is loaded at run time (" +
                            names + ")");
    }
    if (dynamic_codec(c->id)) throw PluginLoadError("plugin_path names codec " + option.name + " twice");
    install_dynamic_codec(DynamicCodec::load(c->id, c->name, option.library));
    setup.loaded.push_back("codec " + std::string(c->name) + " (" + str(c->id) + ") from " + option.library.string());
  }
  for (const CodecInfo* c : runtime) {
    if (dynamic_codec(c->id)) continue;
    std::string why;
    std::optional<fs::path> found = find_plugin_with_python(c->name, python, timeout, &why);
    if (!found) {
      setup.notes.push_back("codec " + std::string(c->name) + " (" + str(c->id) + "): " + why);
      continue;
    }
    try {
      install_dynamic_codec(DynamicCodec::load(c->id, c->name, *found));
      setup.loaded.push_back("codec " + std::string(c->name) + " (" + str(c->id) + ") from " + found->string());
    } catch (const PluginLoadError& e) {
      setup.refused.push_back("codec " + std::string(c->name) + " (" + str(c->id) + "): " + e.what());
    }
  }
  return setup;
}

}  // namespace blosc2fs
