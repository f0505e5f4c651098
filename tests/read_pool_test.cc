// The pool that reads a query's tables side by side once the query waits on
// the device (lib/store/read_pool.h), and queries that take that path.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "read/reader.h"
#include "store_checks.h"
#include "temp_dir.h"

namespace fpstore {
namespace {

using internal::IdFingerprint;
using internal::ReadPool;
using testing::ExpectMatchesBruteForce;
using testing::MakeCorpus;
using testing::MetadataFor;
using testing::MustOpen;
using testing::TempDir;
using testing::TestSeed;

TEST(ReadPoolTest, RunsEveryTaskOnceForConcurrentCallers) {
  ReadPool pool(3);
  constexpr int kCallers = 4;
  constexpr std::size_t kTasks = 500;
  std::vector<std::vector<std::atomic<int>>> runs(kCallers);
  for (auto& r : runs) r = std::vector<std::atomic<int>>(kTasks);
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      for (int round = 0; round < 20; ++round) {
        pool.Run(kTasks, [&](std::size_t i) { ++runs[c][i]; });
      }
    });
  }
  for (std::thread& t : callers) t.join();
  for (int c = 0; c < kCallers; ++c) {
    for (std::size_t i = 0; i < kTasks; ++i) ASSERT_EQ(runs[c][i], 20) << c << " " << i;
  }
}

// Each task waits until all have started: run one after another, the first
// would give up waiting and the check fails.
TEST(ReadPoolTest, RunsTasksSideBySide) {
  constexpr int kThreads = 4;
  ReadPool pool(kThreads);
  std::mutex mu;
  std::condition_variable cv;
  int started = 0;
  std::atomic<int> saw_all{0};
  pool.Run(kThreads + 1, [&](std::size_t) {
    std::unique_lock lock(mu);
    ++started;
    cv.notify_all();
    if (cv.wait_for(lock, std::chrono::seconds(10), [&] { return started == kThreads + 1; })) {
      ++saw_all;
    }
  });
  EXPECT_EQ(saw_all, kThreads + 1);
}

TEST(ReadPoolTest, NothingToRun) {
  ReadPool pool(2);
  bool ran = false;
  pool.Run(0, [&](std::size_t) { ran = true; });
  EXPECT_FALSE(ran);
}

// Whether any page of the file's first `bytes` is in the page cache.
bool AnyPageCached(int fd, std::size_t bytes) {
  void* map = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) return true;
  std::vector<unsigned char> resident((bytes + 4095) / 4096);
  const bool known = ::mincore(map, bytes, resident.data()) == 0;
  ::munmap(map, bytes);
  return !known ||
         std::any_of(resident.begin(), resident.end(), [](unsigned char r) { return r & 1; });
}

// Probes count as waiting on the device when they were slow and the thread
// read from it, which Linux counts per thread: a read the page cache
// serves, or a sleep, does not count.
TEST(ProbesWaitedOnDeviceTest, SlowAndReadFromTheDevice) {
  if (::access("/proc/self/io", R_OK) != 0) GTEST_SKIP() << "the kernel counts no reads";
  constexpr std::chrono::seconds kSlow(1);
  TempDir dir;
  constexpr std::size_t kBytes = std::size_t{4} << 20;
  const std::vector<char> bytes(kBytes, 'x');
  std::vector<char> read_back(kBytes);
  struct File {
    int fd;
    ~File() { ::close(fd); }
  } file{::open(dir.Sub("blocks").c_str(), O_RDWR | O_CREAT, 0600)};
  ASSERT_GE(file.fd, 0);
  ASSERT_EQ(::write(file.fd, bytes.data(), kBytes), static_cast<ssize_t>(kBytes));
  ASSERT_EQ(::fsync(file.fd), 0);
  // The kernel also counts the pages of code or data the thread faults in, which a loaded machine
  // may have evicted: each check that nothing was read from the device gets three tries, and one
  // clean try proves it.
  const auto never_waited = [&](const std::function<void()>& action) {
    for (int attempt = 0; attempt < 3; ++attempt) {
      (void)internal::ProbesWaitedOnDevice(kSlow, 1);  // start from what the thread read so far
      action();
      if (!internal::ProbesWaitedOnDevice(kSlow, 1)) return true;
    }
    return false;
  };
  // Just written: read from the page cache.
  EXPECT_TRUE(never_waited([&] {
    ASSERT_EQ(::pread(file.fd, read_back.data(), kBytes, 0), static_cast<ssize_t>(kBytes));
  }));
  // Sleeping, as a wait for a lock does, is not reading.
  EXPECT_TRUE(never_waited([] { std::this_thread::sleep_for(std::chrono::milliseconds(5)); }));
  // Clean after fsync, so evictable; read again, from the device.
  ASSERT_EQ(::posix_fadvise(file.fd, 0, 0, POSIX_FADV_DONTNEED), 0);
  if (AnyPageCached(file.fd, kBytes)) GTEST_SKIP() << dir.path() << " keeps its files in memory";
  ASSERT_EQ(::pread(file.fd, read_back.data(), kBytes, 0), static_cast<ssize_t>(kBytes));
  // Fast probes did not wait, whatever the thread read.
  EXPECT_FALSE(internal::ProbesWaitedOnDevice(std::chrono::microseconds(1), 1));
  EXPECT_TRUE(internal::ProbesWaitedOnDevice(kSlow, 1));
  EXPECT_FALSE(internal::ProbesWaitedOnDevice(kSlow, 1));
}

// Sends every query's tables after its first hit to the pool, as a query
// that waited on the device does.
class AllProbesSlow {
 public:
  AllProbesSlow() { internal::SetSlowProbeTimeForTesting(std::chrono::nanoseconds(0)); }
  ~AllProbesSlow() { internal::SetSlowProbeTimeForTesting(std::chrono::nanoseconds(-1)); }
};

// Hits found side by side are the same as one table after another: in the
// tables (with and without ids), staged, replaced and removed.
TEST(ReadPoolTest, QueriesOnThePoolMatchBruteForce) {
  const AllProbesSlow slow;
  const std::uint64_t seed = TestSeed(2026112401);
  TempDir dir;
  std::vector<IdFingerprint> docs = MakeCorpus(seed, 600, {{1, 60}, {2, 40}, {3, 40}});
  std::unique_ptr<Store> store = MustOpen(dir.Sub("store"));
  ASSERT_NE(store, nullptr);
  const std::size_t loaded = docs.size() / 2;
  {
    Result<std::unique_ptr<BulkLoader>> loader = store->NewBulkLoader({});
    ASSERT_TRUE(loader.ok()) << loader.status().ToString();
    for (std::size_t i = 0; i < loaded; ++i) {
      ASSERT_TRUE((*loader)->Add(docs[i].id, docs[i].fingerprint, MetadataFor(docs[i].id)).ok());
    }
    ASSERT_TRUE((*loader)->Finish().ok());
  }
  ExpectMatchesBruteForce(*store, std::vector(docs.begin(), docs.begin() + loaded), seed,
                          "bulk loaded");
  for (std::size_t i = loaded; i < docs.size(); ++i) {
    ASSERT_TRUE(store->Insert(docs[i].id, docs[i].fingerprint, MetadataFor(docs[i].id)).ok());
  }
  ExpectMatchesBruteForce(*store, docs, seed, "half staged");
  ASSERT_TRUE(store->Flush().ok());
  // A document taking another's fingerprint, and one leaving.
  docs[0].fingerprint = docs[1].fingerprint;
  ASSERT_TRUE(store->Insert(docs[0].id, docs[0].fingerprint, MetadataFor(docs[0].id)).ok());
  ASSERT_TRUE(store->Remove(docs[2].id).ok());
  docs.erase(docs.begin() + 2);
  ExpectMatchesBruteForce(*store, docs, seed, "merged, one replaced, one removed");
}

}  // namespace
}  // namespace fpstore
