// Power loss at any instant of a commit: for each edit, take the plan and build
// the on-disk state after every prefix of its steps, after a torn version of
// each write, and with the writes since the last fsync lost; every such state
// must open, decode completely and equal either the old or the new content.
//
// Model: every write may be torn (only its first half lands), except a write
// into the live header that fits in one 512-byte sector (the 87-byte header
// switch, small in-place metalayer writes): disks write a sector atomically,
// and the protocol's switch relies on that (docs/commit-protocol.md). Writes issued after the last fsync
// may be lost; a lost create leaves an empty file.
#include "frame_editor.h"

#include <cstdio>
#include <fstream>

#include <gtest/gtest.h>

#include "fixtures.h"
#include "frame_editor_test_util.h"

namespace blosc2fs::testing {
namespace {

namespace fs = std::filesystem;
using Kind = CommitStep::Kind;

constexpr int64_t kSector = 512;

// Writes that rely on the disk's sector atomicity: sub-sector writes into the
// live header of the frame file (the fixed-header switch, in-place metalayers).
bool relies_on_sector_atomicity(const CommitStep& s, const fs::path& frame_file, int64_t header_len) {
  return s.kind == Kind::write && !s.create && s.path == frame_file &&
         s.offset % kSector + int64_t(s.payload().size()) <= kSector &&
         s.offset + int64_t(s.payload().size()) <= header_len;
}

// Applies the state-changing steps (syncs change nothing in this model).
void apply(const std::vector<CommitStep>& steps) {
  CommitPlan todo;
  for (const auto& s : steps)
    if (s.kind != Kind::fsync && s.kind != Kind::fsync_dir) todo.push_back(s);
  execute_commit_plan(todo);
}

struct Scenario {
  std::string name;
  std::string fixture;
  std::function<void(const fs::path&)> prepare;  // history made before the tested commit
  std::function<void(FrameEditor&)> edit;
  bool compaction = false;
  std::function<void(const CommitPlan&)> check_plan;
};

void run(const Scenario& sc) {
  SCOPED_TRACE(sc.name);
  TempDir tmp;
  const fs::path pristine = copy_frame(frame_path(sc.fixture), tmp.path() / "pristine" / sc.fixture);
  if (sc.prepare) sc.prepare(pristine);
  const fs::path work = tmp.path() / "work" / sc.fixture;
  // The whole directory: compaction's temporary file lives beside the frame.
  auto reset = [&] {
    fs::remove_all(work.parent_path());
    copy_frame(pristine, work);
  };
  reset();

  CommitPlan plan;
  {
    FrameEditor ed(work);
    if (sc.edit) sc.edit(ed);
    plan = sc.compaction ? ed.plan_compaction() : ed.plan_commit();
  }
  ASSERT_FALSE(plan.empty());
  if (sc.check_plan) sc.check_plan(plan);
  const FrameContent old_content = read_content(work);
  const int64_t header_len = Frame::open(work)->header().header_len;
  execute_commit_plan(plan);
  const FrameContent new_content = read_content(work);
  if (sc.compaction) {
    EXPECT_EQ(new_content, old_content);
  } else {
    EXPECT_NE(new_content, old_content);
  }

  int states = 0;
  auto check = [&](const std::vector<CommitStep>& steps, const std::string& what, bool then_commit) {
    reset();
    apply(steps);
    FrameContent got;
    try {
      got = read_content(work);
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << ": the frame does not open or decode: " << e.what();
      return;
    }
    ++states;
    EXPECT_TRUE(got == old_content || got == new_content) << what << ": neither old nor new: " << describe(got);
    if (!then_commit) return;
    // The next writer copes with whatever the crash left behind.
    FrameEditor next(work);
    next.set_vlmetalayer("after-crash", to_bytes(what));
    next.commit();
    FrameContent after = read_content(work);
    EXPECT_EQ(after.chunks, got.chunks) << what;
    if (next.frame().sparse()) {
      EXPECT_EQ(next.unused_bytes(), 0) << what;
    }
  };

  int atomic_writes = 0;
  for (size_t k = 0; k <= plan.size(); ++k) {
    std::vector<CommitStep> prefix(plan.begin(), plan.begin() + std::ptrdiff_t(k));
    check(prefix, "after " + std::to_string(k) + " steps", true);
    if (k == 0 || plan[k - 1].kind != Kind::write) continue;
    if (relies_on_sector_atomicity(plan[k - 1], work, header_len)) {
      ++atomic_writes;
    } else {
      std::vector<CommitStep> torn = prefix;
      const ByteSpan whole = torn.back().payload();
      Bytes half(whole.begin(), whole.begin() + std::ptrdiff_t(whole.size() / 2));
      torn.back().data = std::move(half);
      torn.back().borrowed = {};
      check(torn, "torn step " + std::to_string(k - 1), false);
    }
    // Writes since the last sync may not have reached the disk.
    size_t first_unsynced = 0;
    for (size_t j = 0; j + 1 < k; ++j)
      if (plan[j].kind == Kind::fsync || plan[j].kind == Kind::fsync_dir) first_unsynced = j + 1;
    for (size_t j = first_unsynced; j + 1 < k; ++j) {
      if (plan[j].kind != Kind::write) continue;
      std::vector<CommitStep> lost;
      for (size_t i = 0; i < k; ++i) {
        if (i != j) lost.push_back(plan[i]);
        else if (plan[i].create) lost.push_back(plan[i]), lost.back().data.clear(), lost.back().borrowed = {};
      }
      check(lost, "step " + std::to_string(j) + " lost before step " + std::to_string(k - 1), false);
    }
  }
  EXPECT_GE(states, int(plan.size()) + 1);
  ::testing::Test::RecordProperty("states", states);
  std::printf("%s: %zu steps, %d states checked, %d sector-atomic header writes\n", sc.name.c_str(), plan.size(), states,
              atomic_writes);
}

void prepare_commits(const fs::path& p, const std::function<void(FrameEditor&)>& edit, int times) {
  FrameEditor ed(p);
  for (int i = 0; i < times; ++i) {
    edit(ed);
    ed.commit();
  }
}

bool has_step(const CommitPlan& plan, Kind kind) {
  return std::any_of(plan.begin(), plan.end(), [&](const CommitStep& s) { return s.kind == kind; });
}

TEST(PowerLoss, VlmetaSet) {
  run({"vlmeta-set", "metas-vlmetas.b2frame", nullptr,
       [](FrameEditor& ed) { ed.set_vlmetalayer("added", make_data(300, 1)); }});
}

TEST(PowerLoss, VlmetaRemove) {
  run({"vlmeta-remove", "metas-vlmetas.b2frame", nullptr, [](FrameEditor& ed) { ed.remove_vlmetalayer("big"); }});
}

TEST(PowerLoss, VlmetaIntoTheGapLeftByThePreviousTrailer) {
  run({"vlmeta-slack", "frame_simple-lz4.b2frame",
       [](const fs::path& p) {
         // Two trailer moves leave [index][T0][T1][T2]: the short one fits in T0+T1.
         prepare_commits(p, [](FrameEditor& ed) { ed.set_vlmetalayer("counter", make_data(400, 2)); }, 2);
       },
       [](FrameEditor& ed) { ed.set_vlmetalayer("counter", to_bytes("short")); }, false,
       [](const CommitPlan& plan) { EXPECT_TRUE(has_step(plan, Kind::truncate)); }});
}

TEST(PowerLoss, ChunkReplace) {
  run({"chunk-replace", "mutated-cframe-i4.b2frame", nullptr,
       [](FrameEditor& ed) { ed.replace_chunk(2, make_data(20000, 3)); }});
}

TEST(PowerLoss, Append) {
  run({"append", "frame_simple-lz4.b2frame", nullptr, [](FrameEditor& ed) {
         ed.append_chunk(make_data(200000, 4));
         ed.append_chunk(make_data(1000, 5));
       }});
}

TEST(PowerLoss, BigChunksWrittenEachFromItsOwnBuffer) {
  // Chunks of 1 MiB or more stored are written by steps of their own, between
  // the tail's pieces: every prefix and every torn write still reads as the old
  // frame or the new one.
  run({"big-chunks", "varchunks-lz4-3.0.0.b2frame", nullptr,
       [](FrameEditor& ed) {
         ed.append_chunk(random_data(1536 << 10, 10));
         ed.append_chunk(make_data(1000, 11));
         ed.append_chunk(random_data(1200 << 10, 12));
       },
       false, [](const CommitPlan& plan) {
         std::vector<const CommitStep*> writes;
         for (const CommitStep& s : plan) {
           if (s.kind == Kind::fsync) break;
           writes.push_back(&s);
         }
         ASSERT_EQ(writes.size(), 4u);  // a big chunk, the small one, a big chunk, index and trailer
         EXPECT_GE(writes[0]->payload().size(), size_t(1536) << 10);
         EXPECT_LT(writes[1]->payload().size(), size_t(64) << 10);
         EXPECT_GE(writes[2]->payload().size(), size_t(1200) << 10);
         for (size_t i = 1; i < writes.size(); ++i)
           EXPECT_EQ(writes[i]->offset, writes[i - 1]->offset + int64_t(writes[i - 1]->payload().size()));
       }});
}

TEST(PowerLoss, Truncate) {
  run({"truncate", "mutated-cframe-i4.b2frame", nullptr, [](FrameEditor& ed) { ed.truncate_chunks(2); }});
}

TEST(PowerLoss, MetalayerWrite) {
  run({"metalayer", "metas-vlmetas.b2frame", nullptr,
       [](FrameEditor& ed) { ed.set_metalayer("rawbytes", make_data(16, 6)); }});
}

TEST(PowerLoss, CombinedChunkAndVlmetaEdits) {
  run({"combined", "mutated-cframe-i4.b2frame", nullptr, [](FrameEditor& ed) {
         ed.set_vlmetalayer("history", to_bytes("rewritten"));
         ed.replace_chunk(0, Bytes(20000, 0));
         ed.replace_chunk(4, make_data(20000, 7));
         ed.append_chunk(make_data(5000, 8));
       }});
}

TEST(PowerLoss, FirstChunkOfAnEmptyFrame) {
  run({"empty-first-chunk", "empty-with-vlmeta.b2frame", nullptr,
       [](FrameEditor& ed) { ed.append_chunk(make_data(4000, 9)); }});
}

TEST(PowerLoss, VlmetaOfAFrameWithoutData) {
  run({"empty-vlmeta", "empty-with-vlmeta.b2frame", nullptr,
       [](FrameEditor& ed) { ed.set_vlmetalayer("comment", make_data(700, 9)); }, false,
       [](const CommitPlan& plan) { EXPECT_TRUE(has_step(plan, Kind::rename)); }});
}

TEST(PowerLoss, TruncateToNothing) {
  run({"truncate-all", "mutated-cframe-i4.b2frame", nullptr, [](FrameEditor& ed) { ed.truncate_chunks(0); }});
}

TEST(PowerLoss, VariableFrameZeroChunk) {
  run({"variable-zeros", "varchunks-lz4-3.0.0.b2frame", nullptr, [](FrameEditor& ed) {
         ed.replace_chunk(2, make_data(777, 10));
         ed.append_chunk(Bytes(900, 0));
       }});
}

TEST(PowerLoss, FillSpecialReplace) {
  run({"fill-special", "fill-special-zeros-f8.b2frame", nullptr,
       [](FrameEditor& ed) { ed.replace_chunk(4, make_data(80000, 11)); }});
}

TEST(PowerLoss, SparseChunkReplaceWithLeftovers) {
  run({"sframe-replace", "sframe-mutated-i4.b2frame",
       [](const fs::path& p) { std::ofstream(p / "00000001.chunk") << "leftover of an earlier crash"; },
       [](FrameEditor& ed) {
         ed.replace_chunk(1, make_data(16000, 12));
         ed.replace_chunk(3, Bytes(16000, 0));
       }});
}

TEST(PowerLoss, SparseAppendVlmetaAndMetalayer) {
  run({"sframe-b2nd", "b2nd-4d-i2-sframe.b2nd", nullptr, [](FrameEditor& ed) {
         ed.replace_chunk(23, make_data(2304, 13));
         ed.set_vlmetalayer("note", to_bytes("sparse"));
         Bytes meta = ed.frame().find_metalayer("b2nd")->content;
         ed.set_metalayer("b2nd", meta);
       }});
}

TEST(PowerLoss, SparseTruncate) {
  run({"sframe-truncate", "sframe-mutated-i4.b2frame", nullptr, [](FrameEditor& ed) { ed.truncate_chunks(2); }});
}

TEST(PowerLoss, Compaction) {
  run({"compaction", "mutated-cframe-i4.b2frame",
       [](const fs::path& p) {
         int round = 0;
         prepare_commits(p, [&](FrameEditor& ed) {
           ed.replace_chunk(round % 6, make_data(20000, uint32_t(20 + round)));
           ed.set_vlmetalayer("round", to_bytes(std::to_string(round++)));
         }, 4);
       },
       nullptr, true,
       [](const CommitPlan& plan) {
         EXPECT_TRUE(has_step(plan, Kind::rename));
         EXPECT_TRUE(has_step(plan, Kind::fsync_dir));
       }});
}

TEST(PowerLoss, SparseCompaction) {
  run({"sframe-compaction", "sframe-mutated-i4.b2frame",
       [](const fs::path& p) {
         std::ofstream(p / "00000007.chunk") << std::string(3000, 'x');
         std::ofstream(p / "00000001.chunk");
       },
       nullptr, true});
}

}  // namespace
}  // namespace blosc2fs::testing
