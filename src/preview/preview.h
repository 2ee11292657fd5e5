// preview.png: an N-d array drawn as a small picture (docs/preview.md). Plain
// C++ over the b2nd layout; the bytes of the blocks
// come from a callback (the mount's chunk cache), so only the blocks holding a
// drawn element are ever decoded.
//
// The rules, exact so that a test can compute every pixel from the array:
//   - what is drawn: ndim >= 3 with a last dimension of 3 or 4 and an integer
//     dtype: the RGB(A) image of the last three dimensions; ndim >= 2: the
//     grayscale image of the last two; leading dimensions at index 0.
//     ndim 1: a plot of 256 rows, one column per group of samples.
//   - size: H x W becomes h x w, the long side L = max(H, W) at most S
//     (1024 for preview.png; a thumbnail's size, at most 1024, for
//     blosc2fs --thumbnail): when L > S, h = max(1, floor((2 * H * S + L) / (2 * L)))
//     (H * S / L rounded half up), and w alike; never enlarged.
//   - pixel (i, j) is the element at row floor((i + 0.5) * H / h), column
//     floor((j + 0.5) * W / w).
//   - values: uint8 as they are, bool 0 / 255, every other dtype
//     rint(255 * (v - lo) / (hi - lo)) in float64 (rint: half to even, as
//     NumPy's), lo and hi the smallest and largest finite drawn values (0 when
//     hi == lo); NaN and infinities transparent (the image then has alpha).
//   - plot: N elements, M = min(N, 16 Mi) samples, sample k the element
//     floor(k * N / M); w = min(M, S) columns, sample k in column
//     floor(k * w / M); p = min(256, S) rows; each column black from the row of
//     its largest finite value's level y to its smallest's (row
//     p - 1 - floor(y * p / 256): 255 - y for preview.png), white elsewhere.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "b2nd.h"
#include "bytes.h"

namespace blosc2fs {

inline constexpr int64_t kPreviewLongSide = 1024;
inline constexpr int64_t kPreviewPlotHeight = 256;
inline constexpr int64_t kPreviewPlotSamples = int64_t(1) << 24;  // 16 Mi

// The element types a preview draws: bool, integers, floats.
struct PreviewDtype {
  enum class Kind : uint8_t { boolean, signed_int, unsigned_int, floating };
  Kind kind = Kind::unsigned_int;
  int size = 1;             // bytes: 1, 2, 4 or 8 (floats 2, 4, 8)
  bool big_endian = false;
  std::string name;         // as NumPy names it: "float64", "uint8", "bool", with ">" when big-endian

  // The element at `p` (size bytes) as float64.
  double value(const uint8_t* p) const;
  bool is_uint8() const { return kind == Kind::unsigned_int && size == 1; }
};

// The dtype of a b2nd metalayer when a preview can draw it and its item size
// is `typesize`; nullopt for anything else (complex, structured, strings,
// datetimes, a dtype that disagrees with the frame).
std::optional<PreviewDtype> preview_dtype(std::string_view dtype, int32_t typesize);

enum class PreviewMode : uint8_t { plot, gray, color };

// What a preview draws, known from the metadata alone.
struct PreviewPlan {
  PreviewMode mode = PreviewMode::gray;
  PreviewDtype dtype;
  std::vector<int64_t> shape;
  int64_t rows = 0, cols = 0;      // the image drawn from: H x W (plot: 1 x N)
  int64_t height = 0, width = 0;   // the picture's pixels
  int channels = 1;                // color: 3 or 4 (the last dimension); else 1
  int64_t samples = 0;             // plot: M

  // "[0, :, :]": the part of the array drawn, in NumPy's terms.
  std::string slice_text() const;
};

// The plan for an array of `shape` and `dtype` whose picture's long side is at
// most `limit` pixels (clamped to 1 .. kPreviewLongSide); nullopt when there is
// nothing to draw (0-d, no elements, a dtype preview_dtype refuses).
std::optional<PreviewPlan> plan_preview(const std::vector<int64_t>& shape, const std::optional<PreviewDtype>& dtype,
                                        int64_t limit = kPreviewLongSide);

// The rules above, one function each (the unit tests check them).
int64_t preview_side(int64_t side, int64_t long_side, int64_t limit = kPreviewLongSide);  // h of H when L = long_side
int64_t plot_row(uint8_t level, int64_t height);                   // height - 1 - floor(level * height / 256)
int64_t nearest_index(int64_t i, int64_t picture, int64_t source);  // floor((i + 0.5) * source / picture)
int64_t plot_sample_index(int64_t k, int64_t samples, int64_t n);   // floor(k * n / samples)
int64_t plot_column(int64_t k, int64_t samples, int64_t width);     // floor(k * width / samples)
uint8_t preview_level(double v, double lo, double hi);              // rint(255 * (v - lo) / (hi - lo)), 0..255

// The decompressed bytes [offset, offset + length) of chunk `chunk`, kept
// alive by `keep`. Throws FormatError / IoError.
using PreviewBlockView =
    std::function<ByteSpan(int64_t chunk, int64_t offset, int64_t length, std::shared_ptr<const void>& keep)>;

// A picture before encoding: 8-bit samples, rows top to bottom.
struct PreviewImage {
  int64_t width = 0, height = 0;
  int channels = 1;  // 1 gray, 2 gray + alpha, 3 RGB, 4 RGBA
  std::vector<uint8_t> pixels;  // height * width * channels
  std::string description;      // the tEXt "Description": shape, dtype, slice, lo, hi
};

// Draws the plan: reads each block that holds a drawn element once, through
// `view`, chunk after chunk (each chunk once: `chunk_done(n)` follows its last
// block). Memory: the picture and one value per drawn element (at most
// 1024 x 1024 x 4), never the array.
PreviewImage render_preview(const PreviewPlan& plan, const NdLayout& layout, const PreviewBlockView& view,
                            const std::function<void(int64_t chunk)>& chunk_done = {});

// The PNG file of a picture (libpng). Throws FormatError when libpng fails.
Bytes encode_png(const PreviewImage& image);

// The largest PNG a plan can make: what stat shows before the first rendering.
int64_t preview_png_size_bound(const PreviewPlan& plan);

}  // namespace blosc2fs
