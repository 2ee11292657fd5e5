// What the command line names -> which collection tree (src/trees/collection_tree.h):
// a caterva2+http(s):// root or directory, a local folder that is no dataset,
// an S3 prefix or a web directory index. The trees themselves know nothing of
// the command line.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>

#include "collection_tree.h"
#include "options.h"
#include "remote_origin.h"

namespace blosc2fs {

// Datasets kept open at once by default (-o max_open=).
inline constexpr size_t kDefaultMaxOpen = 64;
// How long a listing is trusted by default (-o list_ttl=): remote places, local folders.
inline constexpr unsigned kDefaultRemoteListTtl = 60;
inline constexpr unsigned kDefaultLocalListTtl = 2;

// A mount of a place of many datasets: the tree, and for remote places the
// transport's shutdown and fork hooks (in `origin`, whose url names the place).
struct CollectionMount {
  std::unique_ptr<CollectionTree> tree;  // null: a caterva2 URL naming one dataset (origin)
  RemoteOrigin origin;
};

// A caterva2+http(s):// URL: a directory's tree, or one dataset's origin.
// Throws RemoteOpenError (a usage error, a refused login or root, an unreachable server).
CollectionMount open_caterva2(const Options& options, uint64_t cache_budget);

// Whether a local directory is a place of many datasets rather than one
// (neither a sparse frame's directory nor a .b2d store).
bool is_local_collection(const std::filesystem::path& path);
// The local folder `path` as a collection; read-write unless -o ro. Throws
// IoError when it cannot be listed.
std::unique_ptr<CollectionTree> open_local_collection(const Options& options, const std::filesystem::path& path,
                                                      uint64_t cache_budget);

// An http(s):// or s3:// URL naming a place (an S3 prefix, a web directory
// index) listed one directory at a time. Throws RemoteOpenError when it
// cannot be listed.
CollectionMount open_remote_collection(const Options& options, uint64_t cache_budget);

}  // namespace blosc2fs
