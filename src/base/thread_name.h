// Names the calling thread (15 characters at most), so that `top -H`, `ps -L`,
// perf and gdb show which of the daemon's threads does what. Every thread the
// daemon starts calls it first; a name that is too long is cut, a failure ignored.
#pragma once

#include <pthread.h>

#include <cstring>
#include <string>

namespace blosc2fs {

inline void name_this_thread(const char* name) {
  char cut[16];
  std::strncpy(cut, name, sizeof cut - 1);
  cut[sizeof cut - 1] = '\0';
  ::pthread_setname_np(::pthread_self(), cut);
}

}  // namespace blosc2fs
