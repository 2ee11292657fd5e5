// What the files of a collection share (collection_tree.cc, collection_description.cc, listed_place.cc).
#pragma once

#include <string>

namespace blosc2fs::collection_tree_detail {

inline std::string join(const std::string& dir, const std::string& name) {
  return dir.empty() ? name : dir + "/" + name;
}

// Every directory of the place is a Zarr group (docs/zarr.md).
inline const std::string kZarrGroupName = "zarr.json";

}  // namespace blosc2fs::collection_tree_detail
