#include "store/id_locks.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <future>
#include <random>
#include <thread>
#include <vector>

namespace fpstore::internal {
namespace {

using std::chrono::seconds;

TEST(IdLocksTest, BatchesOfOtherIdsAreHeldAtOnce) {
  IdLocks locks;
  const std::vector<DocumentId> first = {1, 2, 3};
  const std::vector<DocumentId> second = {4, 5};
  IdLocks::Held held = locks.Lock(first);
  std::future<IdLocks::Held> other =
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

TEST(IdLocksTest, ABatchWaitsForAnIdItSharesAndHoldsNoneMeanwhile) {
  IdLocks locks;
  const std::vector<DocumentId> first = {1, 2};
  const std::vector<DocumentId> second = {0, 2};  // 0 is free: it must not be taken alone
  IdLocks::Held held = locks.Lock(first);
  std::atomic<bool> took{false};
  std::thread waiter([&] {
    IdLocks::Held h = locks.Lock(second);
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

TEST(IdLocksTest, ALaterBatchDoesNotTakeAnIdThatAnEarlierWaiterWants) {
  IdLocks locks;
  const std::vector<DocumentId> one = {1};
  const std::vector<DocumentId> batch = {1, 2};
  const std::vector<DocumentId> two = {2};
  IdLocks::Held held = locks.Lock(one);
  std::atomic<int> order{0};
  int batch_took = 0;
  int two_took = 0;
  std::thread batch_writer([&] {
    IdLocks::Held h = locks.Lock(batch);
    batch_took = ++order;
  });
  ASSERT_TRUE(Eventually([&] { return locks.waiting_count() == 1; }));
  // 2 is free, but the batch waiting before wants it.
  std::thread small_writer([&] {
    IdLocks::Held h = locks.Lock(two);
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

TEST(IdLocksTest, AHoldReleasesOnceWhenMovedOrAssignedOver) {
  IdLocks locks;
  const std::vector<DocumentId> one = {1};
  const std::vector<DocumentId> two = {2};
  IdLocks::Held a = locks.Lock(one);
  IdLocks::Held b = std::move(a);
  a = {};
  EXPECT_EQ(locks.held_count(), 1u);
  b = locks.Lock(two);  // takes 2, then lets 1 go
  EXPECT_EQ(locks.held_count(), 1u);
  a = locks.Lock(one);
  EXPECT_EQ(locks.held_count(), 2u);
  b = std::move(a);
  EXPECT_EQ(locks.held_count(), 1u);
  IdLocks::Held& same = b;
  b = std::move(same);
  EXPECT_EQ(locks.held_count(), 1u) << "moving a hold onto itself let its ids go";
  b = {};
  EXPECT_EQ(locks.held_count(), 0u);
}

TEST(IdLocksTest, NoIdHasTwoHoldersUnderContention) {
  constexpr int kIds = 48;
  IdLocks locks;
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
        IdLocks::Held held = locks.Lock(ids);
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

}  // namespace
}  // namespace fpstore::internal
