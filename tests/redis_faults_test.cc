// The Redis backend under faults, against real clusters on loopback that this program starts and
// stops itself (scripts/redis-cluster.sh, ports 7700-7735), since it kills and reshards them:
//   - a master killed while durable inserts run: every acknowledged document survives the
//     failover and is found exactly, an unacknowledged one is wholly there or wholly absent
//     (after Repair, if Verify finds a write cut short), and the store keeps taking writes;
//   - slots moved between masters while queries run: every answer stays exact;
//   - two processes that check-and-insert near-duplicate documents at the same moment: of each
//     pair exactly one is inserted and the other reports it;
//   - a write whose connection broke is never taken as acknowledged by a replica.
// The program is also the racing helper process (main, "--racer").

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "brute_force.h"
#include "cluster_nodes.h"
#include "fpstore/store.h"
#include "redis/cluster_client.h"
#include "redis/redis_store.h"

extern char** environ;

namespace fpstore {
namespace {

using internal::IdFingerprint;
using internal::redis::ClusterClient;
using internal::redis::Reply;
using testing::Random;
using testing::TestSeed;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

// ---- Processes ----

// Starts argv[0] with `argv`, its stdout and stderr appended to `out`; -1 if it could not.
pid_t Spawn(const std::vector<std::string>& argv, const std::string& out) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  if (posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&actions);
  return pid;
}

// The exit code of `pid`, waited for up to `limit`; -1 if it did not exit normally in time (it is
// then killed).
int WaitExit(pid_t pid, Clock::duration limit) {
  const auto end = Clock::now() + limit;
  int status = 0;
  while (Clock::now() < end) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (done < 0) return -1;
    std::this_thread::sleep_for(milliseconds(20));
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return -1;
}

using testing::InfoField;
using testing::WaitUntil;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// ---- A cluster of its own ----

// Six nodes (three masters, three replicas) on ports base..base+5, their files under
// FPSTORE_REDIS_FAULTS_DIR/base: the same directory each run, so that the script stops what a run
// killed midway left behind there.
class LoopbackCluster {
 public:
  explicit LoopbackCluster(int base)
      : base_(base), dir_(std::string(FPSTORE_REDIS_FAULTS_DIR) + "/" + std::to_string(base)) {}
  ~LoopbackCluster() { Stop(); }

  ::testing::AssertionResult Start() {
    std::filesystem::create_directories(dir_);
    const int code = WaitExit(
        Spawn({"/bin/bash", FPSTORE_REDIS_CLUSTER_SCRIPT, "start", dir_, std::to_string(base_)},
              dir_ + "/script.log"),
        seconds(90));
    if (code != 0) {
      return ::testing::AssertionFailure()
             << "redis-cluster.sh start failed: " << ReadFile(dir_ + "/script.log");
    }
    Result<std::unique_ptr<ClusterClient>> admin = ClusterClient::Connect(Address(0));
    if (!admin.ok()) return ::testing::AssertionFailure() << admin.status().ToString();
    admin_ = *std::move(admin);
    started_ = true;
    return ::testing::AssertionSuccess();
  }

  void Stop() {
    if (!started_) return;
    started_ = false;
    admin_.reset();
    WaitExit(Spawn({"/bin/bash", FPSTORE_REDIS_CLUSTER_SCRIPT, "stop", dir_}, dir_ + "/script.log"),
             seconds(30));
  }

  std::string Address(int node) const { return "127.0.0.1:" + std::to_string(base_ + node); }
  std::string Url(const std::string& name) const { return "redis://" + Address(0) + "/" + name; }
  const std::string& dir() const { return dir_; }

  // `args` on one node, by address; an error reply or none becomes a string starting "!".
  std::string On(const std::string& address, const std::vector<std::string>& args) {
    Result<Reply> r = admin_->RunOn(address, args);
    if (!r.ok()) return "!" + r.status().ToString();
    if (r->type == Reply::Type::kError) return "!" + r->str;
    return r->type == Reply::Type::kInteger ? std::to_string(r->integer) : r->str;
  }
  Result<Reply> Raw(const std::string& address, const std::vector<std::string>& args) {
    return admin_->RunOn(address, args);
  }

  // The node id of each live node, by address, and the masters among them.
  std::string IdOf(const std::string& address) { return On(address, {"CLUSTER", "MYID"}); }
  bool IsMaster(const std::string& address) {
    return InfoField(On(address, {"INFO", "replication"}), "role") == "master";
  }
  // The masters serving slots, as `address` sees them (CLUSTER SLOTS).
  std::vector<std::string> SlotMasters(const std::string& address) {
    std::vector<std::string> masters;
    Result<Reply> slots = admin_->RunOn(address, {"CLUSTER", "SLOTS"});
    if (!slots.ok()) return masters;
    for (const Reply& range : slots->elements) {
      if (range.elements.size() < 3) continue;
      const std::string at = "127.0.0.1:" + std::to_string(range.elements[2].elements[1].integer);
      if (std::find(masters.begin(), masters.end(), at) == masters.end()) masters.push_back(at);
    }
    return masters;
  }

  // The master serving `slot` (as the first node sees it) and its first replica (as the master
  // sees it: the others learn of replicas by gossip, a while after the start).
  std::pair<std::string, std::string> SlotNodes(std::uint16_t slot) {
    Result<Reply> slots = admin_->RunOn(Address(0), {"CLUSTER", "SLOTS"});
    for (const Reply& range : slots.ok() ? slots->elements : std::vector<Reply>{}) {
      if (range.elements.size() < 3 || slot < range.elements[0].integer ||
          slot > range.elements[1].integer) {
        continue;
      }
      const std::string master =
          "127.0.0.1:" + std::to_string(range.elements[2].elements[1].integer);
      // "slave0:ip=127.0.0.1,port=7004,state=online,..."
      const std::string replica = InfoField(On(master, {"INFO", "replication"}), "slave0");
      const std::size_t port = replica.find("port=");
      if (port == std::string::npos) return {master, ""};
      return {master, "127.0.0.1:" + replica.substr(port + 5, replica.find(',', port) - port - 5)};
    }
    return {};
  }

  pid_t Pid(const std::string& address) {
    return static_cast<pid_t>(std::stol(
        "0" + ReadFile(dir_ + "/" + address.substr(address.rfind(':') + 1) + "/redis.pid")));
  }

  // SIGKILL, as a crash: nothing flushed, nothing said to the other nodes.
  ::testing::AssertionResult Kill(const std::string& address) {
    const pid_t pid = Pid(address);
    if (pid <= 0 || kill(pid, SIGKILL) != 0) {
      return ::testing::AssertionFailure() << "no pid to kill for " << address;
    }
    if (!WaitUntil(seconds(10), [&] { return kill(pid, 0) != 0; })) {
      return ::testing::AssertionFailure() << address << " outlived SIGKILL";
    }
    return ::testing::AssertionSuccess();
  }

  // Starts a killed node again on its files, as scripts/redis-cluster.sh started it: it rejoins
  // the cluster as it finds it (a replica of the node that took its place).
  ::testing::AssertionResult Restart(const std::string& address) {
    const std::string port = address.substr(address.rfind(':') + 1);
    const std::string dir = dir_ + "/" + port;
    const int code = WaitExit(Spawn({"/usr/bin/env",
                                     "redis-server",
                                     "--port",
                                     port,
                                     "--bind",
                                     "127.0.0.1",
                                     "--dir",
                                     dir,
                                     "--cluster-enabled",
                                     "yes",
                                     "--cluster-config-file",
                                     "nodes.conf",
                                     "--cluster-node-timeout",
                                     "2000",
                                     "--appendonly",
                                     "yes",
                                     "--appendfsync",
                                     "everysec",
                                     "--save",
                                     "",
                                     "--zset-max-listpack-entries",
                                     "256",
                                     "--daemonize",
                                     "yes",
                                     "--pidfile",
                                     dir + "/redis.pid",
                                     "--logfile",
                                     dir + "/redis.log"},
                                    dir_ + "/script.log"),
                              seconds(30));
    if (code != 0)
      return ::testing::AssertionFailure() << "redis-server " << port << " exited " << code;
    return ::testing::AssertionSuccess();
  }

  // Whether every live node among `nodes` says the cluster is ok.
  bool AllOk(const std::vector<std::string>& nodes) {
    for (const std::string& n : nodes) {
      if (InfoField(On(n, {"CLUSTER", "INFO"}), "cluster_state") != "ok") return false;
    }
    return true;
  }

 private:
  const int base_;
  const std::string dir_;
  std::unique_ptr<ClusterClient> admin_;
  bool started_ = false;
};

std::unique_ptr<Store> MustOpen(const std::string& url, const StoreOptions& options = {}) {
  Result<std::unique_ptr<Store>> store = Store::Open(url, options);
  EXPECT_TRUE(store.ok()) << url << ": " << store.status().ToString();
  return store.ok() ? *std::move(store) : nullptr;
}

// The redirections the store's idle connections have followed (MOVED and ASK).
std::uint64_t Redirections(const Store& store) {
  return dynamic_cast<const internal::redis::RedisStore&>(store).TEST_Redirections();
}

// ---- Exact answers ----

// For each table, a query that shares with `fp` that table's prefix and no other: `fp` with one
// bit flipped in each block outside the prefix, at distance exactly the plan's.
std::vector<std::uint64_t> TableProbes(const PermutationPlan& plan, std::uint64_t fp) {
  std::vector<std::uint64_t> probes;
  for (const TablePermutation& t : plan.tables()) {
    std::uint64_t q = fp;
    for (int b = 0; b < plan.blocks(); ++b) {
      const std::vector<int>& lead = t.leading_blocks();
      if (std::find(lead.begin(), lead.end(), b) == lead.end()) {
        q ^= plan.block_mask(b).low() & (~plan.block_mask(b).low() + 1);  // the block's lowest bit
      }
    }
    probes.push_back(q);
  }
  return probes;
}

// What the store should answer: `must` documents are found by every query within k of them;
// `may` ones (unacknowledged writes that may have taken effect) either by all of those queries or
// by none; nothing else is found.
struct Expected {
  std::unordered_map<DocumentId, std::uint64_t> must, may;
};

// Runs `queries` (k = the plan's distance) in batches and checks every answer: the `must`
// documents within k all found at their distance, nothing outside must and may. Each `may`
// document found by some query and missed by another is added to *partial. The number of
// answers that were wrong.
std::size_t CheckAnswers(const Store& store, const std::vector<std::uint64_t>& queries,
                         const Expected& expected, std::set<DocumentId>* partial,
                         std::string* first_error) {
  const int k = store.plan().distance();
  std::vector<IdFingerprint> must, may;
  for (const auto& [id, fp] : expected.must) must.push_back({id, fp});
  for (const auto& [id, fp] : expected.may) may.push_back({id, fp});
  std::map<DocumentId, std::pair<int, int>> may_seen;  // found, missed
  std::size_t wrong = 0;
  constexpr std::size_t kBatch = 500;
  for (std::size_t begin = 0; begin < queries.size(); begin += kBatch) {
    const std::span<const std::uint64_t> batch =
        std::span(queries).subspan(begin, std::min(kBatch, queries.size() - begin));
    Result<std::vector<std::vector<Match>>> got = store.QueryBatch(testing::Fingerprints(batch), k);
    if (!got.ok()) {
      if (first_error->empty()) *first_error = got.status().ToString();
      return wrong + batch.size();
    }
    for (std::size_t i = 0; i < batch.size(); ++i) {
      std::vector<testing::IdDistance> found, expect = testing::BruteForceQuery(must, batch[i], k);
      for (const Match& m : (*got)[i]) {
        if (expected.must.count(m.id) == 0) found.push_back({m.id, m.distance});
      }
      for (const testing::IdDistance& m : testing::BruteForceQuery(may, batch[i], k)) {
        const bool hit = std::any_of((*got)[i].begin(), (*got)[i].end(),
                                     [&](const Match& x) { return x.id == m.id; });
        (hit ? may_seen[m.id].first : may_seen[m.id].second)++;
        if (hit) expect.push_back(m);
      }
      for (const Match& m : (*got)[i]) {
        if (expected.must.count(m.id) != 0) found.push_back({m.id, m.distance});
      }
      std::sort(found.begin(), found.end());
      std::sort(expect.begin(), expect.end());
      if (found != expect) {
        if (first_error->empty()) {
          *first_error =
              "query " + std::to_string(batch[i]) + ": " + testing::SortedDifference(expect, found);
        }
        ++wrong;
      }
    }
  }
  for (const auto& [id, seen] : may_seen) {
    if (seen.first > 0 && seen.second > 0) partial->insert(id);
  }
  return wrong;
}

// Every document of `expected` probed in every table (TableProbes), and also by its own
// fingerprint: success if every answer is right and, unless `allow_partial`, every `may` document
// found by all of its queries or by none.
::testing::AssertionResult FoundExactly(const Store& store, const Expected& expected,
                                        bool allow_partial = false) {
  std::vector<std::uint64_t> queries;
  for (const auto* docs : {&expected.must, &expected.may}) {
    for (const auto& [id, fp] : *docs) {
      queries.push_back(fp);
      for (const std::uint64_t q : TableProbes(store.plan(), fp)) queries.push_back(q);
    }
  }
  std::set<DocumentId> partial;
  std::string first;
  const std::size_t wrong = CheckAnswers(store, queries, expected, &partial, &first);
  if (wrong == 0 && (allow_partial || partial.empty())) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << wrong << " of " << queries.size() << " answers wrong (the first: " << first << "), "
         << partial.size() << " unacknowledged documents found in some tables only"
         << (partial.empty() ? "" : " (e.g. " + std::to_string(*partial.begin()) + ")");
}

// ---- A master killed under durable inserts ----

// One insert's outcome.
struct Write {
  DocumentId id;
  std::uint64_t fingerprint;
  Clock::time_point started;
  Status status;
};

// Threads that insert fresh documents one by one through one store until stopped, recording
// every outcome.
class Writers {
 public:
  Writers(Store& store, int threads, std::uint64_t seed) {
    for (int t = 0; t < threads; ++t) {
      threads_.emplace_back([this, &store, t, seed] { Run(store, t, seed); });
    }
  }
  ~Writers() { Stop(); }

  void Stop() {
    stop_ = true;
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
  }
  std::size_t acknowledged() const { return acknowledged_; }
  // REQUIRES: stopped.
  const std::vector<Write>& writes() const { return writes_; }

 private:
  void Run(Store& store, int thread, std::uint64_t seed) {
    Random rnd(seed + static_cast<std::uint64_t>(thread));
    const auto end = Clock::now() + seconds(90);
    for (std::uint64_t i = 0; !stop_ && i < 20000 && Clock::now() < end; ++i) {
      const DocumentId id = 1'000'000 * static_cast<DocumentId>(thread + 1) + i;
      const std::uint64_t fp = rnd.Next();
      const std::string metadata = "doc " + std::to_string(id);
      Write w{id, fp, Clock::now(), Status::OK()};
      w.status = store.Insert(id, fp, metadata);
      if (w.status.ok()) ++acknowledged_;
      std::lock_guard<std::mutex> lock(mu_);
      writes_.push_back(std::move(w));
    }
  }

  std::atomic<bool> stop_{false};
  std::atomic<std::size_t> acknowledged_{0};
  std::mutex mu_;
  std::vector<Write> writes_;
  std::vector<std::thread> threads_;
};

// What the store holds of `writes`: acknowledged ones must be there; of the others, those whose
// record is there may be (Get decides). Failures of Get go to `errors`.
Expected Holdings(const Store& store, const std::vector<Write>& writes, std::string* errors) {
  Expected e;
  for (const Write& w : writes) {
    Result<Document> got = store.Get(w.id);
    if (got.ok() && got->fingerprint != w.fingerprint) {
      *errors += "document " + std::to_string(w.id) + " holds another fingerprint; ";
    } else if (got.ok()) {
      (w.status.ok() ? e.must : e.may)[w.id] = w.fingerprint;
    } else if (w.status.ok() || !got.status().IsNotFound()) {
      *errors += "document " + std::to_string(w.id) + ": " + got.status().ToString() + "; ";
    }
  }
  return e;
}

TEST(RedisFaultsTest, DurableInsertsSurviveAFailover) {
  LoopbackCluster cluster(7700);
  ASSERT_TRUE(cluster.Start());
  const std::uint64_t seed = TestSeed(41051);
  SCOPED_TRACE("seed " + std::to_string(seed));
  const std::string url = cluster.Url("failover");
  std::unique_ptr<Store> store = MustOpen(url);  // kGroupCommit: each write on a replica
  ASSERT_NE(store, nullptr);
  // A second handle, idle until the failover, so its one connection still knows the old map.
  std::unique_ptr<Store> idle = MustOpen(url);
  ASSERT_NE(idle, nullptr);

  std::vector<Write> preload;
  Random rnd(seed);
  std::vector<NewDocument> batch;
  for (DocumentId id = 1; id <= 100; ++id) {
    preload.push_back({id, rnd.Next(), Clock::now(), Status::OK()});
    batch.push_back({id, preload.back().fingerprint, "preloaded", {}});
  }
  ASSERT_TRUE(store->InsertBatch(batch).ok());

  // The seed node, a master (the script's create makes the first three the masters): the store's
  // handles must then find the cluster through the others.
  const std::string victim = cluster.Address(0);
  ASSERT_TRUE(cluster.IsMaster(victim));
  const std::vector<std::string> survivors = {cluster.Address(1), cluster.Address(2),
                                              cluster.Address(3), cluster.Address(4),
                                              cluster.Address(5)};
  Writers writers(*store, 3, seed);
  ASSERT_TRUE(WaitUntil(seconds(30), [&] { return writers.acknowledged() >= 60; }));
  ASSERT_TRUE(cluster.Kill(victim));
  const auto killed = Clock::now();
  ASSERT_TRUE(
      WaitUntil(seconds(30),
                [&] {
                  const std::vector<std::string> masters = cluster.SlotMasters(survivors[0]);
                  return masters.size() == 3 &&
                         std::find(masters.begin(), masters.end(), victim) == masters.end() &&
                         cluster.AllOk(survivors);
                }))
      << "no replica took over from " << victim;
  const auto failed_over = Clock::now();

  // The seed is down: the idle handle's scan starts from a map that names it, and reads from
  // several threads at once make it open connections through another node.
  std::uint64_t seen = 0;
  Status scanned = idle->ForEachDocument([&](const Document&) { ++seen; });
  EXPECT_TRUE(scanned.ok()) << "a scan after the failover: " << scanned.ToString();
  std::atomic<int> read_failures{0};
  std::string read_error;
  std::mutex read_mu;
  {
    std::vector<std::thread> readers;
    for (int t = 0; t < 4; ++t) {
      readers.emplace_back([&, t] {
        for (std::size_t i = static_cast<std::size_t>(t); i < preload.size(); i += 4) {
          Result<Document> got = idle->Get(preload[i].id);
          if (got.ok()) continue;
          ++read_failures;
          std::lock_guard<std::mutex> lock(read_mu);
          read_error = got.status().ToString();
        }
      });
    }
    for (std::thread& t : readers) t.join();
  }
  EXPECT_EQ(read_failures, 0) << "reads with the seed node down: " << read_error;

  // The killed node back, as a replica of its successor: durable writes to its slots need it.
  ASSERT_TRUE(cluster.Restart(victim));
  ASSERT_TRUE(WaitUntil(seconds(30),
                        [&] {
                          const std::string info = cluster.On(victim, {"INFO", "replication"});
                          return InfoField(info, "role") == "slave" &&
                                 InfoField(info, "master_link_status") == "up";
                        }))
      << victim << " did not rejoin as a replica";
  const auto recovered = Clock::now();
  const std::size_t before = writers.acknowledged();
  ASSERT_TRUE(WaitUntil(seconds(30), [&] { return writers.acknowledged() >= before + 40; }))
      << "the store took no writes once the cluster recovered";
  writers.Stop();

  // Writes that began once the cluster had recovered all succeed.
  std::vector<Write> writes = preload;
  std::size_t failed = 0, failed_late = 0;
  std::map<std::string, int> errors;
  for (const Write& w : writers.writes()) {
    writes.push_back(w);
    if (w.status.ok()) continue;
    ++failed;
    ++errors[w.status.ToString().substr(0, 160)];
    if (w.started > recovered) {
      ++failed_late;
      ADD_FAILURE() << "a write after the recovery failed: " << w.status.ToString();
    }
  }
  std::cout << "failover took "
            << std::chrono::duration_cast<milliseconds>(failed_over - killed).count()
            << " ms; writes " << writes.size() << ", unacknowledged " << failed << "\n";
  for (const auto& [message, count] : errors)
    std::cout << "  " << count << " x " << message << "\n";

  // Acknowledged documents all there and found exactly, before any repair.
  std::string get_errors;
  Expected held = Holdings(*store, writes, &get_errors);
  EXPECT_EQ(get_errors, "");
  EXPECT_EQ(held.must.size(), writes.size() - failed);
  EXPECT_TRUE(FoundExactly(*store, held, /*allow_partial=*/true));
  std::cout << "unacknowledged documents present: " << held.may.size() << " of " << failed << "\n";

  // Verify; if it finds what the failover cut short, Repair mends it.
  Status verified = store->Verify();
  std::cout << "Verify after the failover: " << verified.ToString() << "\n";
  if (!verified.ok()) {
    EXPECT_TRUE(verified.IsCorruption()) << verified.ToString();
    ASSERT_TRUE(store->Repair().ok());
    Status again = store->Verify();
    EXPECT_TRUE(again.ok()) << "after Repair: " << again.ToString();
  }
  // Every unacknowledged document now wholly there or wholly absent.
  for (const auto& [id, fp] : held.may) held.must[id] = fp;
  held.may.clear();
  EXPECT_TRUE(FoundExactly(*store, held));

  // And it keeps taking durable writes, through either handle.
  for (DocumentId id = 900'000; id < 900'050; ++id) {
    Status s = (id % 2 ? *store : *idle).Insert(id, rnd.Next(), "after");
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
}

// ---- Slots moved while queries run ----

// A thread that queries `store` in batches until stopped, checking every answer against brute
// force over `docs` (which nothing changes meanwhile).
class Querier {
 public:
  Querier(const Store& store, const std::vector<IdFingerprint>& docs, std::uint64_t seed)
      : thread_([this, &store, &docs, seed] { Run(store, docs, seed); }) {}
  ~Querier() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::size_t batches() const { return batches_; }
  std::uint64_t redirections() const { return redirections_; }
  // REQUIRES: stopped.
  std::size_t wrong() const { return wrong_; }
  const std::string& first_error() const { return first_error_; }

  // Waits until `more` batches have run after this call; false after 60 s.
  bool WaitBatches(std::size_t more) {
    const std::size_t target = batches_ + more;
    return WaitUntil(seconds(60), [&] { return batches_ >= target; });
  }

 private:
  void Run(const Store& store, const std::vector<IdFingerprint>& docs, std::uint64_t seed) {
    Random rnd(seed);
    const int k = store.plan().distance();
    const auto end = Clock::now() + seconds(150);
    while (!stop_ && batches_ < 100000 && Clock::now() < end) {
      // Near copies of stored documents, up to one bit beyond k, and a few random fingerprints.
      std::vector<std::uint64_t> queries;
      for (int i = 0; i < 64; ++i) {
        const std::uint64_t near = docs[rnd.Uniform(docs.size())].fingerprint.low();
        queries.push_back(i % 8 == 7 ? rnd.Next()
                                     : near ^ rnd.Bits(static_cast<int>(rnd.Uniform(k + 2))));
      }
      Result<std::vector<std::vector<Match>>> got =
          store.QueryBatch(testing::Fingerprints(queries), k);
      for (std::size_t i = 0; i < queries.size(); ++i) {
        const std::vector<testing::IdDistance> expect =
            testing::BruteForceQuery(docs, queries[i], k);
        std::vector<testing::IdDistance> found;
        if (got.ok()) {
          for (const Match& m : (*got)[i]) found.push_back({m.id, m.distance});
          std::sort(found.begin(), found.end());
        }
        if (got.ok() && found == expect) continue;
        ++wrong_;
        if (first_error_.empty()) {
          first_error_ = got.ok() ? "query " + std::to_string(queries[i]) + ": " +
                                        testing::SortedDifference(expect, found)
                                  : got.status().ToString();
        }
      }
      // The store's connection is idle between batches, and this thread its only user.
      redirections_ = Redirections(store);
      ++batches_;
    }
  }

  std::atomic<bool> stop_{false};
  std::atomic<std::size_t> batches_{0};
  std::atomic<std::uint64_t> redirections_{0};
  std::size_t wrong_ = 0;
  std::string first_error_;
  std::thread thread_;
};

// The slots of `address` that hold the most keys named `pattern`, most first, up to `count`.
std::vector<std::uint16_t> BusiestSlots(LoopbackCluster& cluster, const std::string& address,
                                        const std::string& pattern, std::size_t count) {
  std::map<std::uint16_t, int> keys;
  std::string cursor = "0";
  do {
    Result<Reply> r = cluster.Raw(address, {"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"});
    if (!r.ok() || r->elements.size() != 2) break;
    cursor = r->elements[0].str;
    for (const Reply& key : r->elements[1].elements) ++keys[internal::redis::KeySlot(key.str)];
  } while (cursor != "0");
  std::vector<std::pair<int, std::uint16_t>> by_count;
  for (const auto& [slot, n] : keys) by_count.emplace_back(-n, slot);
  std::sort(by_count.begin(), by_count.end());
  std::vector<std::uint16_t> slots;
  for (std::size_t i = 0; i < by_count.size() && i < count; ++i)
    slots.push_back(by_count[i].second);
  return slots;
}

// Moves each of `slots` from `from` to `to` as Redis's own resharding does (importing, migrating,
// MIGRATE, the new owner on every master), but stops halfway through each slot's keys for
// `between` to run: meanwhile a key moved is reached only through ASK.
::testing::AssertionResult MoveSlotsSlowly(LoopbackCluster& cluster, const std::string& from,
                                           const std::string& to,
                                           const std::vector<std::uint16_t>& slots,
                                           const std::function<void()>& between) {
  const std::string from_id = cluster.IdOf(from), to_id = cluster.IdOf(to);
  const std::string host = "127.0.0.1", port = to.substr(to.rfind(':') + 1);
  std::map<std::uint16_t, std::vector<std::string>> keys;
  for (const std::uint16_t slot : slots) {
    const std::string s = std::to_string(slot);
    if (cluster.On(to, {"CLUSTER", "SETSLOT", s, "IMPORTING", from_id}) != "OK" ||
        cluster.On(from, {"CLUSTER", "SETSLOT", s, "MIGRATING", to_id}) != "OK") {
      return ::testing::AssertionFailure() << "could not start moving slot " << s;
    }
    Result<Reply> in_slot = cluster.Raw(from, {"CLUSTER", "GETKEYSINSLOT", s, "1000"});
    if (!in_slot.ok()) return ::testing::AssertionFailure() << in_slot.status().ToString();
    for (const Reply& k : in_slot->elements) keys[slot].push_back(k.str);
  }
  auto migrate = [&](bool first_half) -> std::string {
    for (const auto& [slot, names] : keys) {
      const std::size_t half = (names.size() + 1) / 2;
      for (std::size_t i = first_half ? 0 : half; i < (first_half ? half : names.size()); ++i) {
        const std::string r = cluster.On(from, {"MIGRATE", host, port, names[i], "0", "5000"});
        if (r != "OK") return "MIGRATE " + names[i] + ": " + r;
      }
    }
    return "";
  };
  if (std::string e = migrate(true); !e.empty()) return ::testing::AssertionFailure() << e;
  between();
  if (std::string e = migrate(false); !e.empty()) return ::testing::AssertionFailure() << e;
  for (const std::uint16_t slot : slots) {
    // The new owner first, then the old, then the rest, as redis-cli does.
    for (const std::string& node : {to, from}) {
      if (cluster.On(node, {"CLUSTER", "SETSLOT", std::to_string(slot), "NODE", to_id}) != "OK") {
        return ::testing::AssertionFailure() << "could not give slot " << slot << " to " << to;
      }
    }
  }
  return ::testing::AssertionSuccess();
}

TEST(RedisFaultsTest, QueriesStayExactWhileSlotsMove) {
  LoopbackCluster cluster(7710);
  ASSERT_TRUE(cluster.Start());
  const std::uint64_t seed = TestSeed(41052);
  SCOPED_TRACE("seed " + std::to_string(seed));
  StoreOptions options;
  options.expected_documents = 3000;  // buckets of about a hundred members
  options.durability = Durability::kNoSync;
  std::unique_ptr<Store> store = MustOpen(cluster.Url("reshard"), options);
  ASSERT_NE(store, nullptr);
  const std::vector<IdFingerprint> docs =
      testing::MakeCorpus(seed, 2400, {{0, 100}, {1, 200}, {2, 200}, {3, 100}});
  std::vector<NewDocument> batch;
  for (const IdFingerprint& d : docs) batch.push_back({d.id, d.fingerprint, "", {}});
  ASSERT_TRUE(store->InsertBatch(batch).ok());

  const std::vector<std::string> masters = cluster.SlotMasters(cluster.Address(0));
  ASSERT_EQ(masters.size(), 3u);
  Querier querier(*store, docs, seed);
  ASSERT_TRUE(querier.WaitBatches(3));
  const std::uint64_t before_reshard = querier.redirections();

  // A thousand slots from one master to another, by redis-cli, while the queries run.
  const int resharded =
      WaitExit(Spawn({"/usr/bin/env", "redis-cli", "--cluster", "reshard", cluster.Address(0),
                      "--cluster-from", cluster.IdOf(masters[0]), "--cluster-to",
                      cluster.IdOf(masters[1]), "--cluster-slots", "1000", "--cluster-yes"},
                     cluster.dir() + "/reshard.log"),
               seconds(120));
  ASSERT_EQ(resharded, 0) << ReadFile(cluster.dir() + "/reshard.log");
  ASSERT_TRUE(querier.WaitBatches(3));
  const std::uint64_t after_reshard = querier.redirections();
  EXPECT_GT(after_reshard, before_reshard) << "the queries never met a slot that moved";

  // The slots of the third master that hold the most buckets, which nearly every batch of queries
  // reads, each held half moved while the queries run.
  const std::vector<std::uint16_t> slots =
      BusiestSlots(cluster, masters[2], "fps:{reshard:[0-9]*", 16);
  ASSERT_FALSE(slots.empty());
  std::uint64_t asked = 0;
  ASSERT_TRUE(MoveSlotsSlowly(cluster, masters[2], masters[0], slots, [&] {
    const std::uint64_t before = querier.redirections();
    EXPECT_TRUE(querier.WaitBatches(3));
    asked = querier.redirections() - before;
  }));
  EXPECT_GT(asked, 0u) << "no query was asked to the importing node";
  ASSERT_TRUE(querier.WaitBatches(3));
  querier.Stop();

  std::cout << querier.batches() << " batches of 64 queries; redirections " << before_reshard
            << " before the reshard, " << after_reshard - before_reshard << " across it, " << asked
            << " while " << slots.size() << " slots were half moved\n";
  EXPECT_EQ(querier.wrong(), 0u) << "the first: " << querier.first_error();
  Status verified = store->Verify();
  EXPECT_TRUE(verified.ok()) << verified.ToString();
}

// ---- Two processes check-and-insert near-duplicates at once ----

constexpr int kPairs = 300;

// Pair i: side 0's document and side 1's, a few bits apart (within k = 3), unsigned.
NewDocument PairDocument(std::uint64_t seed, int pair, int side) {
  Random rnd(seed * 1000003 + static_cast<std::uint64_t>(pair));
  const std::uint64_t base = rnd.Next();
  const std::uint64_t other = base ^ rnd.Bits(1 + static_cast<int>(rnd.Uniform(3)));
  return {static_cast<DocumentId>(2 * pair + side + 1), side == 0 ? base : other, {}, {}};
}

// Where the two racers meet before each pair: each one's round, in a file both map.
struct Rendezvous {
  std::atomic<std::uint32_t> round[2];
};

// The helper process: opens the store, then for each pair waits for the other side and
// check-and-inserts its document, printing "pair I INSERTED MATCH_IDS...". Exits 0, or 1 with a
// message if something failed.
int RacerMain(char** argv) {
  const std::string url = argv[2], meeting = argv[6];
  const int side = std::atoi(argv[3]), pairs = std::atoi(argv[4]);
  const std::uint64_t seed = std::strtoull(argv[5], nullptr, 10);
  const int fd = open(meeting.c_str(), O_RDWR);
  void* shared = fd < 0
                     ? MAP_FAILED
                     : mmap(nullptr, sizeof(Rendezvous), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (shared == MAP_FAILED) {
    std::printf("cannot map %s\n", meeting.c_str());
    return 1;
  }
  auto* rendezvous = static_cast<Rendezvous*>(shared);
  Result<std::unique_ptr<Store>> store = Store::Open(url);
  if (!store.ok()) {
    std::printf("open: %s\n", store.status().ToString().c_str());
    return 1;
  }
  for (int i = 0; i < pairs; ++i) {
    rendezvous->round[side].store(static_cast<std::uint32_t>(i + 1));
    const auto end = Clock::now() + seconds(30);
    while (rendezvous->round[1 - side].load() < static_cast<std::uint32_t>(i + 1)) {
      if (Clock::now() > end) {
        std::printf("the other side never reached pair %d\n", i);
        return 1;
      }
      sched_yield();
    }
    Result<CheckResult> r =
        (*store)->CheckAndInsert(PairDocument(seed, i, side), InsertPolicy::kIfNoMatch);
    if (!r.ok()) {
      std::printf("pair %d: %s\n", i, r.status().ToString().c_str());
      return 1;
    }
    std::printf("pair %d %d", i, r->inserted ? 1 : 0);
    for (const Match& m : r->matches) std::printf(" %llu", static_cast<unsigned long long>(m.id));
    std::printf("\n");
  }
  std::fflush(stdout);
  return 0;
}

// One side's outcome of each pair, from its output.
struct Outcome {
  bool inserted = false;
  std::vector<DocumentId> matches;
};
std::map<int, Outcome> ReadOutcomes(const std::string& path) {
  std::map<int, Outcome> outcomes;
  std::istringstream lines(ReadFile(path));
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string tag;
    int pair = 0, inserted = 0;
    if (!(words >> tag >> pair >> inserted) || tag != "pair") continue;
    Outcome& o = outcomes[pair];
    o.inserted = inserted == 1;
    for (DocumentId id = 0; words >> id;) o.matches.push_back(id);
  }
  return outcomes;
}

TEST(RedisFaultsTest, NearDuplicatesCheckedAtOnceFromTwoProcesses) {
  LoopbackCluster cluster(7720);
  ASSERT_TRUE(cluster.Start());
  const std::uint64_t seed = TestSeed(41053);
  SCOPED_TRACE("seed " + std::to_string(seed));
  const std::string url = cluster.Url("race");
  ASSERT_NE(MustOpen(url), nullptr);  // made before the racers open it

  const std::string meeting = cluster.dir() + "/race.meeting";
  {
    std::ofstream zeros(meeting, std::ios::binary | std::ios::trunc);
    zeros << std::string(4096, '\0');
  }
  char self[4096] = {};
  ASSERT_GT(readlink("/proc/self/exe", self, sizeof(self) - 1), 0);
  pid_t racers[2];
  for (int side = 0; side < 2; ++side) {
    const std::string out = cluster.dir() + "/racer" + std::to_string(side) + ".out";
    std::filesystem::remove(out);
    racers[side] = Spawn({self, "--racer", url, std::to_string(side), std::to_string(kPairs),
                          std::to_string(seed), meeting},
                         out);
    ASSERT_GT(racers[side], 0);
  }
  for (int side = 0; side < 2; ++side) {
    const std::string out = cluster.dir() + "/racer" + std::to_string(side) + ".out";
    EXPECT_EQ(WaitExit(racers[side], seconds(150)), 0) << "racer " << side << ": " << ReadFile(out);
  }
  const std::map<int, Outcome> a = ReadOutcomes(cluster.dir() + "/racer0.out");
  const std::map<int, Outcome> b = ReadOutcomes(cluster.dir() + "/racer1.out");
  ASSERT_EQ(a.size(), static_cast<std::size_t>(kPairs));
  ASSERT_EQ(b.size(), static_cast<std::size_t>(kPairs));

  std::unique_ptr<Store> store = MustOpen(url);
  ASSERT_NE(store, nullptr);
  int wins[2] = {0, 0}, both = 0, neither = 0;
  for (int i = 0; i < kPairs; ++i) {
    const Outcome& x = a.at(i);
    const Outcome& y = b.at(i);
    const DocumentId ids[2] = {PairDocument(seed, i, 0).id, PairDocument(seed, i, 1).id};
    if (x.inserted && y.inserted) {
      ++both;
      ADD_FAILURE() << "pair " << i << ": both inserted";
      continue;
    }
    if (!x.inserted && !y.inserted) {
      ++neither;
      ADD_FAILURE() << "pair " << i << ": both refused";
      continue;
    }
    const int winner = x.inserted ? 0 : 1;
    ++wins[winner];
    const Outcome& won = winner == 0 ? x : y;
    const Outcome& lost = winner == 0 ? y : x;
    EXPECT_TRUE(won.matches.empty()) << "pair " << i;
    EXPECT_EQ(lost.matches, std::vector<DocumentId>{ids[winner]}) << "pair " << i;
    EXPECT_TRUE(store->Get(ids[winner]).ok()) << "pair " << i;
    EXPECT_TRUE(store->Get(ids[1 - winner]).status().IsNotFound()) << "pair " << i;
  }
  std::cout << kPairs << " pairs: side 0 first " << wins[0] << ", side 1 first " << wins[1]
            << ", both inserted " << both << ", both refused " << neither << "\n";
  Status verified = store->Verify();
  EXPECT_TRUE(verified.ok()) << verified.ToString();
}

// ---- No replica's acknowledgement across a reconnection ----

// A node's process stopped (SIGSTOP) while this lives: it neither answers nor acknowledges.
class Stopped {
 public:
  explicit Stopped(pid_t pid) : pid_(pid), stopped_(pid > 0 && kill(pid, SIGSTOP) == 0) {}
  ~Stopped() {
    if (stopped_) kill(pid_, SIGCONT);
  }
  bool ok() const { return stopped_; }

 private:
  const pid_t pid_;
  const bool stopped_;
};

// WAIT counts only what its own connection sent (since its last command: a fresh connection
// counts nothing, and every replica acknowledges that). A write its master ran, on a connection
// that then broke, is not on the (stopped) replica; the client reconnects, and must not take WAIT
// on the new connection for the replica's acknowledgement of that write.
TEST(RedisFaultsTest, NoReplicaAcknowledgementAcrossAReconnection) {
  LoopbackCluster cluster(7730);
  ASSERT_TRUE(cluster.Start());
  Result<std::unique_ptr<ClusterClient>> connected = ClusterClient::Connect(cluster.Address(0));
  ASSERT_TRUE(connected.ok()) << connected.status().ToString();
  ClusterClient& client = **connected;
  // `written` on the master of slot 0, which a slot map is read from first; `other` elsewhere.
  const std::string master = cluster.SlotNodes(0).first;
  std::string written, other;
  for (int n = 0; n < 1000 && (written.empty() || other.empty()); ++n) {
    const std::string key = "vouched:" + std::to_string(n);
    (cluster.SlotNodes(internal::redis::KeySlot(key)).first == master ? written : other) = key;
  }
  ASSERT_FALSE(written.empty() || other.empty());
  const std::string replica = cluster.SlotNodes(internal::redis::KeySlot(written)).second;
  ASSERT_FALSE(replica.empty());
  using internal::redis::Command;
  auto connection_id = [&](const std::string& key) {
    Result<Reply> id = client.Run(Command{key, {"CLIENT", "ID"}});
    return id.ok() ? std::to_string(id->integer) : "none";
  };
  Status waited;
  {
    Stopped stopped(cluster.Pid(replica));
    ASSERT_TRUE(stopped.ok());
    client.ForgetSent();
    ASSERT_TRUE(client.Run(Command{written, {"SET", written, "1"}}).ok());
    // Both connections broken: the next command's failure makes the client read the slot map
    // again, from the master first, where it finds its connection broken too and drops it.
    const auto other_master = cluster.SlotNodes(internal::redis::KeySlot(other)).first;
    ASSERT_EQ(cluster.On(master, {"CLIENT", "KILL", "ID", connection_id(written)}), "1");
    ASSERT_EQ(cluster.On(other_master, {"CLIENT", "KILL", "ID", connection_id(other)}), "1");
    Result<Reply> get = client.Run(Command{other, {"GET", other}});
    ASSERT_TRUE(get.ok()) << get.status().ToString();
    waited = client.WaitForReplicas(1, milliseconds(500));
  }
  EXPECT_TRUE(waited.IsIOError()) << "the write was taken as acknowledged: " << waited.ToString();
  // The replica running again, a write on an unbroken connection is acknowledged.
  client.ForgetSent();
  ASSERT_TRUE(client.Run(Command{written, {"SET", written, "2"}}).ok());
  Status again = client.WaitForReplicas(1, seconds(5));
  EXPECT_TRUE(again.ok()) << again.ToString();
}

}  // namespace
}  // namespace fpstore

int main(int argc, char** argv) {
  if (argc == 7 && std::string_view(argv[1]) == "--racer") return fpstore::RacerMain(argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
