// Thin wrappers over the standard mutexes, annotated for Clang's thread safety
// analysis (-Wthread-safety; scripts/check-locks.sh), free elsewhere:
//
//   Mutex mu_;
//   int count_ GUARDED_BY(mu_);
//   void Bump() REQUIRES(mu_);

#ifndef FPSTORE_LIB_UTIL_MUTEX_H_
#define FPSTORE_LIB_UTIL_MUTEX_H_

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#if defined(__clang__)
#define FPSTORE_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define FPSTORE_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) FPSTORE_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY FPSTORE_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) FPSTORE_THREAD_ANNOTATION(guarded_by(x))
#define ACQUIRED_BEFORE(...) FPSTORE_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define REQUIRES(...) FPSTORE_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) FPSTORE_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
#define ACQUIRE(...) FPSTORE_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) FPSTORE_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define RELEASE(...) FPSTORE_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) FPSTORE_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define EXCLUDES(...) FPSTORE_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define NO_THREAD_SAFETY_ANALYSIS FPSTORE_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace fpstore::internal {

class CAPABILITY("mutex") Mutex {
 public:
  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  std::mutex& native() { return mu_; }

 private:
  std::mutex mu_;
};

// Holds a Mutex for a scope.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~MutexLock() RELEASE() { mu_.Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mu_;
};

// Readers share it, a writer holds it alone. glibc's rwlock prefers readers:
// a stream of them can delay a waiting writer.
class CAPABILITY("shared mutex") SharedMutex {
 public:
  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  void LockShared() ACQUIRE_SHARED() { mu_.lock_shared(); }
  void UnlockShared() RELEASE_SHARED() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

class SCOPED_CAPABILITY WriterLock {
 public:
  explicit WriterLock(SharedMutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~WriterLock() RELEASE() { mu_.Unlock(); }
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

 private:
  SharedMutex& mu_;
};

class SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(SharedMutex& mu) ACQUIRE_SHARED(mu) : mu_(mu) { mu_.LockShared(); }
  ~ReaderLock() RELEASE() { mu_.UnlockShared(); }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;

 private:
  SharedMutex& mu_;
};

// A condition variable over a Mutex the caller holds.
class CondVar {
 public:
  void Wait(Mutex& mu) REQUIRES(mu) {
    std::unique_lock lock(mu.native(), std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  // False if `timeout` passed first.
  template <typename Rep, typename Period>
  bool WaitFor(Mutex& mu, std::chrono::duration<Rep, Period> timeout) REQUIRES(mu) {
    std::unique_lock lock(mu.native(), std::adopt_lock);
    const bool woken = cv_.wait_for(lock, timeout) == std::cv_status::no_timeout;
    lock.release();
    return woken;
  }
  void NotifyAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_UTIL_MUTEX_H_
