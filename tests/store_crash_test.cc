// Crash safety with real processes. A child process writes to the store and,
// after each write the store acknowledges (returns OK for), reports it
// through a pipe; the parent kills the child with SIGKILL at a random moment,
// reopens the store and checks that every acknowledged write survived whole:
// each document is in the documents family with the acknowledged fingerprint
// and metadata, a query of its fingerprint at distance 0 finds it (so its
// table entries exist), and Verify finds every table consistent. The one
// write per writer thread that was under way at the kill may have happened
// or not, but wholly or not at all.
//
// SIGKILL loses what the process had not handed to the kernel, never what
// the kernel had not yet written back, so this proves atomicity and recovery
// wherever a write is cut, not that an fsync happened before the
// acknowledgement: power loss is not simulated.

#include <gtest/gtest.h>
#include <poll.h>
#include <rocksdb/db.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "brute_force.h"
#include "dir_snapshot.h"
#include "fpstore/store.h"
#include "temp_dir.h"

namespace fpstore {
namespace {

using testing::ChangedFiles;
using testing::FileMap;
using testing::Random;
using testing::SnapshotFiles;
using testing::TempDir;
using testing::TestSeed;

constexpr DocumentId kIds = 240;  // the rounds write documents 0 .. kIds - 1
constexpr int kRounds = 5;
constexpr std::size_t kOpsPerThread = 150;
constexpr std::size_t kMaxAcksBeforeKill = 100;
constexpr int kMaxMicrosecondsIntoWrite = 8000;  // a sync write takes a few ms
constexpr int kMaxMillisecondsBeforeKill = 800;
constexpr auto kHangTimeout = std::chrono::seconds(60);
constexpr int kChildFailed = 3;  // exit code of a child whose open or write failed

StoreOptions TestOptions(Durability durability) {
  StoreOptions options;
  options.durability = durability;
  options.block_cache_bytes = 8 << 20;
  // Large enough that a child never needs a flush: a forked child has no
  // RocksDB background threads if the parent had started them before.
  options.write_buffer_bytes = 64 << 20;
  // Merges run often, so that kills land in them too.
  options.staged_documents = 40;
  return options;
}

struct Doc {
  Fingerprint fingerprint = 0;
  std::string metadata;

  friend bool operator==(const Doc&, const Doc&) = default;
};

// What the store holds: stored ids and their documents.
using Model = std::map<DocumentId, Doc>;

std::optional<Doc> Lookup(const Model& model, DocumentId id) {
  auto it = model.find(id);
  return it == model.end() ? std::nullopt : std::optional<Doc>(it->second);
}

enum class OpKind { kInsert, kCheckAndInsert, kBatch, kRemove };

// One write of a writer thread in the child. Thread t writes only ids with
// id % threads == t, so every id's history is in one thread's program order.
struct Op {
  OpKind kind;
  std::vector<DocumentId> ids;
  std::vector<Doc> docs;  // parallel to `ids`; empty for kRemove
};

void Apply(const Op& op, Model& model) {
  for (std::size_t i = 0; i < op.ids.size(); ++i) {
    if (op.kind == OpKind::kRemove) {
      model.erase(op.ids[i]);
    } else {
      model[op.ids[i]] = op.docs[i];
    }
  }
}

std::string Describe(const std::optional<Doc>& doc) {
  if (!doc) return "absent";
  std::ostringstream out;
  out << "fingerprint " << doc->fingerprint << " \"" << doc->metadata << "\"";
  return out.str();
}

// The writes of one round, kOpsPerThread per thread, planned as if each
// were applied in turn to `model`, the store's state before the round.
// `bits`: of the store's fingerprints.
std::vector<std::vector<Op>> PlanRound(Random& rnd, Model model, int threads, int round, int bits) {
  const DocumentId ids_per_thread = kIds / threads;
  std::vector<std::vector<Op>> plan(threads);
  for (std::size_t i = 0; i < kOpsPerThread; ++i) {
    for (int t = 0; t < threads; ++t) {
      auto pick_id = [&] { return rnd.Uniform(ids_per_thread) * threads + t; };
      // Fresh fingerprints, small moves, unchanged ones (a metadata-only
      // update) and copies of other documents' (equal table keys).
      auto new_doc = [&](DocumentId id) {
        const std::optional<Doc> old = Lookup(model, id);
        const Fingerprint base = old ? old->fingerprint : rnd.Next(bits);
        Fingerprint fp = rnd.Next(bits);
        switch (rnd.Uniform(8)) {
          case 0:
            fp = base;
            break;
          case 1:
          case 2:
            fp = base ^ rnd.Bits(1 + static_cast<int>(rnd.Uniform(3)), bits);
            break;
          case 3:
            if (!model.empty()) {
              fp = std::next(model.begin(), static_cast<long>(rnd.Uniform(model.size())))
                       ->second.fingerprint;
            }
            break;
        }
        return Doc{fp, "round " + std::to_string(round) + " thread " + std::to_string(t) + " op " +
                           std::to_string(i)};
      };
      Op op;
      const DocumentId id = pick_id();
      const std::uint64_t roll = rnd.Uniform(10);
      if (roll < 2) {
        op.kind = OpKind::kBatch;
        std::set<DocumentId> ids{id};
        for (std::uint64_t n = 1 + rnd.Uniform(3); n > 0; --n) ids.insert(pick_id());
        op.ids.assign(ids.begin(), ids.end());
      } else if (roll < 5 && model.contains(id)) {
        op.kind = OpKind::kRemove;
        op.ids = {id};
      } else {
        op.kind = roll < 6 ? OpKind::kCheckAndInsert : OpKind::kInsert;
        op.ids = {id};
      }
      if (op.kind != OpKind::kRemove) {
        for (DocumentId doc_id : op.ids) op.docs.push_back(new_doc(doc_id));
      }
      Apply(op, model);
      plan[t].push_back(std::move(op));
    }
  }
  return plan;
}

Status Execute(Store& store, const Op& op) {
  switch (op.kind) {
    case OpKind::kInsert:
      return store.Insert(op.ids[0], op.docs[0].fingerprint, op.docs[0].metadata);
    case OpKind::kCheckAndInsert: {
      Result<CheckResult> r = store.CheckAndInsert(op.ids[0], op.docs[0].fingerprint,
                                                   op.docs[0].metadata, InsertPolicy::kAlways);
      if (!r.ok()) return r.status();
      return r->inserted ? Status::OK() : Status::Corruption("kAlways did not insert");
    }
    case OpKind::kBatch: {
      std::vector<NewDocument> docs;
      for (std::size_t i = 0; i < op.ids.size(); ++i) {
        docs.push_back({op.ids[i], op.docs[i].fingerprint, op.docs[i].metadata});
      }
      return store.InsertBatch(docs).status();
    }
    case OpKind::kRemove:
      return store.Remove(op.ids[0]);
  }
  return Status::InvalidArgument("unknown operation");
}

// An acknowledgement on the pipe: 8 bytes, the writer thread in the high
// half and the index of its operation in the low half. Writes of up to
// PIPE_BUF bytes are atomic, so the threads' records never interleave.
std::uint64_t PackAck(int thread, std::size_t op) {
  return (static_cast<std::uint64_t>(thread) << 32) | op;
}

// The child: opens the store, runs `plan` with one thread per entry and
// acknowledges each write that returned OK. Never returns into gtest.
[[noreturn]] void RunChild(const std::string& path, const StoreOptions& options,
                           const std::vector<std::vector<Op>>& plan, int ack_fd) {
  auto fail = [](const std::string& what) {
    const std::string line = "crash test child: " + what + "\n";
    [[maybe_unused]] const ssize_t written = write(STDERR_FILENO, line.data(), line.size());
    _exit(kChildFailed);
  };
  Result<std::unique_ptr<Store>> store = Store::Open(path, options);
  if (!store.ok()) fail("open: " + store.status().ToString());
  std::vector<std::thread> writers;
  for (int t = 0; t < static_cast<int>(plan.size()); ++t) {
    writers.emplace_back([&, t] {
      for (std::size_t i = 0; i < plan[t].size(); ++i) {
        if (Status s = Execute(**store, plan[t][i]); !s.ok()) fail("write: " + s.ToString());
        const std::uint64_t ack = PackAck(t, i);
        if (write(ack_fd, &ack, sizeof ack) != sizeof ack) fail("writing to the pipe");
      }
    });
  }
  for (std::thread& w : writers) w.join();
  _exit(0);  // without closing the store: one more way to stop abruptly
}

// A round's plan in a file, for the child's process to read back.
void WritePlan(const std::string& file, const std::vector<std::vector<Op>>& plan) {
  std::ofstream out(file, std::ios::binary);
  out << plan.size() << "\n";
  for (const std::vector<Op>& ops : plan) {
    out << ops.size() << "\n";
    for (const Op& op : ops) {
      out << static_cast<int>(op.kind) << " " << op.ids.size() << "\n";
      for (std::size_t i = 0; i < op.ids.size(); ++i) {
        const Doc doc = op.docs.empty() ? Doc{} : op.docs[i];
        out << op.ids[i] << " " << doc.fingerprint.high() << " " << doc.fingerprint.low() << " "
            << doc.metadata.size() << " " << doc.metadata << "\n";
      }
    }
  }
}

std::vector<std::vector<Op>> ReadPlan(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  std::size_t threads = 0;
  in >> threads;
  std::vector<std::vector<Op>> plan(threads);
  for (std::vector<Op>& ops : plan) {
    std::size_t count = 0;
    in >> count;
    ops.resize(count);
    for (Op& op : ops) {
      int kind = 0;
      std::size_t ids = 0;
      in >> kind >> ids;
      op.kind = static_cast<OpKind>(kind);
      for (std::size_t i = 0; i < ids; ++i) {
        Doc doc;
        std::size_t length = 0;
        op.ids.emplace_back();
        std::uint64_t high = 0, low = 0;
        in >> op.ids.back() >> high >> low >> length;
        doc.fingerprint = Fingerprint(high, low);
        in.get();  // the space before the metadata
        doc.metadata.resize(length);
        in.read(doc.metadata.data(), static_cast<std::streamsize>(length));
        if (op.kind != OpKind::kRemove) op.docs.push_back(std::move(doc));
      }
    }
  }
  return plan;
}

// The child's process starts here, before gtest, when RunAndKill exec'd it:
// FPSTORE_CRASH_CHILD holds "durability ack_fd plan_file store_path".
[[maybe_unused]] const bool kIsCrashChild = [] {
  const char* spec = std::getenv("FPSTORE_CRASH_CHILD");
  if (spec == nullptr) return false;
  std::istringstream in(spec);
  int durability = 0, ack_fd = -1;
  std::string plan_file, path;
  in >> durability >> ack_fd >> plan_file >> path;
  RunChild(path, TestOptions(static_cast<Durability>(durability)), ReadPlan(plan_file), ack_fd);
}();

struct KillPlan {
  std::size_t after_acks;                // kill once this many have arrived
  std::chrono::microseconds then_wait;   // and then this long, into a write,
  std::chrono::milliseconds after_time;  // or else this long after the fork
};

struct ChildOutcome {
  std::vector<std::size_t> acked;  // per thread: its operations [0, acked[t]) returned OK
  std::string problem;             // empty unless the child misbehaved
};

// Runs `plan` in a child process and kills it as `when` says.
ChildOutcome RunAndKill(const std::string& path, const StoreOptions& options,
                        const std::vector<std::vector<Op>>& plan, const KillPlan& when) {
  ChildOutcome outcome;
  outcome.acked.assign(plan.size(), 0);
  int fds[2];
  if (pipe(fds) != 0) return {{}, "pipe failed"};
  const std::string plan_file = path + ".plan";
  WritePlan(plan_file, plan);
  const std::string spec = std::to_string(static_cast<int>(options.durability)) + " " +
                           std::to_string(fds[1]) + " " + plan_file + " " + path;
  const pid_t pid = fork();
  if (pid < 0) return {{}, "fork failed"};
  if (pid == 0) {
    // A new image rather than the fork's copy: a forked child inherits
    // RocksDB's thread pools without their threads, and a merge waits for
    // a flush that only they run.
    close(fds[0]);
    setenv("FPSTORE_CRASH_CHILD", spec.c_str(), 1);
    execl("/proc/self/exe", "store_crash_test", static_cast<char*>(nullptr));
    _exit(kChildFailed);
  }
  close(fds[1]);

  std::string pending;  // bytes of a record not yet complete
  std::size_t total = 0;
  auto take = [&](const char* data, std::size_t n) {
    pending.append(data, n);
    for (; pending.size() >= 8; pending.erase(0, 8)) {
      std::uint64_t ack;
      std::memcpy(&ack, pending.data(), 8);
      const std::size_t t = ack >> 32, i = ack & 0xffffffff;
      if (t >= plan.size() || i != outcome.acked[t]) {
        outcome.problem = "acknowledgement out of order: thread " + std::to_string(t) + " op " +
                          std::to_string(i);
        continue;
      }
      ++outcome.acked[t];
      ++total;
    }
  };

  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + when.after_time;
  char buffer[4096];
  while (total < when.after_acks) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fds[0], POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    const ssize_t n = read(fds[0], buffer, sizeof buffer);
    if (n <= 0) break;  // the child has finished
    take(buffer, static_cast<std::size_t>(n));
  }
  const bool timed_out = std::chrono::steady_clock::now() >= start + kHangTimeout;
  if (total >= when.after_acks) std::this_thread::sleep_for(when.then_wait);
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  // Acknowledgements still in the pipe were given before the kill.
  for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) > 0;) {
    take(buffer, static_cast<std::size_t>(n));
  }
  close(fds[0]);

  if (timed_out) {
    outcome.problem = "the child hung: " + std::to_string(total) + " acknowledgements in " +
                      std::to_string(kHangTimeout.count()) + " s";
  } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    outcome.problem = "the child failed with exit code " + std::to_string(WEXITSTATUS(status));
  } else if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL) {
    outcome.problem = "the child died of signal " + std::to_string(WTERMSIG(status));
  }
  return outcome;
}

// Opens the store after a round whose child acknowledged `acked` of `plan`
// (see ChildOutcome) and checks that it holds `before` with the
// acknowledged writes applied, and the write under way in each thread
// wholly or not at all. Sets `*recovered` to what it holds.
void ExpectRecovered(const std::string& path, bool read_only, const Model& before,
                     const std::vector<std::vector<Op>>& plan,
                     const std::vector<std::size_t>& acked, Model* recovered) {
  Model expected = before;
  for (std::size_t t = 0; t < plan.size(); ++t) {
    for (std::size_t i = 0; i < acked[t]; ++i) Apply(plan[t][i], expected);
  }

  StoreOptions options = TestOptions(Durability::kNoSync);
  options.read_only = read_only;
  Result<std::unique_ptr<Store>> opened = Store::Open(path, options);
  ASSERT_TRUE(opened.ok()) << "reopening after the kill: " << opened.status().ToString();
  Store& store = **opened;

  Model actual;
  for (DocumentId id = 0; id < kIds; ++id) {
    Result<Document> doc = store.Get(id);
    if (doc.ok()) {
      actual[id] = {doc->fingerprint, doc->metadata};
    } else {
      ASSERT_TRUE(doc.status().IsNotFound()) << doc.status().ToString();
    }
  }

  for (std::size_t t = 0; t < plan.size(); ++t) {
    if (acked[t] == plan[t].size()) continue;
    const Op& under_way = plan[t][acked[t]];
    Model applied = expected;
    Apply(under_way, applied);
    bool all_before = true, all_after = true;
    for (DocumentId id : under_way.ids) {
      all_before = all_before && Lookup(actual, id) == Lookup(expected, id);
      all_after = all_after && Lookup(actual, id) == Lookup(applied, id);
    }
    EXPECT_TRUE(all_before || all_after)
        << "thread " << t << " op " << acked[t] << ", under way at the kill, was partly applied";
    if (all_after) expected = std::move(applied);
  }

  int shown = 0;
  for (DocumentId id = 0; id < kIds && shown < 10; ++id) {
    const std::optional<Doc> want = Lookup(expected, id), got = Lookup(actual, id);
    if (want != got) {
      ADD_FAILURE() << "document " << id << ": acknowledged " << Describe(want) << ", found "
                    << Describe(got);
      ++shown;
    }
  }

  for (const auto& [id, doc] : actual) {
    Result<std::vector<Match>> matches = store.Query(doc.fingerprint, 0);
    ASSERT_TRUE(matches.ok()) << matches.status().ToString();
    int found = 0;
    for (const Match& m : *matches) found += m.id == id;
    EXPECT_EQ(found, 1) << "document " << id << " in a query of its fingerprint "
                        << doc.fingerprint;
  }
  Status verify = store.Verify();
  EXPECT_TRUE(verify.ok()) << verify.ToString();
  Result<StoreStats> stats = store.Stats();
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->documents, actual.size());
  ASSERT_TRUE(store.Close().ok());
  *recovered = std::move(actual);
}

struct CrashCase {
  Durability durability;
  int writer_threads;
  int bits = 64;  // of the store's fingerprints
};

std::string Name(const CrashCase& c) {
  return std::string(c.durability == Durability::kSync ? "Sync" : "GroupCommit") + "_" +
         std::to_string(c.writer_threads) + "Writers" + (c.bits == 64 ? "" : "_128Bits");
}

void PrintTo(const CrashCase& c, std::ostream* out) { *out << Name(c); }

class StoreCrashTest : public ::testing::TestWithParam<CrashCase> {};

TEST_P(StoreCrashTest, AcknowledgedWritesSurviveSigkill) {
  const CrashCase& param = GetParam();
  const std::uint64_t seed = TestSeed(20261123 + static_cast<int>(param.durability));
  SCOPED_TRACE("seed=" + std::to_string(seed));
  Random rnd(seed);
  TempDir dir;
  const std::string path = dir.Sub("store");
  StoreOptions options = TestOptions(param.durability);
  options.bits = param.bits;
  {
    // Created here, so that no kill lands in the creation: a store whose
    // creation was cut short is refused (see CreationCutShortIsRefused).
    Result<std::unique_ptr<Store>> created = Store::Open(path, options);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    ASSERT_TRUE((*created)->Close().ok());
  }

  Model model;
  for (int round = 0; round < kRounds; ++round) {
    const std::vector<std::vector<Op>> plan =
        PlanRound(rnd, model, param.writer_threads, round, param.bits);
    // Even rounds kill after a number of acknowledgements, in the middle of
    // a write; odd ones after a delay, which may also cut the child's
    // opening of the store (its recovery of the previous kill).
    const KillPlan when =
        round % 2 == 0
            ? KillPlan{1 + rnd.Uniform(kMaxAcksBeforeKill),
                       std::chrono::microseconds(rnd.Uniform(kMaxMicrosecondsIntoWrite)),
                       kHangTimeout}
            : KillPlan{
                  SIZE_MAX, {}, std::chrono::milliseconds(rnd.Uniform(kMaxMillisecondsBeforeKill))};
    const ChildOutcome outcome = RunAndKill(path, options, plan, when);
    ASSERT_EQ(outcome.problem, "") << "round " << round;
    std::string acked;
    for (std::size_t n : outcome.acked) acked += " " + std::to_string(n);
    SCOPED_TRACE("round " + std::to_string(round) + ", acknowledged per thread:" + acked);
    // Read-only, so that the next child does the recovery and may be
    // killed in it.
    Model recovered;
    ASSERT_NO_FATAL_FAILURE(
        ExpectRecovered(path, /*read_only=*/true, model, plan, outcome.acked, &recovered));
    if (HasFailure()) return;
    model = std::move(recovered);
  }
  // Last, RocksDB's own recovery by a writer, which must find the same.
  Model final_model;
  ASSERT_NO_FATAL_FAILURE(ExpectRecovered(path, /*read_only=*/false, model, {}, {}, &final_model));
}

INSTANTIATE_TEST_SUITE_P(Modes, StoreCrashTest,
                         ::testing::Values(CrashCase{Durability::kSync, 1},
                                           CrashCase{Durability::kGroupCommit, 2},
                                           CrashCase{Durability::kGroupCommit, 2, 128}),
                         [](const auto& info) { return Name(info.param); });

// What a creation cut short leaves: a RocksDB database, with or without the
// store's families, but no fpstore metadata, which is written last. Opening
// it must fail with InvalidArgument and change nothing.
TEST(StoreCrashTest, CreationCutShortIsRefused) {
  for (bool with_families : {false, true}) {
    SCOPED_TRACE(with_families ? "with the store's families" : "default family only");
    TempDir dir;
    const std::string path = dir.Sub("store");
    std::vector<rocksdb::ColumnFamilyDescriptor> families{{rocksdb::kDefaultColumnFamilyName, {}}};
    if (with_families) {
      families.push_back({"documents", {}});
      for (const char* table : {"table-000", "table-001", "table-019"}) {
        families.push_back({table, {}});
      }
    }
    {
      rocksdb::DBOptions db_options;
      db_options.create_if_missing = true;
      db_options.create_missing_column_families = true;
      std::vector<rocksdb::ColumnFamilyHandle*> handles;
      rocksdb::DB* raw = nullptr;
      ASSERT_TRUE(rocksdb::DB::Open(db_options, path, families, &handles, &raw).ok());
      std::unique_ptr<rocksdb::DB> db(raw);
      for (rocksdb::ColumnFamilyHandle* h : handles) {
        ASSERT_TRUE(db->DestroyColumnFamilyHandle(h).ok());
      }
      ASSERT_TRUE(db->Close().ok());
    }
    const FileMap before = SnapshotFiles(path);
    for (bool read_only : {false, true}) {
      StoreOptions options;
      options.read_only = read_only;
      Result<std::unique_ptr<Store>> store = Store::Open(path, options);
      ASSERT_FALSE(store.ok());
      EXPECT_TRUE(store.status().IsInvalidArgument()) << store.status().ToString();
      EXPECT_NE(store.status().message().find("not an fpstore store"), std::string::npos)
          << store.status().ToString();
    }
    EXPECT_EQ(ChangedFiles(before, SnapshotFiles(path)), "");
  }
}

}  // namespace
}  // namespace fpstore
