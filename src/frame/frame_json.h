// The frame decoded as one JSON document: `blosc2fs --info` and frame.json.
#pragma once

#include <string>

#include "frame.h"
#include "msgpack.h"

namespace blosc2fs {

Json frame_to_json(const Frame& frame);
// Pretty-printed with 2-space indent and a trailing newline.
std::string frame_json_text(const Frame& frame);
// index.tsv: header row, then one row per chunk.
std::string index_tsv_text(const Frame& frame);
std::string index_tsv_header();
// The rows of chunks [first, first + count) that exist in the frame.
std::string index_tsv_rows(const Frame& frame, int64_t first, int64_t count);

}  // namespace blosc2fs
