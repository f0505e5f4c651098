// A store left as a crash leaves it: its last writes in its write-ahead log alone.

#ifndef FPSTORE_TESTS_CRASHED_STORE_H_
#define FPSTORE_TESTS_CRASHED_STORE_H_

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>

#include "fpstore/store.h"

namespace fpstore::testing {

inline Fingerprint CrashFingerprintOf(DocumentId id) { return id * 0x9e3779b97f4a7c15ULL; }

// The child's work, in a process of its own: the test binary run again with
// FPSTORE_CRASH_CHILD="PATH\nCOUNT\nMETADATA_BYTES\nSTAGED" does it from a static initializer,
// before main, and exits without closing the store. (A fork alone would lack the background
// threads of RocksDB's thread pools, which the test process has started already.)
inline bool RunCrashChildIfAsked() {
  const char* job = std::getenv("FPSTORE_CRASH_CHILD");
  if (job == nullptr) return false;
  std::istringstream in(job);
  std::string path;
  int count = 0;
  std::size_t metadata_bytes = 0, staged_documents = 0;
  std::getline(in, path);
  in >> count >> metadata_bytes >> staged_documents;
  StoreOptions options;
  options.durability = Durability::kSync;
  if (staged_documents != 0) options.staged_documents = staged_documents;
  Result<std::unique_ptr<Store>> store = Store::Open(path, options);
  if (!store.ok()) _exit(3);
  for (int i = 0; i < count; ++i) {
    const std::string metadata(metadata_bytes, static_cast<char>('a' + i % 26));
    if (!(*store)->Insert(i, CrashFingerprintOf(i), metadata).ok()) _exit(4);
  }
  _exit(0);
}
inline const bool kCrashChildRan = RunCrashChildIfAsked();

// A child process inserts documents 0 .. count - 1 (fingerprints CrashFingerprintOf), each synced
// and one log record, and exits without closing the store. Metadata of `metadata_bytes` makes
// the log span several of its 32 KiB blocks. With `staged_documents`, merges move the inserts
// into the tables every that many (by ingestion, at sequence numbers above the inserts').
inline void InsertThenCrash(const std::string& path, int count, std::size_t metadata_bytes,
                            std::size_t staged_documents = 0) {
  const std::string job = path + "\n" + std::to_string(count) + " " +
                          std::to_string(metadata_bytes) + " " + std::to_string(staged_documents);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::setenv("FPSTORE_CRASH_CHILD", job.c_str(), 1);
    char self[] = "/proc/self/exe";
    char* argv[] = {self, nullptr};
    ::execv(self, argv);
    _exit(5);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

// The one log file of the store at `path` that holds records.
inline std::string TheLog(const std::string& path) {
  std::string found;
  for (const std::filesystem::directory_entry& e : std::filesystem::directory_iterator(path)) {
    if (e.path().extension() == ".log" && e.file_size() > 0) {
      EXPECT_EQ(found, "") << "more than one log holds records";
      found = e.path().string();
    }
  }
  EXPECT_NE(found, "");
  return found;
}

// The largest log file of the store at `path`.
inline std::string LargestLog(const std::string& path) {
  std::string found;
  std::uintmax_t size = 0;
  for (const std::filesystem::directory_entry& e : std::filesystem::directory_iterator(path)) {
    if (e.path().extension() == ".log" && e.file_size() > size) {
      size = e.file_size();
      found = e.path().string();
    }
  }
  EXPECT_NE(found, "");
  return found;
}

}  // namespace fpstore::testing

#endif  // FPSTORE_TESTS_CRASHED_STORE_H_
