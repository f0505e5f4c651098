// The Redis Cluster client against a real cluster of 3 masters and 3 replicas on loopback
// (scripts/redis-cluster.sh, started by ctest before these tests; FPSTORE_REDIS_SEED names a
// node): its slots agree with the cluster's, its pipelines reach every master, and it follows the
// cluster when slots move, for good (MOVED) or while they move (ASK).

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "redis/cluster_client.h"

namespace fpstore::internal::redis {
namespace {

std::string Seed() {
  const char* seed = std::getenv("FPSTORE_REDIS_SEED");
  return seed != nullptr ? seed : "127.0.0.1:7400";
}

std::unique_ptr<ClusterClient> MustConnect() {
  Result<std::unique_ptr<ClusterClient>> client = ClusterClient::Connect(Seed());
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  return client.ok() ? *std::move(client) : nullptr;
}

// The id of the node at `address` (CLUSTER MYID).
std::string NodeId(ClusterClient& client, const std::string& address) {
  Result<Reply> id = client.RunOn(address, {"CLUSTER", "MYID"});
  EXPECT_TRUE(id.ok());
  return id.ok() ? id->str : "";
}

// Every master takes `args` (CLUSTER SETSLOT must reach them all).
void OnEveryMaster(ClusterClient& client, const std::vector<std::string>& args) {
  for (const std::string& m : client.Masters()) {
    Result<Reply> r = client.RunOn(m, args);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_NE(r->type, Reply::Type::kError) << m << ": " << r->str;
  }
}

// Moves every key of `slot` from the node at `from` to the one at `to` (MIGRATE), as a reshard
// does between marking the slot migrating and giving it to its new owner.
void MigrateKeys(ClusterClient& client, const std::string& from, const std::string& to,
                 std::uint16_t slot) {
  Result<Reply> keys = client.RunOn(from, {"CLUSTER", "GETKEYSINSLOT", std::to_string(slot), "1000"});
  ASSERT_TRUE(keys.ok());
  const std::string host = to.substr(0, to.rfind(':')), port = to.substr(to.rfind(':') + 1);
  for (const Reply& k : keys->elements) {
    Result<Reply> moved = client.RunOn(from, {"MIGRATE", host, port, k.str, "0", "5000"});
    ASSERT_TRUE(moved.ok());
    ASSERT_EQ(moved->str, "OK") << moved->str;
  }
}

class ClusterClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = MustConnect();
    ASSERT_NE(client_, nullptr);
    ASSERT_EQ(client_->Masters().size(), 3u);
    ASSERT_NO_FATAL_FAILURE(OnEveryMaster(*client_, {"FLUSHALL"}));
  }

  // Sets `n` keys named with `prefix` to values derived from them, in one pipelined call.
  void SetKeys(const std::string& prefix, int n) {
    std::vector<Command> commands;
    for (int i = 0; i < n; ++i) {
      const std::string key = prefix + std::to_string(i);
      commands.push_back({key, {"SET", key, "v" + key}});
    }
    Result<std::vector<Reply>> replies = client_->Run(commands);
    ASSERT_TRUE(replies.ok()) << replies.status().ToString();
    for (const Reply& r : *replies) ASSERT_EQ(r.str, "OK");
  }

  void ExpectKeys(ClusterClient& client, const std::string& prefix, int n) {
    std::vector<Command> commands;
    for (int i = 0; i < n; ++i) {
      const std::string key = prefix + std::to_string(i);
      commands.push_back({key, {"GET", key}});
    }
    Result<std::vector<Reply>> replies = client.Run(commands);
    ASSERT_TRUE(replies.ok()) << replies.status().ToString();
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ((*replies)[i].type, Reply::Type::kString) << prefix << i;
      EXPECT_EQ((*replies)[i].str, "v" + prefix + std::to_string(i));
    }
  }

  std::unique_ptr<ClusterClient> client_;
};

TEST_F(ClusterClientTest, SlotsAgreeWithTheCluster) {
  std::vector<std::string> keys = {"", "a", "foo", "{user1000}.following", "{user1000}.followers",
                                   "foo{}{bar}", "foo{{bar}}zap", "foo{bar}{zap}", "{}x", "x{"};
  for (int i = 0; i < 200; ++i) keys.push_back("key:" + std::to_string(i * 7919));
  const std::string node = client_->Masters()[0];
  for (const std::string& key : keys) {
    Result<Reply> slot = client_->RunOn(node, {"CLUSTER", "KEYSLOT", key});
    ASSERT_TRUE(slot.ok());
    EXPECT_EQ(KeySlot(key), slot->integer) << "key \"" << key << "\"";
  }
  // Keys that share a hash tag share a slot.
  EXPECT_EQ(KeySlot("{t}1"), KeySlot("{t}2"));
}

TEST_F(ClusterClientTest, PipelinesReachEveryMaster) {
  ASSERT_NO_FATAL_FAILURE(SetKeys("pipeline:", 3000));
  ASSERT_NO_FATAL_FAILURE(ExpectKeys(*client_, "pipeline:", 3000));
  // Each master holds about a third.
  for (const std::string& m : client_->Masters()) {
    Result<Reply> keys = client_->RunOn(m, {"DBSIZE"});
    ASSERT_TRUE(keys.ok());
    EXPECT_GT(keys->integer, 700) << m;
  }
  // A command's own error is its reply, not the call's failure.
  Result<Reply> wrong = client_->Run(Command{"pipeline:1", {"LPUSH", "pipeline:1", "x"}});
  ASSERT_TRUE(wrong.ok());
  EXPECT_EQ(wrong->type, Reply::Type::kError);
  EXPECT_EQ(wrong->str.rfind("WRONGTYPE", 0), 0u) << wrong->str;
  EXPECT_EQ(client_->redirections(), 0u);
}

// A slot moved for good: the client's map is stale, and MOVED takes it to the new master.
TEST_F(ClusterClientTest, FollowsASlotThatMoved) {
  ASSERT_NO_FATAL_FAILURE(SetKeys("moved:", 500));
  std::unique_ptr<ClusterClient> stale = MustConnect();
  ASSERT_NE(stale, nullptr);

  const std::string key = "moved:7";
  const std::uint16_t slot = KeySlot(key);
  const std::vector<std::string> masters = client_->Masters();
  Result<Reply> owner_reply = client_->Run(Command{key, {"CLUSTER", "MYID"}});
  ASSERT_TRUE(owner_reply.ok());
  std::string from, to;
  for (const std::string& m : masters) {
    (NodeId(*client_, m) == owner_reply->str ? from : to) = m;
  }
  ASSERT_FALSE(from.empty());
  const std::string from_id = NodeId(*client_, from), to_id = NodeId(*client_, to);
  const std::string s = std::to_string(slot);
  // Redis's own way to move a slot: importing, migrating, the keys, then the new owner.
  ASSERT_TRUE(client_->RunOn(to, {"CLUSTER", "SETSLOT", s, "IMPORTING", from_id}).ok());
  ASSERT_TRUE(client_->RunOn(from, {"CLUSTER", "SETSLOT", s, "MIGRATING", to_id}).ok());
  ASSERT_NO_FATAL_FAILURE(MigrateKeys(*client_, from, to, slot));
  ASSERT_NO_FATAL_FAILURE(OnEveryMaster(*client_, {"CLUSTER", "SETSLOT", s, "NODE", to_id}));

  const std::uint64_t before = stale->redirections();
  ASSERT_NO_FATAL_FAILURE(ExpectKeys(*stale, "moved:", 500));
  EXPECT_GT(stale->redirections(), before) << "the stale map was never redirected";
  // Writes follow too, and the map is right from then on.
  Result<Reply> set = stale->Run(Command{key, {"SET", key, "again"}});
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(set->str, "OK");
  Result<Reply> where = stale->Run(Command{key, {"CLUSTER", "MYID"}});
  ASSERT_TRUE(where.ok());
  EXPECT_EQ(where->str, to_id);
}

// A slot half moved: a key already on the importing node is found there through ASK, and the
// client's map still names the old owner for the rest.
TEST_F(ClusterClientTest, FollowsAKeyAskedElsewhere) {
  const std::string key = "ask:1";
  ASSERT_TRUE(client_->Run(Command{key, {"SET", key, "asked"}}).ok());
  const std::uint16_t slot = KeySlot(key);
  Result<Reply> owner_reply = client_->Run(Command{key, {"CLUSTER", "MYID"}});
  ASSERT_TRUE(owner_reply.ok());
  std::string from, to;
  for (const std::string& m : client_->Masters()) {
    (NodeId(*client_, m) == owner_reply->str ? from : to) = m;
  }
  const std::string from_id = NodeId(*client_, from), to_id = NodeId(*client_, to);
  const std::string s = std::to_string(slot);
  ASSERT_TRUE(client_->RunOn(to, {"CLUSTER", "SETSLOT", s, "IMPORTING", from_id}).ok());
  ASSERT_TRUE(client_->RunOn(from, {"CLUSTER", "SETSLOT", s, "MIGRATING", to_id}).ok());
  const std::string host = to.substr(0, to.rfind(':')), port = to.substr(to.rfind(':') + 1);
  Result<Reply> moved = client_->RunOn(from, {"MIGRATE", host, port, key, "0", "5000"});
  ASSERT_TRUE(moved.ok());
  ASSERT_EQ(moved->str, "OK") << moved->str;

  const std::uint64_t before = client_->redirections();
  Result<Reply> got = client_->Run(Command{key, {"GET", key}});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->str, "asked");
  EXPECT_EQ(client_->redirections(), before + 1);
  // The migration done, the slot is the importing node's.
  ASSERT_NO_FATAL_FAILURE(MigrateKeys(*client_, from, to, slot));
  ASSERT_NO_FATAL_FAILURE(OnEveryMaster(*client_, {"CLUSTER", "SETSLOT", s, "NODE", to_id}));
  Result<Reply> again = client_->Run(Command{key, {"GET", key}});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->str, "asked");
}

TEST(ClusterClientConnectTest, RefusesWhatIsNotACluster) {
  Result<std::unique_ptr<ClusterClient>> malformed = ClusterClient::Connect("localhost");
  EXPECT_TRUE(malformed.status().IsInvalidArgument()) << malformed.status().ToString();
  // Nothing listens on port 1.
  ClientOptions quick;
  quick.io_timeout = std::chrono::milliseconds(200);
  Result<std::unique_ptr<ClusterClient>> nobody = ClusterClient::Connect("127.0.0.1:1", quick);
  EXPECT_TRUE(nobody.status().IsIOError()) << nobody.status().ToString();
}

}  // namespace
}  // namespace fpstore::internal::redis
