// Which thread answers a FUSE request. The thread that receives it (a ring
// thread of FUSE over io_uring, one per CPU, or a libfuse worker of the
// classic /dev/fuse loop) answers only what comes from memory: names,
// attributes and listings of a frame's tree, forgets, refusals in a frame's
// tree. Whatever may decode, fetch or commit goes to a pool and is answered
// from there, so that no request waits behind another's work: short work (an
// open, a read under 64 KiB, the names of stores and collections, which open
// datasets, and the refusals there, which ask the dataset whether it can
// change: docs/operations.md) to the
// pool of the CPU it came from, long work (larger reads, every fetch of
// remote data, writes over io_uring and commits) to the shared pool
// (request_pool.h; docs/architecture.md, "Requests"). A write through
// /dev/fuse is answered by the worker that received it, where its bytes are.
#pragma once

#include <atomic>
#include <string>

#include <fuse_lowlevel.h>

#include "options.h"
#include "request_pool.h"

namespace blosc2fs {

// FsContext::offload: how a mount's requests are dispatched.
struct Offload {
  RequestPools* pools = nullptr;  // null: every request on the thread that received it (-s)
  bool names_may_block = false;   // lookups, attributes and listings may open datasets (stores, collections)
  bool fetches = false;           // remote data: reads, and names that may block, wait on a server
  // -o io_uring=on: the first request after FUSE_INIT ends the session when
  // libfuse could not start its rings (the kernel offered them, the checks
  // before mounting passed, and still).
  IoUringMode io_uring = IoUringMode::automatic;
  fuse_session* session = nullptr;
  std::atomic<bool> transport_checked{false};
};

// lowlevel_operations(), with the requests that may take long handed to the pool.
const fuse_lowlevel_ops& offloading_operations();

// Whether this process's FUSE requests come over io_uring: known once FUSE_INIT
// is answered, false before. "io_uring=1" or "io_uring=0", for .blosc2fs-cache.
bool io_uring_in_use();
std::string io_uring_stats();

}  // namespace blosc2fs
