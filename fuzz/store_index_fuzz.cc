// The store index from arbitrary bytes: the input is written as a file and read
// as a .b2z (zip central directory, local headers, embed.b2e, every leaf opened
// and described as store.json lists it), or, when it is no zip, its bytes after
// the first 8 (a stream length) are parsed as an EmbedStore map. Nothing may
// crash, hang, allocate without bound or yield a key that could leave the mount.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

#include "embed_map.h"
#include "error.h"
#include "fuzz_script.h"
#include "store.h"
#include "store_key.h"
#include "zip_directory.h"

namespace {

std::string scratch_path() {
  static const std::string path = [] {
    std::filesystem::create_directories(blosc2fs::fuzz::scratch_dir_path());
    return (blosc2fs::fuzz::scratch_dir_path() / "store.b2z").string();
  }();
  return path;
}

void check_key(const std::string& key) {
  if (blosc2fs::bad_key(key)) __builtin_trap();  // a served key must be a safe path
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace blosc2fs;
  if (size >= 2 && data[0] == 'P' && data[1] == 'K') {
    const std::string path = scratch_path();
    if (FILE* f = std::fopen(path.c_str(), "wb")) {
      std::fwrite(data, 1, size, f);
      std::fclose(f);
    } else {
      return 0;
    }
    try {
      ZipDirectory dir = read_zip_directory(*open_local_file(path));
      for (const ZipMember& m : dir.members) {
        if (bad_relative_path(m.name) || m.data_offset < 0 || m.stored_size < 0 ||
            m.data_offset + m.stored_size > int64_t(size))
          __builtin_trap();
      }
    } catch (const FormatError&) {
    } catch (const IoError&) {
    }
    try {
      auto store = Store::open(path);
      for (const StoreLeaf& leaf : store->leaves()) check_key(leaf.key);
      (void)store_json_text(*store);
    } catch (const FormatError&) {
    } catch (const IoError&) {
    }
    return 0;
  }
  if (size < 8) return 0;
  int64_t stream_nbytes = 0;
  for (int i = 0; i < 8; ++i) stream_nbytes = stream_nbytes << 8 | data[i];
  stream_nbytes &= INT64_MAX;
  try {
    EmbedMap map = parse_embed_map(ByteSpan(data + 8, size - 8), stream_nbytes);
    for (const EmbedEntry& e : map.entries) {
      check_key(e.key);
      if (!e.remote && (e.offset < 0 || e.length < 0 || e.offset + e.length > stream_nbytes)) __builtin_trap();
    }
  } catch (const FormatError&) {
  }
  return 0;
}
