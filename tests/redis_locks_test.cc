// Locks in a Redis Cluster (redis/locks.h) against the test cluster (scripts/redis-cluster.sh,
// started by ctest before these tests; FPSTORE_REDIS_SEED names a node): taken all at once or not
// at all, and never left behind by their own holder.

#include "redis/locks.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "redis/cluster_client.h"

namespace fpstore::internal::redis {
namespace {

using std::chrono::milliseconds;

std::string Seed() {
  const char* seed = std::getenv("FPSTORE_REDIS_SEED");
  return seed != nullptr ? seed : "127.0.0.1:7400";
}

std::unique_ptr<ClusterClient> MustConnect(const ClientOptions& options = {}) {
  Result<std::unique_ptr<ClusterClient>> client = ClusterClient::Connect(Seed(), options);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  return client.ok() ? *std::move(client) : nullptr;
}

// The address of the master that serves `key`.
std::string MasterOf(ClusterClient& client, const std::string& key) {
  Result<Reply> id = client.Run(Command{key, {"CLUSTER", "MYID"}});
  for (const std::string& m : client.Masters()) {
    Result<Reply> its = client.RunOn(m, {"CLUSTER", "MYID"});
    if (id.ok() && its.ok() && its->str == id->str) return m;
  }
  return "";
}

bool Exists(ClusterClient& client, const std::string& key) {
  Result<Reply> r = client.Run(Command{key, {"EXISTS", key}});
  return r.ok() && r->integer == 1;
}

TEST(RedisLocksTest, AllOrNothing) {
  std::unique_ptr<ClusterClient> a = MustConnect(), b = MustConnect();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  // Keys on different slots, hence (mostly) different masters.
  const std::vector<std::string> keys = {"locks-test:{a}", "locks-test:{b}", "locks-test:{c}"};
  LockSet first, second(LockOptions{std::chrono::seconds(30), milliseconds(300)});
  ASSERT_TRUE(first.Acquire(*a, keys).ok());
  // One of them is taken: the second holder gets none, after its patience.
  Status refused = second.Acquire(*b, {"locks-test:{c}", "locks-test:{d}"});
  EXPECT_TRUE(refused.IsBusy()) << refused.ToString();
  EXPECT_FALSE(second.held());
  EXPECT_FALSE(Exists(*b, "locks-test:{d}"));
  ASSERT_TRUE(first.Release(*a).ok());
  for (const std::string& key : keys) EXPECT_FALSE(Exists(*a, key)) << key;
  ASSERT_TRUE(second.Acquire(*b, {"locks-test:{c}", "locks-test:{d}"}).ok());
  ASSERT_TRUE(second.Release(*b).ok());
}

// A SET NX that ran but whose reply was lost (the connection timed out while the node was busy)
// is sent again by the client, on a new connection, and refused by the very lock it took. That
// lock holds this try's token: the holder must give it back, not wait it out as another's.
TEST(RedisLocksTest, ALockWhoseReplyWasLostIsNotLeftBehind) {
  ClientOptions quick;
  quick.io_timeout = milliseconds(150);
  std::unique_ptr<ClusterClient> client = MustConnect(quick), blocker = MustConnect();
  ASSERT_NE(client, nullptr);
  ASSERT_NE(blocker, nullptr);
  const std::string key = "locks-test:{lost}";
  const std::string master = MasterOf(*blocker, key);
  ASSERT_FALSE(master.empty());

  // The master runs a script for 800 ms; meanwhile the lock's SET waits in its socket and the
  // client gives up on it, and on its retries, until the script ends and they all run.
  std::thread busy([&] {
    const char* kSpin =
        "local s = redis.call('TIME') "
        "while true do local n = redis.call('TIME') "
        "if (n[1] - s[1]) * 1000000 + (n[2] - s[2]) > 800000 then return 1 end end";
    Result<Reply> r = blocker->RunOn(master, {"EVAL", kSpin, "0"});
    EXPECT_TRUE(r.ok() && r->integer == 1) << (r.ok() ? r->str : r.status().ToString());
  });
  std::this_thread::sleep_for(milliseconds(100));
  LockSet locks(LockOptions{std::chrono::seconds(20), std::chrono::seconds(4)});
  const auto start = std::chrono::steady_clock::now();
  Status acquired = locks.Acquire(*client, {key});
  const auto took = std::chrono::steady_clock::now() - start;
  busy.join();
  EXPECT_TRUE(acquired.ok()) << acquired.ToString();
  EXPECT_LT(took, std::chrono::seconds(3));
  EXPECT_TRUE(locks.Release(*client).ok());
  EXPECT_FALSE(Exists(*blocker, key)) << "the lock was left behind";
}

}  // namespace
}  // namespace fpstore::internal::redis
