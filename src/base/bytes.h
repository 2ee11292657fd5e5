// Endian-explicit loads and stores, and a bounds-checked cursor over untrusted bytes.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "error.h"

namespace blosc2fs {

using ByteSpan = std::span<const uint8_t>;
using MutableByteSpan = std::span<uint8_t>;

// Bytes read as the text they hold (JSON, msgpack strings, .npy headers).
inline std::string_view as_text(ByteSpan bytes) { return {reinterpret_cast<const char*>(bytes.data()), bytes.size()}; }
using Bytes = std::vector<uint8_t>;

// Bytes in memory that `holder` keeps alive; `held` is all the memory it
// keeps (what a cache that keeps the holder is charged).
struct HeldBytes {
  std::shared_ptr<const void> holder;
  ByteSpan bytes;
  size_t held = 0;
  explicit operator bool() const { return holder != nullptr; }
};

inline uint16_t load_le16(const uint8_t* p) { return uint16_t(p[0] | p[1] << 8); }
// On a little-endian host these are single unaligned loads and stores, which the
// codecs' word loops need (a byte-by-byte form is not always merged into one).
inline uint32_t load_le32(const uint8_t* p) {
  if constexpr (std::endian::native == std::endian::little) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
inline uint64_t load_le64(const uint8_t* p) {
  if constexpr (std::endian::native == std::endian::little) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
  return uint64_t(load_le32(p)) | uint64_t(load_le32(p + 4)) << 32;
}
inline uint16_t load_be16(const uint8_t* p) { return uint16_t(p[0] << 8 | p[1]); }
inline uint32_t load_be32(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}
inline uint64_t load_be64(const uint8_t* p) { return uint64_t(load_be32(p)) << 32 | load_be32(p + 4); }

inline void store_le32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i));
}
inline void store_le64(uint8_t* p, uint64_t v) {
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(p, &v, 8);
    return;
  }
  for (int i = 0; i < 8; ++i) p[i] = uint8_t(v >> (8 * i));
}
inline void store_be16(uint8_t* p, uint16_t v) { p[0] = uint8_t(v >> 8), p[1] = uint8_t(v); }
inline void store_be32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (24 - 8 * i));
}
inline void store_be64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = uint8_t(v >> (56 - 8 * i));
}

// Appends big-endian integers and raw bytes to a buffer (for msgpack headers).
inline void append_be16(Bytes& out, uint16_t v) { uint8_t b[2]; store_be16(b, v); out.insert(out.end(), b, b + 2); }
inline void append_be32(Bytes& out, uint32_t v) { uint8_t b[4]; store_be32(b, v); out.insert(out.end(), b, b + 4); }
inline void append_be64(Bytes& out, uint64_t v) { uint8_t b[8]; store_be64(b, v); out.insert(out.end(), b, b + 8); }
inline void append_le32(Bytes& out, uint32_t v) { uint8_t b[4]; store_le32(b, v); out.insert(out.end(), b, b + 4); }
inline void append_le64(Bytes& out, uint64_t v) { uint8_t b[8]; store_le64(b, v); out.insert(out.end(), b, b + 8); }

// Reads forward through untrusted bytes; every read is bounds-checked and throws
// FormatError("<context>: ...") when the input ends early.
class ByteReader {
 public:
  ByteReader(ByteSpan data, std::string context) : data_(data), context_(std::move(context)) {}

  size_t position() const { return pos_; }
  size_t remaining() const { return data_.size() - pos_; }
  void seek(size_t pos) {
    if (pos > data_.size()) fail("offset " + std::to_string(pos) + " is past the end");
    pos_ = pos;
  }
  ByteSpan take(size_t n) {
    need(n);
    ByteSpan s = data_.subspan(pos_, n);
    pos_ += n;
    return s;
  }
  uint8_t u8() { need(1); return data_[pos_++]; }
  uint16_t be16() { return load_be16(take(2).data()); }
  uint32_t be32() { return load_be32(take(4).data()); }
  uint64_t be64() { return load_be64(take(8).data()); }
  uint32_t le32() { return load_le32(take(4).data()); }
  uint64_t le64() { return load_le64(take(8).data()); }
  // Reads one byte and checks it is the expected msgpack marker.
  void expect(uint8_t marker, const char* what) {
    uint8_t got = u8();
    if (got != marker) fail(std::string("expected ") + what);
  }
  [[noreturn]] void fail(const std::string& why) const {
    throw FormatError(context_ + ": " + why + " (at byte " + std::to_string(pos_) + ")");
  }

 private:
  void need(size_t n) const {
    if (n > data_.size() - pos_) fail("truncated: need " + std::to_string(n) + " more bytes");
  }
  ByteSpan data_;
  size_t pos_ = 0;
  std::string context_;
};

}  // namespace blosc2fs
