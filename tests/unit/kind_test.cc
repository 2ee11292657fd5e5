// What a frame is (docs/kinds.md): detection from metalayers and vlmeta as
// python-blosc2 writes them, the decoded details, the views (items, tensor,
// proxy fetched chunks) and secret redaction.
#include "kind.h"

#include <gtest/gtest.h>

#include "b2nd.h"
#include "fixtures.h"
#include "frame_json.h"
#include "frame_writer.h"

namespace blosc2fs {
namespace {

using testing::TempDir;

Bytes mp(const char* json) { return json_to_msgpack(Json::parse(json)); }

struct Spec {
  std::vector<std::pair<std::string, Bytes>> metas;
  std::vector<std::pair<std::string, Bytes>> vlmetas;
  std::vector<Bytes> chunks;
  int32_t chunksize = 0;  // 0: one chunk per entry of `chunks`, sizes may differ
};

std::shared_ptr<const Frame> make(const std::filesystem::path& path, const Spec& s) {
  FrameParams p;
  p.cparams.codec = Codec::zstd;
  p.cparams.typesize = 1;
  p.chunksize = s.chunksize;
  for (const auto& [name, content] : s.metas) p.metalayers.push_back({name, content});
  {
    FrameWriter w(path, p);
    for (const Bytes& c : s.chunks) w.append(c);
    for (const auto& [name, content] : s.vlmetas) w.set_vlmetalayer(name, content);
    w.close();
  }
  return Frame::open(path);
}

TEST(Kind, PlainSchunkHasNoDetails) {
  TempDir dir;
  auto f = make(dir.path() / "s.b2frame", {{}, {}, {Bytes(100, 1)}, 100});
  FrameKind k = detect_frame_kind(*f);
  EXPECT_EQ(k.name, "schunk");
  EXPECT_TRUE(k.details.is_null());
  EXPECT_EQ(k.items, ItemsLayout::none);
  EXPECT_EQ(frame_to_json(*f)["kind"], "schunk");
}

TEST(Kind, ObjectArrayItemsOnePerChunk) {
  TempDir dir;
  Spec s;
  s.metas = {{"vlarray", mp(R"({"version":1,"serializer":"msgpack"})")}};
  s.chunks = {mp("1"), mp(R"("two")"), mp(R"({"a":[1,{"__bytes__":"AAE="}]})"), mp("null")};
  auto f = make(dir.path() / "o.b2frame", s);
  FrameKind k = detect_frame_kind(*f);
  EXPECT_EQ(k.name, "objectarray");
  EXPECT_EQ(k.items, ItemsLayout::one_per_chunk);
  EXPECT_EQ(k.details["nitems"], 4);
  EXPECT_EQ(items_jsonl_rows(*f, k.items, 0, 10), "1\n\"two\"\n{\"a\":[1,{\"__bytes__\":\"AAE=\"}]}\nnull\n");
  EXPECT_EQ(items_jsonl_rows(*f, k.items, 1, 2), "\"two\"\n{\"a\":[1,{\"__bytes__\":\"AAE=\"}]}\n");
  EXPECT_EQ(items_jsonl_rows(*f, k.items, 4, 2), "");
}

TEST(Kind, BatchArrayChunkWithoutVlBlocksIsOneArray) {
  TempDir dir;
  Spec s;
  s.metas = {{"batcharray", mp(R"({"version":1,"serializer":"msgpack","items_per_block":null,"arrow_schema":null})")}};
  s.vlmetas = {{"_batch_array_metadata", mp(R"({"batch_lengths":[2,1]})")}};
  s.chunks = {mp(R"([1,"x"])"), mp(R"([[3]])")};
  auto f = make(dir.path() / "b.b2frame", s);
  FrameKind k = detect_frame_kind(*f);
  EXPECT_EQ(k.name, "batcharray");
  EXPECT_EQ(k.items, ItemsLayout::block_arrays);
  EXPECT_EQ(k.details["nitems"], 3);
  EXPECT_EQ(items_jsonl_rows(*f, k.items, 0, 2), "1\n\"x\"\n[3]\n");
}

TEST(Kind, BadItemsNameTheChunk) {
  TempDir dir;
  Spec s;
  s.metas = {{"batcharray", mp(R"({"version":1,"serializer":"msgpack","items_per_block":null,"arrow_schema":null})")}};
  s.chunks = {mp(R"([1])"), mp(R"({"not":"an array"})")};
  auto f = make(dir.path() / "b.b2frame", s);
  try {
    items_jsonl_rows(*f, ItemsLayout::block_arrays, 0, 2);
    FAIL() << "no error";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("chunk 1"), std::string::npos) << e.what();
  }
}

TEST(Kind, ArrowBatchesHaveNoItems) {
  TempDir dir;
  Spec s;
  s.metas = {{"batcharray", mp(R"({"version":1,"serializer":"arrow","items_per_block":4,"arrow_schema":{"__bytes__":"AAEC"}})")}};
  s.chunks = {Bytes(10, 0xff)};
  auto f = make(dir.path() / "a.b2frame", s);
  FrameKind k = detect_frame_kind(*f);
  EXPECT_EQ(k.name, "batcharray");
  EXPECT_EQ(k.items, ItemsLayout::none);
  EXPECT_EQ(k.details["serializer"], "arrow");
  EXPECT_EQ(k.details["arrow_schema_bytes"], 3);
  EXPECT_TRUE(k.details["items_file"].is_null());
}

TEST(Kind, ListArrayOverEitherBackend) {
  TempDir dir;
  Spec s;
  s.metas = {{"listarray", mp(R"({"version":1,"backend":"vl"})")}, {"vlarray", mp(R"({"version":1,"serializer":"msgpack"})")}};
  s.chunks = {mp("[1,2]"), mp("[]")};
  FrameKind k = detect_frame_kind(*make(dir.path() / "l.b2frame", s));
  EXPECT_EQ(k.name, "listarray");
  EXPECT_EQ(k.items, ItemsLayout::one_per_chunk);
  s.metas = {{"listarray", mp(R"({"version":1,"backend":"batch"})")},
             {"batcharray", mp(R"({"version":1,"serializer":"msgpack","items_per_block":2,"arrow_schema":null})")}};
  k = detect_frame_kind(*make(dir.path() / "l2.b2frame", s));
  EXPECT_EQ(k.items, ItemsLayout::block_arrays);
}

TEST(Kind, LazyCarriersCurrentAndLegacy) {
  TempDir dir;
  NdMeta nd;
  nd.ndim = 1;
  nd.shape = {10};
  nd.chunkshape = {10};
  nd.blockshape = {10};
  nd.dtype = "<f8";
  Spec s;
  s.metas = {{"b2nd", serialize_b2nd_meta(nd)}, {"b2o", mp(R"({"kind":"lazyexpr","version":1})")}};
  s.vlmetas = {{"b2o", mp(R"({"kind":"lazyexpr","version":1,"expression":"o0 + o1",
      "operands":{"o0":{"kind":"urlpath","version":1,"urlpath":"a.b2nd"},"o1":{"kind":"urlpath","version":1,"urlpath":"b.b2nd"}}})")}};
  s.chunks = {Bytes(80, 0)};
  s.chunksize = 80;
  auto f = make(dir.path() / "e.b2nd", s);
  FrameKind k = detect_frame_kind(*f);
  EXPECT_EQ(k.name, "lazyexpr");
  EXPECT_TRUE(k.no_array);
  EXPECT_EQ(k.details["expression"], "o0 + o1");
  EXPECT_EQ(k.details["operands"]["o1"]["urlpath"], "b.b2nd");
  EXPECT_FALSE(frame_to_json(*f).contains("array"));

  s.metas = {{"b2nd", serialize_b2nd_meta(nd)}, {"LazyArray", mp("1")}};
  s.vlmetas = {{"_LazyArray", mp(R"({"UDF":"def f(i, o, off): pass","operands":{"o0":"a.b2nd"},"name":"f"})")}};
  k = detect_frame_kind(*make(dir.path() / "u.b2nd", s));
  EXPECT_EQ(k.name, "lazyudf");
  EXPECT_TRUE(k.no_array);
  EXPECT_EQ(k.details["form"], "LazyArray (legacy)");
  EXPECT_EQ(k.details["operands"]["o0"], "a.b2nd");
}

TEST(Kind, PackTensorShapeAndDtype) {
  TempDir dir;
  Spec s;
  s.vlmetas = {{"__pack_tensor__",
                mp(R"(["__tuple__","numpy",["__tuple__",2],[["__tuple__","a","<i4"],["__tuple__","b","<f8",["__tuple__",2]]]])")}};
  s.chunks = {Bytes(40, 7)};
  s.chunksize = 40;
  FrameKind k = detect_frame_kind(*make(dir.path() / "t.bl2", s));
  EXPECT_EQ(k.name, "pack_tensor");
  ASSERT_TRUE(k.tensor);
  EXPECT_EQ(k.tensor->shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(k.tensor->npy_descr, "[('a', '<i4'), ('b', '<f8', (2,))]");
  EXPECT_EQ(k.tensor->itemsize, 20);

  // Shape and dtype that do not cover the frame's bytes: no array, an error named.
  s.vlmetas = {{"__pack_tensor__", mp(R"(["__tuple__","numpy",["__tuple__",3],"<f8"])")}};
  k = detect_frame_kind(*make(dir.path() / "bad.bl2", s));
  EXPECT_EQ(k.name, "pack_tensor");
  EXPECT_FALSE(k.tensor);
  ASSERT_TRUE(k.details.contains("errors"));
}

TEST(Kind, DescrTextRefusesNamesNeedingEscapes) {
  EXPECT_EQ(numpy_descr_text(Json("<f8")), "<f8");
  EXPECT_FALSE(numpy_descr_text(Json::parse(R"([["__tuple__","it's","<i4"]])")));
  EXPECT_FALSE(numpy_descr_text(Json::parse("[]")));
  EXPECT_FALSE(numpy_descr_text(Json(3)));
}

TEST(Kind, ProxyFetchedChunksFromEachBitmap) {
  TempDir dir;
  Spec s;
  s.metas = {{"proxy-source", mp(R"({"source_kind":"local","local_abspath":"/data/src.b2nd","urlpath":null,"caterva2_env":false})")}};
  for (int i = 0; i < 10; ++i) s.chunks.push_back(Bytes{1, 2, 3, 4, 5, 6, 7, uint8_t(i)});  // not one repeated value
  s.chunksize = 8;
  s.vlmetas = {{"proxy-fetched", mp(R"({"__bytes__":")" "IwI=" R"("})")}};  // 0x23 0x02: chunks 0, 1, 5, 9
  FrameKind k = detect_frame_kind(*make(dir.path() / "p1.b2frame", s));
  EXPECT_EQ(k.name, "proxy");
  ASSERT_TRUE(k.proxy);
  std::vector<int64_t> fetched;
  for (int64_t n = 0; n < 10; ++n)
    if (k.proxy->fetched(n)) fetched.push_back(n);
  EXPECT_EQ(fetched, (std::vector<int64_t>{0, 1, 5, 9}));
  EXPECT_EQ(k.details["chunks_fetched"], Json::parse("[[0,1],[5,5],[9,9]]"));
  EXPECT_EQ(k.proxy->source, "local /data/src.b2nd");

  // Blocks: 2 per chunk; chunk 0 whole, chunk 1 half.
  s.vlmetas = {{"proxy-fetched-blocks", mp(R"({"__bytes__":"BwAA"})")}, {"proxy-fetched-bpc", mp("2")}};
  k = detect_frame_kind(*make(dir.path() / "p2.b2frame", s));
  EXPECT_TRUE(k.proxy->fetched(0));
  EXPECT_FALSE(k.proxy->fetched(1));
  EXPECT_EQ(k.details["chunks_partly_fetched"], Json::parse("[[1,1]]"));
  const std::string tsv = index_tsv_text(*make(dir.path() / "p3.b2frame", s), &*k.proxy);
  EXPECT_NE(tsv.find("\tfetched\n"), std::string::npos);
  EXPECT_NE(tsv.find("\tyes\n"), std::string::npos);
  EXPECT_NE(tsv.find("\tpartly\n"), std::string::npos);

  // Dirty: a process died while changing it; nothing counts as fetched.
  s.vlmetas.push_back({"proxy-dirty", mp("true")});
  k = detect_frame_kind(*make(dir.path() / "p4.b2frame", s));
  EXPECT_FALSE(k.proxy->fetched(0));

  // No bitmap at all: stored (non-special) chunks count, as python-blosc2 takes them.
  s.vlmetas.clear();
  k = detect_frame_kind(*make(dir.path() / "p5.b2frame", s));
  EXPECT_TRUE(k.proxy->fetched(3));
}

TEST(Kind, SecretsRedacted) {
  Json doc = Json::parse(R"({"source_kind":"caterva2",
      "urlpath":["__tuple__","root/a.b2nd","https://u:p@host:8000/api?token=abc&x=1#frag","tok123"],
      "auth_token":"zzz","headers":{"Authorization":"Bearer q","Accept":"*/*"},"password":null})");
  Json r = redact_secrets(doc);
  EXPECT_EQ(r["urlpath"][2], "https://<redacted>@host:8000/api?token=<redacted>&x=1#frag");
  EXPECT_EQ(r["urlpath"][3], "<redacted>");
  EXPECT_EQ(r["urlpath"][1], "root/a.b2nd");
  EXPECT_EQ(r["auth_token"], "<redacted>");
  EXPECT_EQ(r["headers"]["Authorization"], "<redacted>");
  EXPECT_EQ(r["headers"]["Accept"], "*/*");
  EXPECT_TRUE(r["password"].is_null());
  EXPECT_EQ(r.dump().find("abc"), std::string::npos);
}

TEST(Kind, StoresNamed) {
  TempDir dir;
  for (auto [tag, name] : {std::pair{"b2tree", "treestore"}, {"b2dict", "dictstore"}, {"b2embed", "embedstore"}}) {
    Spec s;
    s.metas = {{tag, mp(R"({"version":1})")}};
    s.chunks = {Bytes(16, 0)};
    s.chunksize = 16;
    EXPECT_EQ(detect_frame_kind(*make(dir.path() / (std::string(tag) + ".b2e"), s)).name, name);
  }
}

TEST(Kind, MalformedKindMetadataIsNamedNotThrown) {
  TempDir dir;
  Spec s;
  s.metas = {{"b2o", Bytes{0xc1}}};  // never used in msgpack
  s.vlmetas = {{"b2o", Bytes{0x92, 0x01}}};  // truncated array
  s.chunks = {Bytes(8, 0)};
  s.chunksize = 8;
  FrameKind k;
  ASSERT_NO_THROW(k = detect_frame_kind(*make(dir.path() / "m.b2frame", s)));
  EXPECT_EQ(k.name, "b2o");
  EXPECT_TRUE(k.no_array);
  EXPECT_EQ(k.details["errors"].size(), 2u);
}

}  // namespace
}  // namespace blosc2fs
