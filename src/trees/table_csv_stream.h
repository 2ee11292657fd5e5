// A CTable's table.csv, made a block of rows at a time as it is read in order;
// a read elsewhere starts again from the top, holding at most about 1 MiB.
// Its own lock: readers of one table wait for each other, not for the store.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "read_pieces.h"
#include "table_csv.h"
#include "thread_safety.h"

namespace blosc2fs {

class TableCsvStream {
 public:
  explicit TableCsvStream(std::unique_ptr<TableCsv> csv) : csv_(std::move(csv)) {}

  const std::string& schema_json() const { return csv_->schema_json(); }
  void read(int64_t offset, size_t size, ReadPieces& out) EXCLUDES(mutex_);

 private:
  const std::unique_ptr<TableCsv> csv_;
  Mutex mutex_;
  int64_t base_ GUARDED_BY(mutex_) = 0;   // the offset of `text_` in table.csv
  std::string text_ GUARDED_BY(mutex_);   // made and not yet read past
  int64_t row_ GUARDED_BY(mutex_) = 0;    // the next physical row to make
  bool started_ GUARDED_BY(mutex_) = false;
};

}  // namespace blosc2fs
