// preview.png: the plan, the sampling through block views, and the scaling.
#include "preview.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include "error.h"

namespace blosc2fs {

namespace {

using Wide = unsigned __int128;

uint64_t load_uint(const uint8_t* p, int size, bool big_endian) {
  uint64_t v = 0;
  if (big_endian)
    for (int i = 0; i < size; ++i) v = (v << 8) | p[i];
  else
    for (int i = size - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

double half_to_double(uint16_t h) {
  const int sign = h >> 15, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  double v;
  if (exponent == 0) v = std::ldexp(double(mantissa), -24);  // zero and subnormals
  else if (exponent == 31) v = mantissa ? std::numeric_limits<double>::quiet_NaN() : HUGE_VAL;
  else v = std::ldexp(double(mantissa | 0x400), exponent - 25);
  return sign ? -v : v;
}

// Shortest text that reads back as the same value ("0.1", "255"): of a float
// for float16/32 arrays (NumPy's repr of their items), of a double otherwise.
std::string number_text(double v, bool single) {
  char buf[64];
  auto [end, ec] = single ? std::to_chars(buf, buf + sizeof buf, float(v)) : std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::string("?");
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

// One dimension's drawn indices, k = 0 .. count - 1, increasing.
struct IndexSeq {
  enum class Kind : uint8_t { fixed, all, nearest, plot } kind = Kind::fixed;
  int64_t count = 1;
  int64_t source = 1;  // nearest: the source side; plot: N
  int64_t at(int64_t k) const {
    switch (kind) {
      case Kind::fixed: return 0;
      case Kind::all: return k;
      case Kind::nearest: return nearest_index(k, count, source);
      case Kind::plot: return plot_sample_index(k, count, source);
    }
    return 0;
  }
};

// A run of k whose indices share one chunk (or block) coordinate.
struct Group {
  int64_t coord;
  int64_t first, end;  // k range
};

// Splits k in [first, end) into runs by coord(index) = (index % modulo) / divisor
// (modulo 0: none), in increasing order of k.
std::vector<Group> groups_of(const IndexSeq& seq, int64_t first, int64_t end, int64_t modulo, int64_t divisor) {
  std::vector<Group> out;
  for (int64_t k = first; k < end; ++k) {
    int64_t index = seq.at(k);
    if (modulo > 0) index %= modulo;
    const int64_t coord = index / divisor;
    if (out.empty() || out.back().coord != coord) out.push_back({coord, k, k + 1});
    else out.back().end = k + 1;
  }
  return out;
}

// Calls emit(ks, element) for every element of the product of the sequences,
// visiting each block that holds one once, chunk by chunk in C order.
template <class Emit>
void sample(const NdLayout& layout, const std::vector<IndexSeq>& seqs, const PreviewBlockView& view,
            const std::function<void(int64_t)>& chunk_done, Emit&& emit) {
  const size_t nd = seqs.size();
  const std::vector<int64_t>& chunkshape = layout.chunkshape();
  const std::vector<int64_t>& blockshape = layout.blockshape();
  const std::vector<int64_t>& chunks_per_dim = layout.chunks_per_dim();
  const std::vector<int64_t>& blocks_per_dim = layout.blocks_per_dim();
  const int64_t ts = layout.typesize();
  const int64_t block_bytes = layout.block_items() * ts;

  std::vector<std::vector<Group>> chunk_groups(nd);
  for (size_t d = 0; d < nd; ++d) chunk_groups[d] = groups_of(seqs[d], 0, seqs[d].count, 0, chunkshape[d]);
  // Items per step of each dimension inside a block.
  std::vector<int64_t> block_stride(nd, 1);
  for (size_t d = nd - 1; d > 0; --d) block_stride[d - 1] = block_stride[d] * blockshape[d];

  std::vector<size_t> ci(nd, 0);  // chunk odometer
  std::vector<std::vector<Group>> block_groups(nd);
  std::vector<size_t> bi(nd, 0);   // block odometer
  std::vector<int64_t> ks(nd, 0);  // element odometer
  // Each returns false after its last combination, back at its first.
  auto next_chunk = [&] {
    for (size_t d = nd; d-- > 0; ci[d] = 0)
      if (++ci[d] < chunk_groups[d].size()) return true;
    return false;
  };
  auto next_block = [&] {
    for (size_t d = nd; d-- > 0; bi[d] = 0)
      if (++bi[d] < block_groups[d].size()) return true;
    return false;
  };
  auto next_element = [&] {
    for (size_t d = nd; d-- > 0; ks[d] = block_groups[d][bi[d]].first)
      if (++ks[d] < block_groups[d][bi[d]].end) return true;
    return false;
  };
  do {
    int64_t chunk = 0;
    for (size_t d = 0; d < nd; ++d) {
      const Group& g = chunk_groups[d][ci[d]];
      chunk = chunk * chunks_per_dim[d] + g.coord;
      block_groups[d] = groups_of(seqs[d], g.first, g.end, chunkshape[d], blockshape[d]);
      bi[d] = 0;
    }
    do {
      int64_t block = 0;
      for (size_t d = 0; d < nd; ++d) {
        block = block * blocks_per_dim[d] + block_groups[d][bi[d]].coord;
        ks[d] = block_groups[d][bi[d]].first;
      }
      std::shared_ptr<const void> keep;
      const ByteSpan bytes = view(chunk, block * block_bytes, block_bytes, keep);
      if (int64_t(bytes.size()) != block_bytes)
        throw FormatError("chunk " + std::to_string(chunk) + " holds fewer bytes than its blocks need");
      do {
        int64_t item = 0;
        for (size_t d = 0; d < nd; ++d) item += (seqs[d].at(ks[d]) % chunkshape[d] % blockshape[d]) * block_stride[d];
        emit(ks.data(), bytes.data() + item * ts);
      } while (next_element());
    } while (next_block());
    if (chunk_done) chunk_done(chunk);
  } while (next_chunk());
}

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  bool any() const { return lo <= hi; }
  void add(double v) {
    if (!std::isfinite(v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
};

// How a dtype's values become levels: uint8 as they are, bool 0 / 255, the
// others scaled by the drawn range.
uint8_t level_of(const PreviewDtype& dtype, double v, const Range& range) {
  if (dtype.is_uint8()) return uint8_t(v);
  if (dtype.kind == PreviewDtype::Kind::boolean) return v != 0 ? 255 : 0;
  return preview_level(v, range.lo, range.hi);
}

std::string describe(const PreviewPlan& plan, const Range& range) {
  std::string text = "blosc2fs preview.png: shape=" + shape_text(plan.shape) + " dtype=" + plan.dtype.name +
                     " slice=" + plan.slice_text() + " picture=" + std::to_string(plan.width) + "x" +
                     std::to_string(plan.height);
  if (plan.mode == PreviewMode::plot)
    text += " plot of " + std::to_string(plan.samples) + " samples (min-max per column)";
  if (plan.dtype.is_uint8()) return text + " lo=0 hi=255 (values as stored)";
  if (plan.dtype.kind == PreviewDtype::Kind::boolean) return text + " lo=0 hi=1 (false black, true white)";
  if (!range.any()) return text + " lo=none hi=none (no finite value drawn)";
  const bool single = plan.dtype.kind == PreviewDtype::Kind::floating && plan.dtype.size <= 4;
  return text + " lo=" + number_text(range.lo, single) + " hi=" + number_text(range.hi, single);
}

PreviewImage render_plot(const PreviewPlan& plan, const NdLayout& layout, const PreviewBlockView& view,
                         const std::function<void(int64_t)>& chunk_done) {
  const int64_t w = plan.width, m = plan.samples;
  std::vector<double> col_lo(size_t(w), std::numeric_limits<double>::infinity());
  std::vector<double> col_hi(size_t(w), -std::numeric_limits<double>::infinity());
  IndexSeq seq{IndexSeq::Kind::plot, m, plan.cols};
  Range range;
  sample(layout, {seq}, view, chunk_done, [&](const int64_t* ks, const uint8_t* p) {
    const double v = plan.dtype.value(p);
    if (!std::isfinite(v)) return;
    const size_t j = size_t(plot_column(ks[0], m, w));
    col_lo[j] = std::min(col_lo[j], v);
    col_hi[j] = std::max(col_hi[j], v);
    range.add(v);
  });
  PreviewImage image;
  image.width = w;
  image.height = plan.height;
  image.channels = 1;
  image.pixels.assign(size_t(w * plan.height), 255);
  for (int64_t j = 0; j < w; ++j) {
    if (col_lo[size_t(j)] > col_hi[size_t(j)]) continue;  // nothing finite: left white
    const int64_t top = plot_row(level_of(plan.dtype, col_hi[size_t(j)], range), plan.height);
    const int64_t bottom = plot_row(level_of(plan.dtype, col_lo[size_t(j)], range), plan.height);
    for (int64_t r = top; r <= bottom; ++r) image.pixels[size_t(r * w + j)] = 0;
  }
  image.description = describe(plan, range);
  return image;
}

PreviewImage render_picture(const PreviewPlan& plan, const NdLayout& layout, const PreviewBlockView& view,
                            const std::function<void(int64_t)>& chunk_done) {
  const size_t nd = plan.shape.size();
  const bool color = plan.mode == PreviewMode::color;
  const size_t row_dim = nd - (color ? 3 : 2), col_dim = row_dim + 1;
  std::vector<IndexSeq> seqs(nd);  // leading dimensions: fixed at 0
  seqs[row_dim] = {IndexSeq::Kind::nearest, plan.height, plan.rows};
  seqs[col_dim] = {IndexSeq::Kind::nearest, plan.width, plan.cols};
  if (color) seqs[nd - 1] = {IndexSeq::Kind::all, plan.channels, plan.channels};
  const int64_t c = plan.channels, w = plan.width;
  std::vector<double> values(size_t(plan.height * w * c));
  Range range;
  bool non_finite = false;
  sample(layout, seqs, view, chunk_done, [&](const int64_t* ks, const uint8_t* p) {
    const double v = plan.dtype.value(p);
    const int64_t channel = color ? ks[nd - 1] : 0;
    values[size_t((ks[row_dim] * w + ks[col_dim]) * c + channel)] = v;
    if (std::isfinite(v)) range.add(v);
    else non_finite = true;
  });
  PreviewImage image;
  image.width = w;
  image.height = plan.height;
  image.channels = non_finite ? 2 : int(c);  // non-finite values only in floats, never in color
  image.pixels.resize(size_t(plan.height * w * image.channels));
  uint8_t* out = image.pixels.data();
  for (double v : values) {
    if (non_finite) {
      const bool finite = std::isfinite(v);
      *out++ = finite ? level_of(plan.dtype, v, range) : 0;
      *out++ = finite ? 255 : 0;
    } else {
      *out++ = level_of(plan.dtype, v, range);
    }
  }
  image.description = describe(plan, range);
  return image;
}

}  // namespace

double PreviewDtype::value(const uint8_t* p) const {
  const uint64_t bits = load_uint(p, size, big_endian);
  switch (kind) {
    case Kind::boolean: return bits != 0 ? 1.0 : 0.0;
    case Kind::unsigned_int: return double(bits);
    case Kind::signed_int: {
      const int shift = 64 - 8 * size;
      return double(int64_t(bits << shift) >> shift);
    }
    case Kind::floating:
      if (size == 2) return half_to_double(uint16_t(bits));
      if (size == 4) return double(std::bit_cast<float>(uint32_t(bits)));
      return std::bit_cast<double>(bits);
  }
  return 0;
}

std::optional<PreviewDtype> preview_dtype(std::string_view dtype, int32_t typesize) {
  std::optional<NpyDtype> npy = npy_dtype(dtype);
  if (!npy || npy->itemsize != typesize) return std::nullopt;
  std::string d = npy->descr;  // "<f8", "|u1", "|b1"; or a NumPy name ("float32"), native order
  for (auto [name, code] : {std::pair<std::string_view, char>{"uint", 'u'}, {"int", 'i'}, {"float", 'f'}}) {
    if (d.starts_with(name)) {
      d = std::string("<") + code + std::to_string(typesize);
      break;
    }
  }
  if (d == "bool") d = "|b1";
  if (d.size() < 3 || std::string_view("<>|=").find(d[0]) == std::string_view::npos) return std::nullopt;
  int size = 0;
  auto [end, ec] = std::from_chars(d.data() + 2, d.data() + d.size(), size);
  if (ec != std::errc() || end != d.data() + d.size() || size != typesize) return std::nullopt;
  PreviewDtype t;
  t.size = size;
  t.big_endian = d[0] == '>';
  std::string base;
  switch (d[1]) {
    case 'b':
      if (size != 1) return std::nullopt;
      t.kind = PreviewDtype::Kind::boolean;
      t.name = "bool";
      return t;
    case 'i':
      if (size != 1 && size != 2 && size != 4 && size != 8) return std::nullopt;
      t.kind = PreviewDtype::Kind::signed_int;
      base = "int";
      break;
    case 'u':
      if (size != 1 && size != 2 && size != 4 && size != 8) return std::nullopt;
      t.kind = PreviewDtype::Kind::unsigned_int;
      base = "uint";
      break;
    case 'f':
      if (size != 2 && size != 4 && size != 8) return std::nullopt;
      t.kind = PreviewDtype::Kind::floating;
      base = "float";
      break;
    default: return std::nullopt;  // complex, strings, datetimes, void
  }
  t.name = (t.big_endian && size > 1 ? ">" : "") + base + std::to_string(size * 8);
  return t;
}

std::string PreviewPlan::slice_text() const {
  const size_t nd = shape.size();
  const size_t drawn = mode == PreviewMode::plot ? 1 : mode == PreviewMode::gray ? 2 : 3;
  std::string s = "[";
  for (size_t i = 0; i < nd; ++i) {
    if (i) s += ", ";
    s += i + drawn < nd ? "0" : ":";
  }
  return s + "]";
}

int64_t preview_side(int64_t side, int64_t long_side, int64_t limit) {
  if (long_side <= limit) return side;
  const Wide num = Wide(2) * Wide(uint64_t(side)) * Wide(uint64_t(limit)) + Wide(uint64_t(long_side));
  return std::max<int64_t>(1, int64_t(num / (Wide(2) * Wide(uint64_t(long_side)))));
}

int64_t plot_row(uint8_t level, int64_t height) { return height - 1 - int64_t(level) * height / 256; }

int64_t nearest_index(int64_t i, int64_t picture, int64_t source) {
  // floor((i + 0.5) * source / picture) = floor((2i + 1) * source / (2 * picture))
  return int64_t((Wide(2 * uint64_t(i) + 1) * Wide(uint64_t(source))) / (Wide(2) * Wide(uint64_t(picture))));
}

int64_t plot_sample_index(int64_t k, int64_t samples, int64_t n) {
  return int64_t(Wide(uint64_t(k)) * Wide(uint64_t(n)) / Wide(uint64_t(samples)));
}

int64_t plot_column(int64_t k, int64_t samples, int64_t width) {
  return int64_t(Wide(uint64_t(k)) * Wide(uint64_t(width)) / Wide(uint64_t(samples)));
}

uint8_t preview_level(double v, double lo, double hi) {
  if (!(hi > lo)) return 0;
  const double x = std::nearbyint(255.0 * (v - lo) / (hi - lo));
  if (!(x >= 0)) return 0;  // NaN too (overflowing ranges of float64 extremes)
  if (x >= 255) return 255;
  return uint8_t(x);
}

std::optional<PreviewPlan> plan_preview(const std::vector<int64_t>& shape, const std::optional<PreviewDtype>& dtype,
                                        int64_t limit) {
  if (!dtype || shape.empty()) return std::nullopt;
  limit = std::clamp<int64_t>(limit, 1, kPreviewLongSide);
  for (int64_t s : shape)
    if (s <= 0) return std::nullopt;
  PreviewPlan plan;
  plan.dtype = *dtype;
  plan.shape = shape;
  const size_t nd = shape.size();
  if (nd == 1) {
    plan.mode = PreviewMode::plot;
    plan.rows = 1;
    plan.cols = shape[0];
    plan.samples = std::min(shape[0], kPreviewPlotSamples);
    plan.width = std::min(plan.samples, limit);
    plan.height = std::min(kPreviewPlotHeight, limit);
    return plan;
  }
  const bool integer =
      dtype->kind == PreviewDtype::Kind::signed_int || dtype->kind == PreviewDtype::Kind::unsigned_int;
  if (nd >= 3 && integer && (shape[nd - 1] == 3 || shape[nd - 1] == 4)) {
    plan.mode = PreviewMode::color;
    plan.channels = int(shape[nd - 1]);
    plan.rows = shape[nd - 3];
    plan.cols = shape[nd - 2];
  } else {
    plan.mode = PreviewMode::gray;
    plan.rows = shape[nd - 2];
    plan.cols = shape[nd - 1];
  }
  const int64_t long_side = std::max(plan.rows, plan.cols);
  plan.height = preview_side(plan.rows, long_side, limit);
  plan.width = preview_side(plan.cols, long_side, limit);
  return plan;
}

PreviewImage render_preview(const PreviewPlan& plan, const NdLayout& layout, const PreviewBlockView& view,
                            const std::function<void(int64_t)>& chunk_done) {
  if (layout.shape() != plan.shape || layout.typesize() != plan.dtype.size)
    throw FormatError("preview.png: the plan is not of this array");
  return plan.mode == PreviewMode::plot ? render_plot(plan, layout, view, chunk_done)
                                        : render_picture(plan, layout, view, chunk_done);
}

}  // namespace blosc2fs
