// The contents of the files a mounted frame shows: their exact sizes and their
// bytes. Decompressed chunks come through the chunk cache; the generated texts
// (frame.json, index.tsv) are made once, on first use, and kept.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "b2nd.h"
#include "chunk_cache.h"
#include "frame.h"
#include "node.h"

namespace blosc2fs {

// Feeds the chunk cache from a frame: stored chunks, decoded with ChunkView.
class FrameChunkLoader : public ChunkLoader {
 public:
  explicit FrameChunkLoader(const Frame& frame) : frame_(frame) {}
  Bytes load(int64_t n) override;
  std::unique_ptr<ChunkDecoder> decoder(int64_t n, ByteSpan stored) override;

 private:
  const Frame& frame_;
};

// A metalayer or vlmetalayer shown as a file.
struct LayerFile {
  std::string name;
  Bytes content;                 // meta: as stored; vlmeta: decompressed
  int64_t size = 0;              // what stat reports
  std::string error;             // vlmeta content could not be decompressed: reads fail with this
  std::optional<std::string> attrs_text;  // JSON + "\n" when the content is one msgpack value
};

class FrameFiles {
 public:
  // Reads the metalayers, decompresses the vlmetalayers and sets up array.npy.
  // Layers whose names cannot be file names are left out with a warning.
  FrameFiles(std::shared_ptr<const Frame> frame, uint64_t cache_budget);
  ~FrameFiles();
  FrameFiles(const FrameFiles&) = delete;
  FrameFiles& operator=(const FrameFiles&) = delete;

  const Frame& frame() const { return *frame_; }
  ChunkCache& cache() { return cache_; }
  int64_t nchunks() const { return nchunks_; }

  const std::vector<LayerFile>& metas() const { return metas_; }
  const std::vector<LayerFile>& vlmetas() const { return vlmetas_; }
  bool has_array() const { return layout_.has_value(); }

  // Exact size of a regular file. Throws FormatError when the size itself
  // cannot be known (frame.json of a frame the JSON view cannot describe).
  int64_t size(Node node);
  // Copies file bytes [offset, offset + out.size()) into out; returns the count
  // (short only at end of file).
  size_t read(Node node, int64_t offset, MutableByteSpan out);

  const std::string& frame_json();
  const std::string& index_tsv();

 private:
  size_t read_data(int64_t offset, MutableByteSpan out);
  size_t read_array(int64_t offset, MutableByteSpan out);
  int64_t chunk_size_for_stat(int64_t n) const;
  int64_t raw_size_for_stat(int64_t n) const;
  void load_layers();
  void load_array();

  std::shared_ptr<const Frame> frame_;
  int64_t nchunks_ = 0;
  FrameChunkLoader loader_;
  ChunkCache cache_;
  std::vector<LayerFile> metas_;
  std::vector<LayerFile> vlmetas_;
  std::optional<NdLayout> layout_;
  std::string npy_header_;

  std::mutex text_mutex_;
  std::optional<std::string> frame_json_;
  std::optional<std::string> index_tsv_;
};

// Whether `name` can be a directory entry: not empty, not "." or "..", no '/' or NUL.
bool usable_file_name(const std::string& name);

}  // namespace blosc2fs
