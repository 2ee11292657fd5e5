// What counts as a dataset in a place of many files (a collection's folder, an
// S3 prefix, a web index, a Caterva2 root): decided here once, by name and by
// marker, for every listing source. A remote listing costs no request per
// file, so remote places go by name; a local folder also sniffs the header of
// a file whose name says nothing.
#pragma once

#include <string_view>

#include "bytes.h"

namespace blosc2fs {

enum class DatasetKind {
  frame,            // a contiguous frame: .b2nd, .b2frame, .b2 (or a local file with a frame header)
  store,            // a python-blosc2 store in one file: .b2z (zip), .b2e (an EmbedStore frame)
  sparse_frame,     // a directory holding chunks.b2frame (+ NNNNNNNN.chunk)
  store_directory,  // a .b2d directory holding embed.b2e
  other,            // not Blosc2: a README, a CSV, an HDF5 file
};

// The files inside a directory that make it one dataset.
inline constexpr std::string_view kSparseFrameMarker = "chunks.b2frame";
inline constexpr std::string_view kStoreDirectoryMarker = "embed.b2e";

// A file's kind by its name (the last part of `path`): frame, store or other.
DatasetKind dataset_kind_of_file(std::string_view path);
// A directory's kind by the markers it holds (`holds(marker)` answers for one
// name): a sparse frame when it holds chunks.b2frame, a .b2d store when it
// holds embed.b2e and no chunks.b2frame, other otherwise.
template <class Holds>
DatasetKind dataset_kind_of_directory(Holds&& holds) {
  if (holds(kSparseFrameMarker)) return DatasetKind::sparse_frame;
  if (holds(kStoreDirectoryMarker)) return DatasetKind::store_directory;
  return DatasetKind::other;
}
// A directory's kind when its own listing is not at hand (a remote place):
// by name, `NAME.b2d` a .b2d store, `NAME.b2nd`/`.b2frame`/`.b2` a sparse
// frame (python-blosc2 names a sparse frame's directory as its file).
DatasetKind dataset_kind_of_directory_name(std::string_view path);
// A listed path of a recursive listing (Caterva2's api/list): `D/chunks.b2frame`
// is the sparse frame D, `D/embed.b2e` the store D, others as files.
DatasetKind dataset_kind_of_listed_path(std::string_view path);
// For JSON: "b2nd", "b2frame", "b2z", "b2e", "sparse_frame", "b2d", "hdf5", "file",
// of a listed path (markers as above) or a file's name.
const char* dataset_kind_name(std::string_view path);
// The same for a path whose kind is already known (a directory's, a sniffed file's).
const char* dataset_kind_name(DatasetKind kind, std::string_view path);
// Whether `head` (a file's first bytes, at least 10) begins like a Blosc2 frame's header.
bool looks_like_frame_header(ByteSpan head);
// How many first bytes looks_like_frame_header wants.
inline constexpr size_t kFrameHeaderSniff = 10;

}  // namespace blosc2fs
