// A CTable (python-blosc2) of a store as CSV text: its live rows (`_valid_rows`)
// in order, its columns in schema order (each read by a table_columns.h
// reader), nulls (the `<col>.notnull` masks, null sentinels, null codes, msgpack
// nils) as empty fields, RFC 4180 quoting, CRLF line ends. The text is made a block of
// rows at a time from the column frames, never held whole.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "store.h"
#include "table_columns.h"

namespace blosc2fs {

class TableCsv {
 public:
  // The table whose `_meta` leaf is `<prefix>/_meta` (prefix "" for the store's
  // root). Throws FormatError, or UnsupportedError for a column it cannot
  // show (an Arrow-serialized list column, an unknown dtype).
  TableCsv(const Store& store, const std::string& prefix);
  ~TableCsv();

  // The schema as python-blosc2 stored it (JSON), pretty-printed.
  const std::string& schema_json() const { return schema_json_; }
  const std::string& header() const { return header_; }
  int64_t physical_rows() const { return physical_rows_; }
  // Appends the lines of live rows from physical row `row` on, stopping after
  // the line that makes `out` reach `want` bytes; returns the next physical row
  // (physical_rows() at the end).
  int64_t append_rows(int64_t row, size_t want, std::string& out) const;

 private:
  struct Column;
  std::vector<std::unique_ptr<Column>> columns_;
  std::unique_ptr<NdColumn> valid_;
  std::string schema_json_;
  std::string header_;
  int64_t physical_rows_ = 0;
};

// RFC 4180: quoted when it holds a comma, a quote, CR or LF, or is empty (an
// empty string is `""`, a null is nothing); quotes doubled.
std::string csv_field(std::string_view text);

}  // namespace blosc2fs
