#include "log.h"

#include <syslog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <string_view>

#include <fuse_log.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/syslog_sink.h>
#include <spdlog/spdlog.h>

#include "no_cancellation.h"

namespace blosc2fs {

namespace {

// libfuse's workers print a failed read of /dev/fuse with perror() while
// cancellable, and the end of its loop cancels them; one cancelled inside
// perror() keeps stderr's FILE lock for good, and a logger that took that lock
// hung the daemon at its last line (seen when an unmount raced a request).
class StderrDescriptorSink final : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t line;
    formatter_->format(msg, line);
    write_to_stderr(std::string_view(line.data(), line.size()));
  }
  void flush_() override {}
};

void fuse_log_to_spdlog(enum fuse_log_level level, const char* fmt, va_list ap) {
  // Not while it holds the logger's locks: libfuse logs from threads it may cancel.
  NoCancellation no_cancellation;
  char buf[1024];
  int len = std::vsnprintf(buf, sizeof buf, fmt, ap);
  if (len < 0) return;
  std::string_view text(buf, std::min<size_t>(size_t(len), sizeof buf - 1));
  while (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  spdlog::level::level_enum spd = spdlog::level::debug;
  if (level <= FUSE_LOG_ERR) spd = spdlog::level::err;
  else if (level == FUSE_LOG_WARNING) spd = spdlog::level::warn;
  else if (level <= FUSE_LOG_INFO) spd = spdlog::level::info;
  spdlog::log(spd, "fuse: {}", text);
}

}  // namespace

void write_to_stderr(std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(STDERR_FILENO, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // nowhere left to say it
    text.remove_prefix(size_t(n));
  }
}

void init_logging(const std::string& level, bool to_syslog) {
  std::shared_ptr<spdlog::logger> logger;
  if (to_syslog) {
    auto sink = std::make_shared<spdlog::sinks::syslog_sink_mt>("blosc2fs", LOG_PID, LOG_DAEMON, true);
    logger = std::make_shared<spdlog::logger>("blosc2fs", sink);
    logger->set_pattern("%v");
  } else {
    auto sink = std::make_shared<StderrDescriptorSink>();
    logger = std::make_shared<spdlog::logger>("blosc2fs", sink);
    logger->set_pattern("blosc2fs: %H:%M:%S.%e %l: %v");
  }
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(logger);
  fuse_set_log_func(fuse_log_to_spdlog);
}

}  // namespace blosc2fs
