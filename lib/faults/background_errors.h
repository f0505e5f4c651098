// RocksDB's background errors as the store sees them. A hard one (a flush, a log or a MANIFEST
// write that failed: a full disk, a failing device) stops the handle for good: writes return the
// error until the store is closed and opened again, as the next write does (reopening_store.h,
// docs/reliability.md, "A full disk").
//
// RocksDB 7.8 would resume by itself once space is freed (its SstFileManager polls for it), but
// the resumed handle still counts itself stopped: a flush returns before it is done and an
// ingestion takes file number 0 (an assertion in Debian's build, a table file written over in
// one without). So the listener turns that recovery off, and ingestions ask here first.
//
// RocksDB behaviour covered:
// RocksDbBehaviour.FlushOfADbResumedAfterAHardErrorReturnsBeforeItIsDone,
// RocksDbBehaviourDeathTest.IngestionIntoADbResumedAfterAHardErrorTakesFileNumberZero and
// RocksDbBehaviour.HardBackgroundErrorStopsWritesUntilTheDbIsReopened. Retire when: a resumed
// handle flushes and ingests like a fresh one; with RocksDB's own recovery on, the reopening
// handle (reopening_store.h) goes too.
//
// Thread safety: thread-safe.

#ifndef FPSTORE_LIB_FAULTS_BACKGROUND_ERRORS_H_
#define FPSTORE_LIB_FAULTS_BACKGROUND_ERRORS_H_

#include <rocksdb/listener.h>

#include <atomic>
#include <cstdint>
#include <memory>

#include "fpstore/status.h"
#include "util/mutex.h"

namespace fpstore::internal {

class BackgroundErrors {
 public:
  // OK until RocksDB meets a hard background error; then an IOError naming it, for good.
  Status Stopped() const EXCLUDES(mu_);

  // Background errors of any severity reported so far.
  std::uint64_t reported() const { return reported_.load(); }

  // The listener's: counts `error`; keeps the first hard one.
  void Report(const rocksdb::Status& error) EXCLUDES(mu_);

  // Records hard errors in `errors` and keeps RocksDB from resuming after them.
  static std::shared_ptr<rocksdb::EventListener> MakeListener(
      std::shared_ptr<BackgroundErrors> errors);

 private:
  mutable Mutex mu_;
  Status stopped_ GUARDED_BY(mu_);
  // Whether stopped_ is set: every write asks, and must not take mu_ to learn that it is not.
  std::atomic<bool> is_stopped_{false};
  std::atomic<std::uint64_t> reported_{0};
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_FAULTS_BACKGROUND_ERRORS_H_
