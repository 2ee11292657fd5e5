// Locks the compiler checks: clang's thread-safety analysis (-Wthread-safety,
// on in every clang build, the sanitizer build of the test run among them) proves
// that members marked GUARDED_BY(m) are touched only with m held and that
// functions marked REQUIRES(m) are called only with it. libstdc++'s mutexes
// carry no annotations, so the project's locks are these thin wrappers, and
// the guards below the only way to hold them. Under gcc the macros are empty.
#pragma once

#include <mutex>
#include <shared_mutex>

#if defined(__clang__)
#define BLOSC2FS_THREAD_ATTRIBUTE(x) __attribute__((x))
#else
#define BLOSC2FS_THREAD_ATTRIBUTE(x)
#endif

#define CAPABILITY(x) BLOSC2FS_THREAD_ATTRIBUTE(capability(x))
#define SCOPED_CAPABILITY BLOSC2FS_THREAD_ATTRIBUTE(scoped_lockable)
#define GUARDED_BY(x) BLOSC2FS_THREAD_ATTRIBUTE(guarded_by(x))
#define PT_GUARDED_BY(x) BLOSC2FS_THREAD_ATTRIBUTE(pt_guarded_by(x))
#define ACQUIRED_BEFORE(...) BLOSC2FS_THREAD_ATTRIBUTE(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) BLOSC2FS_THREAD_ATTRIBUTE(acquired_after(__VA_ARGS__))
#define REQUIRES(...) BLOSC2FS_THREAD_ATTRIBUTE(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) BLOSC2FS_THREAD_ATTRIBUTE(requires_shared_capability(__VA_ARGS__))
#define ACQUIRE(...) BLOSC2FS_THREAD_ATTRIBUTE(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) BLOSC2FS_THREAD_ATTRIBUTE(acquire_shared_capability(__VA_ARGS__))
#define RELEASE(...) BLOSC2FS_THREAD_ATTRIBUTE(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) BLOSC2FS_THREAD_ATTRIBUTE(release_shared_capability(__VA_ARGS__))
#define RELEASE_GENERIC(...) BLOSC2FS_THREAD_ATTRIBUTE(release_generic_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) BLOSC2FS_THREAD_ATTRIBUTE(try_acquire_capability(__VA_ARGS__))
#define EXCLUDES(...) BLOSC2FS_THREAD_ATTRIBUTE(locks_excluded(__VA_ARGS__))
#define NO_THREAD_SAFETY_ANALYSIS BLOSC2FS_THREAD_ATTRIBUTE(no_thread_safety_analysis)

namespace blosc2fs {

class CAPABILITY("mutex") Mutex {
 public:
  void lock() ACQUIRE() { m_.lock(); }
  void unlock() RELEASE() { m_.unlock(); }
  bool try_lock() TRY_ACQUIRE(true) { return m_.try_lock(); }
  std::mutex& native() { return m_; }  // for std::condition_variable, under the same lock

 private:
  std::mutex m_;
};

// Readers share it; a writer holds it alone.
class CAPABILITY("mutex") SharedMutex {
 public:
  void lock() ACQUIRE() { m_.lock(); }
  void unlock() RELEASE() { m_.unlock(); }
  void lock_shared() ACQUIRE_SHARED() { m_.lock_shared(); }
  void unlock_shared() RELEASE_SHARED() { m_.unlock_shared(); }

 private:
  std::shared_mutex m_;
};

// Holds a Mutex for its scope.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& m) ACQUIRE(m) : m_(m) { m_.lock(); }
  ~MutexLock() RELEASE() { m_.unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& m_;
};

// Holds a SharedMutex for its scope, shared.
class SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(SharedMutex& m) ACQUIRE_SHARED(m) : m_(m) { m_.lock_shared(); }
  ~ReaderLock() RELEASE() { m_.unlock_shared(); }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;

 private:
  SharedMutex& m_;
};

// Holds a SharedMutex for its scope, alone.
class SCOPED_CAPABILITY WriterLock {
 public:
  explicit WriterLock(SharedMutex& m) ACQUIRE(m) : m_(m) { m_.lock(); }
  ~WriterLock() RELEASE() { m_.unlock(); }
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

 private:
  SharedMutex& m_;
};

}  // namespace blosc2fs
