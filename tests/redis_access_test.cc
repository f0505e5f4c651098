// The Redis backend against clusters that let no one in without a password, which this program
// starts and stops itself (scripts/redis-cluster.sh with REDIS_CLUSTER_PASSWORD): one on plain
// TCP (ports 7811-7816) and one that speaks only TLS (7821-7826, REDIS_CLUSTER_TLS). On both:
//   - the password in the URL (percent-encoded) or in StoreOptions opens a store that loads,
//     queries, checks and inserts, scans, verifies and repairs; an ACL user that may run only
//     what fpstore needs does the same;
//   - a wrong password, a missing one, an unknown user and a command the user may not run each
//     fail at Open with an error that says which;
//   - near-duplicates offered at once through two handles: exactly one of each pair is stored;
//   - connections opened after a MOVED or an ASK to a node not reached before sign in;
// and on one of them: TLS that checks the nodes' certificates, the C API, the tools (password
// from a file, the environment or the URL) and Python, a failover; no message that any of it
// prints holds a password.

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/tool_runner.h"
#include "cluster_nodes.h"
#include "fpstore/c.h"
#include "fpstore/store.h"
#include "redis/cluster_client.h"

namespace fpstore {
namespace {

using internal::redis::ClientOptions;
using internal::redis::ClusterClient;
using internal::redis::Command;
using internal::redis::KeySlot;
using internal::redis::Reply;
using internal::redis::TlsContext;
using internal::redis::TlsFiles;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

// The clusters' password, an ACL user's (with characters a URL must encode) and a wrong one:
// no output may hold any of them.
constexpr char kPassword[] = "s3cret-Cluster-Pw";
constexpr char kUserPassword[] = "Us3r@pw:/%x";
constexpr char kUserPasswordInUrl[] = "Us3r%40pw%3A%2F%25x";
constexpr char kWrongPassword[] = "Wr0ng-Pw-xyz";

::testing::AssertionResult NoPassword(const std::string& text) {
  for (const char* secret : {kPassword, kUserPassword, kUserPasswordInUrl, kWrongPassword}) {
    if (text.find(secret) != std::string::npos) {
      return ::testing::AssertionFailure() << "a password in: " << text;
    }
  }
  return ::testing::AssertionSuccess();
}

using testing::InfoField;
using testing::ReadFile;
using testing::WaitUntil;

// The commands fpstore runs, and an ACL user that may run them on the store keys only.
const std::vector<std::string> kNeeded = {
    "+cluster|slots", "+asking", "+hget",         "+hgetall", "+hkeys",       "+hlen",
    "+hset",          "+hdel",   "+zadd",         "+zrem",    "+zrangebylex", "+zrange",
    "+set",           "+get",    "+del",          "+exists",  "+unlink",      "+eval",
    "+wait",          "+scan",   "+memory|usage", "+zscore",  "+zcount"};

// ---- The clusters ----

class SecuredCluster {
 public:
  SecuredCluster(int base, bool tls)
      : base_(base),
        tls_(tls),
        dir_(std::string(FPSTORE_REDIS_ACCESS_DIR) + "/" + std::to_string(base)) {}

  ::testing::AssertionResult Start() {
    std::filesystem::create_directories(dir_);
    if (const int code = Script("start " + dir_ + " " + std::to_string(base_)); code != 0) {
      return ::testing::AssertionFailure()
             << "redis-cluster.sh start exited " << code << ": " << ReadFile(dir_ + "/script.log");
    }
    Result<std::unique_ptr<ClusterClient>> admin = ClusterClient::Connect(Address(0), Client());
    if (!admin.ok()) return ::testing::AssertionFailure() << admin.status().ToString();
    admin_ = *std::move(admin);
    return ::testing::AssertionSuccess();
  }
  void Stop() {
    admin_.reset();
    Script("stop " + dir_);
  }
  // Starts a killed node again on its files.
  bool Restart(const std::string& address) {
    return Script("restart " + dir_ + " " + address.substr(address.rfind(':') + 1)) == 0;
  }

  bool tls() const { return tls_; }
  std::string Address(int node) const { return "127.0.0.1:" + std::to_string(base_ + node); }
  // The store `name`'s URL, USER:PASSWORD@ as `userinfo` gives it.
  std::string Url(const std::string& name, const std::string& userinfo = "") const {
    return std::string(tls_ ? "rediss://" : "redis://") + userinfo + Address(0) + "/" + name;
  }
  std::string CaFile() const { return dir_ + "/tls/ca.crt"; }
  std::string NodeCertificate() const { return dir_ + "/tls/node.crt"; }
  // StoreOptions with the CA file, on the TLS cluster.
  StoreOptions Options() const {
    StoreOptions options;
    if (tls_) options.redis_tls_ca_file = CaFile();
    return options;
  }
  // What a client of the cluster signs in with.
  ClientOptions Client() const {
    ClientOptions options;
    options.credentials.password = kPassword;
    if (tls_) options.tls = *TlsContext::Create(TlsFiles{CaFile(), "", ""});
    return options;
  }

  // `args` on one node; an error reply or none becomes a string starting "!".
  std::string On(const std::string& address, const std::vector<std::string>& args) {
    Result<Reply> r = admin_->RunOn(address, args);
    if (!r.ok()) return "!" + r.status().ToString();
    if (r->type == Reply::Type::kError) return "!" + r->str;
    return r->type == Reply::Type::kInteger ? std::to_string(r->integer) : r->str;
  }
  // `args` on every node; the first failure, or "".
  std::string OnAll(const std::vector<std::string>& args) {
    for (int node = 0; node < 6; ++node) {
      const std::string r = On(Address(node), args);
      if (r.starts_with("!")) return Address(node) + ": " + r;
    }
    return "";
  }
  // The ACL user `name` with kUserPassword on every node, allowed `commands` on fps:* keys.
  std::string AddUser(const std::string& name, const std::vector<std::string>& commands) {
    std::vector<std::string> args = {
        "ACL", "SETUSER", name, "reset", "on", std::string(">") + kUserPassword, "~fps:*", "-@all"};
    args.insert(args.end(), commands.begin(), commands.end());
    return OnAll(args);
  }
  std::string IdOf(const std::string& address) { return On(address, {"CLUSTER", "MYID"}); }
  // The masters that serve slots, as `address` sees them.
  std::vector<std::string> Masters(const std::string& address) {
    std::vector<std::string> masters;
    Result<Reply> slots = admin_->RunOn(address, {"CLUSTER", "SLOTS"});
    for (const Reply& range : slots.ok() ? slots->elements : std::vector<Reply>{}) {
      if (range.elements.size() < 3) continue;
      const std::string at = "127.0.0.1:" + std::to_string(range.elements[2].elements[1].integer);
      if (std::find(masters.begin(), masters.end(), at) == masters.end()) masters.push_back(at);
    }
    return masters;
  }
  // A key, named after `prefix`, whose slot the node `address` serves.
  std::string KeyServedBy(const std::string& address, const std::string& prefix) {
    Result<Reply> slots = admin_->RunOn(address, {"CLUSTER", "SLOTS"});
    const int port = std::stoi(address.substr(address.rfind(':') + 1));
    for (int n = 0; n < 1'000'000; ++n) {
      const std::string key = prefix + std::to_string(n);
      for (const Reply& range : slots.ok() ? slots->elements : std::vector<Reply>{}) {
        if (range.elements.size() >= 3 && range.elements[2].elements[1].integer == port &&
            KeySlot(key) >= range.elements[0].integer &&
            KeySlot(key) <= range.elements[1].integer) {
          return key;
        }
      }
    }
    return "";
  }
  pid_t Pid(const std::string& address) {
    return static_cast<pid_t>(std::stol(
        "0" + ReadFile(dir_ + "/" + address.substr(address.rfind(':') + 1) + "/redis.pid")));
  }

 private:
  // scripts/redis-cluster.sh `args`, with the cluster's password and TLS in its environment.
  int Script(const std::string& args) const {
    setenv("REDIS_CLUSTER_PASSWORD", kPassword, 1);
    if (tls_) {
      setenv("REDIS_CLUSTER_TLS", "1", 1);
    } else {
      unsetenv("REDIS_CLUSTER_TLS");
    }
    const int status = std::system(
        ("/bin/bash " FPSTORE_REDIS_CLUSTER_SCRIPT " " + args + " >>" + dir_ + "/script.log 2>&1")
            .c_str());
    unsetenv("REDIS_CLUSTER_PASSWORD");
    unsetenv("REDIS_CLUSTER_TLS");
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  const int base_;
  const bool tls_;
  const std::string dir_;
  std::unique_ptr<ClusterClient> admin_;
};

SecuredCluster* plain_cluster = nullptr;
SecuredCluster* tls_cluster = nullptr;

// Starts both clusters once for every test, and stops them at the end.
class Clusters : public ::testing::Environment {
 public:
  void SetUp() override {
    plain_cluster = new SecuredCluster(7811, false);
    tls_cluster = new SecuredCluster(7821, true);
    ASSERT_TRUE(plain_cluster->Start());
    ASSERT_TRUE(tls_cluster->Start());
  }
  void TearDown() override {
    for (SecuredCluster* c : {plain_cluster, tls_cluster}) {
      c->Stop();
      delete c;
    }
  }
};

// ---- A store's work, signed in ----

std::unique_ptr<Store> MustOpen(const std::string& url, const StoreOptions& options) {
  Result<std::unique_ptr<Store>> store = Store::Open(url, options);
  EXPECT_TRUE(store.ok()) << HidePassword(url) << ": " << store.status().ToString();
  return store.ok() ? *std::move(store) : nullptr;
}

// Loads, queries, checks and inserts, scans, verifies and repairs: each must succeed.
void Exercise(Store& store) {
  std::vector<std::string> metadata;  // NewDocument only views its metadata
  for (DocumentId id = 1; id <= 200; ++id) metadata.push_back("doc " + std::to_string(id));
  std::vector<NewDocument> docs;
  for (DocumentId id = 1; id <= 200; ++id) {
    docs.push_back({id, 0x9e3779b97f4a7c15ULL * id, metadata[id - 1], {}});
  }
  Status s = store.InsertBatch(docs).status();
  ASSERT_TRUE(s.ok()) << s.ToString();
  Result<std::vector<Match>> found = store.Query(docs[41].fingerprint, 2);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  ASSERT_FALSE(found->empty());
  EXPECT_EQ((*found)[0].id, 42u);
  Result<CheckResult> checked =
      store.CheckAndInsert(1000, docs[6].fingerprint ^ 1, "near 7", InsertPolicy::kIfNoMatch);
  ASSERT_TRUE(checked.ok()) << checked.status().ToString();
  EXPECT_FALSE(checked->inserted);
  ASSERT_EQ(checked->matches.size(), 1u);
  EXPECT_EQ(checked->matches[0].id, 7u);
  checked = store.CheckAndInsert(1001, docs[6].fingerprint ^ 3, "near 7");
  ASSERT_TRUE(checked.ok()) << checked.status().ToString();
  EXPECT_TRUE(checked->inserted);
  std::size_t pairs = 0;
  s = store.FindAll(3, [&](const NearPair&) { ++pairs; });
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_GE(pairs, 1u);
  s = store.Verify();
  EXPECT_TRUE(s.ok()) << s.ToString();
  s = store.Repair();
  EXPECT_TRUE(s.ok()) << s.ToString();
  Result<StoreStats> stats = store.Stats();
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->documents, 201u);
  EXPECT_TRUE(store.Remove(1001).ok());
}

class SecuredStoreTest : public ::testing::TestWithParam<bool> {
 protected:
  SecuredCluster& cluster() const { return GetParam() ? *tls_cluster : *plain_cluster; }
  // A store name of this test's own.
  std::string Name(const std::string& what) const {
    return std::string(::testing::UnitTest::GetInstance()->current_test_info()->name())
               .substr(0, 20) +
           (GetParam() ? "-tls-" : "-tcp-") + what;
  }
  void TearDown() override {
    for (const std::string& name : made_) {
      StoreOptions options = cluster().Options();
      options.redis_password = kPassword;
      (void)DestroyStore(cluster().Url(name), options);
    }
  }
  std::string Made(const std::string& what) {
    made_.push_back(Name(what));
    return made_.back();
  }

 private:
  std::vector<std::string> made_;
};

TEST_P(SecuredStoreTest, SignsInWithThePasswordOfTheUrlOrTheOptions) {
  const std::string name = Made("a");
  {
    std::unique_ptr<Store> store =
        MustOpen(cluster().Url(name, std::string(":") + kPassword + "@"), cluster().Options());
    ASSERT_NE(store, nullptr);
    Exercise(*store);
    // The store's messages show its URL with the password hidden.
    ASSERT_TRUE(store->Close().ok());
    const Status closed_call = store->Flush();
    EXPECT_NE(closed_call.message().find(":***@"), std::string::npos) << closed_call.ToString();
    EXPECT_TRUE(NoPassword(closed_call.ToString()));
  }
  StoreOptions options = cluster().Options();
  options.redis_password = kPassword;
  options.read_only = true;
  std::unique_ptr<Store> store = MustOpen(cluster().Url(name), options);
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(store->Get(42).ok());
  // The default user by name, in the URL, and the same password in both places.
  options.redis_user = "default";
  store = MustOpen(cluster().Url(name, std::string("default:") + kPassword + "@"), options);
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(store->Get(42).ok());
}

TEST_P(SecuredStoreTest, SaysWhyItWasNotLetIn) {
  const std::string name = Made("b");
  struct Case {
    std::string userinfo;
    std::string password_option;
    std::string says;
  };
  const std::vector<Case> cases = {
      {std::string(":") + kWrongPassword + "@", "",
       "refused the password (WRONGPASS): wrong password"},
      {"", "", "asks for a password (NOAUTH)"},
      {"", kWrongPassword, "wrong password"},
      {std::string("nobody:") + kPassword + "@", "",
       "refused user 'nobody' (WRONGPASS): wrong password, or an unknown or disabled user"},
      {std::string(":") + kPassword + "@", kWrongPassword,
       "the URL and StoreOptions::redis_password differ"},
      {":%zz@", "", "a '%' in the user or password must start %XX"},
  };
  for (const Case& c : cases) {
    StoreOptions options = cluster().Options();
    options.redis_password = c.password_option;
    Result<std::unique_ptr<Store>> store = Store::Open(cluster().Url(name, c.userinfo), options);
    ASSERT_FALSE(store.ok()) << c.says;
    EXPECT_TRUE(store.status().IsInvalidArgument()) << store.status().ToString();
    EXPECT_NE(store.status().message().find(c.says), std::string::npos)
        << store.status().ToString();
    EXPECT_TRUE(NoPassword(store.status().ToString()));
  }
}

TEST_P(SecuredStoreTest, AnAclUserWithWhatFpstoreNeeds) {
  ASSERT_EQ(cluster().AddUser("fps", kNeeded), "");
  const std::string name = Made("c");
  std::unique_ptr<Store> store = MustOpen(
      cluster().Url(name, std::string("fps:") + kUserPasswordInUrl + "@"), cluster().Options());
  ASSERT_NE(store, nullptr);
  Exercise(*store);
  // The same user through the options, its password unencoded.
  StoreOptions options = cluster().Options();
  options.redis_user = "fps";
  options.redis_password = kUserPassword;
  store = MustOpen(cluster().Url(name), options);
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(store->Get(42).ok());
  // A retention's expiry, sweep and stats run as that user too.
  options.retention_seconds = 3600;
  options.expected_documents = 1000;  // few times sets to go through
  store = MustOpen(cluster().Url(Made("retained")), options);
  ASSERT_NE(store, nullptr);
  const std::vector<NewDocument> timed{{1, 0x10, "", {}, 5}, {2, 0x20, "", {}, {}}};
  Result<InsertStats> inserted = store->InsertBatch(timed);
  ASSERT_TRUE(inserted.ok()) << inserted.status().ToString();
  EXPECT_EQ(inserted->past_retention, 1u);
  Result<StoreStats> stats = store->Stats();
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_LE(stats->expired_documents, 1u);  // the sweep may have taken it already
  Result<std::uint64_t> expired = store->Expire(10);
  ASSERT_TRUE(expired.ok()) << expired.status().ToString();
  const Status repaired = store->Repair();
  EXPECT_TRUE(repaired.ok()) << repaired.ToString();
  EXPECT_EQ(store->Stats()->documents, 1u);
}

TEST_P(SecuredStoreTest, NamesTheCommandsAUserMayNotRun) {
  std::vector<std::string> allowed;
  for (const std::string& c : kNeeded) {
    if (c != "+zadd" && c != "+wait") allowed.push_back(c);
  }
  ASSERT_EQ(cluster().AddUser("reader", allowed), "");
  ASSERT_EQ(cluster().AddUser("fps", kNeeded), "");
  const std::string name = Made("d");
  const std::string as_fps = std::string("fps:") + kUserPasswordInUrl + "@";
  ASSERT_NE(MustOpen(cluster().Url(name, as_fps), cluster().Options()), nullptr);
  const std::string as_reader = std::string("reader:") + kUserPasswordInUrl + "@";
  Result<std::unique_ptr<Store>> store =
      Store::Open(cluster().Url(name, as_reader), cluster().Options());
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(store.status().IsInvalidArgument());
  EXPECT_NE(store.status().message().find("the Redis user 'reader' may not run ZADD, WAIT"),
            std::string::npos)
      << store.status().ToString();
  EXPECT_TRUE(NoPassword(store.status().ToString()));
  // What it may do, it does.
  StoreOptions options = cluster().Options();
  options.read_only = true;
  std::unique_ptr<Store> reader = MustOpen(cluster().Url(name, as_reader), options);
  ASSERT_NE(reader, nullptr);
  EXPECT_TRUE(reader->Query(Fingerprint{42}, 3).ok());
}

TEST_P(SecuredStoreTest, NearDuplicatesCheckedAtOnceTakeTurns) {
  // Two handles, each with connections of its own, offer near-duplicates of the same pages.
  const std::string url = cluster().Url(Made("e"), std::string(":") + kPassword + "@");
  std::unique_ptr<Store> first = MustOpen(url, cluster().Options());
  std::unique_ptr<Store> second = MustOpen(url, cluster().Options());
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  constexpr int kPages = 40;
  std::vector<Result<CheckResult>> a, b;
  auto offer = [&](Store& store, DocumentId base, Fingerprint flip,
                   std::vector<Result<CheckResult>>& out) {
    for (int i = 0; i < kPages; ++i) {
      const Fingerprint page = 0x5851f42d4c957f2dULL * static_cast<std::uint64_t>(i + 1);
      out.push_back(store.CheckAndInsert(base + static_cast<DocumentId>(i), page ^ flip, "",
                                         InsertPolicy::kIfNoMatch));
    }
  };
  std::thread one([&] { offer(*first, 10'000, 0, a); });
  std::thread two([&] { offer(*second, 20'000, 1, b); });
  one.join();
  two.join();
  for (int i = 0; i < kPages; ++i) {
    ASSERT_TRUE(a[i].ok()) << a[i].status().ToString();
    ASSERT_TRUE(b[i].ok()) << b[i].status().ToString();
    // Exactly one of each pair is stored; the other was told of it.
    EXPECT_NE(a[i]->inserted, b[i]->inserted) << "page " << i;
    const CheckResult& refused = a[i]->inserted ? *b[i] : *a[i];
    ASSERT_EQ(refused.matches.size(), 1u) << "page " << i;
    EXPECT_EQ(refused.matches[0].id,
              static_cast<DocumentId>((a[i]->inserted ? 10'000 : 20'000) + i));
  }
}

TEST_P(SecuredStoreTest, ConnectionsOpenedAfterMovedAndAskSignIn) {
  SecuredCluster& c = cluster();
  // The first master, whichever node it is now: the failover test may have run before.
  const std::vector<std::string> masters = c.Masters(c.Address(1));
  ASSERT_EQ(masters.size(), 3u);
  const std::string seed = masters[0];
  const std::string seed_id = c.IdOf(seed), other_id = c.IdOf(masters[1]);

  // MOVED: a slot given to another master after the client read the map.
  const std::string moved = c.KeyServedBy(seed, "moved-" + Name("") + "-");
  const std::string slot = std::to_string(KeySlot(moved));
  Result<std::unique_ptr<ClusterClient>> client = ClusterClient::Connect(seed, c.Client());
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  for (const std::string& m : masters) {
    ASSERT_EQ(c.On(m, {"CLUSTER", "SETSLOT", slot, "NODE", other_id}), "OK");
  }
  Result<Reply> set = (*client)->Run(Command{moved, {"SET", moved, "v"}});
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set->str, "OK");
  EXPECT_GE((*client)->redirections(), 1u);
  ASSERT_TRUE((*client)->Run(Command{moved, {"DEL", moved}}).ok());
  for (const std::string& m : masters) {
    ASSERT_EQ(c.On(m, {"CLUSTER", "SETSLOT", slot, "NODE", seed_id}), "OK");
  }

  // ASK: a slot halfway to another master, its key not on the old one yet.
  const std::string asked = c.KeyServedBy(seed, "asked-" + Name("") + "-");
  const std::string asked_slot = std::to_string(KeySlot(asked));
  client = ClusterClient::Connect(seed, c.Client());
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  ASSERT_EQ(c.On(masters[2], {"CLUSTER", "SETSLOT", asked_slot, "IMPORTING", seed_id}), "OK");
  ASSERT_EQ(c.On(seed, {"CLUSTER", "SETSLOT", asked_slot, "MIGRATING", c.IdOf(masters[2])}), "OK");
  set = (*client)->Run(Command{asked, {"SET", asked, "v"}});
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set->str, "OK");
  EXPECT_GE((*client)->redirections(), 1u);
  ASSERT_TRUE((*client)->Run(Command{asked, {"DEL", asked}}).ok());
  for (const std::string& m : {seed, masters[2]}) {
    ASSERT_EQ(c.On(m, {"CLUSTER", "SETSLOT", asked_slot, "STABLE"}), "OK");
  }
}

INSTANTIATE_TEST_SUITE_P(TcpAndTls, SecuredStoreTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Tls" : "Tcp"; });

// ---- TLS ----

TEST(SecuredTlsTest, ChecksTheNodesCertificates) {
  SecuredCluster& c = *tls_cluster;
  const std::string url = c.Url("tls-check", std::string(":") + kPassword + "@");
  struct Case {
    std::string ca_file;
    std::string says;
  };
  // The node's own certificate is no CA; the system's CAs never signed the test CA.
  for (const Case& k : std::vector<Case>{
           {c.NodeCertificate(), "certificate was not verified"},
           {"", "certificate was not verified"},
           {c.CaFile() + ".missing", "redis_tls_ca_file: no CA certificate read from"}}) {
    StoreOptions options;
    options.redis_tls_ca_file = k.ca_file;
    Result<std::unique_ptr<Store>> store = Store::Open(url, options);
    ASSERT_FALSE(store.ok()) << k.says;
    EXPECT_TRUE(store.status().IsInvalidArgument()) << store.status().ToString();
    EXPECT_NE(store.status().message().find(k.says), std::string::npos)
        << store.status().ToString();
    EXPECT_TRUE(NoPassword(store.status().ToString()));
  }
  // TLS files with a plain URL are a mistake, not a quiet fall back to plain TCP.
  Result<std::unique_ptr<Store>> store =
      Store::Open(plain_cluster->Url("tls-check", std::string(":") + kPassword + "@"), c.Options());
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("redis_tls_* options are for TLS"), std::string::npos)
      << store.status().ToString();
}

// ---- The C API ----

TEST(SecuredCApiTest, SignsInWithTheOptions) {
  SecuredCluster& c = *tls_cluster;
  fpstore_options_t* options = fpstore_options_create();
  fpstore_options_set_redis_password(options, kPassword);
  fpstore_options_set_redis_tls(options, c.CaFile().c_str(), nullptr, nullptr);
  const std::string url = c.Url("c-api");
  fpstore_t* store = nullptr;
  char* error = nullptr;
  ASSERT_EQ(fpstore_open(url.c_str(), options, &store, &error), FPSTORE_OK) << error;
  ASSERT_EQ(fpstore_insert(store, 7, 0x1234, "seven", 5, &error), FPSTORE_OK) << error;
  fpstore_matches_t* matches = nullptr;
  ASSERT_EQ(fpstore_query(store, 0x1235, 1, &matches, &error), FPSTORE_OK) << error;
  EXPECT_EQ(fpstore_matches_count(matches), 1u);
  fpstore_matches_destroy(matches);
  EXPECT_EQ(fpstore_close(store, &error), FPSTORE_OK);

  fpstore_options_set_redis_password(options, kWrongPassword);
  ASSERT_EQ(fpstore_open(url.c_str(), options, &store, &error), FPSTORE_INVALID_ARGUMENT);
  ASSERT_NE(error, nullptr);
  EXPECT_NE(std::string(error).find("wrong password"), std::string::npos) << error;
  EXPECT_TRUE(NoPassword(error));
  fpstore_free(error);
  error = nullptr;

  fpstore_options_set_redis_password(options, kPassword);
  EXPECT_EQ(fpstore_destroy_with_options(url.c_str(), options, &error), FPSTORE_OK) << error;
  fpstore_options_destroy(options);
}

// ---- The tools ----

testing::ToolResult Tool(const char* binary, const std::vector<std::string>& args) {
  return testing::RunTool(binary, args);
}

// What a tool printed, for a message.
std::string Said(const testing::ToolResult& r) {
  return "exit " + std::to_string(r.exit_code) + "\n" + r.out + r.err;
}

TEST(SecuredToolsTest, ReadThePasswordFromAFileTheEnvironmentOrTheUrl) {
  SecuredCluster& c = *plain_cluster;
  const std::string sample = std::string(FPSTORE_SAMPLE_DATA) + "/sample.jsonl";
  const std::string db = c.Url("tools");
  const std::string dir = std::string(FPSTORE_REDIS_ACCESS_DIR) + "/tools";
  std::filesystem::create_directories(dir);
  const std::string password_file = dir + "/password";
  std::ofstream(password_file) << kPassword << "\n";
  std::vector<testing::ToolResult> runs;

  runs.push_back(Tool(FPSTORE_LOAD_BINARY,
                      {"--db", db, "--redis-password-file", password_file, "--input", sample}));
  EXPECT_EQ(runs.back().exit_code, 0) << Said(runs.back());

  setenv("FPSTORE_REDIS_PASSWORD", kPassword, 1);
  runs.push_back(Tool(FPSTORE_QUERY_BINARY, {"--db", db, "--input", sample}));
  EXPECT_EQ(runs.back().exit_code, 0) << Said(runs.back());  // each finds itself
  for (const char* command : {"verify", "repair", "find-all"}) {
    runs.push_back(Tool(FPSTORE_ADMIN_BINARY, {command, "--db", db}));
    EXPECT_EQ(runs.back().exit_code, 0) << command << ": " << Said(runs.back());
  }
  unsetenv("FPSTORE_REDIS_PASSWORD");

  // In the URL (which ps shows: the docs say not to), it is printed as ***.
  const std::string with_password = c.Url("tools", std::string(":") + kPassword + "@");
  runs.push_back(Tool(FPSTORE_ADMIN_BINARY, {"stats", "--db", with_password}));
  EXPECT_EQ(runs.back().exit_code, 0) << Said(runs.back());
  EXPECT_NE(runs.back().out.find("redis://:***@" + c.Address(0) + "/tools"), std::string::npos)
      << Said(runs.back());

  // Refused: a wrong password, none, and a file beside a password in the URL.
  setenv("FPSTORE_REDIS_PASSWORD", kWrongPassword, 1);
  runs.push_back(Tool(FPSTORE_ADMIN_BINARY, {"stats", "--db", db}));
  EXPECT_EQ(runs.back().exit_code, 1) << Said(runs.back());
  EXPECT_NE(runs.back().err.find("wrong password"), std::string::npos) << Said(runs.back());
  unsetenv("FPSTORE_REDIS_PASSWORD");
  runs.push_back(Tool(FPSTORE_QUERY_BINARY, {"--db", db, "--text", "fox"}));
  EXPECT_EQ(runs.back().exit_code, 2) << Said(runs.back());  // fpstore-query's error
  EXPECT_NE(runs.back().err.find("asks for a password"), std::string::npos) << Said(runs.back());
  runs.push_back(Tool(FPSTORE_ADMIN_BINARY,
                      {"stats", "--db", with_password, "--redis-password-file", password_file}));
  EXPECT_EQ(runs.back().exit_code, 2) << Said(runs.back());
  runs.push_back(Tool(FPSTORE_LOAD_BINARY, {"--help"}));

  for (const testing::ToolResult& r : runs) EXPECT_TRUE(NoPassword(r.out + r.err));
  StoreOptions options;
  options.redis_password = kPassword;
  EXPECT_TRUE(DestroyStore(db, options).ok());
}

// ---- Python ----

TEST(SecuredPythonTest, SignsIn) {
  const std::string package = std::string(FPSTORE_PYTHON_PATH) + "/fpstore";
  bool built = false;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(package, error)) {
    built = built || entry.path().filename().string().starts_with("_fpstore");
  }
  if (!built) GTEST_SKIP() << "no Python package built in " << package;
  setenv("PYTHONPATH", FPSTORE_PYTHON_PATH, 1);
  setenv("PYTHONDONTWRITEBYTECODE", "1", 1);
  setenv("FPSTORE_SECURED_REDIS", plain_cluster->Address(0).c_str(), 1);
  setenv("FPSTORE_SECURED_REDIS_PASSWORD", kPassword, 1);
  // A sanitized build's extension needs its runtime loaded first, as python.pytest does.
  const std::string preload = FPSTORE_PYTHON_PRELOAD;
  const char* asan_options = std::getenv("ASAN_OPTIONS");
  const std::string kept_asan_options = asan_options != nullptr ? asan_options : "";
  if (!preload.empty()) {
    setenv("LD_PRELOAD", preload.c_str(), 1);
    setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
  }
  const testing::ToolResult r = testing::RunTool(
      FPSTORE_PYTHON, {"-m", "pytest", "-q", "-p", "no:cacheprovider", FPSTORE_PYTHON_TEST});
  for (const char* name :
       {"FPSTORE_SECURED_REDIS", "FPSTORE_SECURED_REDIS_PASSWORD", "LD_PRELOAD"}) {
    unsetenv(name);
  }
  if (!preload.empty() && asan_options != nullptr) {
    setenv("ASAN_OPTIONS", kept_asan_options.c_str(), 1);
  } else if (!preload.empty()) {
    unsetenv("ASAN_OPTIONS");
  }
  EXPECT_EQ(r.exit_code, 0) << Said(r);
  EXPECT_EQ(r.out.find("skipped"), std::string::npos) << Said(r);
}

// ---- A failover ----

// It leaves another node master in the victim's place: the other tests do not count on which.
TEST(SecuredFailoverTest, ConnectionsToThePromotedReplicaSignIn) {
  SecuredCluster& c = *plain_cluster;
  StoreOptions options = c.Options();
  options.redis_password = kPassword;
  const std::string url = c.Url("failover");
  std::unique_ptr<Store> store = MustOpen(url, options);
  ASSERT_NE(store, nullptr);
  std::vector<NewDocument> docs;
  for (DocumentId id = 1; id <= 300; ++id) docs.push_back({id, 0x2545f4914f6cdd1dULL * id, "", {}});
  ASSERT_TRUE(store->InsertBatch(docs).ok());

  // A master (the seed, unless tests before changed them), and the other five nodes.
  const std::string victim = c.Masters(c.Address(1)).at(0);
  std::vector<std::string> survivors;
  for (int node = 0; node < 6; ++node) {
    if (c.Address(node) != victim) survivors.push_back(c.Address(node));
  }
  ASSERT_EQ(kill(c.Pid(victim), SIGKILL), 0);
  ASSERT_TRUE(WaitUntil(seconds(30),
                        [&] {
                          const std::vector<std::string> masters = c.Masters(survivors[0]);
                          if (masters.size() != 3 ||
                              std::find(masters.begin(), masters.end(), victim) != masters.end()) {
                            return false;
                          }
                          for (const std::string& n : survivors) {
                            if (InfoField(c.On(n, {"CLUSTER", "INFO"}), "cluster_state") != "ok")
                              return false;
                          }
                          return true;
                        }))
      << "no replica took over from " << victim;

  // Reads reach the promoted replica, over a connection opened and signed in after the failover.
  for (const NewDocument& d : docs) {
    Result<Document> got = store->Get(d.id);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->fingerprint, d.fingerprint);
  }
  // The victim back, as a replica (masterauth): durable writes to its slots need it.
  ASSERT_TRUE(c.Restart(victim));
  ASSERT_TRUE(WaitUntil(seconds(30),
                        [&] {
                          const std::string info = c.On(victim, {"INFO", "replication"});
                          return InfoField(info, "role") == "slave" &&
                                 InfoField(info, "master_link_status") == "up";
                        }))
      << victim << " did not rejoin as a replica";
  std::vector<NewDocument> more;
  for (DocumentId id = 301; id <= 400; ++id)
    more.push_back({id, 0x2545f4914f6cdd1dULL * id, "", {}});
  Status s = store->InsertBatch(more).status();
  EXPECT_TRUE(s.ok()) << s.ToString();
  s = store->Verify();
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(NoPassword(s.ToString()));
  EXPECT_TRUE(DestroyStore(url, options).ok());
}

}  // namespace
}  // namespace fpstore

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new fpstore::Clusters);
  return RUN_ALL_TESTS();
}
