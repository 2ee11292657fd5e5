#include "log.h"

#include <syslog.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <string_view>

#include <fuse_log.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/sinks/syslog_sink.h>
#include <spdlog/spdlog.h>

namespace blosc2fs {

namespace {

void fuse_log_to_spdlog(enum fuse_log_level level, const char* fmt, va_list ap) {
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

void init_logging(const std::string& level, bool to_syslog) {
  std::shared_ptr<spdlog::logger> logger;
  if (to_syslog) {
    auto sink = std::make_shared<spdlog::sinks::syslog_sink_mt>("blosc2fs", LOG_PID, LOG_DAEMON, true);
    logger = std::make_shared<spdlog::logger>("blosc2fs", sink);
    logger->set_pattern("%v");
  } else {
    auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    logger = std::make_shared<spdlog::logger>("blosc2fs", sink);
    logger->set_pattern("blosc2fs: %H:%M:%S.%e %l: %v");
  }
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(logger);
  fuse_set_log_func(fuse_log_to_spdlog);
}

}  // namespace blosc2fs
