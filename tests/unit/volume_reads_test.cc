// The tree and file contents of every fixture frame, without FUSE: names,
// inode numbers, listings, exact sizes, and bytes against the expectations.
#include "volume.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fixtures.h"
#include "frame.h"
#include "inodes.h"

namespace blosc2fs {
namespace {

using testing::fixture_frame_names;
using testing::frame_path;
using testing::gunzip_file;
using testing::hex_to_bytes;
using testing::load_expect;

Bytes read_all(Volume& volume, uint64_t ino, size_t piece = 70001) {
  Bytes out;
  Bytes buf(piece);
  for (int64_t offset = 0;;) {
    size_t got = volume.read(ino, offset, buf);
    out.insert(out.end(), buf.begin(), buf.begin() + got);
    if (got == 0) break;
    offset += int64_t(got);
  }
  return out;
}

std::vector<DirEntry> list(Volume& volume, uint64_t dir) {
  std::vector<DirEntry> out;
  int64_t i = 0;
  while (std::optional<DirEntry> e = volume.entry(dir, i)) {
    i = e->next;
    out.push_back(std::move(*e));
  }
  return out;
}

TEST(VolumeReads, ChunkFileNames) {
  EXPECT_EQ(chunk_file_name(0), "00000000");
  EXPECT_EQ(chunk_file_name(42), "00000042");
  EXPECT_EQ(chunk_file_name(123456789), "123456789");
  EXPECT_EQ(parse_chunk_file_name("00000042"), 42);
  EXPECT_EQ(parse_chunk_file_name("123456789"), 123456789);
  for (const char* bad : {"42", "000000042", "0000004x", "", "-0000042", "0123456789", "99999999999999999999"})
    EXPECT_FALSE(parse_chunk_file_name(bad).has_value()) << bad;
}

class VolumeReadsFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(VolumeReadsFixture, MatchesExpectations) {
  const std::string name = GetParam();
  const nlohmann::json expect = load_expect(name);
  VolumeOptions options;
  options.access = AccessOverrides{1234, 5678, 022};
  Volume volume(frame_path(name), options);
  const int64_t nchunks = expect["nchunks"];
  ASSERT_EQ(volume.nchunks(), nchunks);
  auto ino_of = [&](uint64_t dir, const std::string& child) {
    std::optional<uint64_t> ino = volume.lookup(dir, child);
    EXPECT_TRUE(ino.has_value()) << child;
    return ino.value_or(0);
  };

  // Root listing and lookups.
  std::vector<std::string> names;
  for (const DirEntry& e : list(volume, kRootIno)) {
    names.push_back(e.name);
    EXPECT_EQ(volume.lookup(kRootIno, e.name), e.ino);
    EXPECT_TRUE(volume.node(e.ino).has_value());
  }
  const bool nd = expect.contains("b2nd") || expect["metalayers"].contains("caterva");
  std::vector<std::string> want{"frame.json", "index.tsv", "data"};
  if (nd) want.push_back("array.npy");
  for (const char* d : {"chunks", "raw", "meta", "vlmeta", "attrs", ".blosc2fs-cache"}) want.push_back(d);
  // preview.png: b2nd arrays of a numeric dtype of the frame's typesize, with elements.
  if (expect.contains("b2nd") && expect["b2nd"]["dtype"].is_string()) {
    const std::string dtype = expect["b2nd"]["dtype"];
    bool elements = true;
    for (const auto& s : expect["b2nd"]["shape"]) elements = elements && s.get<int64_t>() > 0;
    const bool drawn = dtype.size() == 3 && std::string("biuf").find(dtype[1]) != std::string::npos &&
                       dtype[2] - '0' == expect["typesize"].get<int>();  // no dtype_mismatch
    if (elements && drawn)
      want.push_back("preview.png");
    // The Zarr view (docs/zarr.md): a Zarr v3 core type of the frame's typesize.
    const bool core = dtype.size() >= 3 && std::string("<>|=").find(dtype[0]) != std::string::npos &&
                      std::string("biufc").find(dtype[1]) != std::string::npos &&
                      std::to_string(expect["typesize"].get<int>()) == dtype.substr(2);
    if (core)
      for (const char* z : {"zarr.json", "c", "zarr2"}) want.push_back(z);
  }
  EXPECT_EQ(names, want);
  EXPECT_FALSE(volume.lookup(kRootIno, "nothing").has_value());

  // stat basics: read-only modes, owner, the frame's mtime.
  struct stat st = volume.attributes(kRootIno);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0555 & ~022);
  EXPECT_EQ(st.st_uid, 1234u);
  EXPECT_EQ(st.st_gid, 5678u);
  struct stat file_st {};
  const std::filesystem::path header =
      std::filesystem::is_directory(frame_path(name)) ? frame_path(name) / "chunks.b2frame" : frame_path(name);
  ASSERT_EQ(::stat(header.c_str(), &file_st), 0);
  EXPECT_EQ(st.st_mtim.tv_sec, file_st.st_mtim.tv_sec);
  EXPECT_EQ(volume.attributes(ino_of(kRootIno, "data")).st_mode & 07777, 0444 & ~022);
  // st_blksize sizes glibc's getdents buffer, and FUSE allocates as much per
  // readdir: small directories ask for 4 KiB, chunk listings by their length.
  EXPECT_EQ(st.st_blksize, 4096);
  EXPECT_EQ(volume.attributes(ino_of(kRootIno, "meta")).st_blksize, 4096);
  const blksize_t chunks_blksize = volume.attributes(ino_of(kRootIno, "chunks")).st_blksize;
  EXPECT_GE(chunks_blksize, std::clamp<blksize_t>(blksize_t(nchunks) * 256, 4096, 1 << 20));
  EXPECT_LE(chunks_blksize, 1 << 20);
  EXPECT_EQ(volume.attributes(ino_of(kRootIno, "data")).st_blksize, 1 << 20);

  // data. Uninitialized chunks have no defined content (c-blosc2 leaves its
  // buffer as it was, and the fixture recorded that); blosc2fs shows zeros.
  Bytes data = gunzip_file(testing::fixtures_dir() / "expect" / (name + ".data.gz"));
  for (int64_t n = 0, at = 0; n < nchunks; ++n) {
    const auto& c = expect["chunks"][size_t(n)];
    const int64_t nbytes = c["nbytes"];
    if (int(c["special"]) == 4 && at + nbytes <= int64_t(data.size()))
      std::fill(data.begin() + at, data.begin() + at + nbytes, 0);
    at += nbytes;
  }
  const uint64_t data_ino = ino_of(kRootIno, "data");
  EXPECT_EQ(volume.attributes(data_ino).st_size, int64_t(expect["nbytes"]));
  EXPECT_EQ(read_all(volume, data_ino), data);

  // chunks/ and raw/
  const uint64_t chunks_dir = ino_of(kRootIno, "chunks"), raw_dir = ino_of(kRootIno, "raw");
  auto chunk_entries = list(volume, chunks_dir);
  auto raw_entries = list(volume, raw_dir);
  ASSERT_EQ(int64_t(chunk_entries.size()), nchunks);
  ASSERT_EQ(int64_t(raw_entries.size()), nchunks);
  int64_t offset = 0;
  for (int64_t n = 0; n < nchunks; ++n) {
    const auto& c = expect["chunks"][size_t(n)];
    const uint64_t chunk = kChunkBase + uint64_t(n), raw = kRawBase + uint64_t(n);
    EXPECT_EQ(chunk_entries[size_t(n)].name, chunk_file_name(n));
    EXPECT_EQ(chunk_entries[size_t(n)].ino, chunk);
    EXPECT_EQ(volume.lookup(chunks_dir, chunk_file_name(n)), chunk);
    EXPECT_EQ(volume.lookup(raw_dir, chunk_file_name(n) + ".chunk"), raw);
    EXPECT_EQ(volume.path_of(chunk), "chunks/" + chunk_file_name(n));
    const int64_t nbytes = c["nbytes"];
    EXPECT_EQ(volume.attributes(chunk).st_size, nbytes) << "chunk " << n;
    const bool special_entry = int64_t(c["index_entry"]) < 0;
    EXPECT_EQ(volume.attributes(raw).st_size, special_entry ? 32 : int64_t(c["cbytes"])) << "raw " << n;
    Bytes got = read_all(volume, chunk, 5000);
    ASSERT_LE(offset + nbytes, int64_t(data.size()));
    EXPECT_TRUE(std::equal(got.begin(), got.end(), data.begin() + offset) && int64_t(got.size()) == nbytes)
        << "chunk " << n;
    EXPECT_EQ(int64_t(read_all(volume, raw).size()), volume.attributes(raw).st_size);
    offset += nbytes;
  }
  EXPECT_FALSE(volume.node(kChunkBase + uint64_t(nchunks)).has_value());
  EXPECT_FALSE(volume.lookup(chunks_dir, chunk_file_name(nchunks)).has_value());
  EXPECT_FALSE(volume.lookup(chunks_dir, "0").has_value());

  // meta/ and vlmeta/
  const uint64_t meta_dir = ino_of(kRootIno, "meta"), vlmeta_dir = ino_of(kRootIno, "vlmeta");
  std::set<std::string> metas;
  for (const DirEntry& e : list(volume, meta_dir)) {
    metas.insert(e.name);
    ASSERT_TRUE(expect["metalayers"].contains(e.name));
    Bytes want_bytes = hex_to_bytes(expect["metalayers"][e.name]);
    EXPECT_EQ(read_all(volume, e.ino), want_bytes) << "meta/" << e.name;
    EXPECT_EQ(volume.attributes(e.ino).st_size, int64_t(want_bytes.size()));
    EXPECT_EQ(volume.path_of(e.ino), "meta/" + e.name);
    EXPECT_EQ(volume.lookup(meta_dir, e.name), e.ino);
  }
  EXPECT_EQ(metas.size(), expect["metalayers"].size());
  std::set<std::string> vlmetas;
  for (const DirEntry& e : list(volume, vlmeta_dir)) {
    vlmetas.insert(e.name);
    ASSERT_TRUE(expect["vlmetalayers"].contains(e.name));
    Bytes want_bytes = hex_to_bytes(expect["vlmetalayers"][e.name]);
    EXPECT_EQ(read_all(volume, e.ino), want_bytes) << "vlmeta/" << e.name;
    EXPECT_EQ(volume.attributes(e.ino).st_size, int64_t(want_bytes.size()));
  }
  EXPECT_EQ(vlmetas.size(), expect["vlmetalayers"].size());
  for (const DirEntry& e : list(volume, ino_of(kRootIno, "attrs"))) {
    EXPECT_TRUE(vlmetas.count(e.name));
    Bytes text = read_all(volume, e.ino);
    ASSERT_FALSE(text.empty());
    EXPECT_EQ(text.back(), '\n');
    EXPECT_TRUE(nlohmann::json::accept(text.begin(), text.end())) << "attrs/" << e.name;
  }

  // Generated texts: sizes are exact.
  for (const char* file : {"frame.json", "index.tsv", ".blosc2fs-cache"}) {
    const uint64_t ino = ino_of(kRootIno, file);
    EXPECT_EQ(int64_t(read_all(volume, ino).size()), volume.attributes(ino).st_size) << file;
  }
  if (nd) {
    const uint64_t npy = ino_of(kRootIno, "array.npy");
    Bytes bytes = read_all(volume, npy, 3333);
    EXPECT_EQ(int64_t(bytes.size()), volume.attributes(npy).st_size);
    ASSERT_GE(bytes.size(), 10u);
    EXPECT_EQ(std::string(bytes.begin() + 1, bytes.begin() + 6), "NUMPY");
    auto array_gz = testing::fixtures_dir() / "expect" / (name + ".array.gz");
    if (std::filesystem::exists(array_gz)) {
      Bytes array = gunzip_file(array_gz);
      ASSERT_GE(bytes.size(), array.size());
      EXPECT_TRUE(std::equal(array.begin(), array.end(), bytes.end() - int64_t(array.size()))) << "array.npy body";
    }
  } else {
    EXPECT_FALSE(volume.node(5).has_value());
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, VolumeReadsFixture, ::testing::ValuesIn(fixture_frame_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string s = info.param;
                           for (char& c : s)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

}  // namespace
}  // namespace blosc2fs
