// Telling systemd about the daemon's state (Type=notify services), through
// libsystemd's sd_notify(3): one datagram to the socket named by $NOTIFY_SOCKET.
#pragma once

namespace blosc2fs {

// Sends `state` ("READY=1", "STOPPING=1", "STATUS=...") to $NOTIFY_SOCKET.
// Nothing happens when the variable is unset or empty (not started by systemd
// with Type=notify): returns true. Never throws; when the notification cannot
// be sent it logs a warning, because systemd would otherwise wait silently
// until its start timeout, and returns false with errno set.
bool notify_systemd(const char* state) noexcept;

}  // namespace blosc2fs
