// BloscLZ from its token grammar (format-notes §5.7):
//   first byte:  literal run control, read as byte & 31
//   ctrl < 32:   literal run of ctrl + 1 bytes
//   ctrl >= 32:  match of (ctrl >> 5) + 2 bytes; a length field of 7 is extended by bytes
//                that are added until one is not 255; then a code byte; the distance is
//                ((ctrl & 31) << 8) + code + 1, except that (ctrl & 31) == 31 with code 255
//                announces a big-endian u16 d and the distance d + 8192.
// The reference decoder stops as soon as a match token reaches the end of the input,
// before copying it, so every stream we write ends with a literal run.
#include "blosclz.h"

#include <algorithm>
#include <bit>
#include <climits>
#include <cstring>
#include <memory>

#include "bytes.h"

namespace blosc2fs {

namespace {

constexpr size_t kMaxLiteralRun = 32;
constexpr size_t kMaxNearDistance = 8191;             // distance - 1 must stay below this
constexpr size_t kMaxFarDistance = 8192 + 65535;      // far form: d + 8192, d a u16
constexpr size_t kMinMatch = 4;
constexpr size_t kMinFarMatch = 6;                    // a far match costs 4+ bytes
constexpr size_t kMinInput = 16;                      // below this, store literals only

// Copies a match of `len` bytes from `dist` bytes back; the source may overlap the
// destination. Once dist bytes are copied the output repeats with period dist, so
// every copy can double the distance it reads from.
inline void copy_match(uint8_t* op, size_t dist, size_t len) {
  if (dist == 1) {
    std::memset(op, op[-1], len);
    return;
  }
  while (len > 0) {
    const size_t n = std::min(len, dist);
    std::memcpy(op, op - dist, n);
    op += n;
    len -= n;
    dist += n;
  }
}

class TokenWriter {
 public:
  TokenWriter(uint8_t* dst, size_t capacity) : op_(dst), end_(dst + capacity), begin_(dst) {}

  bool literals(const uint8_t* p, size_t count) {
    while (count > 0) {
      const size_t run = std::min(count, kMaxLiteralRun);
      if (size_t(end_ - op_) < run + 1) return false;
      *op_++ = uint8_t(run - 1);
      std::memcpy(op_, p, run);
      op_ += run;
      p += run;
      count -= run;
    }
    return true;
  }

  bool match(size_t len, size_t dist) {
    const size_t extension = len >= 9 ? (len - 9) / 255 + 1 : 0;
    if (size_t(end_ - op_) < 4 + extension) return false;
    const uint8_t length_field = uint8_t(len >= 9 ? 7 : len - 2);
    const bool far = dist - 1 >= kMaxNearDistance;
    const size_t near_code = dist - 1;
    *op_++ = uint8_t(length_field << 5 | (far ? 31 : near_code >> 8));
    if (length_field == 7) {
      size_t rest = len - 9;
      for (; rest >= 255; rest -= 255) *op_++ = 255;
      *op_++ = uint8_t(rest);
    }
    if (far) {
      const size_t d = dist - 8192;
      *op_++ = 255;
      *op_++ = uint8_t(d >> 8);
      *op_++ = uint8_t(d);
    } else {
      *op_++ = uint8_t(near_code);
    }
    return true;
  }

  size_t size() const { return size_t(op_ - begin_); }

 private:
  uint8_t* op_;
  uint8_t* end_;
  uint8_t* begin_;
};

// Hash table of recent positions, per thread. It is never cleared: a stale entry is
// harmless because every candidate is checked to lie before the current position and
// to hold the same four bytes.
uint32_t* thread_hash_table(unsigned hash_log) {
  thread_local std::unique_ptr<uint32_t[]> table;
  thread_local unsigned table_log = 0;
  if (table_log < hash_log) {
    table.reset(new uint32_t[size_t(1) << hash_log]());
    table_log = hash_log;
  }
  return table.get();
}

}  // namespace

// Fixed-size copies compile to a few vector moves; the decoder uses them whenever the
// buffers have room for the bytes they copy beyond the token's end. Those bytes are
// scratch: later tokens overwrite them, and a stream that stops short is an error.
inline void copy8(uint8_t* dst, const uint8_t* src) { std::memcpy(dst, src, 8); }
inline void copy16(uint8_t* dst, const uint8_t* src) { std::memcpy(dst, src, 16); }
inline void copy32(uint8_t* dst, const uint8_t* src) { std::memcpy(dst, src, 32); }

int blosclz_decompress(const uint8_t* src, size_t src_size, uint8_t* dst, size_t dst_size) {
  if (src_size == 0) return 0;
  if (dst_size > size_t(INT_MAX)) return -1;
  const uint8_t* ip = src;
  const uint8_t* const ip_end = src + src_size;
  uint8_t* op = dst;
  uint8_t* const op_end = dst + dst_size;
  uint32_t ctrl = *ip++ & 31u;
  for (;;) {
    if (ctrl >= 32) {
      size_t len = (ctrl >> 5) - 1;
      size_t dist = size_t(ctrl & 31u) << 8;
      if (len == 6) {
        uint8_t code;
        do {
          if (ip_end - ip < 2) return -1;
          code = *ip++;
          len += code;
        } while (code == 255);
      } else if (ip_end - ip < 2) {
        return -1;
      }
      const uint8_t code = *ip++;
      len += 3;
      if (code == 255 && dist == (31u << 8)) {
        if (ip_end - ip < 2) return -1;
        dist = (size_t(ip[0]) << 8 | ip[1]) + 8192;
        ip += 2;
      } else {
        dist += size_t(code) + 1;
      }
      if (len > size_t(op_end - op) || dist > size_t(op - dst)) return -1;
      if (ip >= ip_end) break;
      ctrl = *ip++;
      // Each wide step reads only bytes that are already written: step <= dist.
      const size_t room = size_t(op_end - op);
      const uint8_t* ref = op - dist;
      uint8_t* const stop = op + len;
      if (dist >= 16 && room >= len + 15) {
        for (uint8_t* o = op; o < stop; o += 16, ref += 16) copy16(o, ref);
      } else if (dist >= 8 && room >= len + 7) {
        for (uint8_t* o = op; o < stop; o += 8, ref += 8) copy8(o, ref);
      } else {
        copy_match(op, dist, len);
      }
      op = stop;
    } else {
      const size_t run = ctrl + 1;
      if (run > size_t(op_end - op) || run > size_t(ip_end - ip)) return -1;
      if (size_t(op_end - op) >= 32 && size_t(ip_end - ip) >= 32)
        copy32(op, ip);
      else
        std::memcpy(op, ip, run);
      op += run;
      ip += run;
      if (ip >= ip_end) break;
      ctrl = *ip++;
    }
  }
  return int(op - dst);
}

int blosclz_compress(int clevel, const uint8_t* src, size_t src_size, uint8_t* dst, size_t dst_capacity) {
  if (src_size == 0 || src_size > size_t(INT_MAX) || dst_capacity == 0) return 0;
  TokenWriter out(dst, dst_capacity);
  if (src_size < kMinInput) return out.literals(src, src_size) ? int(out.size()) : 0;

  // Higher levels: a bigger table and slower skipping over data that does not match.
  const unsigned hash_log = clevel <= 3 ? 12 : clevel <= 6 ? 14 : 15;
  const unsigned skip_shift = clevel <= 3 ? 4 : clevel <= 6 ? 5 : 6;
  uint32_t* table = thread_hash_table(hash_log);
  auto hash = [hash_log](uint32_t seq) { return (seq * 2654435761u) >> (32 - hash_log); };

  // Matches end at least 4 bytes before the end, so the stream closes with literals.
  const size_t match_limit = src_size - 4;
  const size_t search_limit = src_size - 8;
  size_t ip = 0;
  size_t anchor = 0;
  while (ip < search_limit) {
    const uint32_t seq = load_le32(src + ip);
    uint32_t& slot = table[hash(seq)];
    const size_t ref = slot;
    slot = uint32_t(ip);
    const size_t dist = ip - ref;
    if (ref < ip && dist <= kMaxFarDistance && load_le32(src + ref) == seq) {
      size_t len = kMinMatch;
      for (;;) {
        if (ip + len + 8 > match_limit) {
          while (ip + len < match_limit && src[ref + len] == src[ip + len]) ++len;
          break;
        }
        const uint64_t diff = load_le64(src + ip + len) ^ load_le64(src + ref + len);
        if (diff) {
          len += size_t(std::countr_zero(diff)) / 8;
          break;
        }
        len += 8;
      }
      if (dist - 1 < kMaxNearDistance || len >= kMinFarMatch) {
        if (!out.literals(src + anchor, ip - anchor) || !out.match(len, dist)) return 0;
        ip += len;
        anchor = ip;
        // Seed the table with the match's last position to find the next repeat sooner.
        table[hash(load_le32(src + ip - 1))] = uint32_t(ip - 1);
        continue;
      }
    }
    ip += 1 + ((ip - anchor) >> skip_shift);
  }
  if (!out.literals(src + anchor, src_size - anchor)) return 0;
  return int(out.size());
}

}  // namespace blosc2fs
