// The store's info log, written by fpstore rather than by RocksDB's own
// logger: RocksDB's asserts when it writes after a failed write (a full
// disk), and Debian's RocksDB keeps its assertions, so a full disk would
// abort the host process. Here a line that cannot be written is dropped and
// counted, and the count is written with the next line that can be.
//
// RocksDB behaviour covered:
// RocksDbBehaviourDeathTest.DefaultInfoLogAbortsOnTheLineAfterAFailedWrite
// (tests/rocksdb_behaviour_test.cc). Retire when: RocksDB's logger survives a failed write; then
// this stays only if its count of dropped lines is worth keeping.
//
// Thread safety: thread-safe.

#ifndef FPSTORE_LIB_FAULTS_INFO_LOG_H_
#define FPSTORE_LIB_FAULTS_INFO_LOG_H_

#include <rocksdb/env.h>

#include <cstdarg>
#include <cstdint>
#include <memory>
#include <string>

#include "util/mutex.h"

namespace fpstore::internal {

class InfoLog final : public rocksdb::Logger {
 public:
  // A writable store's log: `dir`/LOG, opened with the first line (making
  // `dir` if its parent is there, as RocksDB does for a new store); an
  // existing LOG is first renamed LOG.old, replacing the previous one.
  static std::shared_ptr<InfoLog> ForWriter(const std::string& dir);
  // A read-only handle's: writes nothing, so that readers never touch the
  // writer's LOG.
  static std::shared_ptr<InfoLog> Discarding();

  ~InfoLog() override;

  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override;
  std::size_t GetLogFileSize() const override;

  // Lines not written, as a write failed (a full disk) or the file could not be opened.
  std::uint64_t dropped() const;

 private:
  explicit InfoLog(std::string dir) : dir_(std::move(dir)) {}

  // Opens the file unless it is open or the directory is not there yet.
  void OpenLocked() REQUIRES(mu_);

  const std::string dir_;  // empty: discard every line
  mutable Mutex mu_;
  int fd_ GUARDED_BY(mu_) = -1;
  bool rotated_ GUARDED_BY(mu_) = false;  // an existing LOG was moved to LOG.old
  std::uint64_t size_ GUARDED_BY(mu_) = 0;
  std::uint64_t dropped_ GUARDED_BY(mu_) = 0;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_FAULTS_INFO_LOG_H_
