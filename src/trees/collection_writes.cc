// CollectionTree: writes inside a dataset, passed to its tree with the
// numbers translated (the rest of the place takes none: EPERM, or EROFS).
#include "collection_tree.h"

#include "fs_error.h"

namespace blosc2fs {

namespace {

// What a change to the place's own names gets.
int refusal(bool writable) { return writable ? EPERM : EROFS; }

}  // namespace

// Turns an open file's number into its dataset tree's own for one call, and
// back (and the call's kernel notes into the mount's numbers) when it ends.
class CollectionTree::ChildCall {
 public:
  ChildCall(DatasetNumbers& numbers, size_t slot, uint64_t local, OpenFile* file, KernelNotes& notes)
      : numbers_(numbers), slot_(slot), file_(file), notes_(notes) {
    if (file_) {
      mount_ino_ = file_->ino;
      file_->ino = local;
    }
  }
  ~ChildCall() {
    if (file_) file_->ino = mount_ino_;
    numbers_.translate(slot_, notes_);
  }
  ChildCall(const ChildCall&) = delete;
  ChildCall& operator=(const ChildCall&) = delete;

 private:
  DatasetNumbers& numbers_;
  size_t slot_;
  OpenFile* file_;
  KernelNotes& notes_;
  uint64_t mount_ino_ = 0;
};

void CollectionTree::write(OpenFile& file, int64_t offset, ByteSpan data, KernelNotes& notes) {
  std::optional<Mapped> m = numbers_.find(file.ino);
  if (!m) throw FsError{refusal(settings_.writable)};
  std::shared_ptr<MountTree> tree = child(m->slot);
  ChildCall call(numbers_, m->slot, m->local, &file, notes);
  tree->write(file, offset, data, notes);
}

void CollectionTree::flush(OpenFile& file, KernelNotes& notes, bool fsync) {
  std::optional<Mapped> m = numbers_.find(file.ino);
  if (!m) return;
  std::shared_ptr<MountTree> tree = datasets_.if_open(m->slot);
  if (!tree) return;
  ChildCall call(numbers_, m->slot, m->local, &file, notes);
  tree->flush(file, notes, fsync);
}

void CollectionTree::release(std::unique_ptr<OpenFile> file, KernelNotes& notes) {
  std::optional<Mapped> m = numbers_.find_below_dataset(file->ino);
  if (!m) {
    std::optional<size_t> slot;
    try {
      slot = item_of(file->ino);
    } catch (const FsError&) {
    }
    if (!slot) return;
    MutexLock lock(mutex_);
    ListedPlace::Item& f = listed_.item(*slot);
    if (f.open_files && --f.open_files == 0 && !source_->remote()) f.bytes.reset();  // a local file: its descriptor
    return;
  }
  std::shared_ptr<MountTree> tree = datasets_.if_open(m->slot);
  if (!tree) return;
  datasets_.file_released(m->slot);
  file->ino = m->local;
  ChildCall call(numbers_, m->slot, m->local, nullptr, notes);
  tree->release(std::move(file), notes);
}

struct stat CollectionTree::setattr(uint64_t ino, OpenFile* file, std::optional<int64_t> size, KernelNotes& notes) {
  if (std::optional<Mapped> m = numbers_.find(ino)) {
    std::shared_ptr<MountTree> tree = child(m->slot);
    struct stat st;
    {
      ChildCall call(numbers_, m->slot, m->local, file, notes);
      st = tree->setattr(m->local, file, size, notes);
    }
    st.st_ino = ino;
    return st;
  }
  if (size) throw FsError{settings_.writable ? EACCES : EROFS};
  return attributes(ino);  // chmod, chown, utimens: accepted and ignored, as on a frame's mount
}

std::pair<uint64_t, std::unique_ptr<OpenFile>> CollectionTree::create(uint64_t parent, std::string_view name,
                                                                      int flags, KernelNotes& notes) {
  const std::optional<Mapped> at = inside_dataset(parent);
  if (!at) throw FsError{refusal(settings_.writable)};
  const size_t s = at->slot;
  const uint64_t local = at->local;
  std::shared_ptr<MountTree> tree = child(s);
  std::pair<uint64_t, std::unique_ptr<OpenFile>> made;
  {
    ChildCall call(numbers_, s, local, nullptr, notes);
    made = tree->create(local, name, flags, notes);
  }
  const uint64_t ino = numbers_.to_mount(s, made.first);
  made.second->ino = ino;
  datasets_.file_opened(s);
  return {ino, std::move(made.second)};
}

void CollectionTree::unlink(uint64_t parent, std::string_view name, KernelNotes& notes) {
  const std::optional<Mapped> at = inside_dataset(parent);
  if (!at) throw FsError{refusal(settings_.writable)};
  std::shared_ptr<MountTree> tree = child(at->slot);
  ChildCall call(numbers_, at->slot, at->local, nullptr, notes);
  tree->unlink(at->local, name, notes);
}

bool CollectionTree::read_only_at(uint64_t ino) {
  if (std::optional<Mapped> at = inside_dataset(ino)) return child(at->slot)->read_only_at(at->local);
  return !settings_.writable;
}

std::optional<CollectionTree::Mapped> CollectionTree::inside_dataset(uint64_t ino) const {
  if (std::optional<Mapped> m = numbers_.find(ino)) return m;
  if (std::optional<size_t> slot = item_of(ino); slot && item(*slot).is_dataset()) return Mapped{*slot, kRootIno};
  return std::nullopt;
}

void CollectionTree::rename(uint64_t parent, std::string_view name, uint64_t new_parent, std::string_view new_name,
                            unsigned flags, KernelNotes& notes) {
  const std::optional<Mapped> from = inside_dataset(parent), to = inside_dataset(new_parent);
  if (!from || !to) throw FsError{refusal(settings_.writable)};
  if (from->slot != to->slot) throw FsError{EXDEV};
  std::shared_ptr<MountTree> tree = child(from->slot);
  ChildCall call(numbers_, from->slot, from->local, nullptr, notes);
  tree->rename(from->local, name, to->local, new_name, flags, notes);
}

}  // namespace blosc2fs
