// The binary interface of the codec plugins c-blosc2 loads at run time, as the
// c-blosc2 3.x headers define it (python-blosc2 4.14.1 carries c-blosc2 3.3.5):
// the library exports a data symbol `info`, two C strings naming its encoder and
// decoder functions, and c-blosc2 calls them with its cparams/dparams structs.
// These are our own declarations of those layouts; a plugin built against
// another layout reads the wrong fields, which the load-time round trip in
// dynamic_plugins.cc catches (docs/codecs.md).
#pragma once

#include <cstddef>
#include <cstdint>

namespace blosc2fs::plugin_abi {

inline constexpr const char* kAbiName = "c-blosc2 3.x (python-blosc2 4.x)";
inline constexpr int kMaxFilters = 6;

// blosc2_dparams: what a decoder receives.
struct DParams {
  int16_t nthreads;
  void* schunk;       // the super-chunk; null here (nothing we know of reads it)
  void* postfilter;
  void* postparams;
  int32_t typesize;   // the chunk header's typesize: the OpenZL decoder's struct width
};

// blosc2_cparams: what an encoder receives.
struct CParams {
  uint8_t compcode;
  uint8_t compcode_meta;
  uint8_t clevel;
  int use_dict;
  int32_t typesize;
  int16_t nthreads;
  int32_t blocksize;
  int32_t splitmode;
  void* schunk;
  uint8_t filters[kMaxFilters];
  uint8_t filters_meta[kMaxFilters];
  void* prefilter;
  void* preparams;
  void* tuner_params;
  int tuner_id;
  bool instr_codec;
  void* codec_params;
  void* filter_params[kMaxFilters];
};

// The `info` symbol of a codec plugin.
struct CodecInfoSymbol {
  const char* encoder;
  const char* decoder;
};

// Both return the number of bytes written to output (the decoder: the decoded
// length, which must equal output_len), 0 (encoder: could not compress) or < 0.
using Encoder = int (*)(const uint8_t* input, int32_t input_len, uint8_t* output, int32_t output_len, uint8_t meta,
                        CParams* cparams, const void* chunk);
using Decoder = int (*)(const uint8_t* input, int32_t input_len, uint8_t* output, int32_t output_len, uint8_t meta,
                        DParams* dparams, const void* chunk);

// The layout of c-blosc2 3.3.5 on LP64 Linux (x86-64, aarch64): the offsets the
// plugins read (the OpenZL decoder: typesize at 32; its encoder: clevel at 2,
// typesize at 8). tests/unit/dynamic_plugins_test.cc pins them too.
static_assert(sizeof(void*) == 8, "the plugin ABI is pinned for LP64 only");
static_assert(sizeof(DParams) == 40 && offsetof(DParams, schunk) == 8 && offsetof(DParams, postfilter) == 16 &&
              offsetof(DParams, postparams) == 24 && offsetof(DParams, typesize) == 32);
static_assert(sizeof(CParams) == 136 && offsetof(CParams, compcode_meta) == 1 && offsetof(CParams, clevel) == 2 &&
              offsetof(CParams, use_dict) == 4 && offsetof(CParams, typesize) == 8 &&
              offsetof(CParams, nthreads) == 12 && offsetof(CParams, blocksize) == 16 &&
              offsetof(CParams, splitmode) == 20 && offsetof(CParams, schunk) == 24 &&
              offsetof(CParams, filters) == 32 && offsetof(CParams, filters_meta) == 38 &&
              offsetof(CParams, prefilter) == 48 && offsetof(CParams, tuner_id) == 72 &&
              offsetof(CParams, instr_codec) == 76 && offsetof(CParams, codec_params) == 80 &&
              offsetof(CParams, filter_params) == 88);
static_assert(sizeof(CodecInfoSymbol) == 16);

}  // namespace blosc2fs::plugin_abi
