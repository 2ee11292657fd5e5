#include "collection_numbers.h"

#include "fs_error.h"

namespace blosc2fs {

std::optional<DatasetNumbers::Mapped> DatasetNumbers::find(uint64_t ino) const {
  if (ino >= collection_numbers::kMappedBase) {
    MutexLock lock(mutex_);
    auto it = mapped_.find(ino);
    if (it == mapped_.end()) throw FsError{ENOENT};
    return it->second;
  }
  return std::nullopt;
}

std::optional<DatasetNumbers::Mapped> DatasetNumbers::find_below_dataset(uint64_t ino) const {
  try {
    return find(ino);
  } catch (const FsError&) {
  }
  return std::nullopt;
}

uint64_t DatasetNumbers::to_mount(size_t slot, uint64_t local) {
  if (local == kRootIno) return collection_numbers::item_ino(slot);
  MutexLock lock(mutex_);
  auto [it, made] = mount_numbers_.try_emplace({slot, local}, next_mapped_);
  if (made) mapped_[next_mapped_++] = Mapped{slot, local};
  return it->second;
}

void DatasetNumbers::translate(size_t slot, KernelNotes& notes) {
  for (uint64_t& ino : notes.inodes) ino = to_mount(slot, ino);
  for (uint64_t& ino : notes.attributes) ino = to_mount(slot, ino);
  for (auto& [parent, name] : notes.entries) parent = to_mount(slot, parent);
}

}  // namespace blosc2fs
