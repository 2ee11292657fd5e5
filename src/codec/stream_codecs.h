// Compression and decompression of one Blosc stream with the built-in codecs.
// Internal to the chunk codec. Codec contexts are thread-local, so every function
// here may run concurrently on different threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "bytes.h"
#include "chunk_format.h"

namespace blosc2fs {

// A chunk's optional dictionary, prepared once per chunk and shared read-only.
class StreamDictionary {
 public:
  // Throws FormatError when zstd cannot load the dictionary bytes.
  StreamDictionary(uint8_t compformat, ByteSpan bytes);
  ~StreamDictionary();
  StreamDictionary(const StreamDictionary&) = delete;
  StreamDictionary& operator=(const StreamDictionary&) = delete;

  ByteSpan bytes() const { return bytes_; }
  const void* zstd_ddict() const { return zstd_ddict_; }

 private:
  ByteSpan bytes_;
  void* zstd_ddict_ = nullptr;  // ZSTD_DDict*, only for zstd chunks
};

// Decompresses src[0, csize) into exactly dst[0, dst_size). Returns false when the
// stream is malformed or does not produce exactly dst_size bytes.
bool decompress_stream(uint8_t compformat, const uint8_t* src, size_t csize, uint8_t* dst, size_t dst_size,
                       const StreamDictionary* dict);

// Compresses src into dst; returns the compressed size, or 0 when it does not fit in
// dst_capacity (the caller then stores the stream raw).
size_t compress_stream(Codec codec, int clevel, const uint8_t* src, size_t size, uint8_t* dst, size_t dst_capacity);

// The compformat a chunk header records for a codec (lz4hc shares lz4's).
uint8_t codec_compformat(Codec codec);

}  // namespace blosc2fs
