// How a Volume is opened: writable or not, its cache, its commits' batches,
// where its frame comes from when it is not a file of its own.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chunk_cache.h"
#include "frame_editor.h"
#include "frame_files.h"
#include "inodes.h"
#include "tree_access.h"

namespace blosc2fs {

struct VolumeOptions {
  bool writable = false;
  // The tree shows the frame's owner, group and permissions (tree_access.h), but for these.
  AccessOverrides access;
  uint64_t cache_budget = 64 << 20;
  // Where the chunk cache's buffers come back for reuse: shared by the leaves
  // of a store (each with a small share of the budget, none of which could
  // keep a chunk's buffer alone); null: the Volume's own.
  std::shared_ptr<BufferPool> buffer_pool;
  // Size of the chunks data appends make in a frame without a fixed chunksize
  // (a new empty frame: -o create's chunksize=).
  int64_t preferred_chunksize = 1 << 20;
  // A new array's chunk and block shapes (-o chunkshape=, blockshape=); absent:
  // python-blosc2's choice (b2nd_partition.h).
  std::optional<std::vector<int64_t>> new_array_chunkshape, new_array_blockshape;
  EditOptions edit;
  // A long write to data or chunks/ commits in batches so that memory stays
  // bounded: every `batch_chunks` chunks once they hold `batch_min_bytes`
  // (tiny chunks would otherwise rewrite the index every few kilobytes), and
  // always at `batch_bytes` or half the cache budget, whichever is less.
  size_t batch_chunks = 64;
  uint64_t batch_min_bytes = uint64_t(16) << 20;
  uint64_t batch_bytes = uint64_t(256) << 20;
  // How often, at most, to look for changes made by other programs.
  std::chrono::milliseconds refresh_interval{100};
  // Where the frame comes from when it is not a file of its own (a zip member,
  // a frame embedded in a store): the mount is then read-only and unchanging.
  std::function<std::shared_ptr<const Frame>()> frame_source;
  // A lock sidecar held exclusively around every commit and compaction besides
  // the frame's own: a python-blosc2 .b2d store's (its embed.b2e's), which
  // python-blosc2 holds around every change of the store.
  std::filesystem::path store_lock;
  // Fields frame.json shows instead of (or besides) the frame's own: an embedded
  // store leaf says where its bytes lie rather than naming its in-memory copy.
  Json frame_json_fields = Json::object();
  // The owner, group and modes shown when no local file has them (remote data:
  // the mounting user's, read-only).
  std::optional<FrameAccess> fixed_access;
  // Fields asked anew at each open of frame.json (a remote mount's source and counters).
  std::function<Json()> live_json_fields;
  // Fields .blosc2fs-cache shows after the cache's own, asked at each read
  // (the FUSE layer's: "io_uring=1" when the kernel's requests come over io_uring).
  std::function<std::string()> more_stats;
  // What an earlier Volume of this frame numbered and gave the kernel (a store
  // leaf opened again).
  std::optional<InodeMemory> inodes;
};

}  // namespace blosc2fs
