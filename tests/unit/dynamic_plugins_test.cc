// Codec plugins loaded at run time (dynamic_plugins.h): the c-blosc2 3.x ABI the
// loader builds its parameter structs with, pinned; test plugins built beside this
// test (tests/unit/plugins) for a good plugin, one built for another layout of
// blosc2_cparams/dparams, one without `info` and one whose `info` names a missing
// function; decoded lengths checked; and the real blosc2-openzl plugin of the test
// venv, found the way the mount finds it (its Python package).
#include "dynamic_plugins.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "chunk_codec.h"
#include "codec_registry.h"
#include "plugin_abi.h"

namespace blosc2fs {
namespace {

namespace fs = std::filesystem;
constexpr uint8_t kOpenzl = 38;

struct ClearPlugins {
  ~ClearPlugins() { clear_dynamic_codecs(); }
};

std::vector<uint8_t> float_ramp(size_t n, float step) {
  std::vector<uint8_t> out(n * 4);
  for (size_t i = 0; i < n; ++i) {
    const float v = float(i / 3) * step;
    std::memcpy(out.data() + 4 * i, &v, 4);
  }
  return out;
}

CompressParams openzl_params(uint8_t meta) {
  CompressParams p;
  p.codec = Codec(kOpenzl);
  p.typesize = 4;
  p.blocksize = 8192;
  p.filters = {0, 0, 0, 0, 0, 0};
  p.splitmode = SplitMode::never;
  p.compcode_meta = meta;
  p.detect_specials = false;
  return p;
}

// The offsets blosc2_openzl 0.0.1's decoder and encoder read (its disassembly:
// dparams+0x20, cparams+0x2 and +0x8), as c-blosc2 3.3.5's blosc2.h lays them out.
TEST(PluginAbi, TheParameterLayoutsAreCblosc2s) {
  EXPECT_EQ(sizeof(plugin_abi::DParams), 40u);
  EXPECT_EQ(offsetof(plugin_abi::DParams, nthreads), 0u);
  EXPECT_EQ(offsetof(plugin_abi::DParams, schunk), 8u);
  EXPECT_EQ(offsetof(plugin_abi::DParams, typesize), 32u);
  EXPECT_EQ(sizeof(plugin_abi::CParams), 136u);
  EXPECT_EQ(offsetof(plugin_abi::CParams, compcode_meta), 1u);
  EXPECT_EQ(offsetof(plugin_abi::CParams, clevel), 2u);
  EXPECT_EQ(offsetof(plugin_abi::CParams, typesize), 8u);
  EXPECT_EQ(offsetof(plugin_abi::CParams, blocksize), 16u);
  EXPECT_EQ(offsetof(plugin_abi::CParams, schunk), 24u);
  EXPECT_EQ(offsetof(plugin_abi::CParams, filters), 32u);
  EXPECT_EQ(offsetof(plugin_abi::CParams, filters_meta), 38u);
  EXPECT_EQ(offsetof(plugin_abi::CParams, filter_params), 88u);
  EXPECT_EQ(sizeof(plugin_abi::CodecInfoSymbol), 2 * sizeof(char*));
}

TEST(DynamicPlugins, OpenzlIsTheCodecLoadedAtRunTime) {
  const std::vector<const CodecInfo*> runtime = runtime_plugin_codecs();
  ASSERT_EQ(runtime.size(), 1u);
  EXPECT_STREQ(runtime[0]->name, "openzl");
  EXPECT_EQ(plugin_install_hint(*runtime[0]), "pip install blosc2-openzl, or -o plugin_path=openzl:LIB");
}

TEST(DynamicPlugins, AGoodPluginDecodesAndEncodesChunksAsTheRegistrysCodec) {
  ClearPlugins clear;
  EXPECT_FALSE(find_codec(kOpenzl)->decodable());
  install_dynamic_codec(DynamicCodec::load(kOpenzl, "openzl", FAKE_PLUGIN_GOOD));
  EXPECT_TRUE(find_codec(kOpenzl)->decodable());
  EXPECT_TRUE(find_codec(kOpenzl)->encodable());
  EXPECT_NE(find_codec(kOpenzl)->decoder_description().find("libfake_plugin_good"), std::string::npos);
  const std::vector<uint8_t> data = float_ramp(10000, 0.5f);
  const std::vector<uint8_t> chunk = encode_chunk(data, openzl_params(0));
  const ChunkHeader h = parse_chunk_header(chunk);
  EXPECT_EQ(h.compformat(), 6);
  EXPECT_EQ(h.udcompcode, kOpenzl);
  EXPECT_FALSE(h.memcpyed());
  EXPECT_LT(h.cbytes, int32_t(data.size()) / 2);
  EXPECT_EQ(ChunkView(chunk).decode(), data);
}

TEST(DynamicPlugins, ADecodedLengthOtherThanTheBlocksIsAFormatError) {
  ClearPlugins clear;
  install_dynamic_codec(DynamicCodec::load(kOpenzl, "openzl", FAKE_PLUGIN_GOOD));
  const std::vector<uint8_t> data = float_ramp(4096, 1.0f);
  for (uint8_t meta : {98, 99}) {  // the fake decoder claims one byte more / less
    const std::vector<uint8_t> chunk = encode_chunk(data, openzl_params(meta));
    try {
      ChunkView(chunk).decode();
      FAIL() << "meta " << int(meta) << ": a wrong decoded length was accepted";
    } catch (const UnsupportedError& e) {
      FAIL() << e.what();
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find("not 8192"), std::string::npos) << e.what();
    }
  }
}

TEST(DynamicPlugins, APluginBuiltForAnotherParameterLayoutIsRefusedAtLoad) {
  try {
    DynamicCodec::load(kOpenzl, "openzl", FAKE_PLUGIN_OTHER_ABI);
    FAIL() << "loaded a plugin that reads typesize elsewhere";
  } catch (const PluginLoadError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("round trip"), std::string::npos) << what;
    EXPECT_NE(what.find("c-blosc2 3.x"), std::string::npos) << what;
  }
}

TEST(DynamicPlugins, ALibraryThatIsNotAPluginIsRefused) {
  const std::pair<const char*, const char*> cases[] = {
      {FAKE_PLUGIN_NO_INFO, "no `info` symbol"},
      {FAKE_PLUGIN_MISSING_DECODER, "no_such_decoder, which the library does not define"},
      {"/nonexistent/libblosc2_openzl.so", "No such file"},
      {"relative/lib.so", "absolute path"},
      {"/", "not a regular file"}};
  for (auto [library, words] : cases) {
    try {
      DynamicCodec::load(kOpenzl, "openzl", library);
      FAIL() << library << " loaded";
    } catch (const PluginLoadError& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(DynamicCodec::load(kOpenzl, "../openzl", FAKE_PLUGIN_GOOD), PluginLoadError);
}

TEST(DynamicPlugins, PluginPathsLoadByNameAndRefuseUnknownNames) {
  ClearPlugins clear;
  EXPECT_THROW(load_dynamic_plugins({{"j2k", FAKE_PLUGIN_GOOD}}, "/nonexistent-python", std::chrono::seconds(5)),
               PluginLoadError);
  EXPECT_THROW(load_dynamic_plugins({{"openzl", FAKE_PLUGIN_NO_INFO}}, "/nonexistent-python", std::chrono::seconds(5)),
               PluginLoadError);
  const DynamicPluginSetup setup =
      load_dynamic_plugins({{"openzl", FAKE_PLUGIN_GOOD}}, "/nonexistent-python", std::chrono::seconds(5));
  ASSERT_EQ(setup.loaded.size(), 1u);
  EXPECT_NE(setup.loaded[0].find("codec openzl (38) from "), std::string::npos) << setup.loaded[0];
  EXPECT_TRUE(setup.notes.empty());
  EXPECT_NE(dynamic_codec(kOpenzl), nullptr);
}

TEST(DynamicPlugins, ThePythonLookupSaysWhyItFoundNothing) {
  std::string why;
  EXPECT_FALSE(find_plugin_with_python("openzl", "/nonexistent-python", std::chrono::seconds(5), &why));
  EXPECT_NE(why.find("cannot run /nonexistent-python"), std::string::npos) << why;
  EXPECT_FALSE(find_plugin_with_python("no_such_plugin_here", TEST_PYTHON, std::chrono::seconds(30), &why));
  EXPECT_NE(why.find("has no blosc2_no_such_plugin_here (pip install blosc2-no_such_plugin_here)"), std::string::npos)
      << why;
  // A Python that hangs is killed when the time is up.
  const fs::path hang = fs::temp_directory_path() / ("hanging-python-" + std::to_string(::getpid()));
  {
    std::ofstream script(hang);
    script << "#!/bin/sh\nexec sleep 30\n";
  }
  fs::permissions(hang, fs::perms::owner_all);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(find_plugin_with_python("openzl", hang.string(), std::chrono::milliseconds(300), &why));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  EXPECT_NE(why.find("did not answer"), std::string::npos) << why;
  fs::remove(hang);
}

// The plugin python-blosc2 uses to write OpenZL, from the test venv (pinned
// blosc2-openzl 0.0.1): found through its Python package, loaded, and checked to
// read the typesize where c-blosc2 3.x puts it.
TEST(DynamicPlugins, TheRealOpenzlPluginLoadsAndReadsTheTypesizeAtItsOffset) {
  ClearPlugins clear;
  std::string why;
  const std::optional<fs::path> library =
      find_plugin_with_python("openzl", TEST_PYTHON, std::chrono::seconds(60), &why);
  ASSERT_TRUE(library) << "the test venv (" << TEST_PYTHON << ") has no blosc2-openzl: " << why;
  EXPECT_EQ(library->filename(), "libblosc2_openzl.so");
  install_dynamic_codec(DynamicCodec::load(kOpenzl, "openzl", *library));
  const DynamicCodec* plugin = dynamic_codec(kOpenzl);
  ASSERT_NE(plugin, nullptr);
  const std::vector<uint8_t> data = float_ramp(50000, 0.125f);
  for (uint8_t meta : {0, 1, 2, 3, 6, 7, 14, 15, 16, 22, 31}) {
    SCOPED_TRACE("profile " + std::to_string(meta));
    const std::vector<uint8_t> chunk = encode_chunk(data, openzl_params(meta));
    ASSERT_EQ(parse_chunk_header(chunk).udcompcode, kOpenzl);
    EXPECT_FALSE(parse_chunk_header(chunk).memcpyed());
    EXPECT_EQ(ChunkView(chunk).decode(), data);
  }
  // One block decoded with another typesize than the one it was written with fails:
  // the plugin reads dparams.typesize, at offset 32.
  std::vector<uint8_t> block(data.begin(), data.begin() + 8192), coded(8192), out(8192);
  PluginEncodeParams p;
  p.typesize = 4;
  const size_t n = plugin->encode(p, block, coded);
  ASSERT_GT(n, 0u);
  plugin->decode(0, 4, ByteSpan(coded.data(), n), out, nullptr);
  EXPECT_EQ(out, block);
  EXPECT_THROW(plugin->decode(0, 8, ByteSpan(coded.data(), n), out, nullptr), FormatError);
  EXPECT_THROW(plugin->decode(0, 4, ByteSpan(coded.data(), n / 2), out, nullptr), FormatError);
}

}  // namespace
}  // namespace blosc2fs
