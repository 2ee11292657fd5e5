// The column readers behind table.csv: each storage form python-blosc2 4.14.1
// gives a CTable column, read a block of rows at a time as CSV field texts
// (unquoted; nullopt for a null). See docs/stores.md, Tables, for the text of
// each kind of value.
//
//   fixed     a 1-d N-d array (ints, floats, complex, bool, `<U`, `|S`,
//             timestamps as int64), or an (n, *item_shape) array (ndarray
//             columns, each row one JSON array text);
//   utf8      int64 offsets (n + 1) at `_cols/<name>`, UTF-8 bytes at
//             `_cols/<name>.utf8`;
//   items     msgpack items of a BatchArray (vlstring, vlbytes, object, struct,
//             list with the batch backend) or an ObjectArray (list, vl backend);
//   dictionary integer codes at `_cols/<name>`, values (items) at
//             `_cols/<name>_dict`.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "b2nd.h"
#include "frame.h"
#include "kind.h"
#include "msgpack.h"

namespace blosc2fs {

using CsvCells = std::vector<std::optional<std::string>>;

class ColumnReader {
 public:
  virtual ~ColumnReader() = default;
  // How many rows the column holds.
  virtual int64_t length() const = 0;
  // The texts of rows [first, first + count) into cells[0, count).
  virtual void read(int64_t first, int64_t count, CsvCells& cells) const = 0;
};

// A 1-d (or (n, ...)) typed N-d array, its chunks decoded once as reading moves on.
class NdColumn {
 public:
  NdColumn(std::shared_ptr<const Frame> frame, const std::string& where);
  int64_t rows() const { return rows_; }
  int64_t row_items() const { return row_items_; }  // items per row (product of item_shape)
  // The shape of one row: empty for a 1-d array, else the ndarray column's item_shape.
  const std::vector<int64_t>& item_shape() const { return item_shape_; }
  int32_t itemsize() const { return itemsize_; }
  const std::string& dtype() const { return dtype_; }
  const std::string& where() const { return where_; }
  // The bytes of rows [first, first + count).
  Bytes rows_bytes(int64_t first, int64_t count) const;
  // The bytes of items [first, first + count) of a 1-d array.
  Bytes item_bytes(int64_t first, int64_t count) const;

 private:
  std::shared_ptr<const Frame> frame_;
  std::unique_ptr<NdLayout> layout_;
  std::string where_, dtype_;
  std::vector<int64_t> item_shape_;
  int64_t rows_ = 0, row_items_ = 1;
  int32_t itemsize_ = 0;
  mutable std::map<int64_t, Bytes> chunks_;
};

// The items of a BatchArray / ObjectArray leaf, by item number; a few decoded
// chunks are kept.
class ItemsColumn {
 public:
  ItemsColumn(std::shared_ptr<const Frame> frame, const std::string& where);
  int64_t length() const { return total_; }
  const Json& item(int64_t i) const;

 private:
  std::shared_ptr<const Frame> frame_;
  std::string where_;
  ItemsLayout layout_ = ItemsLayout::none;
  std::vector<int64_t> starts_;  // first item of each chunk, then the total
  int64_t total_ = 0;
  mutable std::map<int64_t, std::vector<Json>> cache_;
};

// How a column's values read as text.
struct ValueStyle {
  bool boolean = false;            // a uint8 column of kind bool (sentinel 255): True/False
  std::optional<std::string> timestamp_unit;  // int64 epoch offsets: s, ms, us, ns
};

std::unique_ptr<ColumnReader> make_fixed_reader(std::unique_ptr<NdColumn> values, ValueStyle style);
std::unique_ptr<ColumnReader> make_utf8_reader(std::unique_ptr<NdColumn> offsets, std::unique_ptr<NdColumn> bytes);
std::unique_ptr<ColumnReader> make_items_reader(std::unique_ptr<ItemsColumn> items);
std::unique_ptr<ColumnReader> make_dictionary_reader(std::unique_ptr<NdColumn> codes,
                                                     std::unique_ptr<ItemsColumn> values, int64_t null_code);

// Text forms shared by the readers (docs/stores.md, Tables).
std::string python_float_repr(double v, bool single);
std::string python_bytes_repr(ByteSpan bytes);
std::string numpy_datetime_text(int64_t value, const std::string& unit);
// A decoded msgpack item: null → nullopt; str as is; bin as python_bytes_repr;
// numbers and booleans as Python prints them; lists and maps as compact JSON.
std::optional<std::string> item_text(const Json& item);
// Compact JSON text, floats as Python's repr, non-finite floats NaN/Infinity.
void append_json_text(const Json& value, std::string& out);

}  // namespace blosc2fs
