// A Caterva2 server's root or directory mounted as a tree: its directories are
// directories, each .b2nd/.b2frame dataset a directory holding the frame's
// whole tree (a Volume over the dataset's api/fetch bytes), each .b2z a store
// tree (a StoreTree over its bytes), and server.json at the root describes
// the server, the listing (also the files that are not Blosc2) and the
// mount's counters. Datasets open on first use; at most `max_open` frames stay
// open, the least recently used closed first (their inode numbers kept, as a
// StoreTree keeps its leaves'). The listing is trusted for list_ttl, then
// fetched again by the idle refresh: new paths appear, vanished ones go.
//
// Inode numbers: 1 the root, 2 server.json, kDirBase + d directory d,
// kDatasetBase + s the directory of dataset s, and from kMappedBase on, the
// numbers of the datasets' own trees, handed out as the kernel first sees
// them and mapped to (dataset, the dataset tree's own number).
#pragma once

#include <chrono>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "caterva2.h"
#include "frame_json.h"
#include "options.h"
#include "remote_origin.h"
#include "store_tree.h"
#include "volume.h"

namespace blosc2fs {

class Caterva2Tree : public MountTree {
 public:
  static constexpr uint64_t kServerJsonIno = 2;
  static constexpr uint64_t kDirBase = 16;
  static constexpr uint64_t kDatasetBase = uint64_t(1) << 32;
  static constexpr uint64_t kMappedBase = uint64_t(1) << 40;
  static constexpr size_t kMaxDatasets = size_t(1) << 31;

  struct Settings {
    std::chrono::seconds list_ttl{60};
    size_t max_open = 64;
    VolumeOptions leaf_options;         // each dataset's Volume (cache budget, access)
    std::function<Json()> counters;     // the mount's transport counters
  };

  // `listing`: the first api/list answer (the mount refuses to start without it).
  Caterva2Tree(std::shared_ptr<Caterva2Session> session, std::vector<std::string> listing, Settings settings);
  ~Caterva2Tree() override;

  void shutdown();
  // server.json as it would read now.
  std::string server_json();

  bool writable() const override { return false; }
  int64_t nchunks() const override;
  bool underlying_statfs(struct statvfs&) const override { return false; }
  std::optional<Node> node(uint64_t ino) const override;
  std::optional<uint64_t> lookup(uint64_t parent, std::string_view name) override;
  std::optional<DirEntry> entry(uint64_t dir, int64_t cookie) override;
  struct stat attributes(uint64_t ino) override;
  std::string path_of(uint64_t ino) const override;
  void remember(uint64_t ino) override;
  void forget(uint64_t ino, uint64_t count) override;
  std::unique_ptr<OpenFile> open(uint64_t ino, int flags, bool& keep_cache, bool& direct_io,
                                 KernelNotes& notes) override;
  bool cache_still_valid(uint64_t ino) override;
  void read_pieces(uint64_t ino, int64_t offset, size_t size, ReadPieces& out) override;
  void write(OpenFile& file, int64_t offset, ByteSpan data, KernelNotes& notes) override;
  void flush(OpenFile& file, KernelNotes& notes, bool fsync = false) override;
  void release(std::unique_ptr<OpenFile> file, KernelNotes& notes) override;
  struct stat setattr(uint64_t ino, OpenFile* file, std::optional<int64_t> size, KernelNotes& notes) override;
  std::pair<uint64_t, std::unique_ptr<OpenFile>> create(uint64_t parent, std::string_view name, int flags,
                                                        KernelNotes& notes) override;
  void unlink(uint64_t parent, std::string_view name, KernelNotes& notes) override;
  void rename(uint64_t parent, std::string_view name, uint64_t new_parent, std::string_view new_name, unsigned flags,
              KernelNotes& notes) override;
  void maybe_refresh(KernelNotes& notes) override;

 private:
  struct Child {
    std::string name;
    bool dataset = false;
    size_t index = 0;  // a directory's or a dataset's
  };
  struct Dir {
    std::string path;              // "" the root, "a/b"
    std::vector<Child> children;   // by name
    bool listed = true;
  };
  struct Dataset {
    std::string path;  // below the mounted directory
    Caterva2Kind kind = Caterva2Kind::other;
    bool listed = true;
    std::mutex opening;                    // one open at a time
    std::shared_ptr<MountTree> tree;       // a Volume or a StoreTree; null while closed
    Volume* volume = nullptr;              // tree as a Volume, when it is one
    std::list<size_t>::iterator lru;       // valid while a Volume is open
    uint64_t open_files = 0;
    std::unique_ptr<InodeMemory> inodes;   // a closed Volume's numbers
    std::string failure;                   // why it cannot be opened (logged once)
  };
  // (dataset, its tree's own number) of a number of ours, and back.
  struct Mapped {
    size_t slot;
    uint64_t local;
  };
  class ChildCall;

  // The listing made into directories; vanished paths kept, marked unlisted.
  // Under mutex_. Adds to `notes` what the kernel must forget.
  void apply_listing(const std::vector<std::string>& listing, KernelNotes* notes);
  size_t dir_for(const std::string& path);
  const Dir* dir_of(uint64_t ino) const;  // under mutex_
  uint64_t dir_ino(size_t d) const { return d == 0 ? kRootIno : kDirBase + d; }
  static uint64_t dataset_ino(size_t slot) { return kDatasetBase + slot; }
  // The dataset and its own number of a number of ours; nullopt for our own nodes.
  std::optional<Mapped> mapped(uint64_t ino) const;
  // The same for an inode inside a dataset's own tree (not its root); nullopt otherwise.
  std::optional<Mapped> mapped_below_dataset(uint64_t ino) const;
  uint64_t to_mount(size_t slot, uint64_t local);
  void translate(size_t slot, KernelNotes& notes);
  Dataset& dataset(size_t slot) const;
  // The dataset's tree, opened when closed. Throws FsError (EIO when it cannot be read).
  std::shared_ptr<MountTree> child(size_t slot);
  std::shared_ptr<MountTree> child_if_open(size_t slot) const;
  std::shared_ptr<MountTree> open_dataset(Dataset& d);
  struct stat directory_attributes(uint64_t ino) const;

  const std::shared_ptr<Caterva2Session> session_;
  Settings settings_;
  struct timespec mount_time_ {};

  mutable std::mutex mutex_;  // everything below
  std::vector<Dir> dirs_;
  std::map<std::string, size_t> dir_index_;
  std::vector<std::unique_ptr<Dataset>> datasets_;
  std::map<std::string, size_t> dataset_index_;
  std::vector<std::string> listing_;  // every listed path, the files that are not Blosc2 too
  std::chrono::steady_clock::time_point listed_at_;
  std::string listed_at_text_;
  uint64_t refreshes_ = 0;
  std::list<size_t> lru_;  // open Volumes, most recently used first
  std::unordered_map<uint64_t, Mapped> mapped_;
  std::map<std::pair<size_t, uint64_t>, uint64_t> mount_numbers_;
  uint64_t next_mapped_ = kMappedBase;

  std::mutex json_mutex_;
  std::map<std::string, Json> infos_;  // api/info answers of this listing
  std::shared_ptr<const std::string> server_json_;
};

// A caterva2+http(s):// URL's mount: a directory's tree, or one dataset.
struct Caterva2Mount {
  std::shared_ptr<Caterva2Session> session;
  std::unique_ptr<Caterva2Tree> tree;  // the URL names a root or directory
  RemoteOrigin dataset;                 // the URL names one dataset (tree is null)
};
// Throws RemoteOpenError (a usage error, a refused login or root, an unreachable server).
Caterva2Mount open_caterva2(const Options& options, uint64_t cache_budget, size_t max_open);

}  // namespace blosc2fs
