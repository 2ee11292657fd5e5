// The Zarr view's metadata and shard index (src/frame/zarr_meta.h).
#include <gtest/gtest.h>

#include "zarr_meta.h"

namespace blosc2fs {
namespace {

NdMeta nd(std::vector<int64_t> shape, std::vector<int32_t> chunks, std::vector<int32_t> blocks, std::string dtype) {
  NdMeta m;
  m.ndim = int(shape.size());
  m.shape = std::move(shape);
  m.chunkshape = std::move(chunks);
  m.blockshape = std::move(blocks);
  m.dtype = std::move(dtype);
  return m;
}

TEST(ZarrMeta, ShardedWhenChunksAreMultiplesOfBlocksOfAtLeastOneMiB) {
  auto plan = plan_zarr_array(nd({1030, 600}, {512, 512}, {128, 128}, "<f4"), 4, Json::object());
  ASSERT_TRUE(plan);
  EXPECT_TRUE(plan->sharded);
  EXPECT_FALSE(plan->chunk_in_c_order);  // square tiles are not rows
  EXPECT_EQ(plan->grid, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(plan->nchunks, 6);
  EXPECT_EQ(plan->ninner, 16);  // tiles: each inner chunk is a block
  EXPECT_EQ(plan->v3_chunk_bytes(), 512 * 512 * 4 + 16 * 16);
  EXPECT_EQ(plan->data_type, "float32");
  EXPECT_EQ(plan->endian, "little");
  EXPECT_EQ(plan->dimension_names, (std::vector<std::string>{"dim0_1030", "dim1_600"}));
  Json j = Json::parse(zarr_v3_array_json(*plan, Json::object({{"units", "K"}})));
  EXPECT_EQ(j["codecs"][0]["name"], "sharding_indexed");
  EXPECT_EQ(j["codecs"][0]["configuration"]["chunk_shape"], Json::array({128, 128}));
  EXPECT_EQ(j["codecs"][0]["configuration"]["index_location"], "end");
  EXPECT_EQ(j["attributes"]["units"], "K");
  EXPECT_EQ(j["fill_value"], 0.0);
}

TEST(ZarrMeta, PlainBelowOneMiBEvenWhenChunksAreMultiplesOfBlocks) {
  // 2,000 x 2,000 float32 of 256 x 256 chunks (256 KB), 64 x 64 blocks: plain.
  auto small = plan_zarr_array(nd({2000, 2000}, {256, 256}, {64, 64}, "<f4"), 4, Json::object());
  ASSERT_TRUE(small);
  EXPECT_FALSE(small->sharded);
  EXPECT_EQ(small->ninner, 0);
  EXPECT_EQ(small->v3_chunk_bytes(), 256 * 256 * 4);
  Json j = Json::parse(zarr_v3_array_json(*small, Json::object()));
  EXPECT_EQ(j["codecs"][0]["name"], "bytes");
  // The threshold is the decoded chunk's size: exactly kMinShardBytes is a shard, one row less is not.
  EXPECT_TRUE(plan_zarr_array(nd({1024, 512}, {512, 512}, {1, 512}, "<f4"), 4, Json::object())->sharded);
  EXPECT_FALSE(plan_zarr_array(nd({1024, 512}, {511, 512}, {1, 512}, "<f4"), 4, Json::object())->sharded);
  EXPECT_TRUE(plan_zarr_array(nd({1024, 512}, {256, 512}, {128, 128}, "<f8"), 8, Json::object())->sharded);
  EXPECT_FALSE(plan_zarr_array(nd({1024, 512}, {256, 512}, {128, 128}, "<f4"), 4, Json::object())->sharded);
}

// Remote data: one block per inner chunk, so that a reader of a few rows
// fetches one block of each chunk, not a run of them.
TEST(ZarrMeta, RemoteArraysShardByBlock) {
  const NdMeta meta = nd({8000, 8000}, {1000, 1000}, {100, 1000}, "<f4");
  auto runs = plan_zarr_array(meta, 4, Json::object());
  auto blocks = plan_zarr_array(meta, 4, Json::object(), nullptr, InnerChunks::blocks);
  ASSERT_TRUE(runs && blocks);
  EXPECT_EQ(runs->inner_shape, (std::vector<int64_t>{200, 1000}));
  EXPECT_EQ(blocks->inner_shape, (std::vector<int64_t>{100, 1000}));
  EXPECT_EQ(blocks->ninner, 10);
  EXPECT_EQ(blocks->v3_chunk_bytes(), 1000 * 1000 * 4 + 10 * 16);
}

TEST(ZarrMeta, PlainWhenNotMultiplesAndCOrderForRows) {
  auto plain = plan_zarr_array(nd({7, 1001, 300}, {7, 1001, 300}, {5, 1001, 300}, "<f8"), 8, Json::object());
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->sharded);  // 16 MB, but 7 is no multiple of 5
  EXPECT_FALSE(plain->chunk_in_c_order);
  EXPECT_EQ(plain->v3_chunk_bytes(), 7 * 1001 * 300 * 8);
  auto rows = plan_zarr_array(nd({200, 100, 100}, {100, 100, 100}, {2, 100, 100}, "<u2"), 2, Json::object());
  ASSERT_TRUE(rows);
  EXPECT_TRUE(rows->sharded);
  EXPECT_TRUE(rows->chunk_in_c_order);
  auto small_rows = plan_zarr_array(nd({20, 30, 40}, {10, 30, 40}, {2, 30, 40}, "<u2"), 2, Json::object());
  ASSERT_TRUE(small_rows);
  EXPECT_FALSE(small_rows->sharded);
  EXPECT_TRUE(small_rows->chunk_in_c_order);
  auto ones = plan_zarr_array(nd({100}, {10}, {1}, "|u1"), 1, Json::object());
  EXPECT_TRUE(ones->chunk_in_c_order);
  EXPECT_FALSE(ones->endian);
  EXPECT_EQ(ones->npy_descr, "|u1");
  Json j = Json::parse(zarr_v3_array_json(*ones, Json::object()));
  EXPECT_FALSE(j["codecs"][0].contains("configuration"));
  auto big_ones = plan_zarr_array(nd({1 << 22}, {1 << 21}, {1 << 16}, "|u1"), 1, Json::object());
  ASSERT_TRUE(big_ones->sharded);
  j = Json::parse(zarr_v3_array_json(*big_ones, Json::object()));
  EXPECT_FALSE(j["codecs"][0]["configuration"]["codecs"][0].contains("configuration"));
}

TEST(ZarrMeta, TypesAndNames) {
  EXPECT_EQ(plan_zarr_array(nd({4}, {4}, {4}, ">c16"), 16, Json::object())->data_type, "complex128");
  EXPECT_EQ(plan_zarr_array(nd({4}, {4}, {4}, ">c16"), 16, Json::object())->endian, "big");
  EXPECT_EQ(plan_zarr_array(nd({4}, {4}, {4}, "|b1"), 1, Json::object())->data_type, "bool");
  for (const char* name : {"float16", "<f2", "f2", "=f2"}) {
    auto plan = plan_zarr_array(nd({4}, {4}, {4}, name), 2, Json::object());
    ASSERT_TRUE(plan) << name;
    EXPECT_EQ(plan->data_type, "float16");
    EXPECT_EQ(plan->npy_descr, "<f2");
  }
  ASSERT_TRUE(plan_zarr_array(nd({4}, {4}, {4}, "uint8"), 1, Json::object()));
  EXPECT_EQ(plan_zarr_array(nd({4}, {4}, {4}, "uint8"), 1, Json::object())->npy_descr, "|u1");
  std::string why;
  EXPECT_FALSE(plan_zarr_array(nd({4}, {4}, {4}, "<U6"), 24, Json::object(), &why));
  EXPECT_NE(why.find("<U6"), std::string::npos);
  EXPECT_FALSE(plan_zarr_array(nd({4}, {4}, {4}, "<M8[ns]"), 8, Json::object()));
  EXPECT_FALSE(plan_zarr_array(nd({4}, {4}, {4}, "<f8"), 4, Json::object()));  // disagrees with the typesize
  Json attrs = {{"dims", {"time", "lat"}}};
  EXPECT_EQ(plan_zarr_array(nd({2, 3}, {2, 3}, {2, 3}, "<i4"), 4, attrs)->dimension_names,
            (std::vector<std::string>{"time", "lat"}));
  Json repeated = {{"dims", {"x", "x"}}};
  EXPECT_EQ(plan_zarr_array(nd({2, 3}, {2, 3}, {2, 3}, "<i4"), 4, repeated)->dimension_names,
            (std::vector<std::string>{"dim0_2", "dim1_3"}));
}

TEST(ZarrMeta, ZeroDAndEmpty) {
  auto zero_d = plan_zarr_array(nd({}, {}, {}, "<f8"), 8, Json::object());
  ASSERT_TRUE(zero_d);
  EXPECT_EQ(zero_d->nchunks, 1);
  EXPECT_FALSE(zero_d->sharded);
  EXPECT_EQ(zarr_v2_key(*zero_d, 0), "0");
  auto empty = plan_zarr_array(nd({0, 5}, {0, 5}, {0, 5}, "<f4"), 4, Json::object());
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->nchunks, 0);
  EXPECT_EQ(empty->chunk_shape, (std::vector<int64_t>{1, 5}));
  EXPECT_FALSE(empty->sharded);
}

TEST(ZarrMeta, InnerChunksOfWholeRowBlocksAreRunsOfUpToOneMiB) {
  // The 512 MB benchmark array: 1024 x 1024 float32 chunks (4 MiB) of 64-row blocks (256 KiB): runs of 4.
  auto bars = plan_zarr_array(nd({131072, 1024}, {1024, 1024}, {64, 1024}, "<f4"), 4, Json::object());
  ASSERT_TRUE(bars);
  EXPECT_TRUE(bars->chunk_in_c_order);
  EXPECT_EQ(bars->block_shape, (std::vector<int64_t>{64, 1024}));
  EXPECT_EQ(bars->inner_shape, (std::vector<int64_t>{256, 1024}));
  EXPECT_EQ(bars->ninner, 4);
  EXPECT_EQ(Json::parse(zarr_v3_array_json(*bars, Json::object()))["codecs"][0]["configuration"]["chunk_shape"],
            Json::array({256, 1024}));
  // 100-row blocks of 1000 x 1000 float32 (400 KB): a run must tile the 10 blocks: 2 (800 KB), not 5 (2 MB).
  auto tiles = plan_zarr_array(nd({8000, 8000}, {1000, 1000}, {100, 1000}, "<f4"), 4, Json::object());
  EXPECT_EQ(tiles->inner_shape, (std::vector<int64_t>{200, 1000}));
  EXPECT_EQ(tiles->ninner, 5);
  EXPECT_EQ(tiles->shard_data_bytes(), 1000 * 1000 * 4);
  // A run that fills its axis grows along the axis before it: blocks of one row of 4 KiB.
  auto rows = plan_zarr_array(nd({64, 16, 1024}, {64, 16, 1024}, {1, 1, 1024}, "<f4"), 4, Json::object());
  EXPECT_EQ(rows->inner_shape, (std::vector<int64_t>{16, 16, 1024}));
  EXPECT_EQ(rows->ninner, 4);
  // A block already over 1 MiB stays one inner chunk; blocks that are not whole rows stay blocks.
  auto big = plan_zarr_array(nd({4096, 1024}, {2048, 1024}, {512, 1024}, "<f4"), 4, Json::object());
  EXPECT_EQ(big->inner_shape, (std::vector<int64_t>{512, 1024}));
  auto squares = plan_zarr_array(nd({1024, 1024}, {1024, 1024}, {128, 128}, "<f4"), 4, Json::object());
  EXPECT_EQ(squares->inner_shape, (std::vector<int64_t>{128, 128}));
  EXPECT_EQ(squares->ninner, 64);
  // A prime number of blocks per chunk: no run but the single block or all of them (too big here).
  auto prime = plan_zarr_array(nd({1}, {131 * 65536}, {65536}, "<f4"), 4, Json::object());
  EXPECT_EQ(prime->inner_shape, (std::vector<int64_t>{65536}));
  EXPECT_EQ(prime->ninner, 131);
}

TEST(ZarrMeta, ShardIndexAndKeys) {
  // Square tiles: an inner chunk per block.
  auto plan = plan_zarr_array(nd({1024, 1024}, {1024, 512}, {512, 256}, "<i2"), 2, Json::object());
  ASSERT_TRUE(plan);
  ASSERT_EQ(plan->ninner, 4);
  uint8_t index[32];
  ASSERT_EQ(copy_shard_index(*plan, false, 0, index), 32u);
  EXPECT_EQ(index[0], 0);
  EXPECT_EQ(index[10], 0x04);  // nbytes of a 512 x 256 block of int16: 0x40000
  EXPECT_EQ(index[18], 0x04);  // the second block's offset
  uint8_t tail[5];
  ASSERT_EQ(copy_shard_index(*plan, true, 62, tail), 2u);  // the last 2 of the 64 index bytes
  EXPECT_EQ(tail[0], 0xff);
  auto grid = plan_zarr_array(nd({30, 21}, {12, 8}, {4, 4}, "<f4"), 4, Json::object());
  EXPECT_EQ(zarr_chunk_of(*grid, {"2", "1"}), 7);
  EXPECT_FALSE(zarr_chunk_of(*grid, {"3", "0"}));
  EXPECT_FALSE(zarr_chunk_of(*grid, {"01", "0"}));
  EXPECT_FALSE(zarr_chunk_of(*grid, {"1"}));
  EXPECT_EQ(zarr_v2_key(*grid, 7), "2.1");
}

TEST(ZarrMeta, AttributesOnlyChange) {
  auto plan = plan_zarr_array(nd({30, 21}, {12, 8}, {4, 4}, "<f4"), 4, Json::object());
  ASSERT_TRUE(plan);
  const std::string current = zarr_v3_array_json(*plan, Json::object({{"units", "K"}}));
  // Another spelling (key order, 0 for 0.0, empty storage_transformers) with new attributes.
  nlohmann::json respelled = nlohmann::json::parse(current);
  respelled["fill_value"] = 0;
  respelled["storage_transformers"] = nlohmann::json::array();
  respelled["attributes"] = {{"units", "C"}, {"scale", 2}};
  std::string why;
  auto attrs = zarr_attributes_only_change(current, respelled.dump(), &why);
  ASSERT_TRUE(attrs) << why;
  EXPECT_EQ((*attrs)["units"], "C");
  EXPECT_EQ((*attrs)["scale"], 2);
  // No attributes at all: every one removed.
  nlohmann::json bare = nlohmann::json::parse(current);
  bare.erase("attributes");
  attrs = zarr_attributes_only_change(current, bare.dump(), &why);
  ASSERT_TRUE(attrs) << why;
  EXPECT_TRUE(attrs->empty());
  // Anything else is refused, saying what differs.
  nlohmann::json reshaped = nlohmann::json::parse(current);
  reshaped["shape"] = {31, 21};
  EXPECT_FALSE(zarr_attributes_only_change(current, reshaped.dump(), &why));
  EXPECT_NE(why.find("shape"), std::string::npos) << why;
  nlohmann::json extra = nlohmann::json::parse(current);
  extra["consolidated_metadata"] = nlohmann::json::object({{"kind", "inline"}});
  EXPECT_FALSE(zarr_attributes_only_change(current, extra.dump(), &why));
  EXPECT_FALSE(zarr_attributes_only_change(current, "{\"zarr_format\": 3", &why));
  EXPECT_FALSE(zarr_attributes_only_change(current, "[1]", &why));
  nlohmann::json bad_attrs = nlohmann::json::parse(current);
  bad_attrs["attributes"] = 3;
  EXPECT_FALSE(zarr_attributes_only_change(current, bad_attrs.dump(), &why));
}

}  // namespace
}  // namespace blosc2fs
