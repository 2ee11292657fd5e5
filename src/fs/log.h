// Logging: spdlog to stderr in the foreground, to syslog once daemonized.
// libfuse's own messages are routed through the same logger.
#pragma once

#include <string>
#include <string_view>

namespace blosc2fs {

// Installs the default logger at `level` (trace, debug, info, warn, error):
// stderr, or syslog (ident "blosc2fs", facility daemon) when `to_syslog`.
// Also routes libfuse's log messages into it.
void init_logging(const std::string& level, bool to_syslog);

// Writes `text` to descriptor 2 with write(2), bypassing stdio's `stderr`,
// whose lock a libfuse worker cancelled at the end of the FUSE loop can hold
// for good. Every message that can follow the loop goes this way.
void write_to_stderr(std::string_view text);

}  // namespace blosc2fs
