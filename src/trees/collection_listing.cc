// CollectionTree: the source's listings (the top at construction, each
// directory on first need, again when its version changes; applied by
// listed_place.cc) and the refresh of open datasets.
#include "collection_tree.h"

#include <algorithm>
#include <ctime>

#include <spdlog/spdlog.h>

#include "fs_error.h"

namespace blosc2fs {

CollectionTree::CollectionTree(std::shared_ptr<CollectionSource> source, Settings settings)
    : source_(std::move(source)),
      settings_(std::move(settings)),
      listed_(source_->name(), source_->description_name()),
      datasets_(settings_.max_open, false),
      refresh_round_(settings_.list_ttl) {
  settings_.max_open = std::max<size_t>(settings_.max_open, 1);
  if (source_->remote()) settings_.writable = false;
  ::clock_gettime(CLOCK_REALTIME, &mount_time_);
  // The mount refuses to start without its top level, with the source's own
  // error as it is (its type, errno and the one line naming the place).
  std::string version = source_->version("");  // before the listing, as list_now takes it
  std::vector<CollectionEntry> top = source_->list("");
  MutexLock lock(mutex_);
  listed_.apply(0, std::move(version), std::move(top), nullptr);
}

void CollectionTree::list_now(size_t d, KernelNotes* notes, bool if_changed) {
  std::string path, was;
  {
    MutexLock lock(mutex_);
    path = listed_.dir(d).path;
    was = listed_.dir(d).version;
  }
  // Taken before the listing: a change while it is read shows at the next refresh.
  std::string version = source_->version(path);
  if (if_changed && !version.empty() && version == was) {
    MutexLock lock(mutex_);
    listed_.dir(d).listed_at = std::chrono::steady_clock::now();
    return;
  }
  std::vector<CollectionEntry> entries;
  try {
    entries = source_->list(path);
  } catch (const std::exception& e) {
    const std::string why = source_->name() + (path.empty() ? "" : "/" + path) + ": cannot be listed: " + e.what();
    MutexLock lock(mutex_);
    ListedPlace::Dir& dir = listed_.dir(d);
    if (dir.failure != why) spdlog::error("{}", why);
    dir.failure = why;
    // A directory listed before keeps its listing until the next try.
    dir.listed_at = std::chrono::steady_clock::now();
    if (!dir.fetched && d != 0) {
      const IoError* io = dynamic_cast<const IoError*>(&e);
      throw FsError{io && io->error_number() == ENOENT ? ENOENT : EIO};
    }
    return;
  }
  MutexLock lock(mutex_);
  listed_.apply(d, std::move(version), std::move(entries), notes);
}

void CollectionTree::ensure_listed(size_t d) {
  {
    MutexLock lock(mutex_);
    if (listed_.dir(d).fetched) return;
  }
  list_now(d, nullptr);
}

void CollectionTree::maybe_refresh(KernelNotes& notes) {
  // Open local datasets follow what other programs do to their files, looked
  // at as often as a Volume looks at its own (every request asks).
  if (!source_->remote()) {
    for (auto& [slot, tree] : datasets_.due_for_refresh(settings_.leaf_options.refresh_interval)) {
      KernelNotes own;
      try {
        tree->maybe_refresh(own);
      } catch (const std::exception& e) {
        spdlog::debug("{}: refresh: {}", source_->name(), e.what());
      }
      numbers_.translate(slot, own);
      notes.inodes.insert(notes.inodes.end(), own.inodes.begin(), own.inodes.end());
      notes.attributes.insert(notes.attributes.end(), own.attributes.begin(), own.attributes.end());
      notes.entries.insert(notes.entries.end(), own.entries.begin(), own.entries.end());
    }
  }
  refresh_round_.run_if_due([&] {
    std::vector<size_t> due;
    {
      MutexLock lock(mutex_);
      for (size_t d = 0; d < listed_.dir_count(); ++d)
        if (listed_.dir(d).fetched && listed_.dir(d).present) due.push_back(d);
    }
    source_->relist();
    for (size_t d : due) {
      try {
        list_now(d, &notes, true);
      } catch (const FsError&) {
      }
    }
  });
}

}  // namespace blosc2fs
