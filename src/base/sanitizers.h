// Whether this build runs under a sanitizer, for the few places that must act
// otherwise there (compilers name it differently: GCC's macros, clang's
// __has_feature).
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define BLOSC2FS_ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BLOSC2FS_ADDRESS_SANITIZER 1
#endif
#endif

// Any sanitizer runtime: address, thread or memory.
#if defined(BLOSC2FS_ADDRESS_SANITIZER) || defined(__SANITIZE_THREAD__)
#define BLOSC2FS_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define BLOSC2FS_SANITIZED 1
#endif
#endif
