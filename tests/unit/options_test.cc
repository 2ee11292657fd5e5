// The command line: positional arguments, -o lists (also as fstab writes them),
// sizes, create parameters, FUSE pass-through, and the errors for bad input.
#include "options.h"

#include <initializer_list>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace blosc2fs {
namespace {

Options parse(std::initializer_list<const char*> args) {
  std::vector<const char*> argv{"blosc2fs"};
  argv.insert(argv.end(), args.begin(), args.end());
  return parse_command_line(int(argv.size()), argv.data());
}

TEST(Options, FrameAndMountpoint) {
  Options o = parse({"x.b2frame", "/mnt/x"});
  EXPECT_EQ(o.action, Options::Action::mount);
  EXPECT_EQ(o.frame, "x.b2frame");
  EXPECT_EQ(o.mountpoint, "/mnt/x");
  EXPECT_FALSE(o.foreground);
  EXPECT_FALSE(o.debug);
  EXPECT_FALSE(o.single_threaded);
  EXPECT_FALSE(o.read_only.has_value());
  EXPECT_EQ(o.log_level, "info");
  EXPECT_TRUE(o.fuse_options.empty());
}

TEST(Options, Flags) {
  Options o = parse({"-f", "-s", "a", "b"});
  EXPECT_TRUE(o.foreground);
  EXPECT_TRUE(o.single_threaded);
  o = parse({"a", "b", "-d"});
  EXPECT_TRUE(o.debug);
  EXPECT_TRUE(o.foreground);
  EXPECT_EQ(o.log_level, "debug");
  o = parse({"-fs", "a", "b"});
  EXPECT_TRUE(o.foreground && o.single_threaded);
}

TEST(Options, HelpVersionInfo) {
  EXPECT_EQ(parse({"-h"}).action, Options::Action::help);
  EXPECT_EQ(parse({"--help"}).action, Options::Action::help);
  EXPECT_EQ(parse({"-V"}).action, Options::Action::version);
  EXPECT_EQ(parse({"--version"}).action, Options::Action::version);
  Options o = parse({"--info", "f.b2frame"});
  EXPECT_EQ(o.action, Options::Action::info);
  EXPECT_EQ(o.frame, "f.b2frame");
  EXPECT_EQ(parse({"--info=g"}).frame, "g");
  EXPECT_THROW(parse({"--info"}), UsageError);
  EXPECT_THROW(parse({"--info", "a", "b"}), UsageError);
}

TEST(Options, OurOptions) {
  Options o = parse({"-o", "ro,cache_size=256M", "-olog_level=warning", "a", "b", "-o", "uid=1000,gid=100,umask=022"});
  EXPECT_EQ(o.read_only, true);
  EXPECT_EQ(o.cache_size, uint64_t(256) << 20);
  EXPECT_EQ(o.log_level, "warn");
  EXPECT_EQ(o.uid, 1000u);
  EXPECT_EQ(o.gid, 100u);
  EXPECT_EQ(o.umask, mode_t(022));
  EXPECT_EQ(parse({"-o", "rw", "a", "b"}).read_only, false);
  o = parse({"-o", "max_idle_threads=3,max_threads=7,clone_fd", "a", "b"});
  EXPECT_EQ(o.max_idle_threads, 3u);
  EXPECT_EQ(o.max_threads, 7u);
  EXPECT_FALSE(o.read_ahead.has_value());
  EXPECT_EQ(parse({"-o", "read_ahead=8M", "a", "b"}).read_ahead, uint64_t(8) << 20);
  EXPECT_EQ(parse({"-o", "read_ahead=0", "a", "b"}).read_ahead, 0u);
}

TEST(Options, FstabOptionsAreAcceptedAndIgnored) {
  Options o = parse({"a", "b", "-o",
                     "rw,noauto,x-systemd.automount,x-systemd.idle-timeout=60,_netdev,dev,suid,exec,nofail,user,users,"
                     "owner,defaults,auto,comment=x"});
  EXPECT_EQ(o.read_only, false);
  EXPECT_TRUE(o.fuse_options.empty());
}

TEST(Options, FuseOptionsPassThrough) {
  Options o = parse({"-o", "allow_other,default_permissions,fsname=my\\,frame,subtype=b2,max_read=131072,nodev,nosuid,noexec",
                     "a", "b"});
  // default_permissions is accepted but not passed on: fuse_option_list always adds it.
  std::vector<std::string> want{"allow_other", "fsname=my,frame", "subtype=b2",
                                "max_read=131072", "nodev", "nosuid", "noexec"};
  EXPECT_EQ(o.fuse_options, want);
  EXPECT_EQ(fuse_option_list(o, "/f", true), "rw,default_permissions,allow_other,fsname=my\\,frame,subtype=b2,"
                                             "max_read=131072,nodev,nosuid,noexec");
  EXPECT_THROW(parse({"-o", "default_permissions=1", "a", "b"}), UsageError);
}

// Every mount gets default_permissions, whatever the options: from the command
// line, from an fstab line as mount.fuse3 passes it (it drops user and users
// and adds dev,suid; mount(8) may pass user=NAME for a user mount), from the
// systemd units' OPTIONS=.
TEST(Options, DefaultPermissionsOnEveryMount) {
  EXPECT_EQ(fuse_option_list(parse({"a", "b"}), "/data/x,y.b2frame", true),
            "rw,default_permissions,fsname=/data/x\\,y.b2frame,subtype=blosc2fs");
  EXPECT_EQ(fuse_option_list(parse({"-o", "ro", "a", "b"}), "/f", false), "ro,default_permissions,fsname=/f,subtype=blosc2fs");
  for (const char* fstab : {"rw,allow_other,dev,suid", "ro,noauto,x-systemd.automount,user,allow_other",
                            "users,noexec,nosuid,nodev,allow_other", "rw,user=alice,dev,suid,allow_other",
                            "allow_other,uid=0,gid=0,umask=022", "default_permissions,allow_other"}) {
    Options o = parse({"/srv/x.b2frame", "/mnt/x", "-o", fstab});
    const std::string list = fuse_option_list(o, "/srv/x.b2frame", true);
    EXPECT_TRUE(list.starts_with("rw,default_permissions,")) << fstab << " -> " << list;
    EXPECT_NE(list.find(",allow_other"), std::string::npos) << fstab << " -> " << list;
    EXPECT_EQ(list.find("user"), std::string::npos) << fstab << " -> " << list;
    EXPECT_EQ(list.find("default_permissions", list.find("default_permissions") + 1), std::string::npos)
        << "twice: " << list;
  }
  // As the systemd unit runs it: blosc2fs -f $OPTIONS FRAME MOUNTPOINT.
  Options unit = parse({"-f", "-o", "allow_other,cache_size=1G", "/data/x.b2frame", "/mnt/x"});
  EXPECT_EQ(fuse_option_list(unit, "/data/x.b2frame", true),
            "rw,default_permissions,fsname=/data/x.b2frame,subtype=blosc2fs,allow_other");
}

TEST(Options, Sizes) {
  EXPECT_EQ(parse_size("4096", "x"), 4096u);
  EXPECT_EQ(parse_size("256M", "x"), uint64_t(256) << 20);
  EXPECT_EQ(parse_size("2G", "x"), uint64_t(2) << 30);
  EXPECT_EQ(parse_size("2GiB", "x"), uint64_t(2) << 30);
  EXPECT_EQ(parse_size("64k", "x"), uint64_t(64) << 10);
  EXPECT_EQ(parse_size("1.5G", "x"), uint64_t(3) << 29);
  EXPECT_EQ(parse_size("1T", "x"), uint64_t(1) << 40);
  EXPECT_EQ(parse_size("0", "x"), 0u);
  for (const char* bad : {"", "M", "12Q", "1..2", "-5", "12MM", "1e9"}) EXPECT_THROW(parse_size(bad, "x"), UsageError) << bad;
  EXPECT_THROW(parse_size("99999999999T", "x"), UsageError);
}

TEST(Options, DefaultCacheSizeIsBounded) {
  uint64_t size = default_cache_size();
  EXPECT_GE(size, uint64_t(64) << 20);
  EXPECT_LE(size, uint64_t(4) << 30);
}

TEST(Options, CreateParameters) {
  Options o = parse({"-o", "create,codec=lz4hc,clevel=9,typesize=4,chunksize=2M,blocksize=64K,filters=delta+shuffle,sparse",
                     "a", "b"});
  EXPECT_TRUE(o.create.create);
  EXPECT_TRUE(o.create.sparse);
  EXPECT_EQ(o.create.cparams.codec, Codec::lz4hc);
  EXPECT_EQ(o.create.cparams.clevel, 9);
  EXPECT_EQ(o.create.cparams.typesize, 4);
  EXPECT_EQ(o.create.chunksize, 2 << 20);
  EXPECT_EQ(o.create.cparams.blocksize, 64 << 10);
  std::array<uint8_t, kMaxFilters> filters{0, 0, 0, 0, kFilterDelta, kFilterShuffle};
  EXPECT_EQ(o.create.cparams.filters, filters);
  o = parse({"-o", "filters=trunc_prec:10+bitshuffle", "a", "b"});
  EXPECT_EQ(o.create.cparams.filters[4], kFilterTruncPrec);
  EXPECT_EQ(o.create.cparams.filters_meta[4], 10);
  EXPECT_EQ(o.create.cparams.filters[5], kFilterBitshuffle);
  o = parse({"-o", "filters=none", "a", "b"});
  EXPECT_EQ(o.create.cparams.filters, (std::array<uint8_t, kMaxFilters>{}));
  // Defaults: python-blosc2's codec and level.
  o = parse({"a", "b"});
  EXPECT_EQ(o.create.cparams.codec, Codec::zstd);
  EXPECT_EQ(o.create.cparams.clevel, 1);
}

TEST(Options, Errors) {
  EXPECT_THROW(parse({}), UsageError);
  EXPECT_THROW(parse({"a"}), UsageError);
  EXPECT_THROW(parse({"a", "b", "c"}), UsageError);
  EXPECT_THROW(parse({"-x", "a", "b"}), UsageError);
  EXPECT_THROW(parse({"--frobnicate", "a", "b"}), UsageError);
  EXPECT_THROW(parse({"-o"}), UsageError);
  for (const char* bad : {"bogus", "cache_size=", "cache_size=abc", "log_level=loud", "codec=snappy", "clevel=10",
                          "typesize=0", "read_ahead=", "read_ahead=2G", "chunksize=0", "blocksize=1G", "filters=shuffle+foo", "uid=x", "umask=999",
                          "ro=1", "allow_other=yes", "fsname", "max_threads=0",
                          "filters=shuffle+shuffle+shuffle+shuffle+shuffle+shuffle+shuffle"})
    EXPECT_THROW(parse({"-o", bad, "a", "b"}), UsageError) << bad;
}

TEST(Options, PluginPaths) {
  Options o = parse({"-o", "plugin_path=openzl:/opt/p/libblosc2_openzl.so", "a", "b"});
  ASSERT_EQ(o.plugin_paths.size(), 1u);
  EXPECT_EQ(o.plugin_paths[0].name, "openzl");
  EXPECT_EQ(o.plugin_paths[0].library, "/opt/p/libblosc2_openzl.so");
  o = parse({"-o", "plugin_path=openzl:rel/lib.so", "a", "b"});
  EXPECT_TRUE(o.plugin_paths[0].library.is_absolute());  // the daemon changes directory later
  // A path may hold ':' (only the first one separates) and, escaped, ','.
  o = parse({"-o", "ro,plugin_path=openzl:/x:y\\,z/lib.so", "a", "b"});
  EXPECT_EQ(o.plugin_paths[0].library, "/x:y,z/lib.so");
  for (const char* bad : {"plugin_path=openzl", "plugin_path=:/lib.so", "plugin_path=openzl:", "plugin_path=a/b:/l.so",
                          "plugin_path"}) {
    EXPECT_THROW(parse({"-o", bad, "a", "b"}), UsageError) << bad;
  }
  EXPECT_THROW(parse({"-o", "plugin_path=openzl:/a.so,plugin_path=openzl:/b.so", "a", "b"}), UsageError);
  EXPECT_NE(usage_text("blosc2fs").find("plugin_path=NAME:LIB"), std::string::npos);
}

TEST(Options, DoubleDashEndsOptions) {
  Options o = parse({"--", "-weird", "mnt"});
  EXPECT_EQ(o.frame, "-weird");
}

TEST(Options, IoUring) {
  EXPECT_EQ(parse({"a", "b"}).io_uring, IoUringMode::automatic);
  EXPECT_EQ(parse({"-o", "io_uring=auto", "a", "b"}).io_uring, IoUringMode::automatic);
  EXPECT_EQ(parse({"-o", "io_uring=on", "a", "b"}).io_uring, IoUringMode::on);
  EXPECT_EQ(parse({"-o", "ro,io_uring", "a", "b"}).io_uring, IoUringMode::on);  // libfuse's spelling
  EXPECT_EQ(parse({"-o", "io_uring=off", "a", "b"}).io_uring, IoUringMode::off);
  EXPECT_TRUE(parse({"-o", "io_uring=on", "a", "b"}).fuse_options.empty());  // ours, not passed as it is
  EXPECT_THROW(parse({"-o", "io_uring=yes", "a", "b"}), UsageError);
  // A ring thread per CPU is not single-threaded; without io_uring, -s is.
  EXPECT_THROW(parse({"-s", "-o", "io_uring=on", "a", "b"}), UsageError);
  EXPECT_NO_THROW(parse({"-s", "a", "b"}));
  EXPECT_NO_THROW(parse({"-s", "-o", "io_uring=off", "a", "b"}));
}

TEST(Options, UsageMentionsTheCacheStatsFile) {
  EXPECT_NE(usage_text("blosc2fs").find(".blosc2fs-cache"), std::string::npos);
}

TEST(Options, NewArrayShapes) {
  Options o = parse({"-o", "create,chunkshape=10,20,5,codec=lz4,blockshape=5x4x5", "f.b2nd", "m"});
  ASSERT_TRUE(o.create.chunkshape && o.create.blockshape);
  EXPECT_EQ(*o.create.chunkshape, (std::vector<int64_t>{10, 20, 5}));
  EXPECT_EQ(*o.create.blockshape, (std::vector<int64_t>{5, 4, 5}));
  EXPECT_EQ(o.create.cparams.codec, Codec::lz4);
  EXPECT_EQ(*parse({"-o", "chunkshape=7:8", "a", "b"}).create.chunkshape, (std::vector<int64_t>{7, 8}));
  EXPECT_THROW(parse({"-o", "chunkshape=10,0", "a", "b"}), UsageError);
  EXPECT_THROW(parse({"-o", "blockshape=", "a", "b"}), UsageError);
  EXPECT_THROW(parse({"-o", "chunkshape=3,,4", "a", "b"}), UsageError);
}

}  // namespace
}  // namespace blosc2fs
