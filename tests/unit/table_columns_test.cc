// The column readers behind table.csv (src/store/table_columns.*): each storage
// form python-blosc2 4.14.1 gives a CTable column, the text of each kind of value
// (docs/stores.md, Tables), and hostile leaves: clear FormatErrors, no crash, no
// allocation beyond what the leaf holds.
#include "table_columns.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>

#include "error.h"
#include "fixtures.h"
#include "frame_writer.h"
#include "store.h"
#include "table_csv.h"

namespace blosc2fs {
namespace {

using testing::TempDir;
using testing::text_bytes;

Bytes mp(const char* json) { return json_to_msgpack(Json::parse(json)); }

int counter = 0;

// Writes an N-d array frame of dtype `dtype` (itemsize bytes per item), shape `shape`, in one chunk.
void write_nd(const std::filesystem::path& path, const std::string& dtype, int32_t itemsize, std::vector<int64_t> shape,
              Bytes data) {
  NdMeta meta;
  meta.ndim = int(shape.size());
  meta.shape = shape;
  for (int64_t s : shape) meta.chunkshape.push_back(int32_t(std::max<int64_t>(s, 1)));
  meta.blockshape = meta.chunkshape;
  meta.dtype = dtype;
  int64_t chunk_items = 1;
  for (int32_t c : meta.chunkshape) chunk_items *= c;
  data.resize(size_t(chunk_items * itemsize), 0);
  FrameParams p;
  p.cparams.typesize = itemsize;
  p.chunksize = int32_t(chunk_items * itemsize);
  p.metalayers.push_back({"b2nd", serialize_b2nd_meta(meta)});
  std::filesystem::create_directories(path.parent_path());
  FrameWriter w(path, p);
  w.append(data);
  w.close();
}

std::unique_ptr<NdColumn> nd_column(const TempDir& dir, const std::string& dtype, int32_t itemsize,
                                    std::vector<int64_t> shape, Bytes data) {
  const auto path = dir.path() / ("nd" + std::to_string(counter++) + ".b2nd");
  write_nd(path, dtype, itemsize, std::move(shape), std::move(data));
  return std::make_unique<NdColumn>(Frame::open(path), "column " + path.filename().string());
}

// A frame without data holding `vlmetas`, with metalayers `metas`.
void write_empty(const std::filesystem::path& path, std::vector<Metalayer> metas,
                 const std::vector<std::pair<std::string, Bytes>>& vlmetas) {
  FrameParams p;
  p.cparams.typesize = 1;
  p.chunksize = 8192;
  p.metalayers = std::move(metas);
  std::filesystem::create_directories(path.parent_path());
  FrameWriter w(path, p);
  for (const auto& [name, content] : vlmetas) w.set_vlmetalayer(name, content);
  w.close();
}

// A CTable as a .b2d TreeStore: `_meta` with `schema`, `_valid_rows`, and the
// column leaves `columns` writes.
std::filesystem::path table_store(const TempDir& dir, const std::string& schema, const Bytes& valid,
                                  const std::function<void(const std::filesystem::path&)>& columns) {
  const auto root = dir.path() / ("t" + std::to_string(counter++) + ".b2d");
  write_empty(root / "embed.b2e", {{"b2tree", mp(R"({"version":1})")}},
              {{"estore_metadata", mp(R"({"embed_map":{},"current_offset":0})")}});
  write_empty(root / "_meta.b2f", {}, {{"kind", mp(R"("ctable")")}, {"schema", json_to_msgpack(Json(schema))}});
  write_nd(root / "_valid_rows.b2nd", "|b1", 1, {int64_t(valid.size())}, valid);
  columns(root / "_cols");
  return root;
}

std::string whole_csv(const TableCsv& t) {
  std::string out = t.header();
  int64_t row = 0;
  while (row < t.physical_rows()) row = t.append_rows(row, out.size() + 7, out);
  return out;
}

template <typename T>
Bytes raw_of(std::initializer_list<T> values) {
  Bytes out(values.size() * sizeof(T));
  std::memcpy(out.data(), std::data(values), out.size());
  return out;
}

// A BatchArray leaf: each chunk one msgpack array of items, and its batch_lengths.
std::unique_ptr<ItemsColumn> batch_column(const TempDir& dir, const std::vector<Bytes>& chunks,
                                          const char* batch_metadata) {
  FrameParams p;
  p.cparams.typesize = 1;
  p.metalayers.push_back(
      {"batcharray", mp(R"({"version":1,"serializer":"msgpack","items_per_block":null,"arrow_schema":null})")});
  const auto path = dir.path() / ("b" + std::to_string(counter++) + ".b2b");
  {
    FrameWriter w(path, p);
    for (const Bytes& c : chunks) w.append(c);
    if (batch_metadata) w.set_vlmetalayer("_batch_array_metadata", mp(batch_metadata));
    w.close();
  }
  return std::make_unique<ItemsColumn>(Frame::open(path), "column " + path.filename().string());
}

std::vector<std::string> texts(const ColumnReader& r, int64_t first, int64_t count) {
  CsvCells cells(static_cast<size_t>(count));
  r.read(first, count, cells);
  std::vector<std::string> out;
  for (const auto& c : cells) out.push_back(c ? *c : "<null>");
  return out;
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const FormatError& e) {
    return e.what();
  }
  return "no error";
}

TEST(TableColumns, PythonReprOfFloatsBytesAndTimes) {
  EXPECT_EQ(python_float_repr(0.1, false), "0.1");
  EXPECT_EQ(python_float_repr(1.0, false), "1.0");
  EXPECT_EQ(python_float_repr(-0.0, false), "-0.0");
  EXPECT_EQ(python_float_repr(1e16, false), "1e+16");
  EXPECT_EQ(python_float_repr(1234567890123456.0, false), "1234567890123456.0");
  EXPECT_EQ(python_float_repr(123456789012345680.0, false), "1.2345678901234568e+17");
  EXPECT_EQ(python_float_repr(0.0001, false), "0.0001");
  EXPECT_EQ(python_float_repr(0.00001, false), "1e-05");
  EXPECT_EQ(python_float_repr(double(0.1f), false), "0.10000000149011612");
  EXPECT_EQ(python_float_repr(NAN, false), "nan");
  EXPECT_EQ(python_float_repr(-INFINITY, false), "-inf");
  const uint8_t raw[] = {'a', '\'', '\\', 0, 0xff, '\n', '\t'};
  EXPECT_EQ(python_bytes_repr(ByteSpan(raw, sizeof raw)), R"(b"a'\\\x00\xff\n\t")");
  const uint8_t both[] = {'\'', '"'};
  EXPECT_EQ(python_bytes_repr(ByteSpan(both, 2)), R"(b'\'"')");
  EXPECT_EQ(numpy_datetime_text(0, "s"), "1970-01-01T00:00:00");
  EXPECT_EQ(numpy_datetime_text(-1, "ms"), "1969-12-31T23:59:59.999");
  EXPECT_EQ(numpy_datetime_text(1700000000000001, "us"), "2023-11-14T22:13:20.000001");
  EXPECT_EQ(numpy_datetime_text(951782400000000000, "ns"), "2000-02-29T00:00:00.000000000");
  EXPECT_EQ(numpy_datetime_text(INT64_MIN, "ms"), "NaT");
  EXPECT_THROW(numpy_datetime_text(0, "D"), UnsupportedError);
  EXPECT_EQ(item_text(Json()), std::nullopt);
  EXPECT_EQ(item_text(Json("a,b")), "a,b");
  EXPECT_EQ(item_text(Json(true)), "True");
  EXPECT_EQ(item_text(Json(2.0)), "2.0");
  EXPECT_EQ(item_text(Json::parse(R"({"__bytes__":"AAE="})")), "b'\\x00\\x01'");
  EXPECT_EQ(item_text(Json::parse(R"({"__float__":"-inf"})")), "-inf");
  EXPECT_EQ(item_text(Json::parse(R"([1,2.5,"x",null,{"__float__":"nan"}])")), R"([1,2.5,"x",null,NaN])");
  EXPECT_EQ(item_text(Json::parse(R"({"x":1.0,"é":"\"q\""})")), R"({"x":1.0,"é":"\"q\""})");
}

TEST(TableColumns, FixedWidthScalarsAndCells) {
  TempDir dir;
  EXPECT_EQ(texts(*make_fixed_reader(nd_column(dir, "<i2", 2, {3}, raw_of<int16_t>({-5, 0, 32767})), {}), 0, 3),
            (std::vector<std::string>{"-5", "0", "32767"}));
  EXPECT_EQ(texts(*make_fixed_reader(nd_column(dir, "<f4", 4, {2}, raw_of<float>({0.1f, 2.0f})), {}), 0, 2),
            (std::vector<std::string>{"0.10000000149011612", "2.0"}));
  EXPECT_EQ(texts(*make_fixed_reader(nd_column(dir, "<c16", 16, {3}, raw_of<double>({1, -0.5, 0, 2, -0.0, 0})), {}),
                  0, 3),
            (std::vector<std::string>{"(1-0.5j)", "2j", "(-0+0j)"}));
  EXPECT_EQ(texts(*make_fixed_reader(nd_column(dir, "|b1", 1, {2}, Bytes{1, 0}), {}), 0, 2),
            (std::vector<std::string>{"True", "False"}));
  ValueStyle boolean;
  boolean.boolean = true;  // a sentinel-nullable bool, stored as uint8 with 255 for null
  EXPECT_EQ(texts(*make_fixed_reader(nd_column(dir, "|u1", 1, {3}, Bytes{1, 0, 255}), boolean), 0, 3),
            (std::vector<std::string>{"True", "False", "255"}));
  ValueStyle ms;
  ms.timestamp_unit = "ms";
  EXPECT_EQ(texts(*make_fixed_reader(nd_column(dir, "<i8", 8, {1}, raw_of<int64_t>({1500})), ms), 0, 1),
            (std::vector<std::string>{"1970-01-01T00:00:01.500"}));
  EXPECT_EQ(texts(*make_fixed_reader(nd_column(dir, "<U3", 12, {2}, raw_of<uint32_t>({'a', 0xe9, 0, 'x', 'y', 'z'})), {}),
                  0, 2),
            (std::vector<std::string>{"a\xc3\xa9", "xyz"}));
  EXPECT_EQ(texts(*make_fixed_reader(nd_column(dir, "|S3", 3, {1}, text_bytes("a\0\0")), {}), 0, 1),
            (std::vector<std::string>{"b'a'"}));
  // An ndarray column: each row is its (2, 2) cell as nested JSON arrays.
  EXPECT_EQ(texts(*make_fixed_reader(nd_column(dir, "<f8", 8, {1, 2, 2}, raw_of<double>({1, 2.5, NAN, -1})), {}), 0, 1),
            (std::vector<std::string>{"[[1.0,2.5],[NaN,-1.0]]"}));
  EXPECT_THROW(make_fixed_reader(nd_column(dir, "<i4", 2, {1}, Bytes(2)), {}), FormatError);  // dtype vs typesize
  EXPECT_THROW(make_fixed_reader(nd_column(dir, "|V4", 4, {1}, Bytes(4)), {}), UnsupportedError);
  auto column = make_fixed_reader(nd_column(dir, "<i8", 8, {2}, raw_of<int64_t>({1, 2})), {});
  EXPECT_NE(error_of([&] { texts(*column, 1, 5); }).find("past its 2"), std::string::npos);
}

TEST(TableColumns, Utf8OffsetsAndBytes) {
  TempDir dir;
  const std::string blob = "h\xc3\xa9,\"x\"\nyes";
  auto reader = [&](Bytes offsets, const std::string& bytes) {
    const int64_t n = int64_t(offsets.size() / 8);
    return make_utf8_reader(nd_column(dir, "<i8", 8, {n}, offsets),
                            nd_column(dir, "|u1", 1, {int64_t(bytes.size())}, text_bytes(bytes)));
  };
  auto good = reader(raw_of<int64_t>({0, 8, 8, 11}), blob);
  EXPECT_EQ(good->length(), 3);
  EXPECT_EQ(texts(*good, 0, 3), (std::vector<std::string>{"h\xc3\xa9,\"x\"\n", "", "yes"}));
  EXPECT_EQ(texts(*good, 2, 1), (std::vector<std::string>{"yes"}));
  // Decreasing, past the end, negative: each a one-line error naming the row.
  auto decreasing = reader(raw_of<int64_t>({0, 8, 4, 11}), blob);
  EXPECT_NE(error_of([&] { texts(*decreasing, 0, 3); }).find("row 2 (4) is below the one before"), std::string::npos);
  auto past = reader(raw_of<int64_t>({0, 8, 1000000000000, 11}), blob);
  EXPECT_NE(error_of([&] { texts(*past, 0, 3); }).find("outside the 11 bytes"), std::string::npos);
  auto negative = reader(raw_of<int64_t>({-4, 0}), blob);
  EXPECT_NE(error_of([&] { texts(*negative, 0, 1); }).find("outside"), std::string::npos);
  auto not_utf8 = reader(raw_of<int64_t>({0, 2}), "\xc3(");
  EXPECT_NE(error_of([&] { texts(*not_utf8, 0, 1); }).find("not UTF-8"), std::string::npos);
  // Wrong dtypes.
  EXPECT_THROW(make_utf8_reader(nd_column(dir, "<i4", 4, {2}, Bytes(8)), nd_column(dir, "|u1", 1, {1}, Bytes(1))),
               FormatError);
  EXPECT_THROW(make_utf8_reader(nd_column(dir, "<i8", 8, {2}, Bytes(16)), nd_column(dir, "<i2", 2, {1}, Bytes(2))),
               FormatError);
}

TEST(TableColumns, MsgpackItemsOfBatchArrays) {
  TempDir dir;
  auto items = batch_column(dir, {mp(R"(["a",null,{"__bytes__":"/w=="}])"), mp(R"([[1,2],{"x":1}])")},
                            R"({"batch_lengths":[3,2]})");
  auto reader = make_items_reader(std::move(items));
  EXPECT_EQ(reader->length(), 5);
  EXPECT_EQ(texts(*reader, 0, 5), (std::vector<std::string>{"a", "<null>", "b'\\xff'", "[1,2]", "{\"x\":1}"}));
  EXPECT_EQ(texts(*reader, 3, 1), (std::vector<std::string>{"[1,2]"}));
  // batch_lengths missing, of the wrong count, or disagreeing with a chunk.
  EXPECT_THROW(batch_column(dir, {mp("[1]")}, nullptr), FormatError);
  EXPECT_THROW(batch_column(dir, {mp("[1]")}, R"({"batch_lengths":[1,1]})"), FormatError);
  EXPECT_THROW(batch_column(dir, {mp("[1]")}, R"({"batch_lengths":[-1]})"), FormatError);
  auto lying = make_items_reader(batch_column(dir, {mp("[1,2]")}, R"({"batch_lengths":[1000000000000000]})"));
  EXPECT_NE(error_of([&] { texts(*lying, 0, 1); }).find("holds 2 items, its batch length says"), std::string::npos);
  // A truncated msgpack block.
  Bytes truncated = mp(R"(["abcdef","ghi"])");
  truncated.resize(truncated.size() - 3);
  auto cut = make_items_reader(batch_column(dir, {truncated}, R"({"batch_lengths":[2]})"));
  EXPECT_NE(error_of([&] { texts(*cut, 0, 1); }).find("not one msgpack value"), std::string::npos);
  EXPECT_NE(error_of([&] { texts(*reader, 4, 2); }).find("past its 5"), std::string::npos);
}

TEST(TableColumns, DictionaryCodesAndValues) {
  TempDir dir;
  auto reader = make_dictionary_reader(nd_column(dir, "<i4", 4, {4}, raw_of<int32_t>({1, -1, 0, 1})),
                                       batch_column(dir, {mp(R"(["red","gré,en"])")}, R"({"batch_lengths":[2]})"), -1);
  EXPECT_EQ(texts(*reader, 0, 4), (std::vector<std::string>{"gré,en", "<null>", "red", "gré,en"}));
  auto bad = make_dictionary_reader(nd_column(dir, "<i4", 4, {1}, raw_of<int32_t>({7})),
                                    batch_column(dir, {mp(R"(["red"])")}, R"({"batch_lengths":[1]})"), -1);
  EXPECT_NE(error_of([&] { texts(*bad, 0, 1); }).find("code 7, outside the 1 dictionary values"), std::string::npos);
  EXPECT_THROW(make_dictionary_reader(nd_column(dir, "<f8", 8, {1}, Bytes(8)),
                                      batch_column(dir, {mp("[1]")}, R"({"batch_lengths":[1]})"), -1),
               FormatError);
}

TEST(TableCsv, ColumnsMasksSentinelsNestedNamesAndDeletedRows) {
  TempDir dir;
  const std::string schema = R"({"version":3,"columns":[{"name":"a.b","kind":"int32"},)"
                             R"({"name":"s","kind":"utf8","nullable":true,"null_storage":"mask"},)"
                             R"({"name":"n","kind":"int16","nullable":true,"null_value":-9},)"
                             R"({"name":"f","kind":"float64","nullable":true,"null_value":NaN}]})";
  auto root = table_store(dir, schema, Bytes{1, 0, 1, 1}, [](const std::filesystem::path& cols) {
    write_nd(cols / "a" / "b.b2nd", "<i4", 4, {4}, raw_of<int32_t>({10, 11, 12, 13}));
    write_nd(cols / "s.b2nd", "<i8", 8, {5}, raw_of<int64_t>({0, 3, 3, 5, 5}));
    write_nd(cols / "s.utf8.b2nd", "|u1", 1, {5}, text_bytes("a,bxy"));
    write_nd(cols / "s.notnull.b2nd", "|b1", 1, {4}, Bytes{1, 1, 0, 1});
    write_nd(cols / "n.b2nd", "<i2", 2, {4}, raw_of<int16_t>({-9, 1, 2, 3}));
    write_nd(cols / "f.b2nd", "<f8", 8, {4}, raw_of<double>({1.5, 2, NAN, 0.25}));
  });
  auto store = Store::open(root);
  TableCsv table(*store, "");
  EXPECT_EQ(whole_csv(table), "a.b,s,n,f\r\n10,\"a,b\",,1.5\r\n12,,2,\r\n13,\"\",3,0.25\r\n");
  EXPECT_NE(table.schema_json().find("NaN"), std::string::npos);  // shown as python-blosc2 stored it
}

TEST(TableCsv, HostileTablesAreOneLineErrors) {
  TempDir dir;
  const std::string schema = R"({"columns":[{"name":"x","kind":"int32","nullable":true}]})";
  auto expect_error = [&](const std::function<void(const std::filesystem::path&)>& columns, Bytes valid,
                          const std::string& what) {
    auto store = Store::open(table_store(dir, schema, valid, columns));
    try {
      TableCsv table(*store, "");
      FAIL() << "no error, wanted " << what;
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  };
  // A mask shorter than the column, a column shorter than _valid_rows, a mask of the wrong dtype.
  expect_error(
      [](const std::filesystem::path& cols) {
        write_nd(cols / "x.b2nd", "<i4", 4, {3}, raw_of<int32_t>({1, 2, 3}));
        write_nd(cols / "x.notnull.b2nd", "|b1", 1, {2}, Bytes{1, 1});
      },
      Bytes{1, 1, 1}, "the null mask of x is not a boolean per row");
  expect_error(
      [](const std::filesystem::path& cols) {
        write_nd(cols / "x.b2nd", "<i4", 4, {3}, raw_of<int32_t>({1, 2, 3}));
        write_nd(cols / "x.notnull.b2nd", "<i4", 4, {3}, raw_of<int32_t>({1, 1, 1}));
      },
      Bytes{1, 1, 1}, "the null mask of x is not a boolean per row");
  expect_error([](const std::filesystem::path& cols) { write_nd(cols / "x.b2nd", "<i4", 4, {2}, Bytes(8)); },
               Bytes{1, 1, 1}, "column x is shorter than _valid_rows");
  expect_error([](const std::filesystem::path&) {}, Bytes{1}, "table column /_cols/x is missing");
}

}  // namespace
}  // namespace blosc2fs
