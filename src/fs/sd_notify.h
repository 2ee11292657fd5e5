// Telling systemd about the daemon's state (the sd_notify protocol) without
// linking libsystemd: one datagram to the socket named by $NOTIFY_SOCKET.
#pragma once

namespace blosc2fs {

// Sends `state` ("READY=1", "STOPPING=1", "STATUS=...") to $NOTIFY_SOCKET.
// A no-op when the variable is unset or empty (not started by systemd with
// Type=notify). Never throws; a failure is logged once as a warning, because
// systemd would otherwise wait silently until its start timeout.
void notify_systemd(const char* state) noexcept;

// The same to an explicit socket address: "/path" or "@abstract-name".
// Returns false (errno set) when the address is unusable or sending fails.
bool notify_socket(const char* address, const char* state) noexcept;

}  // namespace blosc2fs
