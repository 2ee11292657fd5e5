// Which metalayer makes a frame an N-d array, and its description: one place
// for frame.json, array.npy and the tests.
#pragma once

#include <optional>

#include "b2nd.h"
#include "frame.h"

namespace blosc2fs {

// The metalayer describing the frame as an N-d array: `b2nd`, else the legacy
// `caterva`; nullptr when there is none.
const Metalayer* frame_nd_metalayer(const Frame& frame);

// That metalayer decoded. A caterva metalayer carries no dtype: python-caterva
// (2020) kept it in a `type` metalayer, {"dtype": "<f8"}, which then supplies
// it (python-blosc2.md §1.1). Throws FormatError when the metalayer does not decode.
NdMeta frame_nd_meta(const Frame& frame, const Metalayer& nd);

}  // namespace blosc2fs
