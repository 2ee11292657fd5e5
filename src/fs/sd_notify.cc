#include "sd_notify.h"

#include <systemd/sd-daemon.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <spdlog/spdlog.h>

namespace blosc2fs {

bool notify_systemd(const char* state) noexcept {
  if (state == nullptr) {
    errno = EINVAL;
    return false;
  }
  // Empty is no address (libsystemd would call it invalid): not started by
  // systemd, like unset.
  const char* address = std::getenv("NOTIFY_SOCKET");
  if (address == nullptr || address[0] == '\0') return true;
  // The environment stays set: READY=1 and STOPPING=1 go to the same socket.
  const int sent = sd_notify(/*unset_environment=*/0, state);
  if (sent >= 0) return true;
  try {
    spdlog::warn("cannot notify systemd ({}) at {}: {}", state, address, std::strerror(-sent));
  } catch (...) {
    // Logging must not turn a lost notification into a crash.
  }
  errno = -sent;
  return false;
}

}  // namespace blosc2fs
