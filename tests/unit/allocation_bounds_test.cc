// What a hostile frame's claims may make the views allocate: never more than
// the frame's checked sizes allow. Every operator new of this binary is
// measured (this file is a test binary of its own), so a view that sizes a
// buffer from a claim it did not check shows here as a large allocation,
// before it could become the fuzzer's out-of-memory.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>

#include "error.h"
#include "fixtures.h"
#include "frame.h"
#include "frame_json.h"
#include "kind.h"

namespace {
std::atomic<size_t> largest_allocation{0};

// Out of line, so that the compiler pairs operator new with operator delete
// rather than with the malloc and free inside them.
[[gnu::noinline]] void* measured_malloc(size_t size) {
  size_t seen = largest_allocation.load(std::memory_order_relaxed);
  while (size > seen && !largest_allocation.compare_exchange_weak(seen, size, std::memory_order_relaxed)) {
  }
  return std::malloc(size ? size : 1);
}
[[gnu::noinline]] void measured_free(void* p) { std::free(p); }
}  // namespace

void* operator new(size_t size) {
  if (void* p = measured_malloc(size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { measured_free(p); }
void operator delete(void* p, size_t) noexcept { measured_free(p); }


namespace blosc2fs {
namespace {

// Runs `view` and returns the largest single allocation it made.
template <class View>
size_t largest_allocation_of(View&& view) {
  largest_allocation = 0;
  try {
    view();
  } catch (const FormatError&) {
  } catch (const IoError&) {
  }
  return largest_allocation.load();
}

// The fuzzer's items-oom input (1,446 bytes, tests/data/fuzz-regressions/
// frame_open_fuzz/): a frame of 4 chunks of 342 bytes whose stored chunk's own
// header claims about 2 GB. items.jsonl decoded that chunk with a buffer of the
// claimed size; the frame's chunksize now sizes it, as read_chunk always did.
TEST(AllocationBounds, ItemsOfAChunkClaimingGigabytesAllocateWhatTheFrameAllows) {
  auto frame = Frame::open(testing::hostile_frame_path("fuzz-regressions/frame_open_fuzz/items-oom.b2frame"));
  ASSERT_GT(frame->nchunks(), 0);
  const size_t bound = size_t(1) << 20;  // the frame claims 1,368 bytes in all
  for (ItemsLayout layout : {ItemsLayout::one_per_chunk, ItemsLayout::block_arrays}) {
    for (int64_t n = 0; n < frame->nchunks(); ++n) {
      EXPECT_LE(largest_allocation_of([&] { (void)items_jsonl_rows(*frame, layout, n, 1); }), bound)
          << "items of chunk " << n;
      EXPECT_LE(largest_allocation_of([&] { (void)chunk_items(*frame, layout, n); }), bound) << "chunk " << n;
    }
  }
  for (int64_t n = 0; n < frame->nchunks(); ++n)
    EXPECT_LE(largest_allocation_of([&] { (void)frame->read_chunk(n); }), bound) << "chunk " << n;
  EXPECT_LE(largest_allocation_of([&] { (void)frame_json_text(*frame); }), bound);
  EXPECT_LE(largest_allocation_of([&] { (void)index_tsv_rows(*frame, 0, 64); }), bound);
}

// A chunk whose header disagrees with the frame is refused by name, whichever
// view decodes it.
TEST(AllocationBounds, AChunkLargerThanTheFrameSaysIsRefusedByTheItemsView) {
  auto frame = Frame::open(testing::hostile_frame_path("fuzz-regressions/frame_open_fuzz/items-oom.b2frame"));
  bool refused = false;
  for (int64_t n = 0; n < frame->nchunks(); ++n) {
    const Bytes stored = frame->read_raw_chunk(n);
    int32_t claimed = 0;
    try {
      claimed = ChunkView(stored, frame->decode_rules()).nbytes();
    } catch (const FormatError&) {
      continue;  // not even a chunk: refused before any size is believed
    }
    if (claimed == frame->chunk_nbytes(n)) continue;
    try {
      (void)chunk_items(*frame, ItemsLayout::one_per_chunk, n);
      ADD_FAILURE() << "chunk " << n << " claims " << claimed << " bytes and was decoded";
    } catch (const FormatError& e) {
      refused = true;
      EXPECT_NE(std::string(e.what()).find("where the frame's"), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(refused) << "no chunk of the input claims another size: the input is not the one the fuzzer found";
}

}  // namespace
}  // namespace blosc2fs
