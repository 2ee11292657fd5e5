// One Blosc stream through liblz4, zlib, libzstd or our own BloscLZ.
//
// Level mapping from the Blosc clevel (1..9) to each library:
//   lz4    acceleration 10 - clevel (clevel 9 is LZ4's default speed, lower levels go faster)
//   lz4hc  LZ4HC level = clevel
//   zlib   level = clevel
//   zstd   1, 2, 3, 5, 7, 9, 12, 15, 19 for clevel 1..9: the fast strategies up to
//          clevel 6, the lazy/optimal ones only at the top where ratio is the point.
#include "stream_codecs.h"

#include <lz4.h>
#include <lz4hc.h>
#include <zlib.h>
#include <zstd.h>

#include <climits>
#include <memory>

#include "blosclz.h"

namespace blosc2fs {

namespace {

// Compressed formats as chunk headers number them (flags >> 5).
constexpr uint8_t kFormatBlosclz = 0;
constexpr uint8_t kFormatLz4 = 1;
constexpr uint8_t kFormatZlib = 3;
constexpr uint8_t kFormatZstd = 4;
constexpr uint8_t kFormatUser = 6;  // a plugin codec, named by the chunk's udcompcode

struct ZstdDctxDeleter {
  void operator()(ZSTD_DCtx* c) const { ZSTD_freeDCtx(c); }
};
struct ZstdCctxDeleter {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};

ZSTD_DCtx* thread_zstd_dctx() {
  thread_local std::unique_ptr<ZSTD_DCtx, ZstdDctxDeleter> ctx(ZSTD_createDCtx());
  return ctx.get();
}

ZSTD_CCtx* thread_zstd_cctx() {
  thread_local std::unique_ptr<ZSTD_CCtx, ZstdCctxDeleter> ctx(ZSTD_createCCtx());
  return ctx.get();
}

// A zlib stream kept per thread so that a block costs no allocation: zlib's one-shot
// uncompress() would set up and tear down its window for every stream.
class InflateStream {
 public:
  InflateStream() { ok_ = inflateInit(&z_) == Z_OK; }
  ~InflateStream() {
    if (ok_) inflateEnd(&z_);
  }
  InflateStream(const InflateStream&) = delete;
  InflateStream& operator=(const InflateStream&) = delete;

  bool run(const uint8_t* src, size_t csize, uint8_t* dst, size_t dst_size) {
    if (!ok_ || csize > UINT_MAX || dst_size > UINT_MAX) return false;
    if (inflateReset(&z_) != Z_OK) return false;
    z_.next_in = const_cast<Bytef*>(src);
    z_.avail_in = uInt(csize);
    z_.next_out = dst;
    z_.avail_out = uInt(dst_size);
    const int rc = inflate(&z_, Z_FINISH);
    return rc == Z_STREAM_END && z_.avail_out == 0;
  }

 private:
  z_stream z_{};
  bool ok_ = false;
};

class DeflateStream {
 public:
  DeflateStream() = default;
  ~DeflateStream() {
    if (level_ >= 0) deflateEnd(&z_);
  }
  DeflateStream(const DeflateStream&) = delete;
  DeflateStream& operator=(const DeflateStream&) = delete;

  size_t run(int level, const uint8_t* src, size_t size, uint8_t* dst, size_t capacity) {
    if (size > UINT_MAX || capacity > UINT_MAX) return 0;
    if (level != level_) {
      if (level_ >= 0) deflateEnd(&z_);
      z_ = z_stream{};
      level_ = -1;
      if (deflateInit(&z_, level) != Z_OK) return 0;
      level_ = level;
    } else if (deflateReset(&z_) != Z_OK) {
      return 0;
    }
    z_.next_in = const_cast<Bytef*>(src);
    z_.avail_in = uInt(size);
    z_.next_out = dst;
    z_.avail_out = uInt(capacity);
    if (deflate(&z_, Z_FINISH) != Z_STREAM_END) return 0;
    return capacity - z_.avail_out;
  }

 private:
  z_stream z_{};
  int level_ = -1;
};

// LZ4 compression states, allocated once per thread.
void* thread_lz4_state() {
  thread_local std::unique_ptr<uint8_t[]> state(new uint8_t[size_t(LZ4_sizeofState())]);
  return state.get();
}

void* thread_lz4hc_state() {
  thread_local std::unique_ptr<uint8_t[]> state(new uint8_t[size_t(LZ4_sizeofStateHC())]);
  return state.get();
}

int zstd_level(int clevel) {
  static constexpr int kLevels[10] = {1, 1, 2, 3, 5, 7, 9, 12, 15, 19};
  return kLevels[clevel < 0 ? 0 : clevel > 9 ? 9 : clevel];
}

}  // namespace

StreamDictionary::StreamDictionary(uint8_t compformat, ByteSpan bytes) : bytes_(bytes) {
  if (compformat == kFormatZstd) {
    zstd_ddict_ = ZSTD_createDDict(bytes.data(), bytes.size());
    if (!zstd_ddict_) throw FormatError("chunk dictionary: zstd cannot load its " + std::to_string(bytes.size()) + " bytes");
  }
}

StreamDictionary::~StreamDictionary() { ZSTD_freeDDict(static_cast<ZSTD_DDict*>(zstd_ddict_)); }

uint8_t codec_compformat(Codec codec) {
  switch (codec) {
    case Codec::blosclz: return kFormatBlosclz;
    case Codec::lz4:
    case Codec::lz4hc: return kFormatLz4;
    case Codec::zlib: return kFormatZlib;
    case Codec::zstd: return kFormatZstd;
    case Codec::ndlz:
    case Codec::zfp_accuracy:
    case Codec::zfp_precision:
    case Codec::zfp_rate: return kFormatUser;
  }
  // The other plugin ids (a codec loaded at run time, openzl) are plugins too.
  return is_plugin_codec(codec) ? kFormatUser : kFormatBlosclz;
}

bool decompress_stream(uint8_t compformat, const uint8_t* src, size_t csize, uint8_t* dst, size_t dst_size,
                       const StreamDictionary* dict) {
  if (csize > size_t(INT_MAX) || dst_size > size_t(INT_MAX)) return false;
  switch (compformat) {
    case kFormatBlosclz:
      return blosclz_decompress(src, csize, dst, dst_size) == int64_t(dst_size);
    case kFormatLz4: {
      const char* in = reinterpret_cast<const char*>(src);
      char* out = reinterpret_cast<char*>(dst);
      const int n = dict ? LZ4_decompress_safe_usingDict(in, out, int(csize), int(dst_size),
                                                         reinterpret_cast<const char*>(dict->bytes().data()),
                                                         int(dict->bytes().size()))
                         : LZ4_decompress_safe(in, out, int(csize), int(dst_size));
      return n == int(dst_size);
    }
    case kFormatZlib: {
      thread_local InflateStream inflater;
      return inflater.run(src, csize, dst, dst_size);
    }
    case kFormatZstd: {
      ZSTD_DCtx* dctx = thread_zstd_dctx();
      if (!dctx) return false;
      const size_t n =
          dict ? ZSTD_decompress_usingDDict(dctx, dst, dst_size, src, csize,
                                            static_cast<const ZSTD_DDict*>(dict->zstd_ddict()))
               : ZSTD_decompressDCtx(dctx, dst, dst_size, src, csize);
      return !ZSTD_isError(n) && n == dst_size;
    }
    default:
      return false;
  }
}

size_t compress_stream(Codec codec, int clevel, const uint8_t* src, size_t size, uint8_t* dst, size_t dst_capacity) {
  if (size > size_t(INT_MAX) || dst_capacity == 0) return 0;
  const int capacity = dst_capacity > size_t(INT_MAX) ? INT_MAX : int(dst_capacity);
  const char* in = reinterpret_cast<const char*>(src);
  char* out = reinterpret_cast<char*>(dst);
  switch (codec) {
    case Codec::blosclz: {
      const int n = blosclz_compress(clevel, src, size, dst, size_t(capacity));
      return n > 0 ? size_t(n) : 0;
    }
    case Codec::lz4: {
      const int n = LZ4_compress_fast_extState(thread_lz4_state(), in, out, int(size), capacity, 10 - clevel);
      return n > 0 ? size_t(n) : 0;
    }
    case Codec::lz4hc: {
      const int n = LZ4_compress_HC_extStateHC(thread_lz4hc_state(), in, out, int(size), capacity, clevel);
      return n > 0 ? size_t(n) : 0;
    }
    case Codec::zlib: {
      thread_local DeflateStream deflater;
      return deflater.run(clevel, src, size, dst, size_t(capacity));
    }
    case Codec::zstd: {
      ZSTD_CCtx* cctx = thread_zstd_cctx();
      if (!cctx) return 0;
      const size_t n = ZSTD_compressCCtx(cctx, dst, size_t(capacity), src, size, zstd_level(clevel));
      return ZSTD_isError(n) ? 0 : n;
    }
    case Codec::ndlz:
    case Codec::zfp_accuracy:
    case Codec::zfp_precision:
    case Codec::zfp_rate:
      break;  // plugin codecs: codec_registry
  }
  return 0;
}

}  // namespace blosc2fs
