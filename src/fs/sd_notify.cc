#include "sd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>

#include <spdlog/spdlog.h>

namespace blosc2fs {

namespace {

// Closes the descriptor on every path out, keeping the errno of the failure.
class SocketFd {
 public:
  explicit SocketFd(int fd) : fd_(fd) {}
  SocketFd(const SocketFd&) = delete;
  SocketFd& operator=(const SocketFd&) = delete;
  ~SocketFd() {
    if (fd_ >= 0) {
      const int saved = errno;
      ::close(fd_);
      errno = saved;
    }
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

bool notify_socket(const char* address, const char* state) noexcept {
  if (address == nullptr || state == nullptr) {
    errno = EINVAL;
    return false;
  }
  const size_t length = std::strlen(address);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  // Only file-system and abstract AF_UNIX addresses exist in the protocol
  // systemd 252 speaks; an address that does not fit sun_path cannot be sent to.
  if ((address[0] != '/' && address[0] != '@') || length < 2 || length > sizeof(addr.sun_path)) {
    errno = EINVAL;
    return false;
  }
  std::memcpy(addr.sun_path, address, length);
  if (address[0] == '@') addr.sun_path[0] = '\0';  // the abstract namespace
  // An abstract name is exactly `length` bytes long, without a terminator, so
  // the address length must not include one; a path may carry it.
  socklen_t addr_len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + length);
  if (address[0] == '/' && length < sizeof(addr.sun_path)) ++addr_len;

  SocketFd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return false;
  const size_t state_len = std::strlen(state);
  ssize_t sent;
  do {
    sent = ::sendto(fd.get(), state, state_len, MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&addr),
                    addr_len);
  } while (sent < 0 && errno == EINTR);
  if (sent < 0) return false;
  if (static_cast<size_t>(sent) != state_len) {
    errno = EMSGSIZE;
    return false;
  }
  return true;
}

void notify_systemd(const char* state) noexcept {
  const char* address = std::getenv("NOTIFY_SOCKET");
  if (address == nullptr || address[0] == '\0') return;
  const int saved = errno;
  if (!notify_socket(address, state)) {
    const int error = errno;
    try {
      spdlog::warn("cannot notify systemd ({}) at {}: {}", state == nullptr ? "" : state, address,
                   std::strerror(error));
    } catch (...) {
      // Logging must not turn a lost notification into a crash.
    }
  }
  errno = saved;
}

}  // namespace blosc2fs
