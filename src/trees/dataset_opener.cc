#include "dataset_opener.h"

#include <unistd.h>

#include <algorithm>

#include <spdlog/spdlog.h>

#include "error.h"
#include "frame.h"
#include "frame_writer.h"
#include "store_tree.h"
#include "tree_access.h"

namespace blosc2fs {

namespace fs = std::filesystem;

namespace {

// Each open leaf of a store gets an equal share of the cache budget.
uint64_t leaf_budget(uint64_t budget, size_t max_open_leaves) {
  return std::max<uint64_t>(budget / std::max<size_t>(max_open_leaves, 1), 1);
}

}  // namespace

OpenedDataset open_local_dataset(const fs::path& path, bool want_write, VolumeOptions options,
                                 size_t max_open_leaves) {
  OpenedDataset opened;
  if (std::optional<StoreFormat> format = detect_store(path)) {
    std::unique_ptr<Store> store = Store::open(path);
    opened.store = true;
    // Only a .b2d has leaves that are frame files of their own, editable in place;
    // a .b2z or .b2e is never edited in place (docs/stores.md).
    opened.unchanging = *format != StoreFormat::b2d;
    opened.writable = want_write && *format == StoreFormat::b2d;
    if (want_write && *format != StoreFormat::b2d) {
      opened.read_only_because = "a ." + std::string(store_format_name(*format)) +
                                 " store is read-only (nobody edits it in place)";
    } else if (opened.writable && ::access(path.c_str(), W_OK) != 0) {
      opened.writable = false;
      opened.read_only_because = "not writable by this user";
    }
    options.cache_budget = leaf_budget(options.cache_budget, max_open_leaves);
    opened.tree = std::make_shared<StoreTree>(std::move(store), options, max_open_leaves, opened.writable);
    return opened;
  }
  bool writable = want_write;
  if (writable) {
    const FrameLayout layout = Frame::open(path)->layout();
    if (layout != FrameLayout::current) {
      writable = false;  // docs/older-layouts.md
      opened.read_only_because = "it has the older " + std::string(frame_layout_name(layout)) +
                                 " layout, which c-blosc2 3.x cannot open: every write fails with EROFS";
    } else if (!may_write_frame(path)) {
      writable = false;
      opened.read_only_because = "not writable by this user";
    }
  }
  options.writable = writable;
  try {
    opened.tree = std::make_shared<Volume>(path, options);
  } catch (const IoError& e) {
    if (!options.writable) throw;
    spdlog::warn("{} cannot be opened for writing ({}): read-only", path.string(), e.what());
    options.writable = writable = false;
    opened.tree = std::make_shared<Volume>(path, options);
  }
  opened.writable = writable;
  return opened;
}

OpenedDataset open_remote_dataset(const StoreSource& source, const std::string& shown, VolumeOptions options,
                                  size_t max_open_leaves) {
  OpenedDataset opened;
  opened.unchanging = true;
  options.writable = false;
  DatasetContent content = DatasetContent::open_remote(source);
  if (content.store()) {
    opened.store = true;
    options.cache_budget = leaf_budget(options.cache_budget, max_open_leaves);
    opened.tree = std::make_shared<StoreTree>(content.take_store(), options, max_open_leaves, false);
    return opened;
  }
  std::shared_ptr<const Frame> frame = content.frame();
  options.frame_source = [frame] { return frame; };
  opened.tree = std::make_shared<Volume>(fs::path(shown), options);
  return opened;
}

bool is_local_store(const fs::path& path) { return detect_store(path).has_value(); }

DatasetContent DatasetContent::open_local_store(const fs::path& path) {
  DatasetContent content;
  content.store_ = Store::open(path);
  return content;
}

DatasetContent DatasetContent::open_local_frame(const fs::path& path) {
  DatasetContent content;
  content.frame_ = Frame::open(path);
  return content;
}

DatasetContent DatasetContent::open_remote(const StoreSource& source) {
  DatasetContent content;
  // A .b2e is a frame: what it holds says whether it is a store.
  if (detect_store(source)) content.store_ = Store::open(source);
  else if (source.directory) content.frame_ = Frame::open_sparse(source.directory);
  else content.frame_ = Frame::open(source.file);
  return content;
}

std::string DatasetContent::description(const Json& fields) const {
  Json j = store_ ? store_->to_json() : frame_to_json(*frame_);
  for (auto it = fields.begin(); it != fields.end(); ++it) j[it.key()] = *it;
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

void create_empty_frame(const fs::path& path, const CompressParams& cparams, int32_t chunksize, bool sparse) {
  // A frame with no chunks never runs its filters: the parameters are tried on a
  // sample first, so that a frame every write would fail with is not made.
  CompressParams trial = cparams;
  trial.detect_specials = false;
  Bytes sample(size_t(std::clamp(cparams.typesize, 1, 1 << 16)) * 256);
  for (size_t i = 0; i < sample.size(); ++i) sample[i] = uint8_t(i * 7 + i / 13);
  (void)encode_chunk(sample, trial);
  FrameParams params;
  params.cparams = cparams;
  params.chunksize = chunksize;
  params.sparse = sparse;
  FrameWriter writer(path, params);
  writer.close();
}

}  // namespace blosc2fs
