// The frame decoded as one JSON document: `blosc2fs --info` and frame.json.
#pragma once

#include <string>

#include "frame.h"
#include "kind.h"
#include "msgpack.h"

namespace blosc2fs {

// `kind`: what detect_frame_kind(frame) says, when the caller has it already.
Json frame_to_json(const Frame& frame, const FrameKind* kind = nullptr);
// Pretty-printed with 2-space indent and a trailing newline.
std::string frame_json_text(const Frame& frame, const FrameKind* kind = nullptr);
// index.tsv: header row, then one row per chunk. A proxy cache's index.tsv has
// a last column "fetched": yes, no, or partly (some of its blocks).
std::string index_tsv_text(const Frame& frame, const ProxyState* proxy = nullptr);
std::string index_tsv_header(const ProxyState* proxy = nullptr);
// The rows of chunks [first, first + count) that exist in the frame.
std::string index_tsv_rows(const Frame& frame, int64_t first, int64_t count, const ProxyState* proxy = nullptr);

}  // namespace blosc2fs
