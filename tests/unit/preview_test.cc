// preview.png's rules (src/preview/): sizes, sampled indices, levels, dtypes,
// the plan, the drawing through block views of chunked arrays, and the PNG
// libpng reads back.
#include <png.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include "preview.h"

namespace blosc2fs {
namespace {

TEST(Preview, SideKeepsTheAspectAndNeverEnlarges) {
  EXPECT_EQ(preview_side(300, 500), 300);
  EXPECT_EQ(preview_side(1024, 1024), 1024);
  EXPECT_EQ(preview_side(20000, 20000), 1024);
  EXPECT_EQ(preview_side(1500, 1500), 1024);
  EXPECT_EQ(preview_side(900, 1500), 614);  // 614.4
  EXPECT_EQ(preview_side(1, 1000000000), 1);
  EXPECT_EQ(preview_side(2, 1000000), 1);   // 0.002: at least one pixel
  EXPECT_EQ(preview_side(1025, 2050), 512);  // 512.0 exactly
  EXPECT_EQ(preview_side(1027, 2050), 513);  // 512.999
  EXPECT_EQ(preview_side(3, 2048), 2);       // 1.5 rounds up
}

TEST(Preview, NearestIndexIsThePixelCentre) {
  EXPECT_EQ(nearest_index(0, 10, 10), 0);
  EXPECT_EQ(nearest_index(9, 10, 10), 9);
  EXPECT_EQ(nearest_index(0, 1024, 20000), 9);      // floor(0.5 * 19.53)
  EXPECT_EQ(nearest_index(1023, 1024, 20000), 19990);
  EXPECT_EQ(nearest_index(0, 1, 1000000000), 500000000);
  // No overflow for the largest shapes.
  EXPECT_EQ(nearest_index(1023, 1024, int64_t(1) << 62), int64_t((2 * 1023 + 1) * ((int64_t(1) << 62) / 2048)));
}

TEST(Preview, PlotSamplesAndColumns) {
  EXPECT_EQ(plot_sample_index(0, 100, 100), 0);
  EXPECT_EQ(plot_sample_index(99, 100, 100), 99);
  const int64_t m = kPreviewPlotSamples, n = m + 4099;
  EXPECT_EQ(plot_sample_index(m - 1, m, n), n - 2);
  EXPECT_EQ(plot_sample_index(m / 2, m, n), m / 2 + 2049);
  EXPECT_EQ(plot_column(0, 3000, 1024), 0);
  EXPECT_EQ(plot_column(2999, 3000, 1024), 1023);
  EXPECT_EQ(plot_column(2, 3000, 1024), 0);
  EXPECT_EQ(plot_column(3, 3000, 1024), 1);
}

TEST(Preview, LevelsRoundHalfToEven) {
  EXPECT_EQ(preview_level(0, 0, 255), 0);
  EXPECT_EQ(preview_level(255, 0, 255), 255);
  EXPECT_EQ(preview_level(0.5, 0, 255), 0);  // 0.5 -> 0
  EXPECT_EQ(preview_level(1.5, 0, 255), 2);  // 1.5 -> 2
  EXPECT_EQ(preview_level(7, 7, 7), 0);      // hi == lo
  EXPECT_EQ(preview_level(-1e308, -1e308, 1e308), 0);  // the range overflows float64: never undefined
  EXPECT_EQ(preview_level(1e308, -1e308, 1e308), 0);
  EXPECT_EQ(preview_level(std::nan(""), 0, 1), 0);
}

TEST(Preview, Dtypes) {
  auto f8 = preview_dtype("<f8", 8);
  ASSERT_TRUE(f8);
  EXPECT_EQ(f8->kind, PreviewDtype::Kind::floating);
  EXPECT_EQ(f8->name, "float64");
  auto be = preview_dtype(">i2", 2);
  ASSERT_TRUE(be);
  EXPECT_TRUE(be->big_endian);
  EXPECT_EQ(be->name, ">int16");
  const uint8_t minus_two[] = {0xff, 0xfe};
  EXPECT_EQ(be->value(minus_two), -2.0);
  auto b = preview_dtype("|b1", 1);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->kind, PreviewDtype::Kind::boolean);
  auto u1 = preview_dtype("uint8", 1);
  ASSERT_TRUE(u1);
  EXPECT_TRUE(u1->is_uint8());
  EXPECT_FALSE(preview_dtype("uint16", 1));  // the name's size must be the typesize
  auto named = preview_dtype("float32", 4);
  ASSERT_TRUE(named);
  EXPECT_EQ(named->name, "float32");
  auto f2 = preview_dtype("<f2", 2);
  ASSERT_TRUE(f2);
  const uint8_t one_and_half[] = {0x00, 0x3e}, inf[] = {0x00, 0x7c}, tiny[] = {0x01, 0x00};
  EXPECT_EQ(f2->value(one_and_half), 1.5);
  EXPECT_TRUE(std::isinf(f2->value(inf)));
  EXPECT_EQ(f2->value(tiny), std::ldexp(1.0, -24));
  for (const char* refused : {"<c16", "<U3", "|S4", "<M8[ns]", "|V8", "[('a', '<i4')]", "|O"})
    EXPECT_FALSE(preview_dtype(refused, 8)) << refused;
  EXPECT_FALSE(preview_dtype("<f8", 4));  // the frame's typesize disagrees
}

TEST(Preview, Plans) {
  auto f8 = preview_dtype("<f8", 8), u1 = preview_dtype("|u1", 1), b1 = preview_dtype("|b1", 1);
  EXPECT_FALSE(plan_preview({}, f8));       // 0-d
  EXPECT_FALSE(plan_preview({0, 5}, f8));   // no elements
  EXPECT_FALSE(plan_preview({5, 5}, std::nullopt));
  auto plot = plan_preview({100000000}, f8);
  ASSERT_TRUE(plot);
  EXPECT_EQ(plot->mode, PreviewMode::plot);
  EXPECT_EQ(plot->samples, kPreviewPlotSamples);
  EXPECT_EQ(plot->width, 1024);
  EXPECT_EQ(plot->height, 256);
  EXPECT_EQ(plot->slice_text(), "[:]");
  auto short_plot = plan_preview({10}, f8);
  EXPECT_EQ(short_plot->width, 10);
  auto rgb = plan_preview({7, 2000, 1000, 3}, u1);
  ASSERT_TRUE(rgb);
  EXPECT_EQ(rgb->mode, PreviewMode::color);
  EXPECT_EQ(rgb->channels, 3);
  EXPECT_EQ(rgb->height, 1024);
  EXPECT_EQ(rgb->width, 512);
  EXPECT_EQ(rgb->slice_text(), "[0, :, :, :]");
  auto bool3 = plan_preview({20, 30, 3}, b1);  // bool is not an integer dtype: gray of (30, 3)
  ASSERT_TRUE(bool3);
  EXPECT_EQ(bool3->mode, PreviewMode::gray);
  EXPECT_EQ(bool3->rows, 30);
  EXPECT_EQ(bool3->cols, 3);
  auto float4 = plan_preview({20, 30, 4}, f8);
  EXPECT_EQ(float4->mode, PreviewMode::gray);
  EXPECT_EQ(float4->slice_text(), "[0, :, :]");
  EXPECT_GT(preview_png_size_bound(*rgb), 1024 * 512 * 3);
}

TEST(Preview, PlansOfAThumbnailSize) {
  auto f8 = preview_dtype("<f8", 8), u1 = preview_dtype("|u1", 1);
  EXPECT_EQ(preview_side(900, 1500, 128), 77);   // 76.8
  EXPECT_EQ(preview_side(1500, 1500, 128), 128);
  EXPECT_EQ(preview_side(100, 128, 128), 100);   // never enlarged
  EXPECT_EQ(preview_side(3, 300, 128), 1);       // 1.28
  auto rgb = plan_preview({7, 2000, 1000, 3}, u1, 256);
  ASSERT_TRUE(rgb);
  EXPECT_EQ(rgb->height, 256);
  EXPECT_EQ(rgb->width, 128);
  auto small = plan_preview({50, 40}, f8, 256);  // smaller than the size: as it is
  EXPECT_EQ(small->height, 50);
  EXPECT_EQ(small->width, 40);
  auto plot = plan_preview({100000}, f8, 128);
  EXPECT_EQ(plot->width, 128);
  EXPECT_EQ(plot->height, 128);
  EXPECT_EQ(plot->samples, 100000);
  auto big = plan_preview({5000, 5000}, f8, 1 << 20);  // past 1024: 1024
  EXPECT_EQ(big->height, 1024);
  auto tiny = plan_preview({5000, 5000}, f8, 0);  // below 1: 1
  EXPECT_EQ(tiny->height, 1);
  // Levels go to rows of a plot p rows high: row p - 1 - floor(y * p / 256).
  EXPECT_EQ(plot_row(0, 256), 255);
  EXPECT_EQ(plot_row(255, 256), 0);
  EXPECT_EQ(plot_row(0, 128), 127);
  EXPECT_EQ(plot_row(255, 128), 0);
  EXPECT_EQ(plot_row(128, 128), 63);
  EXPECT_EQ(plot_row(255, 1), 0);
}

// An N-d array in memory, cut into chunks and blocks as b2nd does: the chunk
// bytes are made through NdLayout::read itself (which element of which chunk
// each C-order position reads), so these tests need no geometry of their own.
struct ChunkedArray {
  NdLayout layout;
  std::map<int64_t, Bytes> chunks;

  ChunkedArray(const std::vector<int64_t>& shape, const std::vector<int32_t>& chunkshape,
               const std::vector<int32_t>& blockshape, int32_t typesize, const Bytes& c_order)
      : layout(meta(shape, chunkshape, blockshape), typesize, count_chunks(shape, chunkshape), 0) {
    // Each chunk filled with its own item numbers (uint64 per item, tagged with the chunk).
    const int64_t items = layout.chunk_bytes() / typesize;
    std::map<int64_t, std::vector<uint64_t>> codes;
    for (int64_t n = 0; n < layout.nchunks(); ++n) {
      auto& c = codes[n];
      c.resize(size_t(items));
      for (int64_t i = 0; i < items; ++i) c[size_t(i)] = (uint64_t(n) << 32) | uint64_t(i);
      chunks[n].assign(size_t(layout.chunk_bytes()), 0);
    }
    // Read the codes as an array of 8-byte items with the same geometry.
    NdLayout codes_layout(meta(shape, chunkshape, blockshape), 8, layout.nchunks(), 0);
    std::vector<uint64_t> where(size_t(codes_layout.nitems()));
    codes_layout.read(0, MutableByteSpan(reinterpret_cast<uint8_t*>(where.data()), where.size() * 8), [&](int64_t n) {
      return ByteSpan(reinterpret_cast<const uint8_t*>(codes[n].data()), codes[n].size() * 8);
    });
    for (size_t k = 0; k < where.size(); ++k) {
      const int64_t n = int64_t(where[k] >> 32), item = int64_t(where[k] & 0xffffffff);
      std::memcpy(chunks[n].data() + item * typesize, c_order.data() + k * size_t(typesize), size_t(typesize));
    }
  }

  static NdMeta meta(const std::vector<int64_t>& shape, const std::vector<int32_t>& chunkshape,
                     const std::vector<int32_t>& blockshape) {
    NdMeta m;
    m.ndim = int(shape.size());
    m.shape = shape;
    m.chunkshape = chunkshape;
    m.blockshape = blockshape;
    return m;
  }
  static int64_t count_chunks(const std::vector<int64_t>& shape, const std::vector<int32_t>& chunkshape) {
    int64_t n = 1;
    for (size_t i = 0; i < shape.size(); ++i) n *= (shape[i] + chunkshape[i] - 1) / chunkshape[i];
    return n;
  }

  // The view the preview reads through, counting the blocks it asks for.
  int64_t views = 0;
  PreviewBlockView view() {
    return [this](int64_t n, int64_t offset, int64_t length, std::shared_ptr<const void>&) {
      ++views;
      const Bytes& c = chunks.at(n);
      EXPECT_LE(offset + length, int64_t(c.size()));
      return ByteSpan(c.data() + offset, size_t(length));
    };
  }
};

template <class T>
Bytes item_bytes_of(const std::vector<T>& v) {
  Bytes b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

TEST(Preview, GrayFloatWithNaNThroughChunksAndBlocks) {
  const int64_t rows = 37, cols = 23;
  std::vector<double> v(size_t(rows * cols));
  for (size_t k = 0; k < v.size(); ++k) v[k] = double(k % 97) * 0.25 - 3;
  v[5] = std::nan("");
  v[40] = std::numeric_limits<double>::infinity();
  ChunkedArray a({rows, cols}, {10, 8}, {4, 3}, 8, item_bytes_of(v));
  auto plan = plan_preview({rows, cols}, preview_dtype("<f8", 8));
  ASSERT_TRUE(plan);
  PreviewImage image = render_preview(*plan, a.layout, a.view());
  ASSERT_EQ(image.channels, 2);  // alpha for the NaN and the infinity
  double lo = 1e300, hi = -1e300;
  for (double x : v)
    if (std::isfinite(x)) lo = std::min(lo, x), hi = std::max(hi, x);
  for (int64_t k = 0; k < rows * cols; ++k) {
    const double x = v[size_t(k)];
    const uint8_t* px = image.pixels.data() + k * 2;
    if (!std::isfinite(x)) {
      EXPECT_EQ(px[1], 0) << k;
      continue;
    }
    EXPECT_EQ(px[0], uint8_t(std::nearbyint(255.0 * (x - lo) / (hi - lo)))) << k;
    EXPECT_EQ(px[1], 255) << k;
  }
  EXPECT_NE(image.description.find("shape=(37, 23) dtype=float64 slice=[:, :]"), std::string::npos) << image.description;
}

TEST(Preview, ResizedColorImageReadsEachBlockOnce) {
  const int64_t rows = 3000, cols = 50;
  std::vector<uint8_t> v(size_t(2 * rows * cols * 3));
  for (size_t k = 0; k < v.size(); ++k) v[k] = uint8_t(k * 31 + k / 7);
  ChunkedArray a({2, rows, cols, 3}, {1, 700, 20, 3}, {1, 100, 10, 3}, 1, v);
  auto plan = plan_preview({2, rows, cols, 3}, preview_dtype("|u1", 1));
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->height, 1024);
  EXPECT_EQ(plan->width, 17);  // 50 * 1024 / 3000 = 17.07
  PreviewImage image = render_preview(*plan, a.layout, a.view());
  ASSERT_EQ(image.channels, 3);
  for (int64_t i = 0; i < plan->height; ++i)
    for (int64_t j = 0; j < plan->width; ++j)
      for (int c = 0; c < 3; ++c) {
        const int64_t r = nearest_index(i, plan->height, rows), s = nearest_index(j, plan->width, cols);
        ASSERT_EQ(image.pixels[size_t((i * plan->width + j) * 3 + c)], v[size_t((r * cols + s) * 3 + c)]);
      }
  // Blocks of 100 rows x 10 columns holding sampled pixels: 30 x 5, each viewed once.
  EXPECT_EQ(a.views, 30 * 5);
}

TEST(Preview, PlotOfMinimaAndMaxima) {
  std::vector<int16_t> v(3000);
  for (size_t k = 0; k < v.size(); ++k) v[k] = int16_t(int(k % 251) - 100);
  ChunkedArray a({3000}, {1000}, {128}, 2, item_bytes_of(v));
  auto plan = plan_preview({3000}, preview_dtype("<i2", 2));
  PreviewImage image = render_preview(*plan, a.layout, a.view());
  ASSERT_EQ(image.width, 1024);
  ASSERT_EQ(image.height, 256);
  for (int64_t j = 0; j < 1024; ++j) {
    double lo = 1e9, hi = -1e9;
    for (int64_t k = 0; k < 3000; ++k)
      if (plot_column(k, 3000, 1024) == j) lo = std::min<double>(lo, v[size_t(k)]), hi = std::max<double>(hi, v[size_t(k)]);
    const int top = 255 - preview_level(hi, -100, 150), bottom = 255 - preview_level(lo, -100, 150);
    for (int r = 0; r < 256; ++r)
      ASSERT_EQ(image.pixels[size_t(r * 1024 + j)], (r >= top && r <= bottom) ? 0 : 255) << "column " << j << " row " << r;
  }
}

TEST(Preview, PngReadsBack) {
  PreviewImage image;
  image.width = 5;
  image.height = 3;
  image.channels = 2;
  image.description = "blosc2fs preview.png: test lo=1 hi=2";
  for (int k = 0; k < 30; ++k) image.pixels.push_back(uint8_t(k * 8));
  Bytes png = encode_png(image);
  png_image read{};
  read.version = PNG_IMAGE_VERSION;
  ASSERT_TRUE(png_image_begin_read_from_memory(&read, png.data(), png.size()));
  EXPECT_EQ(read.width, 5u);
  EXPECT_EQ(read.height, 3u);
  read.format = PNG_FORMAT_GA;
  std::vector<uint8_t> pixels(PNG_IMAGE_SIZE(read));
  ASSERT_TRUE(png_image_finish_read(&read, nullptr, pixels.data(), 0, nullptr));
  EXPECT_EQ(pixels, image.pixels);
  const std::string text(png.begin(), png.end());
  EXPECT_NE(text.find(std::string("tEXtDescription") + '\0' + image.description), std::string::npos);
  PreviewPlan plan;
  plan.width = 5;
  plan.height = 3;
  plan.channels = 2;
  EXPECT_LE(int64_t(png.size()), preview_png_size_bound(plan));
}

}  // namespace
}  // namespace blosc2fs
