#include "write/key_locks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <future>
#include <iterator>
#include <random>
#include <thread>
#include <vector>

#include "fpstore/simhash.h"

namespace fpstore::internal {
namespace {

using std::chrono::seconds;

TEST(KeyLocksTest, BatchesOfOtherIdsAreHeldAtOnce) {
  KeyLocks locks;
  const std::vector<DocumentId> first = {1, 2, 3};
  const std::vector<DocumentId> second = {4, 5};
  KeyLocks::Held held = locks.Lock(first);
  std::future<KeyLocks::Held> other =
      std::async(std::launch::async, [&] { return locks.Lock(second); });
  const bool took = other.wait_for(seconds(30)) == std::future_status::ready;
  held = {};  // lets a wrongly waiting Lock end, so that the test fails instead of hanging
  EXPECT_TRUE(took) << "a batch of other ids waited";
  other.get();
  EXPECT_EQ(locks.held_count(), 0u);
}

// Spins until `done` holds; false after 30 s.
template <typename F>
bool Eventually(F done) {
  const auto until = std::chrono::steady_clock::now() + seconds(30);
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::yield();
  }
  return true;
}

TEST(KeyLocksTest, ABatchWaitsForAnIdItSharesAndHoldsNoneMeanwhile) {
  KeyLocks locks;
  const std::vector<DocumentId> first = {1, 2};
  const std::vector<DocumentId> second = {0, 2};  // 0 is free: it must not be taken alone
  KeyLocks::Held held = locks.Lock(first);
  std::atomic<bool> took{false};
  std::thread waiter([&] {
    KeyLocks::Held h = locks.Lock(second);
    took = true;
  });
  const bool waits = Eventually([&] { return locks.waiting_count() == 1; });
  EXPECT_TRUE(waits);
  EXPECT_FALSE(took);
  EXPECT_EQ(locks.held_count(), 2u) << "the waiting batch holds some of its ids";
  held = {};
  waiter.join();
  EXPECT_TRUE(took);
  EXPECT_EQ(locks.held_count(), 0u);
}

TEST(KeyLocksTest, ALaterBatchDoesNotTakeAnIdThatAnEarlierWaiterWants) {
  KeyLocks locks;
  const std::vector<DocumentId> one = {1};
  const std::vector<DocumentId> batch = {1, 2};
  const std::vector<DocumentId> two = {2};
  KeyLocks::Held held = locks.Lock(one);
  std::atomic<int> order{0};
  int batch_took = 0;
  int two_took = 0;
  std::thread batch_writer([&] {
    KeyLocks::Held h = locks.Lock(batch);
    batch_took = ++order;
  });
  ASSERT_TRUE(Eventually([&] { return locks.waiting_count() == 1; }));
  // 2 is free, but the batch waiting before wants it.
  std::thread small_writer([&] {
    KeyLocks::Held h = locks.Lock(two);
    two_took = ++order;
  });
  const bool waits = Eventually([&] { return locks.waiting_count() == 2 || order > 0; });
  EXPECT_TRUE(waits);
  EXPECT_EQ(order, 0) << "the later write took an id the waiting batch wants";
  held = {};
  batch_writer.join();
  small_writer.join();
  EXPECT_EQ(batch_took, 1);
  EXPECT_EQ(two_took, 2);
  EXPECT_EQ(locks.held_count(), 0u);
  EXPECT_EQ(locks.waiting_count(), 0u);
}

TEST(KeyLocksTest, AHoldReleasesOnceWhenMovedOrAssignedOver) {
  KeyLocks locks;
  const std::vector<DocumentId> one = {1};
  const std::vector<DocumentId> two = {2};
  KeyLocks::Held a = locks.Lock(one);
  KeyLocks::Held b = std::move(a);
  a = {};
  EXPECT_EQ(locks.held_count(), 1u);
  b = locks.Lock(two);  // takes 2, then lets 1 go
  EXPECT_EQ(locks.held_count(), 1u);
  a = locks.Lock(one);
  EXPECT_EQ(locks.held_count(), 2u);
  b = std::move(a);
  EXPECT_EQ(locks.held_count(), 1u);
  KeyLocks::Held& same = b;
  b = std::move(same);
  EXPECT_EQ(locks.held_count(), 1u) << "moving a hold onto itself let its ids go";
  b = {};
  EXPECT_EQ(locks.held_count(), 0u);
}

TEST(KeyLocksTest, NoIdHasTwoHoldersUnderContention) {
  constexpr int kIds = 48;
  KeyLocks locks;
  std::array<std::atomic<int>, kIds> holder;
  for (std::atomic<int>& h : holder) h = -1;
  std::atomic<int> clashes{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rnd(t);
      for (int round = 0; round < 2000; ++round) {
        std::vector<DocumentId> ids;
        for (DocumentId id = 0; id < kIds; ++id) {
          if (rnd() % 8 == 0) ids.push_back(id);
        }
        KeyLocks::Held held = locks.Lock(ids);
        for (DocumentId id : ids) {
          int none = -1;
          if (!holder[id].compare_exchange_strong(none, t)) ++clashes;
        }
        std::this_thread::yield();  // widens the window in which a second holder would show
        for (DocumentId id : ids) holder[id] = -1;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(clashes, 0);
  EXPECT_EQ(locks.held_count(), 0u);
}

// Two fingerprints within the plan's distance share a near key, whatever bits they differ in, so
// two CheckAndInserts of near-duplicates take turns; fingerprints far apart seldom share one.
TEST(NearKeysTest, FingerprintsWithinTheDistanceShareOne) {
  std::mt19937_64 rnd(77);
  for (int k = 0; k <= 6; ++k) {
    const PermutationPlan plan = *PermutationPlan::Create(k + 1, k);
    int far_sharing = 0;
    for (int i = 0; i < 2000; ++i) {
      const std::uint64_t a = rnd();
      std::uint64_t b = a;
      for (int flips = static_cast<int>(rnd() % (k + 1)); flips > 0; --flips) {
        b ^= std::uint64_t{1} << (rnd() % 64);
      }
      ASSERT_LE(HammingDistance(a, b), k);
      const std::vector<LockKey> ka = NearKeys(plan, a), kb = NearKeys(plan, b);
      std::vector<LockKey> shared;
      std::set_intersection(ka.begin(), ka.end(), kb.begin(), kb.end(), std::back_inserter(shared));
      ASSERT_FALSE(shared.empty()) << "k=" << k << " " << a << " " << b;
      const std::vector<LockKey> kc = NearKeys(plan, rnd());
      shared.clear();
      std::set_intersection(ka.begin(), ka.end(), kc.begin(), kc.end(), std::back_inserter(shared));
      far_sharing += !shared.empty();
    }
    // Prefixes of 64 / (k + 1) bits: at k = 6, 9 bits, 7 keys a side, about 10% of pairs.
    EXPECT_LT(far_sharing, 2000 / 5) << "k=" << k;
  }
}

}  // namespace
}  // namespace fpstore::internal
