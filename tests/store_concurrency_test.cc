// Concurrent use of one Store. Results stay checkable despite the races:
//
// - Readers query while writers insert, re-insert and remove. A stable set
//   of documents never changes, so every answer must hold exactly the
//   brute-force answer over it (no losses); every other document reported
//   must be one a writer really wrote, with a fingerprint it really gave it
//   (no phantoms). Movers re-insert documents back and forth between two
//   fingerprints that both match one query: each answer to that query must
//   hold them exactly once (one snapshot for every table).
// - CheckAndInsert races itself: threads offer near-duplicates at the same
//   moment. With kIfNoMatch exactly one of a group gets in; with kAlways the
//   answers are those of some serial order.

#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <rocksdb/metadata.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <latch>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "brute_force.h"
#include "format/families.h"
#include "fpstore/bulk_loader.h"
#include "fpstore/store.h"
#include "held_merge.h"
#include "raw_store.h"
#include "temp_dir.h"
#include "util/test_hooks.h"

namespace fpstore {
namespace {

using internal::IdFingerprint;
using testing::BruteForcePairs;
using testing::BruteForceQuery;
using testing::HeldMerge;
using testing::IdDistance;
using testing::MakeCorpus;
using testing::Random;
using testing::TempDir;
using testing::TestSeed;

constexpr int kDistance = 3;  // the plan's, blocks 6

std::unique_ptr<Store> MustOpen(const std::string& path, Durability durability) {
  StoreOptions options;
  options.blocks = 6;
  options.distance = kDistance;
  options.durability = durability;
  options.block_cache_bytes = 8 << 20;
  options.write_buffer_bytes = 8 << 20;
  // Background merges run beside the readers and writers.
  options.staged_documents = 64;
  Result<std::unique_ptr<Store>> store = Store::Open(path, options);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return store.ok() ? *std::move(store) : nullptr;
}

std::string MetadataFor(DocumentId id, std::uint64_t fingerprint) {
  return std::to_string(id) + "@" + std::to_string(fingerprint);
}

// Failures seen by any thread; the first few are kept in full.
class Failures {
 public:
  void Add(const std::string& what) {
    std::lock_guard lock(mu_);
    if (messages_.size() < 10) messages_.push_back(what);
    count_.fetch_add(1);
  }
  bool any() const { return count_.load() > 0; }
  std::string Summary() const {
    std::lock_guard lock(mu_);
    std::string out = std::to_string(count_.load()) + " failure(s):";
    for (const std::string& m : messages_) out += "\n  " + m;
    return out;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> messages_;
  std::atomic<int> count_{0};
};

// ---- Readers beside writers ----

constexpr DocumentId kVolatileBase = 1'000'000;  // ids of documents the writers change
constexpr DocumentId kMoverBase = 2'000'000;     // ids of the movers' documents
constexpr int kWriters = 2;
constexpr int kReaders = 2;
constexpr DocumentId kIdsPerWriter = 150;
constexpr int kOpsPerWriter = 800;
constexpr int kMoves = 1000;

// A writer's planned operation: `fingerprint` absent means remove.
struct WriteOp {
  DocumentId id;
  std::optional<std::uint64_t> fingerprint;
};

// A document moved back and forth between two fingerprints, both within
// `distance` of the movers' query.
struct Mover {
  DocumentId id;
  std::uint64_t a, b;
  int distance;
};

class StoreConcurrencyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = TestSeed(20261124);
    Random rnd(seed_);
    stable_ = MakeCorpus(seed_, 300, {{0, 20}, {1, 30}, {2, 30}, {3, 30}, {4, 20}});
    for (const IdFingerprint& d : stable_) stable_fp_[d.id] = d.fingerprint.low();

    // Writers move their documents near the stable ones, so that the
    // readers' queries find them too.
    std::vector<std::map<DocumentId, std::uint64_t>> state(kWriters);
    plans_.resize(kWriters);
    for (int w = 0; w < kWriters; ++w) {
      for (int i = 0; i < kOpsPerWriter; ++i) {
        const DocumentId id = kVolatileBase + w * kIdsPerWriter + rnd.Uniform(kIdsPerWriter);
        if (state[w].contains(id) && rnd.Uniform(3) == 0) {
          plans_[w].push_back({id, std::nullopt});
          state[w].erase(id);
          continue;
        }
        const std::uint64_t near = stable_[rnd.Uniform(stable_.size())].fingerprint.low();
        const std::uint64_t fp = near ^ rnd.Bits(static_cast<int>(rnd.Uniform(5)));
        plans_[w].push_back({id, fp});
        state[w][id] = fp;
        history_[id].insert(fp);
      }
      for (const auto& [id, fp] : state[w]) final_.push_back({id, fp});
    }

    // Through different tables: the bits flipped lie far apart.
    mover_query_ = rnd.Next();
    movers_ = {
        {kMoverBase, mover_query_ ^ 1, mover_query_ ^ (std::uint64_t{1} << 63), 1},
        {kMoverBase + 1, mover_query_ ^ 0b1110, mover_query_ ^ (std::uint64_t{0b111} << 58), 3}};
    for (const Mover& m : movers_) {
      history_[m.id] = {m.a, m.b};
      final_.push_back({m.id, kMoves % 2 == 0 ? m.a : m.b});
    }
    final_.insert(final_.end(), stable_.begin(), stable_.end());
  }

  // Checks an answer to `query` at `k` given while writers run; returns
  // what is wrong, or "".
  std::string CheckAnswer(std::uint64_t query, int k, const std::vector<Match>& matches) const {
    std::set<DocumentId> seen;
    std::vector<IdDistance> stable_found;
    std::map<DocumentId, int> movers_found;
    const std::string where = "query " + std::to_string(query) + " k=" + std::to_string(k) + ": ";
    for (std::size_t i = 0; i < matches.size(); ++i) {
      const Match& m = matches[i];
      const std::string doc = "document " + std::to_string(m.id);
      if (!seen.insert(m.id).second) return where + doc + " reported twice";
      if (m.distance != HammingDistance(query, m.fingerprint) || m.distance > k) {
        return where + doc + " at a wrong distance " + std::to_string(m.distance);
      }
      if (i > 0 &&
          std::pair(matches[i - 1].distance, matches[i - 1].id) > std::pair(m.distance, m.id)) {
        return where + "not nearest first";
      }
      if (m.id < kVolatileBase) {
        if (stable_fp_.at(m.id) != m.fingerprint) return where + doc + " has a wrong fingerprint";
        stable_found.push_back({m.id, m.distance});
        continue;
      }
      auto h = history_.find(m.id);
      if (h == history_.end() || !h->second.contains(m.fingerprint.low())) {
        return where + "phantom " + doc + " with fingerprint " +
               std::to_string(m.fingerprint.low());
      }
      if (m.metadata != MetadataFor(m.id, m.fingerprint.low())) {
        return where + doc + " has wrong metadata";
      }
      if (m.id >= kMoverBase) ++movers_found[m.id];
    }
    std::sort(stable_found.begin(), stable_found.end());
    if (stable_found != BruteForceQuery(stable_, query, k)) {
      return where + "stable documents " +
             testing::SortedDifference(BruteForceQuery(stable_, query, k), stable_found);
    }
    if (query == mover_query_) {
      for (const Mover& mover : movers_) {
        const int want = mover.distance <= k ? 1 : 0;
        if (movers_found[mover.id] != want) {
          return where + "moving document " + std::to_string(mover.id) + " found " +
                 std::to_string(movers_found[mover.id]) + " times, not " + std::to_string(want);
        }
      }
    }
    return "";
  }

  // A query near a stable document, or the movers' query.
  std::uint64_t PickQuery(Random& rnd) const {
    if (rnd.Uniform(4) == 0) return mover_query_;
    return stable_[rnd.Uniform(stable_.size())].fingerprint.low() ^
           rnd.Bits(static_cast<int>(rnd.Uniform(kDistance + 2)));
  }

  std::uint64_t seed_ = 0;
  std::vector<IdFingerprint> stable_;
  std::map<DocumentId, std::uint64_t> stable_fp_;
  std::vector<std::vector<WriteOp>> plans_;
  std::map<DocumentId, std::set<std::uint64_t>> history_;  // every fingerprint ever written
  std::uint64_t mover_query_ = 0;
  std::vector<Mover> movers_;
  std::vector<IdFingerprint> final_;  // what the store holds once every writer is done
};

TEST_F(StoreConcurrencyTest, ReadersBesideWritersSeeNoLossesOrPhantoms) {
  TempDir dir;
  std::unique_ptr<Store> store = MustOpen(dir.Sub("store"), Durability::kNoSync);
  ASSERT_NE(store, nullptr);
  for (const IdFingerprint& d : stable_) {
    ASSERT_TRUE(
        store->Insert(d.id, d.fingerprint.low(), MetadataFor(d.id, d.fingerprint.low())).ok());
  }
  for (const Mover& m : movers_) {
    ASSERT_TRUE(store->Insert(m.id, m.a, MetadataFor(m.id, m.a)).ok());
  }

  Failures failures;
  std::atomic<int> writers_running{kWriters + 1};
  std::atomic<std::uint64_t> queries{0}, scans{0};
  std::latch start(kWriters + 1 + kReaders + 1);
  std::vector<std::jthread> threads;

  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      start.arrive_and_wait();
      for (const WriteOp& op : plans_[w]) {
        Status s = op.fingerprint
                       ? store->Insert(op.id, *op.fingerprint, MetadataFor(op.id, *op.fingerprint))
                       : store->Remove(op.id);
        if (!s.ok()) failures.Add("writer: " + s.ToString());
      }
      --writers_running;
    });
  }
  threads.emplace_back([&] {
    start.arrive_and_wait();
    for (int i = 1; i <= kMoves; ++i) {
      for (const Mover& m : movers_) {
        const std::uint64_t fp = i % 2 == 0 ? m.a : m.b;
        if (Status s = store->Insert(m.id, fp, MetadataFor(m.id, fp)); !s.ok()) {
          failures.Add("mover: " + s.ToString());
        }
      }
    }
    --writers_running;
  });

  for (int r = 0; r < kReaders; ++r) {
    threads.emplace_back([&, r] {
      Random rnd(seed_ + 10 + r);
      start.arrive_and_wait();
      while (writers_running > 0 && !failures.any()) {
        const int k = static_cast<int>(rnd.Uniform(kDistance + 1));
        if (rnd.Uniform(4) == 0) {
          std::vector<std::uint64_t> batch;
          for (int i = 0; i < 8; ++i) batch.push_back(PickQuery(rnd));
          Result<std::vector<std::vector<Match>>> answers =
              store->QueryBatch(testing::Fingerprints(batch), k);
          if (!answers.ok()) failures.Add("QueryBatch: " + answers.status().ToString());
          for (std::size_t i = 0; answers.ok() && i < batch.size(); ++i) {
            if (std::string e = CheckAnswer(batch[i], k, (*answers)[i]); !e.empty()) {
              failures.Add("QueryBatch " + e);
            }
          }
        } else {
          const std::uint64_t q = PickQuery(rnd);
          Result<std::vector<Match>> answer = store->Query(q, k);
          if (!answer.ok()) failures.Add("Query: " + answer.status().ToString());
          if (std::string e = answer.ok() ? CheckAnswer(q, k, *answer) : ""; !e.empty()) {
            failures.Add("Query " + e);
          }
        }
        const DocumentId id = stable_[rnd.Uniform(stable_.size())].id;
        Result<Document> doc = store->Get(id);
        if (!doc.ok() || doc->fingerprint != stable_fp_.at(id)) {
          failures.Add("Get of stable document " + std::to_string(id));
        }
        ++queries;
      }
    });
  }

  // Whole-store scans at one snapshot: FindAll must report the stable
  // pairs exactly and each pair once; Verify must find every table whole.
  const std::vector<NearPair> stable_pairs = BruteForcePairs(stable_, kDistance);
  threads.emplace_back([&] {
    start.arrive_and_wait();
    while (writers_running > 0 && !failures.any()) {
      std::vector<NearPair> pairs, stable_found;
      Status s = store->FindAll(kDistance, [&](const NearPair& p) { pairs.push_back(p); });
      if (!s.ok()) failures.Add("FindAll: " + s.ToString());
      std::sort(pairs.begin(), pairs.end());
      for (std::size_t i = 0; i < pairs.size(); ++i) {
        const NearPair& p = pairs[i];
        if (i > 0 && p.first == pairs[i - 1].first && p.second == pairs[i - 1].second) {
          failures.Add("FindAll reported a pair twice: " + testing::Describe(p));
        }
        if (p.second < kVolatileBase) {
          stable_found.push_back(p);
        } else if (!history_.contains(p.second) ||
                   (p.first >= kVolatileBase && !history_.contains(p.first))) {
          failures.Add("FindAll reported a phantom pair " + testing::Describe(p));
        }
      }
      if (stable_found != stable_pairs) {
        failures.Add("FindAll stable pairs: " +
                     testing::SortedDifference(stable_pairs, stable_found));
      }
      if (Status v = store->Verify(); !v.ok()) failures.Add("Verify: " + v.ToString());
      ++scans;
    }
  });

  threads.clear();  // joins
  EXPECT_FALSE(failures.any()) << "seed=" << seed_ << " " << failures.Summary();
  EXPECT_GT(queries.load(), 0u);
  EXPECT_GT(scans.load(), 0u);

  // Once they are done, the store holds exactly what they wrote last.
  SCOPED_TRACE("seed=" + std::to_string(seed_));
  Random rnd(seed_ + 20);
  for (int i = 0; i < 200; ++i) {
    const std::uint64_t q =
        i % 2 == 0 ? PickQuery(rnd) : final_[rnd.Uniform(final_.size())].fingerprint.low();
    const int k = static_cast<int>(rnd.Uniform(kDistance + 1));
    Result<std::vector<Match>> answer = store->Query(q, k);
    ASSERT_TRUE(answer.ok()) << answer.status().ToString();
    std::vector<IdDistance> found;
    for (const Match& m : *answer) found.push_back({m.id, m.distance});
    std::sort(found.begin(), found.end());
    const std::vector<IdDistance> expected = BruteForceQuery(final_, q, k);
    ASSERT_EQ(found, expected) << testing::SortedDifference(expected, found);
  }
  std::vector<NearPair> pairs;
  ASSERT_TRUE(store->FindAll(kDistance, [&](const NearPair& p) { pairs.push_back(p); }).ok());
  std::sort(pairs.begin(), pairs.end());
  const std::vector<NearPair> expected_pairs = BruteForcePairs(final_, kDistance);
  EXPECT_TRUE(pairs == expected_pairs) << testing::SortedDifference(expected_pairs, pairs);
  Status verify = store->Verify();
  EXPECT_TRUE(verify.ok()) << verify.ToString();
  Result<StoreStats> stats = store->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->documents, final_.size());
}

// ---- CheckAndInsert racing itself ----

constexpr int kOfferThreads = 4;

struct RaceCase {
  InsertPolicy policy;
  Durability durability;
  int groups;
  const char* name;
};

void PrintTo(const RaceCase& c, std::ostream* out) { *out << c.name; }

class StoreConcurrencyRaceTest : public ::testing::TestWithParam<RaceCase> {};

// Groups of kOfferThreads mutual near-duplicates (every two within 1 to 3
// bits), each group far from every other. Round g: every thread waits for
// the others, then thread t offers member t of group g, so the members of
// one group are offered at the same moment.
TEST_P(StoreConcurrencyRaceTest, CheckAndInsertOfNearDuplicatesAtOnce) {
  const RaceCase& param = GetParam();
  const std::uint64_t seed = TestSeed(20261125);
  SCOPED_TRACE("seed=" + std::to_string(seed));
  Random rnd(seed);
  std::vector<std::uint64_t> bases;
  while (static_cast<int>(bases.size()) < param.groups) {
    const std::uint64_t base = rnd.Next();
    // Members are within 2 of their base: bases 9 apart keep groups 5 apart.
    if (std::all_of(bases.begin(), bases.end(),
                    [&](std::uint64_t b) { return HammingDistance(b, base) > 8; })) {
      bases.push_back(base);
    }
  }
  auto member = [&](int g, int t) {
    // Within 2 of the base and 1 to 3 of each other (3: members 1 and 2,
    // members 2 and 3).
    static constexpr std::uint64_t kFlips[kOfferThreads] = {0, 0b1, 0b110, 0b1000};
    return bases[g] ^ (kFlips[t] << (g % 32));
  };
  auto id_of = [](int g, int t) { return static_cast<DocumentId>(g * kOfferThreads + t + 1); };

  TempDir dir;
  std::unique_ptr<Store> store = MustOpen(dir.Sub("store"), param.durability);
  ASSERT_NE(store, nullptr);
  std::vector<std::vector<Result<CheckResult>>> results(param.groups);
  for (auto& r : results) r.assign(kOfferThreads, Status::InvalidArgument("not offered"));
  std::barrier round(kOfferThreads);
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < kOfferThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int g = 0; g < param.groups; ++g) {
          round.arrive_and_wait();
          const std::uint64_t fp = member(g, t);
          results[g][t] =
              store->CheckAndInsert(id_of(g, t), fp, MetadataFor(id_of(g, t), fp), param.policy);
        }
      });
    }
  }

  std::uint64_t stored = 0;
  for (int g = 0; g < param.groups; ++g) {
    SCOPED_TRACE("group " + std::to_string(g));
    std::vector<int> order;  // the members, fewest matches first
    for (int t = 0; t < kOfferThreads; ++t) {
      ASSERT_TRUE(results[g][t].ok()) << results[g][t].status().ToString();
      order.push_back(t);
      for (const Match& m : results[g][t]->matches) {
        EXPECT_EQ(m.distance, HammingDistance(m.fingerprint, member(g, t)));
      }
    }
    std::sort(order.begin(), order.end(), [&](int a, int b) {
      return results[g][a]->matches.size() < results[g][b]->matches.size();
    });
    if (param.policy == InsertPolicy::kIfNoMatch) {
      // Exactly one gets in; every other is told about that one alone.
      const int winner = order[0];
      const CheckResult& won = *results[g][winner];
      EXPECT_TRUE(won.inserted);
      EXPECT_TRUE(won.matches.empty());
      for (int i = 1; i < kOfferThreads; ++i) {
        const CheckResult& lost = *results[g][order[i]];
        EXPECT_FALSE(lost.inserted) << "member " << order[i] << " got in beside member " << winner;
        ASSERT_EQ(lost.matches.size(), 1u);
        EXPECT_EQ(lost.matches[0].id, id_of(g, winner));
        EXPECT_TRUE(store->Get(id_of(g, order[i])).status().IsNotFound());
      }
      ++stored;
    } else {
      // As if offered one at a time: the i-th sees exactly the i before it,
      // so of any two the later one reports the earlier.
      std::vector<DocumentId> earlier;
      for (int t : order) {
        const CheckResult& r = *results[g][t];
        EXPECT_TRUE(r.inserted);
        std::vector<DocumentId> seen;
        for (const Match& m : r.matches) seen.push_back(m.id);
        std::sort(seen.begin(), seen.end());
        EXPECT_EQ(seen, earlier) << "member " << t;
        earlier.push_back(id_of(g, t));
        std::sort(earlier.begin(), earlier.end());
      }
      stored += kOfferThreads;
    }
  }
  Status verify = store->Verify();
  EXPECT_TRUE(verify.ok()) << verify.ToString();
  Result<StoreStats> stats = store->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->documents, stored);
}

INSTANTIATE_TEST_SUITE_P(
    Policies, StoreConcurrencyRaceTest,
    ::testing::Values(RaceCase{InsertPolicy::kIfNoMatch, Durability::kNoSync, 300, "IfNoMatch"},
                      RaceCase{InsertPolicy::kAlways, Durability::kNoSync, 300, "Always"},
                      // The durable wait happens outside CheckAndInsert's lock.
                      RaceCase{InsertPolicy::kIfNoMatch, Durability::kGroupCommit, 60,
                               "IfNoMatchGroupCommit"},
                      RaceCase{InsertPolicy::kAlways, Durability::kSync, 30, "AlwaysSync"}),
    [](const auto& info) { return std::string(info.param.name); });

// Scans whose sinks or progress write, or beside a bulk load: 200
// documents in the tables, with near-duplicate pairs among them.
class StoreScanSinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = MustOpen(dir_.Sub("store"), Durability::kNoSync);
    ASSERT_NE(store_, nullptr);
    docs_ = MakeCorpus(TestSeed(19), 200, {{1, 100}});
    for (const IdFingerprint& d : docs_) ASSERT_TRUE(store_->Insert(d.id, d.fingerprint).ok());
    ASSERT_TRUE(store_->Flush().ok());
    pairs_ = BruteForcePairs(docs_, kDistance).size();
    ASSERT_GT(pairs_, 0u);
  }

  // Inserts `n` random documents under fresh ids.
  void InsertSome(int n) {
    for (int i = 0; i < n; ++i) EXPECT_TRUE(store_->Insert(next_id_++, rnd_.Next()).ok());
  }

  // Waits for `scans`; a regression hangs, so the process ends instead.
  static void FinishesOrExit(std::future<void>& scans) {
    if (scans.wait_for(std::chrono::seconds(120)) != std::future_status::ready) {
      ADD_FAILURE() << "the scans did not finish";
      std::fflush(nullptr);
      std::_Exit(1);
    }
    scans.get();
  }

  TempDir dir_;
  std::unique_ptr<Store> store_;
  std::vector<IdFingerprint> docs_;
  std::size_t pairs_ = 0;
  Random rnd_{TestSeed(19) + 1};
  DocumentId next_id_ = 1'000'000;
};

// A scan's sink may write: one that inserts past the staging index's room
// waits for a background merge, which must not wait for the scan.
TEST_F(StoreScanSinkTest, SinksThatInsertManyDocumentsFinish) {
  // Each call inserts a few documents: far more than twice the staged
  // documents (64) in all.
  std::size_t seen_pairs = 0;
  std::size_t seen_documents = 0;
  std::future<void> scans = std::async(std::launch::async, [&] {
    EXPECT_TRUE(store_
                    ->FindAll(kDistance,
                              [&](const NearPair&) {
                                ++seen_pairs;
                                InsertSome(4);
                              })
                    .ok());
    EXPECT_TRUE(store_
                    ->ForEachDocument([&](const Document&) {
                      ++seen_documents;
                      InsertSome(4);
                    })
                    .ok());
  });
  FinishesOrExit(scans);
  // Each scan saw the store as it was when it began.
  EXPECT_EQ(seen_pairs, pairs_);
  EXPECT_EQ(seen_documents, docs_.size() + 4 * pairs_);
  EXPECT_GT(next_id_ - 1'000'000, 2 * 64u);
}

// A scan holds no lock while it calls its sink or its progress: another
// thread may finish a bulk load meanwhile (the sink waits for it here), and
// Verify's progress may insert past the staging index's room. Either hung
// when scans held the store's locks.
TEST_F(StoreScanSinkTest, BulkLoadsAndInsertsDuringScansFinish) {
  // Each bulk load: near-duplicates of 50 other stored documents, new
  // pairs and clustered documents, had a scan seen them. (The scans read
  // what they count before their sinks run, so the counts are a check of
  // sanity; what this test pins is that nothing hangs.)
  int loads = 0;
  const auto bulk_load = [&] {
    Result<std::unique_ptr<BulkLoader>> loader = store_->NewBulkLoader();
    ASSERT_TRUE(loader.ok()) << loader.status().ToString();
    for (int i = 0; i < 50; ++i) {
      const IdFingerprint& near = docs_[50 * loads + i];
      ASSERT_TRUE((*loader)->Add(2'000'000 + 50 * loads + i, near.fingerprint ^ 1).ok());
    }
    Result<BulkLoadStats> stats = (*loader)->Finish();
    EXPECT_TRUE(stats.ok()) << stats.status().ToString();
    ++loads;
  };
  // Each scan counts what it sees (pairs, clustered documents, documents),
  // its sink waiting on the first call for a bulk load that another thread
  // finishes.
  const auto pairs = [&](bool beside_load) {
    std::size_t n = 0;
    EXPECT_TRUE(store_
                    ->FindAll(kDistance,
                              [&](const NearPair&) {
                                if (n++ == 0 && beside_load) {
                                  std::async(std::launch::async, bulk_load).get();
                                }
                              })
                    .ok());
    return n;
  };
  const auto clustered = [&](bool beside_load) {
    std::size_t n = 0;
    EXPECT_TRUE(store_
                    ->Clusters(kDistance,
                               [&](std::span<const DocumentId> cluster) {
                                 if (n == 0 && beside_load) {
                                   std::async(std::launch::async, bulk_load).get();
                                 }
                                 n += cluster.size();
                               })
                    .ok());
    return n;
  };
  const auto documents = [&](bool beside_load) {
    std::size_t n = 0;
    EXPECT_TRUE(store_
                    ->ForEachDocument([&](const Document&) {
                      if (n++ == 0 && beside_load) std::async(std::launch::async, bulk_load).get();
                    })
                    .ok());
    return n;
  };
  std::size_t before[3] = {}, beside[3] = {};
  int progress_calls = 0;
  std::future<void> scans = std::async(std::launch::async, [&] {
    before[0] = pairs(false);
    beside[0] = pairs(true);
    before[1] = clustered(false);
    beside[1] = clustered(true);
    before[2] = documents(false);
    beside[2] = documents(true);
    ScanOptions scan;
    scan.progress = [&](std::uint64_t, std::uint64_t) {
      ++progress_calls;
      InsertSome(3 * 64);
    };
    const Status verified = store_->Verify(scan);
    EXPECT_TRUE(verified.ok()) << verified.ToString();
  });
  FinishesOrExit(scans);
  EXPECT_EQ(before[0], pairs_);
  for (int scan = 0; scan < 3; ++scan) EXPECT_EQ(beside[scan], before[scan]) << "scan " << scan;
  EXPECT_EQ(loads, 3);
  EXPECT_GT(progress_calls, 0);
  // What was written meanwhile is all there.
  const Status verified = store_->Verify();
  EXPECT_TRUE(verified.ok()) << verified.ToString();
  std::size_t pairs_now = 0;
  ASSERT_TRUE(store_->FindAll(kDistance, [&](const NearPair&) { ++pairs_now; }).ok());
  EXPECT_GE(pairs_now, pairs_ + 3 * 50);
  Result<StoreStats> stats = store_->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->documents, docs_.size() + 3 * 50 + (next_id_ - 1'000'000));
}

// ---- Queries while a merge's files go in ----

StoreOptions MergedByFlushOptions() {
  StoreOptions options;
  options.blocks = 6;
  options.distance = kDistance;
  options.durability = Durability::kNoSync;
  options.block_cache_bytes = 8 << 20;
  options.write_buffer_bytes = 8 << 20;
  options.staged_documents = 1 << 20;  // merged by Flush alone
  return options;
}

// Right after a merge's files went in, before it retires its staging
// index, the tables hold the merged documents and their filters must too:
// queries there, on this thread, are exact. Both merges are checked, into
// empty tables and into tables with files.
TEST(StoreIngestionTest, QueriesRightAfterAMergesIngestionAreExact) {
  TempDir dir;
  Result<std::unique_ptr<Store>> opened = Store::Open(dir.Sub("store"), MergedByFlushOptions());
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  Store& store = **opened;
  Random rnd(TestSeed(29));
  std::vector<IdFingerprint> docs;
  int checked = 0;
  internal::SetAfterIngestionForTesting([&] {
    ++checked;
    for (std::size_t i = 0; i < docs.size(); i += 7) {
      // Near a stored fingerprint, and anywhere.
      const std::uint64_t q =
          i % 2 == 0 ? docs[i].fingerprint.low() ^ (std::uint64_t{1} << (i % 64)) : rnd.Next();
      Result<std::vector<Match>> found = store.Query(q, kDistance);
      ASSERT_TRUE(found.ok()) << found.status().ToString();
      std::vector<IdDistance> got;
      for (const Match& m : *found) got.push_back({m.id, m.distance});
      std::sort(got.begin(), got.end());
      EXPECT_EQ(got, BruteForceQuery(docs, q, kDistance)) << "query " << q;
    }
  });
  struct Unhook {
    ~Unhook() { internal::SetAfterIngestionForTesting({}); }
  } unhook;
  for (int merge = 0; merge < 2; ++merge) {
    std::vector<NewDocument> batch;
    for (int i = 0; i < 600; ++i) {
      const auto id = static_cast<DocumentId>(docs.size() + 1);
      // A third near an earlier document, so that queries find several.
      const std::uint64_t fp = docs.empty() || i % 3 != 0
                                   ? rnd.Next()
                                   : docs[rnd.Uniform(docs.size())].fingerprint.low() ^
                                         (std::uint64_t{1} << rnd.Uniform(64));
      batch.push_back({id, fp, {}});
      docs.push_back({id, fp});
    }
    ASSERT_TRUE(store.InsertBatch(batch).ok());
    ASSERT_TRUE(store.Flush().ok());
  }
  EXPECT_EQ(checked, 2);
}

// Readers that query a store on kReaders threads while this thread changes it, round by round:
// every answer during a round must equal a brute-force scan of one of the states the round allows.
class ReadersBesideChanges {
 public:
  ReadersBesideChanges(const Store& store, int rounds, std::uint64_t seed) : store_(store) {
    for (int r = 0; r < kReaders; ++r) {
      readers_.emplace_back([this, rounds, seed, r] {
        Random pick(TestSeed(seed + r));
        for (int i = 0; i < rounds; ++i) {
          round_.arrive_and_wait();  // the round's change is about to run
          while (!changed_.load()) Check(probes_[pick.Uniform(probes_.size())]);
          round_.arrive_and_wait();  // before the next round
        }
      });
    }
  }
  ~ReadersBesideChanges() { readers_.clear(); }

  // Between rounds, while the readers wait: what they probe, and the states an answer may equal.
  void SetRound(std::vector<std::uint64_t> probes, std::vector<std::vector<IdFingerprint>> states) {
    probes_ = std::move(probes);
    states_ = std::move(states);
  }
  // Runs one round: the readers query while `change` runs. `change` must not ASSERT: the readers
  // wait at the barrier.
  void Run(const std::function<void()>& change) {
    changed_ = false;
    round_.arrive_and_wait();
    change();
    changed_ = true;
    round_.arrive_and_wait();
  }
  Failures& failures() { return failures_; }
  std::uint64_t queries() const { return queries_.load(); }

 private:
  void Check(std::uint64_t q) {
    Result<std::vector<Match>> found = store_.Query(q, kDistance);
    ++queries_;
    if (!found.ok()) {
      failures_.Add("Query: " + found.status().ToString());
      return;
    }
    std::vector<IdDistance> got;
    for (const Match& m : *found) got.push_back({m.id, m.distance});
    std::sort(got.begin(), got.end());
    for (const std::vector<IdFingerprint>& state : states_) {
      if (got == BruteForceQuery(state, q, kDistance)) return;
    }
    failures_.Add("query " + std::to_string(q) + ": " + std::to_string(got.size()) +
                  " matches, brute force of the first allowed state " +
                  std::to_string(BruteForceQuery(states_[0], q, kDistance).size()));
  }

  const Store& store_;
  // Set by the changing thread between rounds, read by the readers during them.
  std::vector<std::uint64_t> probes_;
  std::vector<std::vector<IdFingerprint>> states_;
  std::atomic<bool> changed_{false};
  std::barrier<> round_{kReaders + 1};
  Failures failures_;
  std::atomic<std::uint64_t> queries_{0};
  std::vector<std::jthread> readers_;  // last: joined before the rest goes
};

// Queries run on two threads while each of 60 merges' files go in: every answer is exact against
// the documents stored (new ones, replacements, removals, all written before the merge and
// unchanged while it runs), each merged document seen in the tables or staged, never both nor
// neither.
TEST(StoreIngestionTest, QueriesDuringMergesAreExact) {
  TempDir dir;
  Result<std::unique_ptr<Store>> opened = Store::Open(dir.Sub("store"), MergedByFlushOptions());
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  Store& store = **opened;
  constexpr int kRounds = 60;
  ReadersBesideChanges readers(store, kRounds, 40);
  Random rnd(TestSeed(31));
  // Ids drawn from a few thousand: after the first rounds most writes
  // replace, and the brute force stays cheap.
  constexpr DocumentId kIds = 6000;
  std::map<DocumentId, std::uint64_t> stored;
  for (int i = 0; i < kRounds; ++i) {
    std::vector<NewDocument> batch;
    std::set<DocumentId> in_batch;
    for (int j = 0; j < 1500; ++j) {
      // New documents and replacements; a third land near a stored one.
      const DocumentId id = 1 + rnd.Uniform(kIds);
      if (!in_batch.insert(id).second) continue;
      const std::uint64_t fp = stored.empty() || j % 3 != 0
                                   ? rnd.Next()
                                   : std::next(stored.begin(), rnd.Uniform(stored.size()))->second ^
                                         (std::uint64_t{1} << rnd.Uniform(64));
      batch.push_back({id, fp, {}});
    }
    Failures& failures = readers.failures();
    if (Status s = store.InsertBatch(batch).status(); !s.ok())
      failures.Add("InsertBatch: " + s.ToString());
    for (const NewDocument& d : batch) stored[d.id] = d.fingerprint.low();
    for (int j = 0; j < 30; ++j) {
      const auto it = std::next(stored.begin(), rnd.Uniform(stored.size()));
      if (Status s = store.Remove(it->first); !s.ok()) failures.Add("Remove: " + s.ToString());
      stored.erase(it);
    }
    std::vector<IdFingerprint> docs;
    std::vector<std::uint64_t> probes;
    for (const auto& [id, fp] : stored) docs.push_back({id, fp});
    for (std::size_t j = 0; j < docs.size(); j += 11) {
      probes.push_back(docs[j].fingerprint.low());
      probes.push_back(docs[j].fingerprint.low() ^ (std::uint64_t{1} << (j % 64)));
    }
    readers.SetRound(std::move(probes), {std::move(docs)});
    readers.Run([&] {
      if (Status s = store.Flush(); !s.ok()) failures.Add("Flush: " + s.ToString());
    });
  }
  EXPECT_FALSE(readers.failures().any()) << readers.failures().Summary();
  EXPECT_GT(readers.queries(), 0u);
  Status verified = store.Verify();
  EXPECT_TRUE(verified.ok()) << verified.ToString();
}

// Queries run on two threads while bulk loads go in, each load replacing some documents, adding
// others and bringing near-copies: every answer equals a brute-force scan of the documents before
// the load or after it, never a mix (a load's files go in while new queries wait for them, and no
// snapshot is pinned meanwhile).
TEST(StoreIngestionTest, QueriesDuringBulkLoadsSeeEachLoadWholeOrNotAtAll) {
  TempDir dir;
  Result<std::unique_ptr<Store>> opened = Store::Open(dir.Sub("store"), MergedByFlushOptions());
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  Store& store = **opened;
  constexpr int kRounds = 20;
  ReadersBesideChanges readers(store, kRounds, 50);
  Random rnd(TestSeed(33));
  std::map<DocumentId, std::uint64_t> stored;
  for (int i = 0; i < kRounds; ++i) {
    std::map<DocumentId, std::uint64_t> next = stored;
    for (int j = 0; j < 3000; ++j) {
      // Replacements of stored documents, new ones, and near-copies of stored ones.
      const DocumentId id = 1 + rnd.Uniform(8000);
      const std::uint64_t fp = stored.empty() || j % 3 != 0
                                   ? rnd.Next()
                                   : std::next(stored.begin(), rnd.Uniform(stored.size()))->second ^
                                         (std::uint64_t{1} << rnd.Uniform(64));
      next[id] = fp;
    }
    std::vector<NewDocument> load;
    for (const auto& [id, fp] : next) {
      if (stored.count(id) == 0 || stored.at(id) != fp) load.push_back({id, fp, {}});
    }
    std::vector<IdFingerprint> before, after;
    std::vector<std::uint64_t> probes;
    for (const auto& [id, fp] : stored) before.push_back({id, fp});
    for (const auto& [id, fp] : next) after.push_back({id, fp});
    for (std::size_t j = 0; j < after.size(); j += 13) {
      probes.push_back(after[j].fingerprint.low());
      probes.push_back(after[j].fingerprint.low() ^ (std::uint64_t{1} << (j % 64)));
    }
    readers.SetRound(std::move(probes), {std::move(before), std::move(after)});
    readers.Run([&] {
      Failures& failures = readers.failures();
      Result<std::unique_ptr<BulkLoader>> loader = store.NewBulkLoader({});
      if (!loader.ok()) {
        failures.Add("NewBulkLoader: " + loader.status().ToString());
        return;
      }
      for (const NewDocument& d : load) {
        if (Status s = (*loader)->Add(d); !s.ok()) failures.Add("Add: " + s.ToString());
      }
      if (Result<BulkLoadStats> st = (*loader)->Finish(); !st.ok()) {
        failures.Add("Finish: " + st.status().ToString());
      }
    });
    stored = std::move(next);
  }
  EXPECT_FALSE(readers.failures().any()) << readers.failures().Summary();
  EXPECT_GT(readers.queries(), 0u);
  Status verified = store.Verify();
  EXPECT_TRUE(verified.ok()) << verified.ToString();
}

// A load into an empty store with no reader at it: its table files go in at sequence number 0,
// at the bottom of each table, so that RocksDB has no reason to rewrite them (it rewrites bottom
// files whose sequence numbers no snapshot needs, to clear them).
TEST(StoreIngestionTest, ALoadIntoAnEmptyStoreGoesInAtSequenceNumberZero) {
  TempDir dir;
  const std::string path = dir.Sub("store");
  {
    Result<std::unique_ptr<Store>> opened = Store::Open(path, MergedByFlushOptions());
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    Result<std::unique_ptr<BulkLoader>> loader = (*opened)->NewBulkLoader({});
    ASSERT_TRUE(loader.ok());
    Random rnd(TestSeed(34));
    for (DocumentId id = 0; id < 5000; ++id) ASSERT_TRUE((*loader)->Add(id, rnd.Next(), "").ok());
    ASSERT_TRUE((*loader)->Finish().ok());
    ASSERT_TRUE((*opened)->Close().ok());
  }
  int files = 0;
  testing::EditWithRocksDb(path, [&](rocksdb::DB& db, const auto& family) {
    for (std::size_t t = 0; t < 20; ++t) {
      rocksdb::ColumnFamilyMetaData meta;
      db.GetColumnFamilyMetaData(family(internal::TableFamilyName(t)), &meta);
      for (const rocksdb::LevelMetaData& level : meta.levels) {
        for (const rocksdb::SstFileMetaData& file : level.files) {
          ++files;
          EXPECT_EQ(file.largest_seqno, 0u) << file.name << " of table " << t;
        }
      }
    }
  });
  EXPECT_EQ(files, 20);
}

// ---- Writers while a merge runs ----

// A merge frees its staging index only when it ends; meanwhile a fresh one
// takes inserts, and writers it has no room for wait, while queries go on.
// Writers admitted by what was staged alone went one batch past the room,
// and the index grew and rehashed under the lock that queries take (up to
// 0.9 s a merge at the default sizes).
TEST(StoreStagingRoomTest, WritersWaitForRoomWhileAMergeRuns) {
  TempDir dir;
  std::unique_ptr<Store> store = MustOpen(dir.Sub("store"), Durability::kNoSync);
  ASSERT_NE(store, nullptr);
  constexpr std::size_t kBatch = 24;  // room for 2 * 64 staged: five batches, not six
  Random rnd(TestSeed(23));
  std::vector<NewDocument> all;
  const auto insert_batch = [&](DocumentId first) {
    std::vector<NewDocument> batch;
    for (std::size_t i = 0; i < kBatch; ++i) batch.push_back({first + i, rnd.Next(), {}});
    Status s = store->InsertBatch(batch).status();
    EXPECT_TRUE(s.ok()) << s.ToString();
    return batch;
  };

  HeldMerge held;
  std::mutex later_mu;
  std::vector<NewDocument> later;  // guarded by later_mu
  std::atomic<int> written{0};
  std::future<void> writer;
  const auto end_merge = [&] {
    held.Release();
    // A writer that never gets room hangs: the process ends instead.
    if (writer.valid()) {
      if (writer.wait_for(std::chrono::seconds(120)) != std::future_status::ready) {
        ADD_FAILURE() << "the writer still waits after the merge";
        std::fflush(nullptr);
        std::_Exit(1);
      }
      writer.get();
    }
  };
  // On every way out: the writer must end before what it uses.
  struct AtExit {
    std::function<void()> run;
    ~AtExit() { run(); }
  } at_exit{end_merge};

  // Three batches pass 64 staged: the merge freezes all 72 and waits.
  for (DocumentId b = 0; b < 3; ++b) {
    for (const NewDocument& d : insert_batch(b * kBatch)) all.push_back(d);
  }
  ASSERT_TRUE(held.WaitUntilMerging()) << "no merge started";
  writer = std::async(std::launch::async, [&] {
    for (DocumentId b = 0; b < 7; ++b) {
      std::vector<NewDocument> batch = insert_batch(1000 + b * kBatch);
      {
        std::lock_guard lock(later_mu);
        later.insert(later.end(), batch.begin(), batch.end());
      }
      written.fetch_add(1);
    }
  });
  for (int waited = 0; written.load() < 5 && waited < 600; ++waited) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(written.load(), 5);  // 120 staged; a sixth would make 144
  // The writer waits without holding up queries: both indexes answer.
  {
    std::vector<NewDocument> staged;
    {
      std::lock_guard lock(later_mu);
      staged = later;
    }
    for (const NewDocument& d : {all.front(), staged.empty() ? all.back() : staged.back()}) {
      Result<std::vector<Match>> found = store->Query(d.fingerprint, 0);
      ASSERT_TRUE(found.ok()) << found.status().ToString();
      EXPECT_TRUE(
          std::any_of(found->begin(), found->end(), [&](const Match& m) { return m.id == d.id; }))
          << "document " << d.id;
    }
  }
  end_merge();
  EXPECT_EQ(written.load(), 7);
  all.insert(all.end(), later.begin(), later.end());
  ASSERT_TRUE(store->Flush().ok());
  Result<StoreStats> stats = store->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->documents, all.size());
  for (const NewDocument& d : all) {
    Result<std::vector<Match>> found = store->Query(d.fingerprint, 0);
    ASSERT_TRUE(found.ok());
    EXPECT_TRUE(
        std::any_of(found->begin(), found->end(), [&](const Match& m) { return m.id == d.id; }))
        << "document " << d.id;
  }
}

// A store opened with nothing staged makes its staging room at its first
// write. When that cannot get the memory, the write fails with nothing of it
// stored, and the next write makes the room, once; CheckAndInsert makes it
// before its check lock.
TEST(StagingRoomTest, AFirstWriteWithoutRoomFailsCleanlyAndTheNextMakesIt) {
  TempDir dir;
  std::unique_ptr<Store> store = MustOpen(dir.Sub("store"), Durability::kNoSync);
  ASSERT_NE(store, nullptr);
  std::atomic<int> attempts{0};
  internal::SetBeforeStagingRoomForTesting([&] {
    if (attempts.fetch_add(1) == 0) throw std::bad_alloc();
  });
  struct Unhook {
    ~Unhook() { internal::SetBeforeStagingRoomForTesting({}); }
  } unhook;

  const Status refused = store->Insert(1, 0x0123456789abcdefULL);
  EXPECT_TRUE(refused.IsIOError()) << refused.ToString();
  EXPECT_NE(refused.ToString().find("staging index's room"), std::string::npos)
      << refused.ToString();
  EXPECT_TRUE(store->Get(1).status().IsNotFound());
  EXPECT_EQ(attempts.load(), 1);

  Result<CheckResult> checked = store->CheckAndInsert(2, 0x0123456789abcdefULL ^ 1);
  ASSERT_TRUE(checked.ok()) << checked.status().ToString();
  EXPECT_TRUE(checked->inserted);
  EXPECT_TRUE(checked->matches.empty());
  ASSERT_TRUE(store->Insert(1, 0x0123456789abcdefULL).ok());
  EXPECT_EQ(attempts.load(), 2);  // made once, by the CheckAndInsert

  Result<std::vector<Match>> found = store->Query(0x0123456789abcdefULL, kDistance);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  std::vector<DocumentId> ids;
  for (const Match& m : *found) ids.push_back(m.id);
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<DocumentId>{1, 2}));
}

}  // namespace
}  // namespace fpstore
