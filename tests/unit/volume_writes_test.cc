// The write side of the mount without FUSE: a Volume over copies of fixture
// frames, driven the way the kernel drives it (create, write, flush, release,
// rename, unlink, setattr), then the frame re-read with Frame::open.
#include "volume.h"

#include <fcntl.h>
#include <linux/fs.h>

#include <algorithm>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "b2nd.h"
#include "fixtures.h"
#include "frame.h"
#include "frame_editor_test_util.h"
#include "frame_writer.h"
#include "fs_errno.h"
#include "fs_error.h"
#include "msgpack.h"
#include "read_pieces.h"

namespace blosc2fs {
namespace {

using testing::TempDir;
using testing::errno_of;

Bytes bytes_of(const std::string& s) { return Bytes(s.begin(), s.end()); }
std::string text_of(const Bytes& b) { return std::string(b.begin(), b.end()); }

class VolumeWrites : public ::testing::Test {
 protected:
  std::filesystem::path copy(const std::string& name) {
    return testing::copy_frame(testing::frame_path(name), dir_.path() / name);
  }
  std::unique_ptr<Volume> mount(const std::filesystem::path& path, bool writable = true) {
    VolumeOptions o;
    o.writable = writable;
    o.edit.sync = false;
    o.refresh_interval = std::chrono::milliseconds(0);
    o.batch_chunks = batch_chunks_;
    o.batch_min_bytes = batch_min_bytes_;
    o.edit.compact_min_bytes = compact_min_bytes_;
    return std::make_unique<Volume>(path, o);
  }
  static uint64_t dir(Volume& v, const char* name) { return v.lookup(kRootIno, name).value(); }
  static Bytes read_all(Volume& v, uint64_t ino) {
    Bytes out(size_t(v.attributes(ino).st_size) + 10);
    out.resize(v.read(ino, 0, out));
    return out;
  }
  // Writes a whole file the way `echo text > path` does: create or open with
  // O_TRUNC, write, close (flush + release).
  void put(Volume& v, uint64_t parent, const std::string& name, const Bytes& content) {
    KernelNotes notes;
    std::unique_ptr<OpenFile> file;
    if (std::optional<uint64_t> ino = v.lookup(parent, name)) {
      bool keep = false, direct = false;
      file = v.open(*ino, O_WRONLY | O_TRUNC, keep, direct, notes);
    } else {
      file = v.create(parent, name, O_WRONLY | O_CREAT | O_TRUNC, notes).second;
    }
    v.write(*file, 0, content, notes);
    v.flush(*file, notes);
    v.release(std::move(file), notes);
  }
  static Bytes vlmeta(const std::filesystem::path& path, const std::string& name) {
    auto frame = Frame::open(path);
    const Vlmetalayer* layer = frame->find_vlmetalayer(name);
    if (!layer) return bytes_of("<absent>");
    return frame->vlmetalayer_content(*layer);
  }

  TempDir dir_;
  size_t batch_chunks_ = 64;
  uint64_t batch_min_bytes_ = 16 << 20;
  int64_t compact_min_bytes_ = 64 << 20;
};

TEST_F(VolumeWrites, VlmetaCreateWriteAppendRenameRemove) {
  auto path = copy("metas-vlmetas.b2frame");
  auto v = mount(path);
  const uint64_t vl = dir(*v, "vlmeta");
  put(*v, vl, "greeting", bytes_of("hello\n"));
  EXPECT_EQ(text_of(vlmeta(path, "greeting")), "hello\n");
  EXPECT_EQ(text_of(read_all(*v, v->lookup(vl, "greeting").value())), "hello\n");

  KernelNotes notes;
  bool keep, direct;
  auto file = v->open(v->lookup(vl, "greeting").value(), O_WRONLY | O_APPEND, keep, direct, notes);
  v->write(*file, 6, bytes_of("world\n"), notes);
  v->flush(*file, notes);
  v->release(std::move(file), notes);
  EXPECT_EQ(text_of(vlmeta(path, "greeting")), "hello\nworld\n");

  v->rename(vl, "greeting", vl, "author", 0, notes);  // over an existing layer
  EXPECT_EQ(text_of(vlmeta(path, "author")), "hello\nworld\n");
  EXPECT_EQ(text_of(vlmeta(path, "greeting")), "<absent>");
  EXPECT_FALSE(v->lookup(vl, "greeting").has_value());
  EXPECT_EQ(errno_of([&] { v->rename(vl, "answer", vl, "description", RENAME_NOREPLACE, notes); }), EEXIST);

  v->unlink(vl, "author", notes);
  EXPECT_EQ(text_of(vlmeta(path, "author")), "<absent>");
  EXPECT_FALSE(v->lookup(vl, "author").has_value());
}

TEST_F(VolumeWrites, AnEmptyFirstFlushStoresNothing) {
  // bash: open(O_TRUNC), dup2, close the original (a flush), write, close.
  auto path = copy("metas-vlmetas.b2frame");
  auto v = mount(path);
  const uint64_t attrs = dir(*v, "attrs");
  KernelNotes notes;
  auto [ino, file] = v->create(attrs, "fresh", O_WRONLY | O_CREAT | O_TRUNC, notes);
  v->flush(*file, notes);
  EXPECT_EQ(text_of(vlmeta(path, "fresh")), "<absent>");
  v->write(*file, 0, bytes_of("[1, 2]\n"), notes);
  v->flush(*file, notes);
  v->release(std::move(file), notes);
  EXPECT_EQ(vlmeta(path, "fresh"), json_to_msgpack(Json::array({1, 2})));
  EXPECT_EQ(text_of(read_all(*v, ino)), "[1,2]\n");
}

TEST_F(VolumeWrites, AttrsRefuseInvalidJsonAtWriteOrClose) {
  auto path = copy("metas-vlmetas.b2frame");
  const Bytes before = testing::read_file(path);
  auto v = mount(path);
  const uint64_t attrs = dir(*v, "attrs");
  KernelNotes notes;
  bool keep, direct;
  const uint64_t author = v->lookup(attrs, "author").value();
  auto file = v->open(author, O_WRONLY | O_TRUNC, keep, direct, notes);
  v->write(*file, 0, bytes_of("{\"a\": "), notes);
  EXPECT_EQ(errno_of([&] { v->write(*file, 6, bytes_of("}"), notes); }), EINVAL);
  EXPECT_EQ(errno_of([&] { v->flush(*file, notes); }), EINVAL);
  v->release(std::move(file), notes);
  EXPECT_EQ(testing::read_file(path), before);
  EXPECT_EQ(text_of(read_all(*v, author)), "\"Alice Smith\"\n");

  // A valid prefix that never completes fails at close.
  file = v->open(author, O_WRONLY | O_TRUNC, keep, direct, notes);
  v->write(*file, 0, bytes_of("[1, 2"), notes);
  EXPECT_EQ(errno_of([&] { v->flush(*file, notes); }), EINVAL);
  v->release(std::move(file), notes);
  EXPECT_EQ(testing::read_file(path), before);
}

TEST_F(VolumeWrites, WritingBackTheTextReadChangesNoByte) {
  auto path = copy("metas-vlmetas.b2frame");
  const Bytes before = testing::read_file(path);
  auto v = mount(path);
  const uint64_t attrs = dir(*v, "attrs");
  for (const char* name : {"author", "answer", "attrs"}) {
    const uint64_t ino = v->lookup(attrs, name).value();
    put(*v, attrs, name, read_all(*v, ino));
  }
  EXPECT_EQ(testing::read_file(path), before);
}

TEST_F(VolumeWrites, MetalayersKeepTheirLength) {
  auto path = copy("metas-vlmetas.b2frame");
  auto v = mount(path);
  const uint64_t meta = dir(*v, "meta");
  const uint64_t note = v->lookup(meta, "note").value();
  const Bytes old = read_all(*v, note);
  Bytes same = old;
  same[0] ^= 1;
  put(*v, meta, "note", same);
  EXPECT_EQ(Frame::open(path)->find_metalayer("note")->content, same);
  EXPECT_EQ(errno_of([&] { put(*v, meta, "note", Bytes(old.size() + 1, 'x')); }), EINVAL);
  EXPECT_EQ(errno_of([&] { put(*v, meta, "note", Bytes(3, 'x')); }), EINVAL);
  EXPECT_EQ(Frame::open(path)->find_metalayer("note")->content, same);
  KernelNotes notes;
  EXPECT_EQ(errno_of([&] { v->create(meta, "newmeta", O_WRONLY | O_CREAT, notes); }), EPERM);
}

TEST_F(VolumeWrites, ATruncateByPathDoesNotWaitForALateRelease) {
  // The kernel sends RELEASE after close(2) returns, and over io_uring it may
  // arrive after the next request: a closed (flushed) writer must not turn
  // `truncate -s` into an edit that nobody commits or reports.
  auto path = copy("metas-vlmetas.b2frame");
  auto v = mount(path);
  const uint64_t note = v->lookup(dir(*v, "meta"), "note").value();
  const Bytes old = read_all(*v, note);
  const int64_t size = int64_t(old.size());
  KernelNotes notes;
  bool keep = false, direct = false;
  auto closed = v->open(note, O_RDWR, keep, direct, notes);
  v->flush(*closed, notes);  // close(2); its release is still to come
  EXPECT_EQ(errno_of([&] { v->setattr(note, nullptr, size - 1, notes); }), EINVAL);
  EXPECT_EQ(v->attributes(note).st_size, size);

  // A writer that has not closed yet keeps the edit for its own close.
  auto open = v->open(note, O_RDWR, keep, direct, notes);
  EXPECT_EQ(errno_of([&] { v->setattr(note, nullptr, size - 1, notes); }), 0);
  Bytes changed = old;
  changed.back() ^= 1;
  v->write(*open, 0, changed, notes);
  v->flush(*open, notes);
  EXPECT_EQ(Frame::open(path)->find_metalayer("note")->content, changed);

  // Flushed, then written again (a dup'ed descriptor): it is at work again.
  v->write(*open, 0, old, notes);
  EXPECT_EQ(errno_of([&] { v->setattr(note, nullptr, size, notes); }), 0);
  EXPECT_EQ(Frame::open(path)->find_metalayer("note")->content, changed);
  v->flush(*open, notes);
  EXPECT_EQ(Frame::open(path)->find_metalayer("note")->content, old);
  v->release(std::move(open), notes);
  v->release(std::move(closed), notes);
  EXPECT_EQ(Frame::open(path)->find_metalayer("note")->content, old);
  EXPECT_EQ(errno_of([&] { v->setattr(note, nullptr, size - 1, notes); }), EINVAL);
}

TEST_F(VolumeWrites, LimitsOfVlmetalayers) {
  auto path = copy("many-vlmetas.b2frame");
  auto v = mount(path);
  const uint64_t vl = dir(*v, "vlmeta");
  const size_t count = Frame::open(path)->vlmetalayers().size();
  ASSERT_EQ(count, 16u);
  KernelNotes notes;
  EXPECT_EQ(errno_of([&] { v->create(vl, "seventeenth", O_WRONLY | O_CREAT, notes); }), ENOSPC);
  EXPECT_EQ(errno_of([&] { v->create(vl, std::string(32, 'n'), O_WRONLY | O_CREAT, notes); }), ENAMETOOLONG);
  // sed -i: a scratch file renamed over an existing layer.
  const std::string victim = Frame::open(path)->vlmetalayers()[3].name;
  put(*v, vl, "sedAb12Cd", bytes_of("edited by sed\n"));
  EXPECT_EQ(Frame::open(path)->vlmetalayers().size(), 16u);  // the scratch file is not a layer
  v->rename(vl, "sedAb12Cd", vl, victim, 0, notes);
  EXPECT_EQ(text_of(vlmeta(path, victim)), "edited by sed\n");
  EXPECT_EQ(Frame::open(path)->vlmetalayers().size(), 16u);
  EXPECT_FALSE(v->lookup(vl, "sedAb12Cd").has_value());
}

TEST_F(VolumeWrites, ScratchFilesNeverEnterTheFrame) {
  auto path = copy("metas-vlmetas.b2frame");
  const Bytes before = testing::read_file(path);
  auto v = mount(path);
  KernelNotes notes;
  for (const char* d : {"vlmeta", "attrs", "meta", "chunks", "raw"}) {
    const uint64_t parent = dir(*v, d);
    for (const char* name : {".x.swp", "x~", "4913", "#x#"}) {
      put(*v, parent, name, bytes_of("scratch"));
      EXPECT_EQ(text_of(read_all(*v, v->lookup(parent, name).value())), "scratch");
    }
    v->rename(parent, "x~", parent, ".y", 0, notes);
    EXPECT_FALSE(v->lookup(parent, "x~").has_value());
    v->unlink(parent, ".y", notes);
    v->unlink(parent, "4913", notes);
  }
  put(*v, kRootIno, ".data.swp", bytes_of("swap"));
  EXPECT_EQ(testing::read_file(path), before);
  std::set<std::string> names;
  int64_t cookie = 0;
  while (std::optional<DirEntry> e = v->entry(dir(*v, "vlmeta"), cookie)) {
    names.insert(e->name);
    cookie = e->next;
  }
  EXPECT_TRUE(names.count(".x.swp"));
  EXPECT_FALSE(names.count("4913"));
}

TEST_F(VolumeWrites, VimSavesThroughABackupRename) {
  auto path = copy("metas-vlmetas.b2frame");
  auto v = mount(path);
  const uint64_t attrs = dir(*v, "attrs");
  KernelNotes notes;
  v->rename(attrs, "author", attrs, "author~", 0, notes);
  EXPECT_FALSE(v->lookup(attrs, "author").has_value());
  EXPECT_EQ(text_of(vlmeta(path, "author")).size(), 12u);  // still in the frame
  put(*v, attrs, "author", bytes_of("\"Bob\"\n"));
  v->unlink(attrs, "author~", notes);
  EXPECT_EQ(vlmeta(path, "author"), json_to_msgpack(Json("Bob")));
  // Moving a layer away and removing the scratch file removes the layer.
  v->rename(attrs, "answer", attrs, ".answer", 0, notes);
  EXPECT_EQ(vlmeta(path, "answer"), json_to_msgpack(Json(42)));
  v->unlink(attrs, ".answer", notes);
  EXPECT_EQ(text_of(vlmeta(path, "answer")), "<absent>");
}

TEST_F(VolumeWrites, VimSavesChunksAndDataThroughABackupRename) {
  auto path = copy("metas-vlmetas.b2frame");
  auto v = mount(path);
  const uint64_t chunks = dir(*v, "chunks");
  KernelNotes notes;
  v->rename(chunks, "00000001", chunks, "00000001~", 0, notes);
  EXPECT_FALSE(v->lookup(chunks, "00000001").has_value());
  const uint64_t backup = v->lookup(chunks, "00000001~").value();
  EXPECT_EQ(read_all(*v, backup), Frame::open(path)->read_chunk(1));
  auto [ino, file] = v->create(chunks, "00000001", O_WRONLY | O_CREAT, notes);
  EXPECT_EQ(ino, kChunkBase + 1);
  v->write(*file, 0, Bytes(20000, 0x5A), notes);
  v->flush(*file, notes, true);
  v->release(std::move(file), notes);
  v->unlink(chunks, "00000001~", notes);
  EXPECT_EQ(Frame::open(path)->read_chunk(1), Bytes(20000, 0x5A));
  EXPECT_EQ(Frame::open(path)->nchunks(), 3);
  // data: moved aside, written anew, the backup removed.
  v->rename(kRootIno, "data", kRootIno, "data~", 0, notes);
  EXPECT_FALSE(v->lookup(kRootIno, "data").has_value());
  put(*v, kRootIno, "data", Bytes(45000, 0x11));
  v->unlink(kRootIno, "data~", notes);
  auto frame = Frame::open(path);
  EXPECT_EQ(frame->header().nbytes, 45000);
  EXPECT_EQ(frame->read_chunk(2), Bytes(5000, 0x11));
  // sed -i on a chunk: a scratch file renamed over it.
  put(*v, chunks, "sedXYZ123", Bytes(20000, 0x22));
  v->rename(chunks, "sedXYZ123", chunks, "00000000", 0, notes);
  EXPECT_EQ(Frame::open(path)->read_chunk(0), Bytes(20000, 0x22));
  EXPECT_EQ(read_all(*v, kChunkBase), Bytes(20000, 0x22));
}

TEST_F(VolumeWrites, ChunksAndDataEdits) {
  auto path = copy("metas-vlmetas.b2frame");  // 3 chunks of 20000 bytes
  auto v = mount(path);
  const uint64_t chunks = dir(*v, "chunks");
  const uint64_t data = dir(*v, "data");
  const Bytes original = read_all(*v, data);
  KernelNotes notes;
  bool keep, direct;
  // dd conv=notrunc into chunk 1
  auto file = v->open(kChunkBase + 1, O_WRONLY, keep, direct, notes);
  v->write(*file, 100, bytes_of("PATCH"), notes);
  v->flush(*file, notes);
  v->release(std::move(file), notes);
  Bytes expected = original;
  std::copy_n("PATCH", 5, expected.begin() + 20000 + 100);
  EXPECT_EQ(Frame::open(path)->read_chunk(1), Bytes(expected.begin() + 20000, expected.begin() + 40000));
  // a chunk may not grow past the chunksize
  file = v->open(kChunkBase + 0, O_WRONLY, keep, direct, notes);
  EXPECT_EQ(errno_of([&] { v->write(*file, 19999, bytes_of("xy"), notes); }), EFBIG);
  v->release(std::move(file), notes);
  // echo >> data: fills the last chunk, then adds one
  file = v->open(data, O_WRONLY | O_APPEND, keep, direct, notes);
  const Bytes tail(25000, 7);
  v->write(*file, 60000, tail, notes);
  v->flush(*file, notes);
  v->release(std::move(file), notes);
  auto frame = Frame::open(path);
  EXPECT_EQ(frame->nchunks(), 5);
  EXPECT_EQ(frame->header().nbytes, 85000);
  expected.insert(expected.end(), tail.begin(), tail.end());
  EXPECT_EQ(read_all(*v, data), expected);
  // truncate -s: shortens the last chunk
  v->setattr(data, nullptr, 30000, notes);
  frame = Frame::open(path);
  EXPECT_EQ(frame->nchunks(), 2);
  EXPECT_EQ(frame->chunk_nbytes(1), 10000);
  EXPECT_EQ(read_all(*v, data), Bytes(expected.begin(), expected.begin() + 30000));
  // creating chunks/N for N = nchunks appends (after the last is full again)
  v->setattr(data, nullptr, 40000, notes);
  auto [ino, chunk] = v->create(chunks, "00000002", O_WRONLY | O_CREAT, notes);
  EXPECT_EQ(ino, kChunkBase + 2);
  v->write(*chunk, 0, Bytes(20000, 9), notes);
  v->flush(*chunk, notes);
  v->release(std::move(chunk), notes);
  EXPECT_EQ(Frame::open(path)->nchunks(), 3);
  EXPECT_EQ(Frame::open(path)->read_chunk(2), Bytes(20000, 9));
  // rm of the last chunk drops it; others cannot go
  EXPECT_EQ(errno_of([&] { v->unlink(chunks, "00000000", notes); }), EPERM);
  v->unlink(chunks, "00000002", notes);
  EXPECT_EQ(Frame::open(path)->nchunks(), 2);
}

TEST_F(VolumeWrites, LongWritesCommitInBatches) {
  batch_chunks_ = 2;
  batch_min_bytes_ = 0;
  auto path = copy("metas-vlmetas.b2frame");
  auto v = mount(path);
  const uint64_t data = dir(*v, "data");
  KernelNotes notes;
  bool keep, direct;
  auto file = v->open(data, O_WRONLY | O_TRUNC, keep, direct, notes);
  Bytes content(200000);
  for (size_t i = 0; i < content.size(); ++i) content[i] = uint8_t(i * 7 / 13);
  for (size_t at = 0; at < content.size(); at += 8192)
    v->write(*file, int64_t(at), ByteSpan(content).subspan(at, std::min<size_t>(8192, content.size() - at)), notes);
  EXPECT_GE(Frame::open(path)->nchunks(), 5);  // batches went in before close
  v->flush(*file, notes);
  v->release(std::move(file), notes);
  auto frame = Frame::open(path);
  EXPECT_EQ(frame->nchunks(), 10);
  EXPECT_EQ(read_all(*v, data), content);
  Bytes stored;
  for (int64_t n = 0; n < frame->nchunks(); ++n) {
    Bytes c = frame->read_chunk(n);
    stored.insert(stored.end(), c.begin(), c.end());
  }
  EXPECT_EQ(stored, content);
}

TEST_F(VolumeWrites, BatchesAppendNothingAfterTheShortLastChunkBeingFilled) {
  // Found by fuzz.volume_data_fuzz: the batch appended chunks after a short last chunk
  // that the write was still filling, and the frame refused them (EINVAL).
  batch_chunks_ = 2;
  batch_min_bytes_ = 0;
  auto path = copy("metas-vlmetas.b2frame");  // 3 chunks of 20000 bytes
  auto v = mount(path);
  const uint64_t data = dir(*v, "data");
  KernelNotes notes;
  v->setattr(data, nullptr, 50000, notes);  // the last chunk: 10000 bytes
  Bytes expected = read_all(*v, data);
  bool keep, direct;
  auto file = v->open(data, O_WRONLY, keep, direct, notes);
  v->setattr(data, file.get(), 85000, notes);  // staged: chunk 2 grows, 3 and 4 appended
  expected.resize(85000, 0);
  const Bytes patch(44900, 5);  // from chunk 0 into chunk 2: a batch is due while it is filled
  v->write(*file, 100, patch, notes);
  std::copy(patch.begin(), patch.end(), expected.begin() + 100);
  EXPECT_EQ(read_all(*v, data), expected);
  v->flush(*file, notes);
  v->release(std::move(file), notes);
  auto frame = Frame::open(path);
  ASSERT_EQ(frame->nchunks(), 5);
  Bytes stored;
  for (int64_t n = 0; n < frame->nchunks(); ++n) {
    Bytes c = frame->read_chunk(n);
    stored.insert(stored.end(), c.begin(), c.end());
  }
  EXPECT_EQ(stored, expected);
}

TEST_F(VolumeWrites, CommitsAreCompactedNowAndThen) {
  compact_min_bytes_ = 100000;
  auto path = copy("metas-vlmetas.b2frame");
  const auto start = std::filesystem::file_size(path);
  auto v = mount(path);
  const uint64_t vl = dir(*v, "vlmeta");
  Bytes value(30000);
  uintmax_t largest = 0;
  for (int i = 0; i < 200; ++i) {
    for (size_t k = 0; k < value.size(); ++k) value[k] = uint8_t((k * 131 + size_t(i) * 7919) >> 3);
    put(*v, vl, "big", value);
    largest = std::max(largest, std::filesystem::file_size(path));
  }
  v->shutdown();
  EXPECT_EQ(vlmeta(path, "big"), value);
  // 200 commits of ~30 KB each would leave megabytes behind without compaction.
  EXPECT_LT(largest, start + 1'000'000);
  EXPECT_LT(std::filesystem::file_size(path), start + 400'000);
}

TEST_F(VolumeWrites, TouchMakesAnEmptyLayer) {
  auto path = copy("metas-vlmetas.b2frame");
  auto v = mount(path);
  KernelNotes notes;
  auto [ino, file] = v->create(dir(*v, "vlmeta"), "empty", O_WRONLY | O_CREAT, notes);
  v->flush(*file, notes);
  v->release(std::move(file), notes);
  EXPECT_EQ(vlmeta(path, "empty"), Bytes{});
  EXPECT_EQ(v->attributes(ino).st_size, 0);
}

TEST_F(VolumeWrites, RawChunksAreValidatedAtClose) {
  auto path = copy("metas-vlmetas.b2frame");
  const Bytes before = testing::read_file(path);
  auto v = mount(path);
  const uint64_t raw = dir(*v, "raw");
  EXPECT_EQ(errno_of([&] { put(*v, raw, "00000001.chunk", bytes_of("not a chunk")); }), EINVAL);
  EXPECT_EQ(testing::read_file(path), before);
  const Bytes chunk2 = read_all(*v, kRawBase + 2);
  put(*v, raw, "00000001.chunk", chunk2);
  auto frame = Frame::open(path);
  EXPECT_EQ(frame->read_chunk(1), frame->read_chunk(2));
}

TEST_F(VolumeWrites, ReadOnlyVolumesRefuseWrites) {
  auto path = copy("metas-vlmetas.b2frame");
  auto v = mount(path, false);
  KernelNotes notes;
  bool keep, direct;
  EXPECT_EQ(errno_of([&] { v->open(dir(*v, "data"), O_WRONLY, keep, direct, notes); }), EROFS);
  EXPECT_EQ(errno_of([&] { v->create(dir(*v, "vlmeta"), "x", O_WRONLY | O_CREAT, notes); }), EROFS);
  EXPECT_EQ(errno_of([&] { v->unlink(dir(*v, "vlmeta"), "author", notes); }), EROFS);
  EXPECT_EQ(errno_of([&] { v->setattr(dir(*v, "data"), nullptr, 0, notes); }), EROFS);
}

TEST_F(VolumeWrites, AnotherWriterIsNoticed) {
  auto path = copy("sframe-zstd-f4.b2frame");
  auto v = mount(path);
  const uint64_t vl = dir(*v, "vlmeta");
  {
    FrameEditor other(path);
    other.set_vlmetalayer("from_elsewhere", bytes_of("hi"));
    other.commit();
  }
  KernelNotes notes;
  v->maybe_refresh(notes);
  std::optional<uint64_t> ino = v->lookup(vl, "from_elsewhere");
  ASSERT_TRUE(ino.has_value());
  EXPECT_EQ(text_of(read_all(*v, *ino)), "hi");
  EXPECT_FALSE(notes.empty());
}

// A file open across another program's change reads EIO, never bytes of the
// new version; files opened after read the new version (uncached while an old
// one is open); our own commits leave open files alone.
TEST_F(VolumeWrites, FilesOpenAcrossAnotherWritersChangeReadEio) {
  auto path = copy("sframe-zstd-f4.b2frame");
  auto v = mount(path);
  const uint64_t data = dir(*v, "data"), vl = dir(*v, "vlmeta");
  KernelNotes notes;
  bool keep = false, direct = false;
  auto read_through = [&](const OpenFile& file, int64_t offset, size_t size) {
    ReadPieces pieces;
    v->read_pieces(file.ino, file, offset, size, pieces);
    Bytes out(pieces.size());
    pieces.copy_to(out);
    return out;
  };
  std::unique_ptr<OpenFile> before = v->open(data, O_RDONLY, keep, direct, notes);
  EXPECT_FALSE(direct);
  const Bytes first = read_through(*before, 0, 100);
  // Our own commit (a vlmeta written through the Volume) keeps the open file readable.
  put(*v, vl, "ours", bytes_of("mine"));
  EXPECT_EQ(read_through(*before, 0, 100), first);
  {
    FrameEditor other(path);
    other.replace_chunk(0, Bytes(Frame::open(path)->read_chunk(0).size(), 0x5a));
    other.commit();
  }
  v->maybe_refresh(notes);
  EXPECT_EQ(errno_of([&] { read_through(*before, 0, 100); }), EIO);
  EXPECT_EQ(errno_of([&] { read_through(*before, 100, 100); }), EIO);
  // Opened now: the new content, past the page cache while the old file is open.
  std::unique_ptr<OpenFile> after = v->open(data, O_RDONLY, keep, direct, notes);
  EXPECT_TRUE(direct);
  EXPECT_FALSE(keep);
  const Bytes now = read_through(*after, 0, 100);
  EXPECT_NE(now, first);
  EXPECT_EQ(read_all(*v, data), read_through(*after, 0, size_t(v->attributes(data).st_size)));
  v->release(std::move(before), notes);
  std::unique_ptr<OpenFile> later = v->open(data, O_RDONLY, keep, direct, notes);
  EXPECT_FALSE(direct);
  EXPECT_EQ(read_through(*later, 0, 100), now);
  v->release(std::move(after), notes);
  v->release(std::move(later), notes);
}

// Writes through the Zarr view (zarr_writes.cc): a writer's temporary file in
// c/ renamed over a chunk key. sharded-1d-i4 (made here: the fixtures' chunks
// are all under the 1 MiB a shard needs): 3 chunks of 1310720 items in blocks
// of 163840 (a shard of 8 inner chunks, each 655360 bytes: blocks over half a
// MiB are not joined into runs); b2nd-2d-u1: chunks
// 110 x 3 in blocks 57 x 3 (plain: C order over the chunk shape).
TEST_F(VolumeWrites, ZarrShardRenamedOverAChunkKey) {
  constexpr size_t kBlock = 655360, kBlocks = 8, kChunk = kBlock * kBlocks;
  const auto path = dir_.path() / "sharded-1d-i4.b2nd";
  {
    NdMeta meta;
    meta.ndim = 1;
    meta.shape = {3 * int64_t(kChunk / 4)};
    meta.chunkshape = {int32_t(kChunk / 4)};
    meta.blockshape = {int32_t(kBlock / 4)};
    meta.dtype = "<i4";
    FrameParams params;
    params.cparams.typesize = 4;
    params.cparams.blocksize = int32_t(kBlock);
    params.chunksize = int32_t(kChunk);
    params.metalayers.push_back(Metalayer{"b2nd", serialize_b2nd_meta(meta)});
    FrameWriter w(path, params);
    for (int n = 0; n < 3; ++n) {
      Bytes chunk(kChunk);
      for (size_t k = 0; k < kChunk; ++k) chunk[k] = uint8_t(n * 31 + k % 251);
      w.append(chunk);
    }
    w.close();
  }
  auto v = mount(path);
  KernelNotes notes;
  ASSERT_NE(text_of(read_all(*v, dir(*v, "zarr.json"))).find("sharding_indexed"), std::string::npos);
  const uint64_t c = dir(*v, "c");
  const uint64_t chunk1 = v->lookup(c, "1").value();
  const Bytes before2 = read_all(*v, v->lookup(c, "2").value());
  // Blocks stored in reverse order, block 3 left to the fill value.
  Bytes shard(kBlock * kBlocks + 16 * kBlocks, 0);
  for (size_t i = 0; i < kBlocks; ++i) {
    const size_t at = (kBlocks - 1 - i) * kBlock;
    for (size_t k = 0; k < kBlock; ++k) shard[at + k] = uint8_t(i * 16 + k % 7);
    uint64_t offset = at, nbytes = kBlock;
    if (i == 3) offset = nbytes = ~uint64_t(0);
    std::memcpy(shard.data() + kBlock * kBlocks + 16 * i, &offset, 8);
    std::memcpy(shard.data() + kBlock * kBlocks + 16 * i + 8, &nbytes, 8);
  }
  auto put_key = [&](const Bytes& content) {
    put(*v, c, "1.0123456789abcdef0123456789abcdef.partial", content);
    return errno_of([&] { v->rename(c, "1.0123456789abcdef0123456789abcdef.partial", c, "1", 0, notes); });
  };
  ASSERT_EQ(put_key(shard), 0);
  EXPECT_FALSE(v->lookup(c, "1.0123456789abcdef0123456789abcdef.partial"));
  const Bytes got = read_all(*v, chunk1);
  ASSERT_EQ(got.size(), kBlock * kBlocks + 16 * kBlocks);
  for (size_t i = 0; i < kBlocks; ++i)
    for (size_t k = 0; k < kBlock; k += 1000)
      EXPECT_EQ(got[i * kBlock + k], i == 3 ? 0 : uint8_t(i * 16 + k % 7)) << "block " << i;
  EXPECT_EQ(read_all(*v, v->lookup(c, "2").value()), before2);
  v->shutdown();
  EXPECT_EQ(Frame::open(path)->read_chunk(1), Bytes(got.begin(), got.begin() + kBlock * kBlocks));

  // Hostile indexes: refused, the chunk unchanged, the temporary file left to its writer.
  auto w = mount(path);
  v.swap(w);
  const Bytes committed = read_all(*v, chunk1);
  auto with_entry = [&](size_t i, uint64_t offset, uint64_t nbytes) {
    Bytes bad = shard;
    std::memcpy(bad.data() + kBlock * kBlocks + 16 * i, &offset, 8);
    std::memcpy(bad.data() + kBlock * kBlocks + 16 * i + 8, &nbytes, 8);
    return bad;
  };
  EXPECT_EQ(put_key(with_entry(0, 0, kBlock - 1)), EINVAL);                  // not one block long
  EXPECT_EQ(put_key(with_entry(0, kBlock * kBlocks, kBlock)), EINVAL);       // into the index
  EXPECT_EQ(put_key(with_entry(0, ~uint64_t(0) - 100, kBlock)), EINVAL);     // wraps around
  EXPECT_EQ(put_key(with_entry(0, ~uint64_t(0), kBlock)), EINVAL);           // half "empty"
  EXPECT_EQ(put_key(Bytes(16 * kBlocks - 1, 0)), EINVAL);                    // shorter than the index
  EXPECT_EQ(read_all(*v, chunk1), committed);
  EXPECT_TRUE(v->lookup(c, "1.0123456789abcdef0123456789abcdef.partial"));
  // Other names in c/, keys out of the grid, writes in place: refused.
  EXPECT_EQ(errno_of([&] { v->create(c, "notes.txt", O_WRONLY | O_CREAT, notes); }), EPERM);
  EXPECT_EQ(errno_of([&] { v->rename(c, "1.0123456789abcdef0123456789abcdef.partial", c, "7", 0, notes); }),
            EPERM);
  EXPECT_EQ(errno_of([&] { v->create(c, "1", O_WRONLY | O_CREAT | O_TRUNC, notes); }), EACCES);
  v->unlink(c, "1.0123456789abcdef0123456789abcdef.partial", notes);
  // Removing a key stores the fill value.
  v->unlink(c, "2", notes);
  EXPECT_EQ(read_all(*v, v->lookup(c, "2").value()).size(), kBlock * kBlocks + 16 * kBlocks);
  v->shutdown();
  EXPECT_EQ(Frame::open(path)->read_chunk(2), Bytes(kBlock * kBlocks, 0));
}

TEST_F(VolumeWrites, ZarrPlainChunkRenamedOverAChunkKey) {
  const auto path = copy("b2nd-2d-u1.b2nd");
  auto v = mount(path);
  KernelNotes notes;
  const uint64_t c0 = v->lookup(dir(*v, "c"), "0").value();
  Bytes plain(110 * 3);
  for (size_t i = 0; i < plain.size(); ++i) plain[i] = uint8_t(i * 7);
  put(*v, c0, "0.ffff.partial", plain);
  EXPECT_EQ(errno_of([&] { v->rename(c0, "0.ffff.partial", c0, "0", 0, notes); }), 0);
  EXPECT_EQ(read_all(*v, v->lookup(c0, "0").value()), plain);
  put(*v, c0, "0.ffff.partial", Bytes(plain.size() + 1));
  EXPECT_EQ(errno_of([&] { v->rename(c0, "0.ffff.partial", c0, "0", 0, notes); }), EINVAL);
  v->shutdown();
  // Block order in the frame: rows 0..56 then 57..109 (and 4 rows of padding).
  const Bytes stored = Frame::open(path)->read_chunk(0);
  EXPECT_EQ(Bytes(stored.begin(), stored.begin() + 330), plain);
}

TEST_F(VolumeWrites, ZarrJsonTakesOnlyAttributeChanges) {
  const auto path = copy("b2nd-1d-i4.b2nd");
  auto v = mount(path);
  KernelNotes notes;
  const uint64_t zj = v->lookup(kRootIno, "zarr.json").value();
  auto meta = nlohmann::json::parse(text_of(read_all(*v, zj)));
  meta["attributes"]["units"] = "K";
  put(*v, kRootIno, "zarr.0123.partial", bytes_of(meta.dump()));
  v->rename(kRootIno, "zarr.0123.partial", kRootIno, "zarr.json", 0, notes);
  EXPECT_EQ(nlohmann::json::parse(text_of(read_all(*v, zj)))["attributes"]["units"], "K");
  EXPECT_EQ(text_of(read_all(*v, v->lookup(dir(*v, "attrs"), "units").value())), "\"K\"\n");
  meta["shape"] = {5};
  put(*v, kRootIno, "zarr.0123.partial", bytes_of(meta.dump()));
  EXPECT_EQ(errno_of([&] { v->rename(kRootIno, "zarr.0123.partial", kRootIno, "zarr.json", 0, notes); }), EPERM);
  EXPECT_EQ(errno_of([&] { v->unlink(kRootIno, "zarr.json", notes); }), EPERM);
  v->unlink(kRootIno, "zarr.0123.partial", notes);
  v->shutdown();
  EXPECT_EQ(msgpack_to_json(vlmeta(path, "units")).value(), Json("K"));
}

}  // namespace
}  // namespace blosc2fs

namespace blosc2fs {
namespace {

using testing::errno_of;

// docs/operations.md: a file the mount makes can be neither removed nor renamed,
// at the top of the tree too (where a removal once dereferenced a null directory).
TEST_F(VolumeWrites, TopFilesAreNeitherRemovedNorRenamed) {
  auto path = copy("metas-vlmetas.b2frame");
  const testing::FrameContent before = testing::read_content(path);
  auto v = mount(path);
  KernelNotes notes;
  for (const char* name : {"frame.json", "index.tsv", "data", ".blosc2fs-cache"}) {
    EXPECT_EQ(errno_of([&] { v->unlink(kRootIno, name, notes); }), EPERM) << name;
    EXPECT_EQ(errno_of([&] { v->rename(kRootIno, name, kRootIno, "renamed", 0, notes); }), EPERM) << name;
  }
  EXPECT_EQ(errno_of([&] { v->rename(kRootIno, "frame.json", kRootIno, "index.tsv", 0, notes); }), EPERM);
  EXPECT_EQ(errno_of([&] { v->unlink(dir(*v, "meta"), "note", notes); }), EPERM);
  EXPECT_EQ(errno_of([&] { v->unlink(kRootIno, "chunks", notes); }), EISDIR);
  v->shutdown();
  EXPECT_EQ(testing::read_content(path), before);
}

// A scratch file renamed onto the next chunk's name adds that chunk; refused
// (bigger than the frame's chunksize), it adds none: no empty chunk is left
// listed for the next commit to store.
TEST_F(VolumeWrites, ARefusedRenameOntoANewChunkAddsNoChunk) {
  auto path = copy("codec-lz4-shuffle-f4.b2frame");  // 6 chunks, chunksize 40000
  const testing::FrameContent before = testing::read_content(path);
  auto v = mount(path);
  KernelNotes notes;
  const uint64_t chunks = dir(*v, "chunks");
  const int64_t n = v->nchunks();
  ASSERT_EQ(n, 6);
  put(*v, chunks, ".big", Bytes(40004, 1));
  EXPECT_EQ(errno_of([&] { v->rename(chunks, ".big", chunks, chunk_file_name(n), 0, notes); }), EFBIG);
  EXPECT_EQ(v->nchunks(), n);
  EXPECT_FALSE(v->lookup(chunks, chunk_file_name(n)).has_value());
  EXPECT_TRUE(v->lookup(chunks, ".big").has_value());  // left to its writer
  // The next commit stores what it was given, and only that.
  put(*v, chunks, ".first", Bytes(40000, 2));
  EXPECT_EQ(errno_of([&] { v->rename(chunks, ".first", chunks, chunk_file_name(0), 0, notes); }), 0);
  EXPECT_EQ(v->nchunks(), n);
  v->unlink(chunks, ".big", notes);
  v->shutdown();
  testing::FrameContent after = testing::read_content(path);
  ASSERT_EQ(after.chunks.size(), before.chunks.size());
  EXPECT_EQ(after.chunks[0], Bytes(40000, 2));
  after.chunks[0] = before.chunks[0];
  EXPECT_EQ(after, before);
}

// An N-d array keeps the chunks its shape needs (python-blosc2 opens it only then).
// array.npy's bytes go out as views of the decoded chunks where a read lies in
// few runs of them (chunks of whole rows: one run each), as one copy where it
// lies in many, or where a write waits in a chunk it reads.
TEST_F(VolumeWrites, ArrayNpyReadsViewChunksOfWholeRowsAndCopyTheRest) {
  auto make = [&](const std::string& name, int32_t chunk_cols) {
    const auto path = dir_.path() / name;
    NdMeta meta;
    meta.ndim = 2;
    meta.shape = {32, 1024};
    meta.chunkshape = {4, chunk_cols};
    meta.blockshape = {2, chunk_cols};
    meta.dtype = "|u1";
    FrameParams params;
    params.cparams.typesize = 1;
    params.cparams.blocksize = 2 * chunk_cols;
    params.chunksize = 4 * chunk_cols;
    params.metalayers.push_back(Metalayer{"b2nd", serialize_b2nd_meta(meta)});
    FrameWriter w(path, params);
    // Item (r, c) is r * 7 + c % 251; chunks in C order of the chunk grid, each its rows.
    for (int32_t cr = 0; cr < 32 / 4; ++cr)
      for (int32_t cc = 0; cc < 1024 / chunk_cols; ++cc) {
        Bytes chunk;
        for (int32_t r = cr * 4; r < cr * 4 + 4; ++r)
          for (int32_t c = cc * chunk_cols; c < (cc + 1) * chunk_cols; ++c) chunk.push_back(uint8_t(r * 7 + c % 251));
        w.append(chunk);
      }
    w.close();
    return path;
  };
  auto items = [] {
    Bytes a;
    for (int r = 0; r < 32; ++r)
      for (int c = 0; c < 1024; ++c) a.push_back(uint8_t(r * 7 + c % 251));
    return a;
  };
  Bytes array = items();
  struct Read {
    size_t pieces;
    Bytes bytes;
  };
  auto read = [](Volume& v, uint64_t ino, int64_t offset, size_t size) {
    KernelNotes notes;
    bool keep = false, direct = false;
    std::unique_ptr<OpenFile> file = v.open(ino, O_RDONLY, keep, direct, notes);
    ReadPieces pieces;
    v.read_pieces(ino, *file, offset, size, pieces);
    Bytes out(pieces.size());
    pieces.copy_to(out);
    v.release(std::move(file), notes);
    return Read{pieces.pieces().size(), out};
  };

  // Chunks of 4 whole rows: a read of all of it is the header and 8 views.
  auto rows = mount(make("rows.b2nd", 1024));
  const uint64_t npy = dir(*rows, "array.npy");
  const int64_t header = rows->attributes(npy).st_size - int64_t(array.size());
  Read all = read(*rows, npy, 0, 1 << 20);
  EXPECT_EQ(all.pieces, 9u);
  EXPECT_TRUE(std::equal(array.begin(), array.end(), all.bytes.begin() + header));
  // From the middle of chunk 2 to the middle of chunk 5: 4 views.
  Read middle = read(*rows, npy, header + 10000, 12000);
  EXPECT_EQ(middle.pieces, 4u);
  EXPECT_EQ(middle.bytes, Bytes(array.begin() + 10000, array.begin() + 22000));
  // A write waiting in chunk 3: a read of it is copied, with the write in it.
  KernelNotes notes;
  bool keep = false, direct = false;
  std::unique_ptr<OpenFile> file = rows->open(npy, O_RDWR, keep, direct, notes);
  rows->write(*file, header + 3 * 4096 + 5, Bytes(3, 0xee), notes);
  std::fill_n(array.begin() + 3 * 4096 + 5, 3, 0xee);
  Read written = read(*rows, npy, header + 10000, 12000);
  EXPECT_EQ(written.pieces, 1u);
  EXPECT_EQ(written.bytes, Bytes(array.begin() + 10000, array.begin() + 22000));
  EXPECT_EQ(read(*rows, npy, header, 4096).pieces, 1u);  // chunk 0 alone holds no write
  rows->flush(*file, notes);
  rows->release(std::move(file), notes);
  all = read(*rows, npy, 0, 1 << 20);
  EXPECT_EQ(all.pieces, 9u);
  EXPECT_TRUE(std::equal(array.begin(), array.end(), all.bytes.begin() + header));
  rows->shutdown();

  // Chunks of 4 rows of 256 items: a read of the whole array lies in 128 runs, one copy.
  array = items();
  auto squares = mount(make("squares.b2nd", 256));
  const uint64_t npy2 = dir(*squares, "array.npy");
  all = read(*squares, npy2, 0, 1 << 20);
  EXPECT_EQ(all.pieces, 1u);
  EXPECT_TRUE(std::equal(array.begin(), array.end(), all.bytes.begin() + header));
  // Half a row: one run in each of three chunks, and no header.
  Read half = read(*squares, npy2, header + 1024 * 5 + 128, 512);
  EXPECT_EQ(half.pieces, 3u);
  EXPECT_EQ(half.bytes, Bytes(array.begin() + 1024 * 5 + 128, array.begin() + 1024 * 5 + 640));
}

TEST_F(VolumeWrites, ArraysKeepTheChunksTheirShapeNeeds) {
  auto path = copy("b2nd-2d-u1.b2nd");
  const testing::FrameContent before = testing::read_content(path);
  auto v = mount(path);
  KernelNotes notes;
  const uint64_t chunks = dir(*v, "chunks"), raw = dir(*v, "raw"), data = dir(*v, "data");
  const int64_t n = v->nchunks();
  const std::string last = chunk_file_name(n - 1);
  EXPECT_EQ(errno_of([&] { v->unlink(chunks, last, notes); }), EPERM);
  EXPECT_EQ(errno_of([&] { v->unlink(raw, last + ".chunk", notes); }), EPERM);
  EXPECT_EQ(errno_of([&] { v->create(chunks, chunk_file_name(n), O_WRONLY | O_CREAT, notes); }), EPERM);
  EXPECT_EQ(errno_of([&] { v->create(raw, chunk_file_name(n) + ".chunk", O_WRONLY | O_CREAT, notes); }), EPERM);
  const int64_t size = v->attributes(data).st_size;
  EXPECT_EQ(errno_of([&] { v->setattr(data, nullptr, size - 1, notes); }), EINVAL);
  EXPECT_EQ(errno_of([&] { v->setattr(data, nullptr, size + 1, notes); }), EINVAL);
  bool keep, direct;
  {
    auto file = v->open(data, O_WRONLY, keep, direct, notes);
    EXPECT_EQ(errno_of([&] { v->write(*file, size, bytes_of("x"), notes); }), EFBIG);
    v->release(std::move(file), notes);
  }
  // Opened with O_TRUNC (cp onto it), data keeps its size and must be written whole.
  {
    auto file = v->open(data, O_WRONLY | O_TRUNC, keep, direct, notes);
    EXPECT_EQ(v->attributes(data).st_size, size);
    v->write(*file, 0, Bytes(size_t(size) / 2, 7), notes);
    EXPECT_EQ(errno_of([&] { v->flush(*file, notes); }), EINVAL);
    v->release(std::move(file), notes);
  }
  // A chunk truncated with no file open is committed at once, and refused.
  const uint64_t chunk0 = v->lookup(chunks, chunk_file_name(0)).value();
  EXPECT_EQ(errno_of([&] { v->setattr(chunk0, nullptr, 0, notes); }), EINVAL);
  // Rewritten whole at its size, a chunk is taken.
  Bytes whole = read_all(*v, chunk0);
  std::reverse(whole.begin(), whole.end());
  put(*v, chunks, chunk_file_name(0), whole);
  v->shutdown();
  testing::FrameContent after = testing::read_content(path);
  EXPECT_EQ(after.chunks.size(), before.chunks.size());
  EXPECT_EQ(after.chunks[0], whole);
  after.chunks[0] = before.chunks[0];
  EXPECT_EQ(after, before);
}

// A commit of chunks written only through array.npy's pages leaves those
// pages in the kernel (a memory map stays mapped and is not read in again):
// array.npy's attributes alone are invalidated. A chunk also written through
// data, or through an array.npy opened with direct I/O, drops them.
TEST_F(VolumeWrites, ArrayNpyPagesStayAfterACommitOfTheirOwnWrites) {
  auto path = copy("b2nd-2d-u1.b2nd");
  auto v = mount(path);
  const uint64_t npy = dir(*v, "array.npy"), data = dir(*v, "data");
  Bytes head(10);
  ASSERT_EQ(v->read(npy, 0, head), head.size());
  ASSERT_EQ(head[6], 1);  // .npy version 1.0: the header's length in bytes 8 and 9
  const int64_t header = 10 + int64_t(head[8] | (head[9] << 8));
  auto has = [](const std::vector<uint64_t>& list, uint64_t ino) {
    return std::find(list.begin(), list.end(), ino) != list.end();
  };
  auto commit_writes = [&](uint64_t ino, int64_t offset, bool direct_io) {
    KernelNotes notes;
    bool keep = false, direct = false;
    std::unique_ptr<OpenFile> file = v->open(ino, O_RDWR, keep, direct, notes);
    file->direct_io = direct_io;  // what the FUSE layer records of the open's reply
    v->write(*file, offset, Bytes{0x5a, 0xa5}, notes);
    v->flush(*file, notes);
    v->release(std::move(file), notes);
    return notes;
  };
  KernelNotes own = commit_writes(npy, header + 3, false);
  EXPECT_FALSE(has(own.inodes, npy));
  EXPECT_TRUE(has(own.attributes, npy));
  EXPECT_TRUE(has(own.inodes, data));  // data's pages showed the old bytes
  EXPECT_TRUE(v->cache_still_valid(npy));

  KernelNotes through_data = commit_writes(data, 1, false);
  EXPECT_TRUE(has(through_data.inodes, npy));
  EXPECT_FALSE(v->cache_still_valid(npy));
  EXPECT_TRUE(v->cache_still_valid(npy));  // that open was recorded

  KernelNotes direct = commit_writes(npy, header + 5, true);
  EXPECT_TRUE(has(direct.inodes, npy));

  // A refused write (a header byte changed, as a memory map's page written
  // back may carry) leaves the kernel's page with bytes the frame lacks: the
  // next commit drops the pages, and only that one.
  {
    KernelNotes notes;
    bool keep = false, direct_io = false;
    std::unique_ptr<OpenFile> file = v->open(npy, O_RDWR, keep, direct_io, notes);
    EXPECT_EQ(errno_of([&] { v->write(*file, 1, Bytes{'X'}, notes); }), EINVAL);
    v->release(std::move(file), notes);
  }
  EXPECT_TRUE(has(commit_writes(npy, header + 9, false).inodes, npy));
  EXPECT_FALSE(has(commit_writes(npy, header + 11, false).inodes, npy));

  // Written through array.npy and then through data before one commit.
  {
    KernelNotes notes;
    bool keep = false, direct_io = false;
    std::unique_ptr<OpenFile> a = v->open(npy, O_RDWR, keep, direct_io, notes);
    std::unique_ptr<OpenFile> d = v->open(data, O_RDWR, keep, direct_io, notes);
    v->write(*a, header + 7, Bytes{1}, notes);
    v->write(*d, 7, Bytes{2}, notes);
    KernelNotes committed;
    v->flush(*a, committed);
    EXPECT_TRUE(has(committed.inodes, npy));
    v->release(std::move(d), notes);
    v->release(std::move(a), notes);
  }
  v->shutdown();
}

// array.npy replaced whole (cp) by bytes that are its new content: the kernel
// keeps the pages the writer left, array.npy's attributes alone are
// invalidated, and the old frame (a sparse frame's old directory with it) is
// closed only after the reply. Under another header (a byte order converted)
// the pages go, and so they do when the replacement is refused.
TEST_F(VolumeWrites, ArrayNpyReplacedByItsOwnBytesKeepsThePagesWritten) {
  auto has = [](const std::vector<uint64_t>& list, uint64_t ino) {
    return std::find(list.begin(), list.end(), ino) != list.end();
  };
  auto entries_of = [](const std::filesystem::path& dir) {
    size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
    return n;
  };
  for (const auto& [name, item] : {std::pair{"b2nd-3d-f8.b2nd", size_t(8)}, std::pair{"b2nd-4d-i2-sframe.b2nd", size_t(2)}}) {
    SCOPED_TRACE(name);
    const auto path = copy(name);
    const size_t files_before = entries_of(path.parent_path());
    auto v = mount(path);
    const uint64_t npy = dir(*v, "array.npy");
    const Bytes whole = read_all(*v, npy);
    ASSERT_GT(whole.size(), 10u);
    const size_t header = 10 + size_t(whole[8] | (whole[9] << 8));
    auto replace = [&](const Bytes& content, int want_errno) {
      KernelNotes notes, committed;
      bool keep = false, direct = false;
      std::unique_ptr<OpenFile> file = v->open(npy, O_WRONLY | O_TRUNC, keep, direct, notes);
      v->write(*file, 0, content, notes);
      EXPECT_EQ(errno_of([&] { v->flush(*file, committed); }), want_errno);
      v->release(std::move(file), notes);
      return committed;
    };

    KernelNotes same = replace(whole, 0);
    EXPECT_FALSE(has(same.inodes, npy));
    EXPECT_TRUE(has(same.attributes, npy));
    EXPECT_EQ(same.release_after_reply.size(), 1u);  // the old frame
    EXPECT_EQ(read_all(*v, npy), whole);
    same.release_after_reply.clear();  // what the notifier does once the notes are sent
    EXPECT_EQ(entries_of(path.parent_path()), files_before);  // the old tree of a sparse frame is gone

    // The same array big-endian: array.npy shows it converted, not the bytes written.
    Bytes swapped = whole;
    const std::string text(swapped.begin(), swapped.begin() + std::ptrdiff_t(header));
    const size_t order = text.find("'<");
    ASSERT_NE(order, std::string::npos);
    swapped[order + 1] = '>';
    for (size_t at = header; at + item <= swapped.size(); at += item)
      std::reverse(swapped.begin() + std::ptrdiff_t(at), swapped.begin() + std::ptrdiff_t(at + item));
    KernelNotes converted = replace(swapped, 0);
    EXPECT_TRUE(has(converted.inodes, npy));
    EXPECT_EQ(read_all(*v, npy), whole);

    // Refused (not a .npy): back to the frame's array, which the pages do not show.
    KernelNotes refused = replace(Bytes(64, 'x'), EINVAL);
    EXPECT_TRUE(has(refused.inodes, npy));
    EXPECT_EQ(read_all(*v, npy), whole);
    v->shutdown();
  }
}

}  // namespace
}  // namespace blosc2fs
