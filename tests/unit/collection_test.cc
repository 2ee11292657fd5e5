// Collections without FUSE: what counts as a dataset, one level of a local
// directory (links never followed, fifos left out), one level of a recursive
// listing, S3 listings with a delimiter (hostile keys left out), the bounds of
// one directory's listing (local and S3), and the collection tree over a local
// folder (lazy: listing opens nothing; a corrupt dataset is EIO and named).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <fstream>

#include <gtest/gtest.h>

#include "byte_source.h"
#include "collection_source.h"
#include "collection_tree.h"
#include "dataset_kind.h"
#include "error.h"
#include "fixtures.h"
#include "fs_error.h"
#include "s3_listing.h"

namespace blosc2fs {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using testing::frame_path;

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

TEST(DatasetKind, ByNameAndMarker) {
  EXPECT_EQ(dataset_kind_of_file("a/run.b2nd"), DatasetKind::frame);
  EXPECT_EQ(dataset_kind_of_file("x.B2FRAME"), DatasetKind::frame);
  EXPECT_EQ(dataset_kind_of_file("s.b2"), DatasetKind::frame);
  EXPECT_EQ(dataset_kind_of_file("s.b2z"), DatasetKind::store);
  EXPECT_EQ(dataset_kind_of_file("s.b2e"), DatasetKind::store);
  EXPECT_EQ(dataset_kind_of_file("README.md"), DatasetKind::other);
  EXPECT_EQ(dataset_kind_of_file(".b2nd"), DatasetKind::other);  // a name that is only a suffix
  EXPECT_EQ(dataset_kind_of_listed_path("d/chunks.b2frame"), DatasetKind::sparse_frame);
  EXPECT_EQ(dataset_kind_of_listed_path("d/embed.b2e"), DatasetKind::store_directory);
  EXPECT_EQ(dataset_kind_of_listed_path("chunks.b2frame"), DatasetKind::frame);  // no directory: a frame file
  EXPECT_EQ(dataset_kind_of_directory_name("s.b2d"), DatasetKind::store_directory);
  EXPECT_EQ(dataset_kind_of_directory_name("s.b2nd"), DatasetKind::sparse_frame);
  EXPECT_EQ(dataset_kind_of_directory_name("plain"), DatasetKind::other);
  EXPECT_STREQ(dataset_kind_name("a/x.h5"), "hdf5");
  EXPECT_STREQ(dataset_kind_name("d/embed.b2e"), "b2d");
  EXPECT_STREQ(dataset_kind_name("x.b2e"), "b2e");
  EXPECT_STREQ(dataset_kind_name("x.b2"), "b2frame");
  const Bytes frame = testing::read_file(frame_path("frame_simple-zstd.b2frame"));
  EXPECT_TRUE(looks_like_frame_header(ByteSpan(frame).first(kFrameHeaderSniff)));
  const uint8_t text[] = "# a README that is long";
  EXPECT_FALSE(looks_like_frame_header(ByteSpan(text, sizeof text)));
  EXPECT_FALSE(looks_like_frame_header(ByteSpan(frame).first(4)));
}

TEST(ListEntries, LocalDirectoryLstatsAndLeavesOutSpecialFiles) {
  TempDir tmp;
  const fs::path root = tmp.path();
  fs::create_directories(root / "sub");
  write_text(root / "a.txt", "abc");
  fs::create_symlink("a.txt", root / "link");
  fs::create_symlink("/etc", root / "abs");
  ASSERT_EQ(::mkfifo((root / "fifo").c_str(), 0644), 0);
  const std::vector<ListedEntry> got = open_local_directory(root)->list_entries("");
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0], (ListedEntry{"a.txt", ListedEntry::Type::file, 3, ""}));
  EXPECT_EQ(got[1], (ListedEntry{"abs", ListedEntry::Type::symlink, 4, "/etc"}));
  EXPECT_EQ(got[2], (ListedEntry{"link", ListedEntry::Type::symlink, 5, "a.txt"}));
  EXPECT_EQ(got[3].name, "sub");
  EXPECT_EQ(got[3].type, ListedEntry::Type::directory);
  EXPECT_TRUE(open_local_directory(root)->list_entries("sub").empty());
  EXPECT_THROW(open_local_directory(root)->list_entries("../x"), IoError);
  EXPECT_THROW(open_local_directory(root)->list_entries("missing"), IoError);
  // A link is never followed by a collection's open.
  EXPECT_THROW(open_local_file_beneath(root, "link"), IoError);
  EXPECT_EQ(open_local_file_beneath(root, "a.txt")->size(), 3);
}

TEST(ListEntries, OneLevelOfARecursiveListing) {
  const std::vector<std::string> paths{"a.b2nd", "d/x.b2nd", "d/e/y.b2nd", "d", "z/chunks.b2frame"};
  const std::vector<ListedEntry> top = entries_below(paths, "");
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].name, "a.b2nd");
  EXPECT_EQ(top[1].name, "d");  // both a file and a directory: the directory
  EXPECT_EQ(top[1].type, ListedEntry::Type::directory);
  EXPECT_EQ(top[2].name, "z");
  const std::vector<ListedEntry> d = entries_below(paths, "d");
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].name, "e");
  EXPECT_EQ(d[1].name, "x.b2nd");
}

TEST(S3Listing, CommonPrefixesAndSizes) {
  const std::string page =
      "<ListBucketResult><EncodingType>url</EncodingType><IsTruncated>false</IsTruncated>"
      "<Contents><Key>lake/a%20b.b2nd</Key><Size>1234</Size></Contents>"
      "<Contents><Key>lake/m</Key><Size>x</Size></Contents>"
      "<CommonPrefixes><Prefix>lake/sub%2Fdir/</Prefix></CommonPrefixes>"
      "<CommonPrefixes><Prefix>lake/../</Prefix></CommonPrefixes></ListBucketResult>";
  const S3ListingPage p = parse_s3_listing(page);
  EXPECT_EQ(p.keys, (std::vector<std::string>{"lake/a b.b2nd", "lake/m"}));
  EXPECT_EQ(p.sizes, (std::vector<int64_t>{1234, -1}));
  EXPECT_EQ(p.prefixes, (std::vector<std::string>{"lake/sub/dir/", "lake/../"}));
}

// A hostile or odd S3 server's one-level listing, as the pages come (keys and
// prefixes url-encoded): only safe single names come out. SeaweedFS cleans
// such keys at upload, so no server in the tests can list them.
TEST(S3Listing, OneLevelLeavesOutKeysThatAreNoSafeName) {
  const std::string first =
      "<ListBucketResult><EncodingType>url</EncodingType><IsTruncated>true</IsTruncated>"
      "<NextContinuationToken>t1</NextContinuationToken>"
      "<Contents><Key>lake/</Key><Size>0</Size></Contents>"                        // its own marker
      "<Contents><Key>lake/a.b2nd</Key><Size>10</Size></Contents>"
      "<Contents><Key>lake/a%20b.b2nd</Key><Size>11</Size></Contents>"
      "<Contents><Key>lake/a..b.b2nd</Key><Size>12</Size></Contents>"              // '..' inside a name is fine
      "<Contents><Key>lake/..</Key><Size>1</Size></Contents>"
      "<Contents><Key>lake/.</Key><Size>1</Size></Contents>"
      "<Contents><Key>lake/..%2F..%2Fetc%2Fpasswd</Key><Size>1</Size></Contents>"
      "<Contents><Key>lake//x.b2nd</Key><Size>1</Size></Contents>"                 // '//'
      "<Contents><Key>lake/%2Fetc%2Fpasswd</Key><Size>1</Size></Contents>"         // a leading '/' after the prefix
      "<Contents><Key>%2Flake%2Fa.b2nd</Key><Size>1</Size></Contents>"             // a leading '/': not below it
      "<Contents><Key>lake/d%2Fe.b2nd</Key><Size>1</Size></Contents>"              // %2F: two parts
      "<Contents><Key>lake/nul%00.b2nd</Key><Size>1</Size></Contents>"
      "<Contents><Key>other/z.b2nd</Key><Size>1</Size></Contents>"                 // another prefix
      "<Contents><Key>lake/sub/</Key><Size>0</Size></Contents>"                    // a directory marker
      "<Contents><Key>lake/..%2F</Key><Size>0</Size></Contents>"                   // the marker of '..'
      "</ListBucketResult>";
  const std::string second =
      "<ListBucketResult><EncodingType>url</EncodingType><IsTruncated>false</IsTruncated>"
      "<Contents><Key>lake/x.b2nd</Key><Size>5</Size></Contents>"                  // an object and a directory
      "<CommonPrefixes><Prefix>lake/x.b2nd/</Prefix></CommonPrefixes>"
      "<CommonPrefixes><Prefix>lake/ok/</Prefix></CommonPrefixes>"
      "<CommonPrefixes><Prefix>lake/sub/</Prefix></CommonPrefixes>"
      "<CommonPrefixes><Prefix>lake/../</Prefix></CommonPrefixes>"
      "<CommonPrefixes><Prefix>lake//</Prefix></CommonPrefixes>"
      "<CommonPrefixes><Prefix>lake/%2F%2F/</Prefix></CommonPrefixes>"
      "<CommonPrefixes><Prefix>lake/p%2Fq/</Prefix></CommonPrefixes>"
      "<CommonPrefixes><Prefix>lake/%00/</Prefix></CommonPrefixes>"
      "<CommonPrefixes><Prefix>%2F/</Prefix></CommonPrefixes>"
      "</ListBucketResult>";
  S3LevelListing level("lake/", "s3://bucket/lake/");
  level.add(parse_s3_listing(first));
  level.add(parse_s3_listing(second));
  using T = ListedEntry::Type;
  EXPECT_EQ(level.entries(), (std::vector<ListedEntry>{{"a b.b2nd", T::file, 11, ""},
                                                       {"a..b.b2nd", T::file, 12, ""},
                                                       {"a.b2nd", T::file, 10, ""},
                                                       {"ok", T::directory, -1, ""},
                                                       {"sub", T::directory, -1, ""},
                                                       {"x.b2nd", T::directory, -1, ""}}));
  // Eight keys and five prefixes below "lake/" are no single safe name.
  EXPECT_EQ(level.skipped(), 13u);
  // At the bucket's root (prefix ""), the same rules: a leading '/' is an
  // empty first part.
  S3LevelListing root("", "s3://bucket/");
  root.add(parse_s3_listing(
      "<ListBucketResult><EncodingType>url</EncodingType><IsTruncated>false</IsTruncated>"
      "<Contents><Key>a.b2nd</Key><Size>3</Size></Contents>"
      "<Contents><Key>%2Fetc%2Fpasswd</Key><Size>1</Size></Contents>"
      "<Contents><Key>..</Key><Size>1</Size></Contents>"
      "<CommonPrefixes><Prefix>lake/</Prefix></CommonPrefixes>"
      "<CommonPrefixes><Prefix>%2F</Prefix></CommonPrefixes>"
      "<CommonPrefixes><Prefix>..%2F</Prefix></CommonPrefixes>"
      "</ListBucketResult>"));
  EXPECT_EQ(root.entries(), (std::vector<ListedEntry>{{"a.b2nd", T::file, 3, ""}, {"lake", T::directory, -1, ""}}));
  EXPECT_EQ(root.skipped(), 4u);
}

// The bound of one directory's listing (1,000,000 entries), lowered so that
// reaching it is cheap: past it, one line naming the directory and the bound.
TEST(ListingBounds, LocalDirectoryOverItsBoundIsRefusedWithOneLine) {
  EXPECT_EQ(kMaxLocalDirectoryEntries, 1'000'000u);
  EXPECT_EQ(count_text(kMaxLocalDirectoryEntries), "1,000,000");
  EXPECT_EQ(count_text(999), "999");
  EXPECT_EQ(count_text(1234), "1,234");
  TempDir tmp;
  const fs::path root = tmp.path();
  fs::create_directories(root / "sub");
  for (const char* name : {"a", "b", "c"}) write_text(root / name, name);
  for (const char* name : {"1", "2", "3", "4", "5"}) write_text(root / "sub" / name, name);
  const auto place = open_local_directory(root, 4);
  EXPECT_EQ(place->list_entries("").size(), 4u);  // at the bound: listed
  ASSERT_EQ(::mkfifo((root / "fifo").c_str(), 0644), 0);  // not shown, not held: not counted
  EXPECT_EQ(place->list_entries("").size(), 4u);
  write_text(root / "d", "d");
  auto refused = [](const std::function<void()>& list, const std::string& line) {
    try {
      list();
      ADD_FAILURE() << "listed past the bound: " << line;
    } catch (const IoError& e) {
      EXPECT_EQ(std::string(e.what()), line);
      EXPECT_EQ(e.error_number(), EFBIG);
    }
  };
  refused([&] { place->list_entries(""); }, root.string() + ": more than 4 entries: refused");
  refused([&] { place->list_entries("sub"); }, (root / "sub").string() + ": more than 4 entries: refused");
  // A subdirectory keeps its parent's bound.
  refused([&] { place->subdirectory("sub")->list_entries(""); },
          (root / "sub").string() + ": more than 4 entries: refused");
  EXPECT_EQ(open_local_directory(root)->list_entries("sub").size(), 5u);
}

TEST(ListingBounds, S3LevelOverItsBoundIsRefusedWithOneLine) {
  EXPECT_EQ(kMaxS3LevelEntries, 1'000'000u);
  auto page = [](const std::vector<std::string>& keys, const std::vector<std::string>& prefixes) {
    std::string xml = "<ListBucketResult><IsTruncated>false</IsTruncated>";
    for (const std::string& k : keys) xml += "<Contents><Key>" + k + "</Key><Size>1</Size></Contents>";
    for (const std::string& p : prefixes) xml += "<CommonPrefixes><Prefix>" + p + "</Prefix></CommonPrefixes>";
    return parse_s3_listing(xml + "</ListBucketResult>");
  };
  S3LevelListing level("lake/", "s3://bucket/lake/", 3);
  // A name both an object and a prefix is one entry; names left out count for nothing.
  level.add(page({"lake/a", "lake/b", "lake/..", "lake//x"}, {"lake/b/", "lake/../"}));
  level.add(page({"lake/c", "lake/a"}, {}));
  EXPECT_EQ(level.entries().size(), 3u);  // at the bound: listed
  try {
    level.add(page({}, {"lake/d/"}));
    FAIL() << "a level of 4 entries was taken with a bound of 3";
  } catch (const FormatError& e) {
    EXPECT_EQ(std::string(e.what()), "s3://bucket/lake/: more than 3 entries in one directory: refused");
  }
  // The production bound is the default one.
  S3LevelListing unbounded("lake/", "s3://bucket/lake/");
  std::vector<std::string> many;
  for (int i = 0; i < 1000; ++i) many.push_back("lake/k" + std::to_string(i));
  unbounded.add(page(many, {}));
  EXPECT_EQ(unbounded.entries().size(), 1000u);
}

TEST(CollectionTree, LocalFolderIsLazyAndACorruptDatasetIsEio) {
  TempDir tmp;
  const fs::path root = tmp.path();
  fs::copy_file(frame_path("frame_simple-zstd.b2frame"), root / "good.b2frame");
  fs::copy_file(frame_path("frame_simple-zstd.b2frame"), root / "nameless");
  write_text(root / "bad.b2nd", "not a frame at all, really");
  write_text(root / "README.md", "hello\n");
  fs::create_symlink("good.b2frame", root / "link");
  CollectionTree::Settings settings;
  settings.max_open = 1;
  CollectionTree tree(local_collection(root), settings);
  std::vector<std::string> names;
  for (int64_t cookie = 0;;) {
    std::optional<DirEntry> e = tree.entry(kRootIno, cookie);
    if (!e) break;
    names.push_back(e->name);
    cookie = e->next;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"collection.json", "zarr.json", "README.md", "bad.b2nd", "good.b2frame",
                                             "link", "nameless"}));
  const uint64_t good = *tree.lookup(kRootIno, "good.b2frame");
  const uint64_t nameless = *tree.lookup(kRootIno, "nameless");
  EXPECT_TRUE(S_ISDIR(tree.attributes(good).st_mode));
  EXPECT_TRUE(S_ISDIR(tree.attributes(nameless).st_mode));  // sniffed: a frame
  EXPECT_NE(tree.description().find("\"open_datasets\": 0"), std::string::npos);
  const uint64_t link = *tree.lookup(kRootIno, "link");
  EXPECT_TRUE(S_ISLNK(tree.attributes(link).st_mode));
  EXPECT_EQ(tree.readlink(link), "good.b2frame");
  const uint64_t json = *tree.lookup(good, "frame.json");
  EXPECT_TRUE(S_ISREG(tree.attributes(json).st_mode));
  const uint64_t bad = *tree.lookup(kRootIno, "bad.b2nd");
  try {
    tree.lookup(bad, "frame.json");
    ADD_FAILURE() << "a corrupt dataset opened";
  } catch (const FsError& e) {
    EXPECT_EQ(e.error, EIO);
  }
  EXPECT_NE(tree.description().find("\"path\": \"bad.b2nd\""), std::string::npos);
  // max_open=1: opening another closes the first; its numbers stay.
  tree.lookup(nameless, "frame.json");
  EXPECT_EQ(*tree.lookup(good, "frame.json"), json);
  KernelNotes notes;
  EXPECT_THROW(tree.create(kRootIno, "new", O_WRONLY, notes), FsError);
}

}  // namespace
}  // namespace blosc2fs
