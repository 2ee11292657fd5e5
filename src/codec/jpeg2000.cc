// The JPEG 2000 codecs of python-blosc2's plugins, decoded by OpenJPEG
// (plugin-codecs.md §7).
//
// OpenJPEG sizes its tile structures and sample buffers by the codestream's SIZ
// marker, which a hostile block can make claim 65,535 tiles of 16,384 components
// (OpenJPEG 2.5.0 then fills 640 MB while only reading the main header). So SIZ is
// read here first, and the image it describes must fit the block the plugin would
// have filled before OpenJPEG sees a byte.
#include "jpeg2000.h"
#include "error.h"

#include <openjpeg.h>
#include <setjmp.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sanitizers.h"
#ifdef BLOSC2FS_ADDRESS_SANITIZER
#include <sanitizer/lsan_interface.h>
#endif

namespace blosc2fs {

namespace {

constexpr uint8_t kJp2Signature[12] = {0x00, 0x00, 0x00, 0x0C, 0x6A, 0x50, 0x20, 0x20, 0x0D, 0x0A, 0x87, 0x0A};
constexpr uint32_t kBoxJp2Header = 0x6A703268;  // 'jp2h'
constexpr uint32_t kBoxCodestream = 0x6A703263;  // 'jp2c'
constexpr uint32_t kBoxPalette = 0x70636C72;  // 'pclr'
constexpr uint8_t kFloatFrameMagic[8] = {'B', '2', 'J', 'P', 'F', '3', '2', 0};
constexpr size_t kFloatFrameHeader = 64;
constexpr uint16_t kFloatConstant = 4;

// OpenJPEG 2.5.0 spends about 10 KB per tile and 1 KB per tile-component on
// reading the main header, and about 14 KB per component (at 33 resolution
// levels) on decoding a tile (measured). The plugins write one tile of 1 or 3
// components. Beyond 64 tiles, tiles must average 64 pixels: with the caps, a
// hostile header costs at most a few MB, or 160 bytes per pixel of the block up
// to 45 MB, freed at once.
constexpr int64_t kFreeTiles = 64;
constexpr int64_t kMinPixelsPerTile = 64;
constexpr int64_t kMaxTiles = 4096;
constexpr int64_t kMaxTileComponents = 4096;
constexpr int kMaxComponents = 1024;

const char* codec_name(uint8_t id) {
  switch (id) {
    case kCodecOpenHtj2k: return "openhtj2k";
    case kCodecGrok: return "grok";
    case kCodecJ2k: return "j2k";
    default: return "htj2k";
  }
}

struct Siz {
  int64_t width = 0, height = 0;
  int64_t tiles_across = 0, tiles_down = 0;  // each below 2^32
  std::vector<int> precision;  // bits, per component
  int max_precision = 0;
  int components() const { return int(precision.size()); }
};

// The SIZ marker segment of a raw codestream (ISO 15444-1 A.5.1), checked.
Siz read_siz(ByteSpan cs, const std::string& what) {
  ByteReader r(cs, what + ": codestream");
  if (r.be16() != 0xFF4F) r.fail("does not start with SOC (FF4F)");
  if (r.be16() != 0xFF51) r.fail("SOC is not followed by SIZ (FF51)");
  const uint16_t length = r.be16();
  ByteReader siz(r.take(length >= 2 ? length - 2 : 0), what + ": SIZ marker");
  siz.be16();  // Rsiz: capabilities (Part 15 for HTJ2K)
  const uint32_t xsiz = siz.be32(), ysiz = siz.be32(), xo = siz.be32(), yo = siz.be32();
  const uint32_t xt = siz.be32(), yt = siz.be32(), xto = siz.be32(), yto = siz.be32();
  const uint16_t csiz = siz.be16();
  if (csiz < 1 || csiz > 16384) siz.fail(str(csiz) + " components");
  if (csiz > kMaxComponents)
    throw UnsupportedError(what + ": " + str(csiz) + " components (at most " + str(kMaxComponents) + " are taken)");
  if (length != 38 + 3 * csiz) siz.fail(str(length) + " bytes long for " + str(csiz) + " components");
  if (xo >= xsiz || yo >= ysiz) siz.fail("empty image " + str(xsiz) + " x " + str(ysiz));
  if (xt == 0 || yt == 0 || xto > xo || yto > yo || int64_t(xto) + xt <= xo || int64_t(yto) + yt <= yo)
    siz.fail("a tile grid that does not cover the image");
  Siz s;
  s.tiles_across = (int64_t(xsiz) - xto + xt - 1) / xt;
  s.tiles_down = (int64_t(ysiz) - yto + yt - 1) / yt;
  s.width = int64_t(xsiz) - xo;
  s.height = int64_t(ysiz) - yo;
  for (int c = 0; c < csiz; ++c) {
    const uint8_t ssiz = siz.u8(), dx = siz.u8(), dy = siz.u8();
    const int precision = (ssiz & 0x7F) + 1;
    if (precision > 38) siz.fail("component " + str(c) + " has " + str(precision) + "-bit samples");
    if (precision > 31)
      throw UnsupportedError(what + ": component " + str(c) + " has " + str(precision) +
                             "-bit samples; OpenJPEG decodes at most 31 bits");
    if (dx == 0 || dy == 0) siz.fail("component " + str(c) + " has a subsampling of 0");
    if (dx != 1 || dy != 1)
      throw UnsupportedError(what + ": component " + str(c) + " is subsampled " + str(dx) + " x " + str(dy) +
                             "; the plugins write full-size components only");
    s.precision.push_back(precision);
    s.max_precision = std::max(s.max_precision, precision);
  }
  return s;
}

struct Box {
  uint32_t type;
  ByteSpan body;
};

// The next box of a JP2 file (ISO 15444-1 I.4), its length checked against the bytes.
Box next_box(ByteReader& r) {
  const uint64_t length32 = r.be32();
  const uint32_t type = r.be32();
  uint64_t content;
  if (length32 == 1) {
    const uint64_t length64 = r.be64();
    if (length64 < 16) r.fail("box of " + str(int64_t(length64)) + " bytes");
    content = length64 - 16;
  } else if (length32 == 0) {
    content = r.remaining();
  } else {
    if (length32 < 8) r.fail("box of " + str(int64_t(length32)) + " bytes");
    content = length32 - 8;
  }
  if (content > r.remaining()) r.fail("box runs past the end of the block");
  return {type, r.take(size_t(content))};
}

// The codestream inside a JP2 file: its first top-level jp2c box.
ByteSpan jp2_codestream(ByteSpan file, const std::string& what) {
  ByteReader r(file, what + ": JP2 file");
  while (r.remaining() > 0) {
    const Box box = next_box(r);
    if (box.type == kBoxCodestream) return box.body;
    if (box.type != kBoxJp2Header) continue;
    // A palette turns each sample into several components, which the plugins
    // never write and OpenJPEG is told not to apply (the block could not hold them).
    ByteReader header(box.body, what + ": JP2 header box");
    while (header.remaining() > 0)
      if (next_box(header).type == kBoxPalette)
        throw UnsupportedError(what + ": JP2 file with a palette (pclr box), which the plugins do not write");
  }
  r.fail("no codestream (jp2c) box");
}

// OpenJPEG reads its input through callbacks; 2.5.0 has no memory stream.
struct MemoryInput {
  ByteSpan bytes;
  size_t position = 0;
};

OPJ_SIZE_T read_input(void* buffer, OPJ_SIZE_T n, void* user) {
  auto* in = static_cast<MemoryInput*>(user);
  const size_t left = in->bytes.size() - in->position;
  if (left == 0) return OPJ_SIZE_T(-1);
  const size_t k = std::min<size_t>(n, left);
  std::memcpy(buffer, in->bytes.data() + in->position, k);
  in->position += k;
  return k;
}

OPJ_OFF_T skip_input(OPJ_OFF_T n, void* user) {
  auto* in = static_cast<MemoryInput*>(user);
  const int64_t target = std::clamp<int64_t>(int64_t(in->position) + n, 0, int64_t(in->bytes.size()));
  const OPJ_OFF_T moved = OPJ_OFF_T(target - int64_t(in->position));
  in->position = size_t(target);
  return moved;
}

OPJ_BOOL seek_input(OPJ_OFF_T to, void* user) {
  auto* in = static_cast<MemoryInput*>(user);
  if (to < 0 || uint64_t(to) > in->bytes.size()) return OPJ_FALSE;
  in->position = size_t(to);
  return OPJ_TRUE;
}

void keep_error(const char* message, void* user) {
  auto* last = static_cast<std::string*>(user);
  *last = message;
  while (!last->empty() && (last->back() == '\n' || last->back() == ' ')) last->pop_back();
}

void ignore_message(const char*, void*) {}

struct CodecDestroyer {
  void operator()(opj_codec_t* c) const { opj_destroy_codec(c); }
};
struct StreamDestroyer {
  void operator()(opj_stream_t* s) const { opj_stream_destroy(s); }
};
struct ImageDestroyer {
  void operator()(opj_image_t* i) const { opj_image_destroy(i); }
};
using Image = std::unique_ptr<opj_image_t, ImageDestroyer>;

// Debian builds OpenJPEG with its assert()s on, and some are reachable from bad
// input (ht_dec.c's mel_init, found by our fuzzer): assert() aborts, which would
// take the whole mount down for one bad block. While OpenJPEG runs on a thread
// (in that thread: decoding is told to use no worker threads), SIGABRT jumps back
// to the call instead, which then fails as a bad block. Only OpenJPEG's C frames
// and libc's assert/abort lie between, so no destructor is skipped; what OpenJPEG
// had allocated for that block is leaked, not freed half-built. Anywhere else,
// SIGABRT does what it did before.
thread_local sigjmp_buf* t_abort_return = nullptr;
struct sigaction g_previous_abort_action;

extern "C" void on_abort(int signal_number) {
  if (sigjmp_buf* target = t_abort_return) siglongjmp(*target, 1);
  sigaction(SIGABRT, &g_previous_abort_action, nullptr);
  raise(signal_number);
}

void install_abort_trap() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action {};
    action.sa_handler = on_abort;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_NODEFER;
    sigaction(SIGABRT, &action, &g_previous_abort_action);
  });
}

// OpenJPEG objects left behind by an abort, kept reachable: they are not freed,
// and a leak checker need not report them.
void abandon(void* object) {
  static std::mutex mutex;
  static std::vector<void*>* abandoned = new std::vector<void*>;
  std::lock_guard<std::mutex> lock(mutex);
  if (object) abandoned->push_back(object);
}

struct OpenJpegCall {
  opj_codec_t* codec;
  opj_stream_t* stream;
  opj_image_t** image;
  bool decode;  // false: read the header only
};

// Each abort leaves what OpenJPEG had allocated for its block behind; after this
// many the decoder is not called again in this process, so a hostile file read
// over and over cannot grow the daemon without bound.
constexpr int kMaxOpenJpegAborts = 64;
std::atomic<int> g_openjpeg_aborts{0};

// Memory OpenJPEG allocates during a call may be abandoned by an abort: the
// sanitizer build's leak checker is told not to count it.
struct LeakCheckPause {
#ifdef BLOSC2FS_ADDRESS_SANITIZER
  LeakCheckPause() { __lsan_disable(); }
  ~LeakCheckPause() { __lsan_enable(); }
#endif
};

// Returns 1 when OpenJPEG succeeded, 0 when it failed, -1 when it aborted.
int guarded_openjpeg(const OpenJpegCall& call) {
  if (g_openjpeg_aborts.load() >= kMaxOpenJpegAborts)
    throw UnsupportedError("OpenJPEG aborted on " + std::to_string(kMaxOpenJpegAborts) +
                           " codestreams in this process; JPEG 2000 decoding is off until the next mount");
  [[maybe_unused]] LeakCheckPause pause;
  sigjmp_buf target;
  if (sigsetjmp(target, 1) != 0) {
    t_abort_return = nullptr;
    g_openjpeg_aborts.fetch_add(1);
    return -1;
  }
  t_abort_return = &target;
  bool ok;
  if (!call.decode)
    ok = opj_read_header(call.stream, call.codec, call.image);
  else
    ok = opj_decode(call.codec, call.stream, *call.image) && opj_end_decompress(call.codec, call.stream);
  t_abort_return = nullptr;
  return ok ? 1 : 0;
}

// How a plugin lays samples out in its block.
enum class SampleLayout {
  planar_int32,              // OpenHTJ2K (36): each component's w*h samples as int32
  interleaved_by_component,  // Grok, J2K (37, 39): pixel-interleaved, prec/8 bytes per component
  interleaved_common,        // HTJ2K (40): pixel-interleaved, 1 byte if every prec <= 8, else 2
};

SampleLayout layout_of(uint8_t codec_id) {
  switch (codec_id) {
    case kCodecOpenHtj2k: return SampleLayout::planar_int32;
    case kCodecHtj2k: return SampleLayout::interleaved_common;
    default: return SampleLayout::interleaved_by_component;
  }
}

// Bytes per sample of a component of `precision` bits in the block.
int64_t sample_bytes(SampleLayout layout, const Siz& siz, int precision) {
  switch (layout) {
    case SampleLayout::planar_int32: return 4;
    case SampleLayout::interleaved_common: return siz.max_precision <= 8 ? 1 : 2;
    case SampleLayout::interleaved_by_component: return precision / 8;
  }
  return 0;
}

// Where sample p of component c goes in the block.
int64_t sample_offset(SampleLayout layout, const Siz& siz, int64_t pixels, int c, int64_t p) {
  const int64_t isz = sample_bytes(layout, siz, siz.precision[size_t(c)]);
  if (layout == SampleLayout::planar_int32) return (c * pixels + p) * isz;
  return (p * siz.components() + c) * isz;
}

// Checks that the image SIZ describes fits `block_size` bytes in `layout`, as
// the plugin lays it out, so that no buffer OpenJPEG sizes by the header exceeds
// a few times the block, and that its tiles are few enough.
void check_fits(const Siz& siz, SampleLayout layout, size_t block_size, const std::string& what) {
  const int64_t cap = int64_t(block_size);
  const int nc = siz.components();
  const std::string image =
      "a " + str(siz.width) + " x " + str(siz.height) + " image of " + str(nc) + " components";
  // Each sample lands in the block (or, under 8 bits for J2K and Grok, nowhere):
  // divisions keep 32-bit dimensions from overflowing.
  if (siz.width > cap || siz.height > cap / siz.width || nc > cap / (siz.width * siz.height))
    throw FormatError(what + ": " + image + " does not fit a block of " + str(cap) + " bytes");
  const int64_t pixels = siz.width * siz.height;
  int64_t end = 0;
  for (int c = 0; c < nc; ++c) {
    const int64_t isz = sample_bytes(layout, siz, siz.precision[size_t(c)]);
    if (isz > 0) end = std::max(end, sample_offset(layout, siz, pixels, c, pixels - 1) + isz);
  }
  // OpenHTJ2K's decoder returns the bytes it wrote and c-blosc2 wants the whole
  // block; the others return the block, zero past the image.
  if (end > cap || (layout == SampleLayout::planar_int32 && end != cap))
    throw FormatError(what + ": " + image + " takes " + str(end) + " bytes, the block " + str(cap));
  // Then the tiles OpenJPEG sets up for it.
  const int64_t tiles = siz.tiles_across > kMaxTiles || siz.tiles_down > kMaxTiles
                            ? kMaxTiles + 1
                            : siz.tiles_across * siz.tiles_down;
  if (tiles > kMaxTiles || tiles * nc > kMaxTileComponents ||
      (tiles > kFreeTiles && tiles > pixels / kMinPixelsPerTile))
    throw UnsupportedError(what + ": " + image + " in " + str(siz.tiles_across) + " x " + str(siz.tiles_down) +
                           " tiles; taken are " + str(kFreeTiles) + " tiles, or up to " + str(kMaxTiles) + " of " +
                           str(kMinPixelsPerTile) + " pixels on average, and " + str(kMaxTileComponents) +
                           " tile-components");
}

std::unique_ptr<opj_codec_t, CodecDestroyer> make_decoder(bool jp2, std::string& error, const std::string& what) {
  std::unique_ptr<opj_codec_t, CodecDestroyer> codec(opj_create_decompress(jp2 ? OPJ_CODEC_JP2 : OPJ_CODEC_J2K));
  if (!codec) throw std::bad_alloc();
  opj_set_info_handler(codec.get(), ignore_message, nullptr);
  opj_set_warning_handler(codec.get(), ignore_message, nullptr);
  opj_set_error_handler(codec.get(), keep_error, &error);
  opj_dparameters_t parameters;
  opj_set_default_decoder_parameters(&parameters);
  parameters.flags |= OPJ_DPARAMETERS_IGNORE_PCLR_CMAP_CDEF_FLAG;  // components stay as coded
  if (!opj_setup_decoder(codec.get(), &parameters)) throw FormatError(what + ": OpenJPEG refused its setup: " + error);
  // Truncated codestreams fail instead of decoding partly (the default, said again).
  opj_decoder_set_strict_mode(codec.get(), OPJ_TRUE);
  // No worker threads: the abort trap covers the calling thread only.
  opj_codec_set_threads(codec.get(), 0);
  return codec;
}

// The low byte of each sample. A fixed number of lanes per step lets -O2's
// vectorizer (its cheapest cost model) turn the inner loop into a few packs.
void copy_low_bytes(const OPJ_INT32* __restrict samples, uint8_t* __restrict out, size_t count) {
  constexpr size_t kLanes = 32;
  size_t p = 0;
  for (; p + kLanes <= count; p += kLanes)
    for (size_t k = 0; k < kLanes; ++k) out[p + k] = uint8_t(samples[p + k]);
  for (; p < count; ++p) out[p] = uint8_t(samples[p]);
}

// Decodes a JP2 file or raw codestream into `out` in `layout`.
void decode_image(ByteSpan payload, SampleLayout layout, MutableByteSpan out, const std::string& what) {
  const bool jp2 = payload.size() >= sizeof kJp2Signature && std::memcmp(payload.data(), kJp2Signature, 12) == 0;
  if (!jp2 && !(payload.size() >= 2 && payload[0] == 0xFF && payload[1] == 0x4F))
    throw FormatError(what + ": neither a JP2 file nor a JPEG 2000 codestream");
  const Siz siz = read_siz(jp2 ? jp2_codestream(payload, what) : payload, what);
  check_fits(siz, layout, out.size(), what);

  std::string error;
  auto codec = make_decoder(jp2, error, what);
  std::unique_ptr<opj_stream_t, StreamDestroyer> stream(opj_stream_create(size_t(1) << 16, OPJ_TRUE));
  if (!stream) throw std::bad_alloc();
  MemoryInput input{payload};
  opj_stream_set_user_data(stream.get(), &input, nullptr);
  opj_stream_set_user_data_length(stream.get(), payload.size());
  opj_stream_set_read_function(stream.get(), read_input);
  opj_stream_set_skip_function(stream.get(), skip_input);
  opj_stream_set_seek_function(stream.get(), seek_input);
  install_abort_trap();
  auto aborted = [&] {
    abandon(codec.release());  // half-built: kept, not freed
    abandon(stream.release());
    return FormatError(what + ": OpenJPEG aborted on the codestream (an assertion failed inside it)");
  };
  opj_image_t* raw_image = nullptr;
  const int header_ok = guarded_openjpeg({codec.get(), stream.get(), &raw_image, false});
  if (header_ok < 0) {
    abandon(raw_image);
    throw aborted();
  }
  Image image(raw_image);
  if (!header_ok || !image) throw FormatError(what + ": OpenJPEG cannot read the header: " + error);
  if (int(image->numcomps) != siz.components())
    throw FormatError(what + ": the file has " + str(image->numcomps) + " components where its codestream has " +
                      str(siz.components()));
  opj_image_t* decoding = image.get();
  const int decoded = guarded_openjpeg({codec.get(), stream.get(), &decoding, true});
  if (decoded < 0) {
    abandon(image.release());
    throw aborted();
  }
  if (!decoded) throw FormatError(what + ": OpenJPEG cannot decode the image: " + error);

  // What was checked against the block must be what OpenJPEG decoded.
  const int nc = siz.components();
  if (int(image->numcomps) != nc)
    throw FormatError(what + ": decoded " + str(image->numcomps) + " components where the codestream has " + str(nc));
  for (int c = 0; c < nc; ++c) {
    const opj_image_comp_t& comp = image->comps[c];
    if (!comp.data || comp.w != uint32_t(siz.width) || comp.h != uint32_t(siz.height) ||
        int(comp.prec) != siz.precision[size_t(c)])
      throw FormatError(what + ": component " + str(c) + " decoded as " + str(comp.w) + " x " + str(comp.h) + " of " +
                        str(comp.prec) + " bits, not the " + str(siz.width) + " x " + str(siz.height) + " of " +
                        str(siz.precision[size_t(c)]) + " bits its header says");
  }
  const int64_t pixels = siz.width * siz.height;
  if (nc == 1 && layout != SampleLayout::planar_int32 && sample_bytes(layout, siz, siz.precision[0]) == 1) {
    // A 1-byte array's image, the usual kind (check_fits: pixels <= out.size()).
    copy_low_bytes(image->comps[0].data, out.data(), size_t(pixels));
    std::memset(out.data() + pixels, 0, out.size() - size_t(pixels));
    return;
  }
  std::memset(out.data(), 0, out.size());
  for (int c = 0; c < nc; ++c) {
    const OPJ_INT32* samples = image->comps[c].data;
    const int64_t isz = sample_bytes(layout, siz, siz.precision[size_t(c)]);
    const int64_t stride = layout == SampleLayout::planar_int32 ? isz : int64_t(nc) * isz;
    uint8_t* dst = out.data() + sample_offset(layout, siz, pixels, c, 0);
    for (int64_t p = 0; p < pixels && isz > 0; ++p, dst += stride) {
      const uint32_t v = uint32_t(samples[p]);
      for (int64_t k = 0; k < isz; ++k) dst[k] = uint8_t(v >> (8 * k));
    }
  }
}

// The float frame of J2K and HTJ2K: floats quantised to unsigned samples of an
// inner image, with the scale in a 64-byte header. Checked in the plugin's order.
void decode_float_frame(ByteSpan block, SampleLayout layout, MutableByteSpan out, const std::string& what) {
  ByteReader r(block, what + ": float frame");
  if (block.size() < kFloatFrameHeader) r.fail("truncated: " + str(int64_t(block.size())) + " bytes, no 64-byte header");
  r.take(8);
  const uint32_t version = load_le16(r.take(2).data());
  const uint32_t header = load_le16(r.take(2).data());
  const uint8_t quant_bits = r.u8();
  const uint8_t nan_policy = r.u8();
  const uint16_t flags = load_le16(r.take(2).data());
  const uint64_t payload_size = r.le64();
  double scale_min, scale_max;
  std::memcpy(&scale_min, r.take(8).data(), 8);
  std::memcpy(&scale_max, r.take(8).data(), 8);
  if (version != 1 || header != kFloatFrameHeader)
    throw UnsupportedError(what + ": float frame version " + str(version) + " with a " + str(header) +
                           "-byte header (version 1, 64 bytes known)");
  if (quant_bits != 8 && quant_bits != 16 && quant_bits != 32) r.fail("quantisation of " + str(quant_bits) + " bits");
  if (nan_policy != 0) throw UnsupportedError(what + ": float frame NaN policy " + str(nan_policy) + " (0 known)");
  if (payload_size > block.size() - kFloatFrameHeader)
    r.fail("payload of " + str(int64_t(std::min<uint64_t>(payload_size, INT64_MAX))) + " bytes runs past the block");
  if (out.size() % 4 != 0) r.fail("block of " + str(int64_t(out.size())) + " bytes is not whole float32 items");
  const size_t count = out.size() / 4;
  if (flags & kFloatConstant) {
    const float v = float(scale_min);
    for (size_t i = 0; i < count; ++i) std::memcpy(out.data() + 4 * i, &v, 4);
    return;
  }
  const size_t q_bytes = quant_bits / 8;
  std::vector<uint8_t> samples(count * q_bytes);
  decode_image(block.subspan(kFloatFrameHeader, size_t(payload_size)), layout, samples, what + " (float frame)");
  const double qmax = quant_bits == 8 ? 255.0 : quant_bits == 16 ? 65535.0 : 4294967295.0;
  const double step = (scale_max - scale_min) / qmax;
  for (size_t i = 0; i < count; ++i) {
    uint32_t q = 0;
    for (size_t k = 0; k < q_bytes; ++k) q |= uint32_t(samples[i * q_bytes + k]) << (8 * k);
    const float v = float(scale_min + double(q) * step);
    std::memcpy(out.data() + 4 * i, &v, 4);
  }
}

}  // namespace

void jpeg2000_decode(uint8_t codec_id, ByteSpan in, MutableByteSpan out) {
  const std::string what = codec_name(codec_id);
  const SampleLayout layout = layout_of(codec_id);
  const bool float_frame = (codec_id == kCodecJ2k || codec_id == kCodecHtj2k) && in.size() >= sizeof kFloatFrameMagic &&
                           std::memcmp(in.data(), kFloatFrameMagic, sizeof kFloatFrameMagic) == 0;
  if (float_frame)
    decode_float_frame(in, layout, out, what);
  else
    decode_image(in, layout, out, what);
}

}  // namespace blosc2fs
