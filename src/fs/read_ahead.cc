#include "read_ahead.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string_view>
#include <vector>

#include <spdlog/spdlog.h>

namespace blosc2fs {

namespace {

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape_mountinfo(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    auto octal = [&](size_t k) { return s[k] >= '0' && s[k] <= '7'; };
    if (s[i] == '\\' && s.size() - i >= 4 && s[i + 1] <= '3' && octal(i + 1) && octal(i + 2) && octal(i + 3)) {
      out.push_back(char((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

}  // namespace

std::optional<std::string> read_ahead_file(const std::string& mountinfo, const std::filesystem::path& mountpoint) {
  std::optional<std::string> found;
  std::istringstream lines(mountinfo);
  std::string line;
  while (std::getline(lines, line)) {
    // ID PARENT MAJOR:MINOR ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string w; fields >> w;) f.push_back(w);
    if (f.size() < 7) continue;
    size_t dash = 6;
    while (dash < f.size() && f[dash] != "-") ++dash;
    if (dash + 1 >= f.size()) continue;
    const std::string& fstype = f[dash + 1];
    if (fstype != "fuse" && !fstype.starts_with("fuse.")) continue;
    if (unescape_mountinfo(f[4]) != mountpoint.string()) continue;
    found = "/sys/class/bdi/" + f[2] + "/read_ahead_kb";
  }
  return found;
}

void ReadAheadSetter::apply_once() noexcept {
  if (done_.load(std::memory_order_acquire)) return;
  if (done_.exchange(true, std::memory_order_acq_rel)) return;
  apply();
}

void ReadAheadSetter::apply() noexcept {
  if (kib_ == 0) return;
  try {
    std::ifstream in("/proc/self/mountinfo");
    std::stringstream text;
    text << in.rdbuf();
    std::optional<std::string> file = read_ahead_file(text.str(), mountpoint_);
    if (!file) {
      spdlog::debug("readahead left at the kernel's default: {} not found in /proc/self/mountinfo",
                    mountpoint_.string());
      return;
    }
    std::ofstream out(*file);
    out << kib_ << "\n";
    out.flush();
    if (!out) {
      // Not root: the kernel's 128 KiB stays (docs/performance.md, "Reading fast").
      spdlog::info("readahead left at the kernel's default: cannot write {} ({})", *file, std::strerror(errno));
      return;
    }
    spdlog::debug("readahead {} KiB ({})", kib_, *file);
  } catch (const std::exception& e) {
    spdlog::info("readahead left at the kernel's default: {}", e.what());
  }
}

}  // namespace blosc2fs
