// What systemd's Type=notify receives from notify_systemd (libsystemd's
// sd_notify): one datagram per state on $NOTIFY_SOCKET.
#include "sd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "fixtures.h"

namespace blosc2fs {
namespace {

using testing::TempDir;

// A bound datagram socket standing in for systemd's notification socket.
class Listener {
 public:
  // `address`: "/path" or "@abstract".
  explicit Listener(const std::string& address) : address_(address) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, address.data(), address.size());
    if (address[0] == '@') addr.sun_path[0] = '\0';
    const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + address.size());
    bound_ = fd_ >= 0 && ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) == 0;
  }
  ~Listener() {
    if (fd_ >= 0) ::close(fd_);
    if (address_[0] == '/') ::unlink(address_.c_str());
  }
  bool bound() const { return bound_; }

  // The next datagram, or "" when none arrives.
  std::string receive() {
    char buf[512];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  }

 private:
  std::string address_;
  int fd_ = -1;
  bool bound_ = false;
};

// Sets or unsets NOTIFY_SOCKET for one test and restores it.
class ScopedNotifySocket {
 public:
  explicit ScopedNotifySocket(const char* value) {
    if (const char* old = std::getenv("NOTIFY_SOCKET")) old_ = old, had_ = true;
    if (value) ::setenv("NOTIFY_SOCKET", value, 1);
    else ::unsetenv("NOTIFY_SOCKET");
  }
  ~ScopedNotifySocket() {
    if (had_) ::setenv("NOTIFY_SOCKET", old_.c_str(), 1);
    else ::unsetenv("NOTIFY_SOCKET");
  }

 private:
  std::string old_;
  bool had_ = false;
};

TEST(SdNotify, SendsReadyToAPathSocket) {
  TempDir dir;
  const std::string path = (dir.path() / "notify").string();
  Listener listener(path);
  ASSERT_TRUE(listener.bound());
  ScopedNotifySocket env(path.c_str());
  EXPECT_TRUE(notify_systemd("READY=1\nSTATUS=serving x"));
  EXPECT_EQ(listener.receive(), "READY=1\nSTATUS=serving x");
  EXPECT_TRUE(notify_systemd("STOPPING=1"));
  EXPECT_EQ(listener.receive(), "STOPPING=1");
  // The variable stays for the next notification.
  EXPECT_STREQ(std::getenv("NOTIFY_SOCKET"), path.c_str());
}

TEST(SdNotify, SendsToAnAbstractSocket) {
  const std::string address = "@blosc2fs-sd-notify-test-" + std::to_string(::getpid());
  Listener listener(address);
  ASSERT_TRUE(listener.bound());
  ScopedNotifySocket env(address.c_str());
  EXPECT_TRUE(notify_systemd("READY=1"));
  EXPECT_EQ(listener.receive(), "READY=1");
}

TEST(SdNotify, IsANoOpWhenUnsetOrEmpty) {
  {
    ScopedNotifySocket env(nullptr);
    errno = 0;
    EXPECT_TRUE(notify_systemd("READY=1"));
    EXPECT_EQ(errno, 0);
  }
  ScopedNotifySocket env("");
  EXPECT_TRUE(notify_systemd("READY=1"));
}

TEST(SdNotify, RejectsUnusableAddresses) {
  const std::pair<std::string, int> cases[] = {{"relative/path", EINVAL}, {std::string(200, '/'), ENAMETOOLONG}};
  for (const auto& [address, error] : cases) {
    ScopedNotifySocket env(address.c_str());
    errno = 0;
    EXPECT_FALSE(notify_systemd("READY=1")) << address;
    EXPECT_EQ(errno, error) << address;
  }
  EXPECT_FALSE(notify_systemd(nullptr));
  EXPECT_EQ(errno, EINVAL);
}

TEST(SdNotify, FailsWithoutAListenerButDoesNotThrow) {
  TempDir dir;
  const std::string path = (dir.path() / "nobody").string();
  ScopedNotifySocket env(path.c_str());
  errno = 0;
  EXPECT_FALSE(notify_systemd("READY=1"));  // logs a warning, nothing else
  EXPECT_EQ(errno, ENOENT);
}

}  // namespace
}  // namespace blosc2fs
