// A Blosc2 codec plugin for the tests of dynamic_plugins.cc, built in variants:
// the c-blosc2 3.x layout (FAKE_DPARAMS_TYPESIZE_AT 32), a plugin built for another
// layout (typesize read elsewhere), one with no `info`, and one whose `info` names
// a function it lacks. The codec: bytes shuffled by typesize, then run-length
// coded as (count, byte) pairs after one byte holding the typesize. Codec meta 99
// makes the decoder claim one byte too few, meta 98 one too many.
#include <cstdint>
#include <cstring>
#include <vector>

#ifndef FAKE_DPARAMS_TYPESIZE_AT
#define FAKE_DPARAMS_TYPESIZE_AT 32
#endif
#ifndef FAKE_CPARAMS_TYPESIZE_AT
#define FAKE_CPARAMS_TYPESIZE_AT 8
#endif

namespace {

int32_t field_at(const void* params, int offset) {
  int32_t v;
  std::memcpy(&v, static_cast<const uint8_t*>(params) + offset, sizeof v);
  return v;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int fake_encoder(const uint8_t* in, int32_t n, uint8_t* out, int32_t room,
                                                        uint8_t, void* cparams, const void*) {
  const int32_t ts = field_at(cparams, FAKE_CPARAMS_TYPESIZE_AT);
  if (ts < 1 || ts > 255 || n % ts != 0) return -1;
  std::vector<uint8_t> shuffled(static_cast<size_t>(n));
  const int32_t items = n / ts;
  for (int32_t i = 0; i < items; ++i)
    for (int32_t b = 0; b < ts; ++b) shuffled[size_t(b * items + i)] = in[i * ts + b];
  int32_t pos = 0;
  if (room < 1) return 0;
  out[pos++] = uint8_t(ts);
  for (int32_t i = 0; i < n;) {
    int32_t run = 1;
    while (i + run < n && run < 255 && shuffled[size_t(i + run)] == shuffled[size_t(i)]) ++run;
    if (pos + 2 > room) return 0;
    out[pos++] = uint8_t(run);
    out[pos++] = shuffled[size_t(i)];
    i += run;
  }
  return pos;
}

__attribute__((visibility("default"))) int fake_decoder(const uint8_t* in, int32_t n, uint8_t* out, int32_t size,
                                                        uint8_t meta, void* dparams, const void*) {
  const int32_t ts = field_at(dparams, FAKE_DPARAMS_TYPESIZE_AT);
  if (n < 1 || ts < 1 || in[0] != ts || size % ts != 0) return -1;
  std::vector<uint8_t> shuffled;
  for (int32_t i = 1; i + 1 < n; i += 2) shuffled.insert(shuffled.end(), in[i], in[i + 1]);
  if (int32_t(shuffled.size()) != size) return -2;
  const int32_t items = size / ts;
  for (int32_t i = 0; i < items; ++i)
    for (int32_t b = 0; b < ts; ++b) out[i * ts + b] = shuffled[size_t(b * items + i)];
  if (meta == 99) return size - 1;
  if (meta == 98) return size + 1;
  return size;
}

#ifndef FAKE_NO_INFO
struct FakeInfo {
  const char* encoder;
  const char* decoder;
};
#ifdef FAKE_MISSING_DECODER
__attribute__((visibility("default"))) FakeInfo info = {"fake_encoder", "no_such_decoder"};
#else
__attribute__((visibility("default"))) FakeInfo info = {"fake_encoder", "fake_decoder"};
#endif
#endif

}  // extern "C"
