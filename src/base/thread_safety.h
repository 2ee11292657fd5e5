// Locks the compiler checks: clang's thread-safety analysis (-Wthread-safety,
// on in every clang build, the sanitizer build of the test run among them) proves
// that members marked GUARDED_BY(m) are touched only with m held and that
// functions marked REQUIRES(m) are called only with it; -Wthread-safety-beta
// adds the order ACQUIRED_BEFORE / ACQUIRED_AFTER declare. libstdc++'s mutexes
// carry no annotations, so the project's locks are these thin wrappers, and
// the guards below the only way to hold them. Under gcc the macros are empty.
#pragma once

#include <mutex>
#include <shared_mutex>
#include <utility>

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
#define RETURN_CAPABILITY(x) BLOSC2FS_THREAD_ATTRIBUTE(lock_returned(x))
#define ASSERT_CAPABILITY(x) BLOSC2FS_THREAD_ATTRIBUTE(assert_capability(x))
#define ASSERT_SHARED_CAPABILITY(x) BLOSC2FS_THREAD_ATTRIBUTE(assert_shared_capability(x))
#define NO_THREAD_SAFETY_ANALYSIS BLOSC2FS_THREAD_ATTRIBUTE(no_thread_safety_analysis)

namespace blosc2fs {

class CAPABILITY("mutex") Mutex {
 public:
  void lock() ACQUIRE() { m_.lock(); }
  void unlock() RELEASE() { m_.unlock(); }
  bool try_lock() TRY_ACQUIRE(true) { return m_.try_lock(); }
  std::mutex& native() { return m_; }  // for std::condition_variable, under the same lock
  // Tells the analysis the lock is held where it cannot see it taken (taken
  // conditionally, or by a caller that names it by another path); checks
  // nothing at run time.
  void assert_held() const ASSERT_CAPABILITY(this) {}

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
  // As Mutex::assert_held: for code run under the lock that the analysis cannot follow.
  void assert_held() const ASSERT_CAPABILITY(this) {}
  void assert_held_shared() const ASSERT_SHARED_CAPABILITY(this) {}

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

// Holds a Mutex, or not: taken at once, or deferred and then taken or tried;
// released early if need be. Movable, so that a function can hand a held lock
// to its caller (the analysis does not follow it there: the caller is not
// told the lock is held).
class SCOPED_CAPABILITY UniqueMutexLock {
 public:
  UniqueMutexLock() = default;  // holds nothing
  explicit UniqueMutexLock(Mutex& m) ACQUIRE(m) : m_(&m), held_(true) { m_->lock(); }
  UniqueMutexLock(Mutex& m, std::defer_lock_t) EXCLUDES(m) : m_(&m) {}
  ~UniqueMutexLock() RELEASE() {
    if (held_) m_->unlock();
  }
  UniqueMutexLock(UniqueMutexLock&& other) noexcept
      : m_(std::exchange(other.m_, nullptr)), held_(std::exchange(other.held_, false)) {}
  UniqueMutexLock& operator=(UniqueMutexLock&& other) noexcept NO_THREAD_SAFETY_ANALYSIS {  // moves, locks nothing
    if (held_) m_->unlock();
    m_ = std::exchange(other.m_, nullptr);
    held_ = std::exchange(other.held_, false);
    return *this;
  }

  void lock() ACQUIRE() {
    m_->lock();
    held_ = true;
  }
  bool try_lock() TRY_ACQUIRE(true) { return held_ = m_->try_lock(); }
  void unlock() RELEASE() {
    m_->unlock();
    held_ = false;
  }

 private:
  Mutex* m_ = nullptr;
  bool held_ = false;
};

// Holds a SharedMutex for its scope (or until unlock()), shared.
class SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(SharedMutex& m) ACQUIRE_SHARED(m) : m_(m) { m_.lock_shared(); }
  ~ReaderLock() RELEASE() {
    if (held_) m_.unlock_shared();
  }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;
  void unlock() RELEASE() {
    m_.unlock_shared();
    held_ = false;
  }

 private:
  SharedMutex& m_;
  bool held_ = true;
};

// Holds a SharedMutex for its scope (or until unlock()), alone.
class SCOPED_CAPABILITY WriterLock {
 public:
  explicit WriterLock(SharedMutex& m) ACQUIRE(m) : m_(m) { m_.lock(); }
  ~WriterLock() RELEASE() {
    if (held_) m_.unlock();
  }
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;
  void unlock() RELEASE() {
    m_.unlock();
    held_ = false;
  }

 private:
  SharedMutex& m_;
  bool held_ = true;
};

}  // namespace blosc2fs
