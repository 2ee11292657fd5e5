// Logging: spdlog to stderr in the foreground, to syslog once daemonized.
// libfuse's own messages are routed through the same logger.
#pragma once

#include <string>

namespace blosc2fs {

// Installs the default logger at `level` (trace, debug, info, warn, error):
// stderr, or syslog (ident "blosc2fs", facility daemon) when `to_syslog`.
// Also routes libfuse's log messages into it.
void init_logging(const std::string& level, bool to_syslog);

}  // namespace blosc2fs
