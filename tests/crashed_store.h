// A store left as a crash leaves it: its last writes in its write-ahead log alone.

#ifndef FPSTORE_TESTS_CRASHED_STORE_H_
#define FPSTORE_TESTS_CRASHED_STORE_H_

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <filesystem>
#include <string>

#include "fpstore/store.h"

namespace fpstore::testing {

inline Fingerprint CrashFingerprintOf(DocumentId id) { return id * 0x9e3779b97f4a7c15ULL; }

// A child process inserts documents 0 .. count - 1 (fingerprints CrashFingerprintOf), each synced
// and one log record, and exits without closing the store. Metadata of `metadata_bytes` makes
// the log span several of its 32 KiB blocks.
inline void InsertThenCrash(const std::string& path, int count, std::size_t metadata_bytes) {
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    StoreOptions options;
    options.durability = Durability::kSync;
    Result<std::unique_ptr<Store>> store = Store::Open(path, options);
    if (!store.ok()) _exit(3);
    for (int i = 0; i < count; ++i) {
      const std::string metadata(metadata_bytes, static_cast<char>('a' + i % 26));
      if (!(*store)->Insert(i, CrashFingerprintOf(i), metadata).ok()) _exit(4);
    }
    _exit(0);
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

}  // namespace fpstore::testing

#endif  // FPSTORE_TESTS_CRASHED_STORE_H_
