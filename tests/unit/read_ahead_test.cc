// Finding the backing device of our mount in /proc/self/mountinfo text.
#include "read_ahead.h"

#include <gtest/gtest.h>

namespace blosc2fs {
namespace {

constexpr const char* kMountinfo =
    "22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
    "40 22 0:45 / /mnt/a rw,nosuid,nodev,relatime shared:20 - fuse.blosc2fs x.b2frame rw,user_id=0\n"
    "41 22 0:46 / /mnt/with\\040space rw,relatime - fuse.blosc2fs y rw,user_id=0\n"
    "42 40 0:47 / /mnt/a rw,relatime master:3 - fuse.blosc2fs z rw,user_id=0\n"
    "43 22 0:48 / /mnt/tmp rw - tmpfs tmpfs rw\n"
    "garbage line\n";

TEST(ReadAhead, TheLastFuseMountAtThePathWins) {
  EXPECT_EQ(read_ahead_file(kMountinfo, "/mnt/a"), "/sys/class/bdi/0:47/read_ahead_kb");
}

TEST(ReadAhead, EscapedMountpoints) {
  EXPECT_EQ(read_ahead_file(kMountinfo, "/mnt/with space"), "/sys/class/bdi/0:46/read_ahead_kb");
}

TEST(ReadAhead, OnlyFuseMountsMatch) {
  EXPECT_EQ(read_ahead_file(kMountinfo, "/mnt/tmp"), std::nullopt);
  EXPECT_EQ(read_ahead_file(kMountinfo, "/"), std::nullopt);
  EXPECT_EQ(read_ahead_file(kMountinfo, "/mnt/b"), std::nullopt);
  EXPECT_EQ(read_ahead_file("", "/mnt/a"), std::nullopt);
}

}  // namespace
}  // namespace blosc2fs
