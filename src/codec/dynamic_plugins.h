// Codecs that c-blosc2 itself does not contain and loads at run time from a
// plugin's shared library (OpenZL, id 38): the library is found once, when the
// mount starts (the blosc2_NAME Python package of the python3 on PATH, as
// c-blosc2 asks it, or -o plugin_path=NAME:LIB), loaded with dlopen, checked,
// and then called as c-blosc2 calls it. Never loaded on the read path, never
// from a path a frame or a server gives. docs/codecs.md.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bytes.h"
#include "chunk_format.h"
#include "plugin_abi.h"

namespace blosc2fs {

struct CodecInfo;

// A library that is not a usable plugin; the message is one line for the user.
class PluginLoadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What an encoder is told besides its input, as c-blosc2 fills blosc2_cparams.
struct PluginEncodeParams {
  uint8_t meta = 0;
  uint8_t clevel = 5;
  int32_t typesize = 1;
  int32_t blocksize = 0;
  int32_t splitmode = 0;
  std::array<uint8_t, kMaxFilters> filters{};
  std::array<uint8_t, kMaxFilters> filters_meta{};
};

// One loaded plugin library: its encoder and decoder. Unloaded when destroyed.
class DynamicCodec {
 public:
  // Loads `library` as the plugin of codec `id` named `name` (c-blosc2's name:
  // "openzl"): RTLD_LOCAL|RTLD_NOW, the `info` symbol, both functions, and a
  // round trip of a known block through them with this ABI's structs (a plugin
  // built for another layout of blosc2_cparams/dparams fails it). Throws
  // PluginLoadError naming the library and what is wrong.
  static std::unique_ptr<DynamicCodec> load(uint8_t id, const std::string& name, const std::filesystem::path& library);
  ~DynamicCodec();
  DynamicCodec(const DynamicCodec&) = delete;
  DynamicCodec& operator=(const DynamicCodec&) = delete;

  uint8_t id() const { return id_; }
  const std::string& name() const { return name_; }
  const std::filesystem::path& library() const { return library_; }

  // Decodes one stream into exactly out.size() bytes, as c-blosc2 calls a plugin
  // decoder: `meta` the chunk's codec meta, `typesize` its header's, `chunk` the
  // chunk it is in. out is zeroed first, so bytes a plugin leaves unwritten read
  // as zeros, never as an earlier block's. A result other than out.size() throws
  // FormatError. (A plugin writing past out.size() is its own bug, as in c-blosc2.)
  void decode(uint8_t meta, int32_t typesize, ByteSpan in, MutableByteSpan out, const uint8_t* chunk) const;
  // Encodes one stream into at most out.size() bytes; returns the size, or 0 when
  // the plugin could not compress it (stored raw). A negative result or one past
  // out.size() throws FormatError, as c-blosc2 fails the chunk.
  size_t encode(const PluginEncodeParams& params, ByteSpan in, MutableByteSpan out) const;

 private:
  DynamicCodec() = default;
  void self_test() const;

  uint8_t id_ = 0;
  std::string name_;
  std::filesystem::path library_;
  void* handle_ = nullptr;
  plugin_abi::Encoder encoder_ = nullptr;
  plugin_abi::Decoder decoder_ = nullptr;
};

// The process's plugins, by codec id: installed before the mount serves (and
// before any thread reads), then only read.
void install_dynamic_codec(std::unique_ptr<DynamicCodec> codec);
const DynamicCodec* dynamic_codec(uint8_t id);
// Unloads every plugin (tests; nothing may be decoding).
void clear_dynamic_codecs();

// Asks `python` (found on PATH, as c-blosc2 runs `python`/`python3`) where the
// blosc2_NAME package keeps its library: `import blosc2_NAME; get_libpath()`.
// Killed after `timeout`. Returns the absolute path of an existing regular file,
// or nullopt with *why saying what went wrong (the package is not installed, ...).
std::optional<std::filesystem::path> find_plugin_with_python(const std::string& name, const std::string& python,
                                                             std::chrono::milliseconds timeout, std::string* why);

// What a user runs to have codec c decoded here: "pip install blosc2-openzl,
// or -o plugin_path=openzl:LIB".
std::string plugin_install_hint(const CodecInfo& c);

// Missing plugins are reported once per process and codec, through the reporter
// the mount installs (the log): "codec openzl (38): pip install ...".
using MissingPluginReporter = void (*)(const std::string& line);
void set_missing_plugin_reporter(MissingPluginReporter reporter);
void report_missing_plugin(const CodecInfo& c);

// The setup of a mount: -o plugin_path=NAME:LIB entries first, then for every
// other codec loaded at run time, the Python lookup. Loads what is found.
// A plugin_path that does not load throws PluginLoadError; a library the Python
// lookup names that does not load is reported in `refused` and skipped.
struct PluginPathOption {
  std::string name;
  std::filesystem::path library;
};
struct DynamicPluginSetup {
  std::vector<std::string> loaded;   // "codec openzl (38) from /path/libblosc2_openzl.so"
  std::vector<std::string> notes;    // lookups that found no plugin installed, for the debug log
  std::vector<std::string> refused;  // libraries the lookup found that did not load, for a warning
};
DynamicPluginSetup load_dynamic_plugins(const std::vector<PluginPathOption>& paths, const std::string& python,
                                        std::chrono::milliseconds timeout);

}  // namespace blosc2fs
