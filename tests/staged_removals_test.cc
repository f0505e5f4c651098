// Staged removals (format 8): a replacement or removal of a document that
// is already in the tables writes a staging mark naming the fingerprint
// that leaves them, and the next merge takes its entries out. Until then
// the tables hold stale entries, which no answer may show: queries, scans
// and Verify are checked against brute force over a model (id -> current
// fingerprint) while removals are pending, after a reopen that recovers
// them from the marks, and after the merge.

#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "brute_force.h"
#include "fpstore/bulk_loader.h"
#include "fpstore/store.h"
#include "held_merge.h"
#include "open/store_impl.h"
#include "raw_store.h"
#include "store_checks.h"
#include "temp_dir.h"

namespace fpstore {
namespace {

using internal::IdFingerprint;
using Model = testing::DocumentModel;
using testing::AsIdDistances;
using testing::BruteForceQuery;
using testing::DocsOf;
using testing::ExpectMatchesBruteForce;
using testing::ExpectQueriesMatchBruteForce;
using testing::HeldMerge;
using testing::IdDistance;
using testing::MakeCorpus;
using testing::MetadataFor;
using testing::MustOpen;
using testing::Plant;
using testing::Random;
using testing::SortedDifference;
using testing::TempDir;
using testing::TestSeed;

// A fingerprint near `fp`: 1 to 3 bits flipped, so that a query of the old
// fingerprint reaches the new one too and must report it at the new
// distance, once.
std::uint64_t Near(Random& rnd, std::uint64_t fp) {
  return fp ^ rnd.Bits(1 + static_cast<int>(rnd.Uniform(3)));
}

// Stats().staged_documents: the marks that wait for a merge.
std::uint64_t StagedOf(const Store& store) {
  Result<StoreStats> stats = store.Stats();
  EXPECT_TRUE(stats.ok()) << stats.status().ToString();
  return stats.ok() ? stats->staged_documents : ~std::uint64_t{0};
}

// Every query answer against brute force over `model`: each probe (the old
// and new fingerprints of every document written, and a neighbour of each)
// at every distance, one by one and batched; the fingerprint and metadata
// each match carries; then ExpectMatchesBruteForce's scans both ways,
// listing, count and Verify.
void ExpectExact(Store& store, const Model& model, const std::set<std::uint64_t>& written,
                 std::uint64_t seed, const std::string& phase) {
  SCOPED_TRACE(phase + " seed=" + std::to_string(seed));
  const std::vector<IdFingerprint> docs = DocsOf(model);
  Random rnd(seed + 2);
  std::vector<std::uint64_t> probes(written.begin(), written.end());
  for (std::uint64_t fp : written) probes.push_back(Near(rnd, fp));
  ASSERT_NO_FATAL_FAILURE(ExpectQueriesMatchBruteForce(store, docs, probes));
  ExpectMatchesBruteForce(store, docs, seed, phase);
}

// CheckAndInsert of every document as it is (same fingerprint, same
// metadata, so nothing changes): its check must see what brute force sees
// at the plan's distance, less the document itself, and the re-insert must
// leave every mark as it was (a pending version keeps leaving).
void ExpectCheckAndInsertExact(Store& store, const Model& model, const std::string& phase) {
  SCOPED_TRACE(phase);
  const std::vector<IdFingerprint> docs = DocsOf(model);
  const std::uint64_t staged = StagedOf(store);
  const int k = store.plan().distance();
  for (const auto& [id, fp] : model) {
    Result<CheckResult> checked = store.CheckAndInsert(id, fp, MetadataFor(id));
    ASSERT_TRUE(checked.ok()) << checked.status().ToString();
    EXPECT_TRUE(checked->inserted);
    std::vector<IdDistance> expected = BruteForceQuery(docs, fp, k);
    std::erase_if(expected, [id](const IdDistance& m) { return m.id == id; });
    ASSERT_EQ(AsIdDistances(checked->matches), expected)
        << "CheckAndInsert of " << id << " "
        << SortedDifference(expected, AsIdDistances(checked->matches));
  }
  EXPECT_EQ(StagedOf(store), staged) << "re-inserting documents as they are changed the marks";
}

// A store and the model of what it should hold, written together; every
// fingerprint ever written is remembered as a probe.
class Tracked {
 public:
  Tracked(std::string path, std::uint64_t seed, StoreOptions options = {})
      : path_(std::move(path)), seed_(seed), options_(options) {
    store_ = MustOpen(path_, options_);
  }

  Store& store() { return *store_; }
  bool ok() const { return store_ != nullptr; }
  const Model& model() const { return model_; }
  const std::set<std::uint64_t>& written() const { return written_; }
  const std::string& path() const { return path_; }

  void Insert(DocumentId id, std::uint64_t fp) {
    const Status s = store_->Insert(id, fp, MetadataFor(id));
    ASSERT_TRUE(s.ok()) << "insert " << id << ": " << s.ToString();
    Wrote(id, fp);
  }

  void InsertBatch(const std::vector<IdFingerprint>& docs) {
    std::vector<std::string> metadata;
    metadata.reserve(docs.size());
    for (const IdFingerprint& d : docs) metadata.push_back(MetadataFor(d.id));
    std::vector<NewDocument> batch;
    for (std::size_t i = 0; i < docs.size(); ++i) {
      batch.push_back({docs[i].id, docs[i].fingerprint, metadata[i]});
    }
    const Status s = store_->InsertBatch(batch).status();
    ASSERT_TRUE(s.ok()) << s.ToString();
    for (const IdFingerprint& d : docs) Wrote(d.id, d.fingerprint.low());  // the last one wins
  }

  // Replaces through CheckAndInsert, whose matches must be brute force's.
  void CheckAndInsert(DocumentId id, std::uint64_t fp) {
    std::vector<IdDistance> expected =
        BruteForceQuery(DocsOf(model_), fp, store_->plan().distance());
    std::erase_if(expected, [id](const IdDistance& m) { return m.id == id; });
    Result<CheckResult> checked = store_->CheckAndInsert(id, fp, MetadataFor(id));
    ASSERT_TRUE(checked.ok()) << checked.status().ToString();
    EXPECT_TRUE(checked->inserted);
    EXPECT_EQ(AsIdDistances(checked->matches), expected)
        << "CheckAndInsert of " << id << " "
        << SortedDifference(expected, AsIdDistances(checked->matches));
    Wrote(id, fp);
  }

  // The crawler's call: a new document goes in only if brute force finds
  // nothing near it. Returns whether it went in.
  bool CheckAndInsertIfNew(DocumentId id, std::uint64_t fp) {
    std::vector<IdDistance> expected =
        BruteForceQuery(DocsOf(model_), fp, store_->plan().distance());
    Result<CheckResult> checked =
        store_->CheckAndInsert(id, fp, MetadataFor(id), InsertPolicy::kIfNoMatch);
    EXPECT_TRUE(checked.ok()) << checked.status().ToString();
    if (!checked.ok()) return false;
    EXPECT_EQ(AsIdDistances(checked->matches), expected)
        << "CheckAndInsert of " << id << " "
        << SortedDifference(expected, AsIdDistances(checked->matches));
    EXPECT_EQ(checked->inserted, expected.empty()) << "CheckAndInsert of " << id;
    if (checked->inserted) Wrote(id, fp);
    return checked->inserted;
  }

  // What another path (a bulk load) wrote: into the model only.
  void Record(DocumentId id, std::uint64_t fp) { Wrote(id, fp); }

  void Remove(DocumentId id) {
    const Status s = store_->Remove(id);
    ASSERT_TRUE(s.ok()) << "remove " << id << ": " << s.ToString();
    model_.erase(id);
  }

  void Flush() {
    const Status s = store_->Flush();
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  void Reopen() {
    const Status s = store_->Close();
    ASSERT_TRUE(s.ok()) << s.ToString();
    store_.reset();
    store_ = MustOpen(path_, options_);
    ASSERT_NE(store_, nullptr);
  }

  // Closes the store; a read-only handle must answer as the writer did.
  void ExpectReadOnlyExact(const std::string& phase) {
    const Status s = store_->Close();
    ASSERT_TRUE(s.ok()) << s.ToString();
    store_.reset();
    StoreOptions options = options_;
    options.read_only = true;
    options.create_if_missing = false;
    std::unique_ptr<Store> reader = MustOpen(path_, options);
    ASSERT_NE(reader, nullptr);
    fpstore::ExpectExact(*reader, model_, written_, seed_, phase + ", read-only");
    ASSERT_TRUE(reader->Close().ok());
    store_ = MustOpen(path_, options_);
    ASSERT_NE(store_, nullptr);
  }

  void ExpectExact(const std::string& phase) {
    fpstore::ExpectExact(*store_, model_, written_, seed_, phase);
  }

  // ExpectExact, then the same checks through CheckAndInsert.
  void ExpectAllExact(const std::string& phase) {
    ASSERT_NO_FATAL_FAILURE(ExpectExact(phase));
    ASSERT_NO_FATAL_FAILURE(ExpectCheckAndInsertExact(*store_, model_, phase));
  }

 private:
  void Wrote(DocumentId id, std::uint64_t fp) {
    model_[id] = fp;
    written_.insert(fp);
  }

  std::string path_;
  std::uint64_t seed_;
  StoreOptions options_;
  std::unique_ptr<Store> store_;
  Model model_;
  std::set<std::uint64_t> written_;
};

// ---- Replacements and removals of merged documents ----

// How the documents first reach the tables: a merge of inserts (files of
// operands), or a bulk load into the empty store (whole groups, one file a
// table, where queries skip tables on the strength of fingerprints that are
// leaving).
enum class Base { kMerged, kBulkLoaded };

class StagedRemovalsTest : public ::testing::TestWithParam<Base> {};

// Writes `docs` into an empty store and into the tables, as `base` says.
void Fill(Tracked& t, const std::vector<IdFingerprint>& docs, Base base) {
  if (base == Base::kMerged) {
    ASSERT_NO_FATAL_FAILURE(t.InsertBatch(docs));
    ASSERT_NO_FATAL_FAILURE(t.Flush());
    return;
  }
  Result<std::unique_ptr<BulkLoader>> loader = t.store().NewBulkLoader({});
  ASSERT_TRUE(loader.ok()) << loader.status().ToString();
  for (const IdFingerprint& d : docs) {
    ASSERT_TRUE((*loader)->Add(d.id, d.fingerprint, MetadataFor(d.id)).ok());
  }
  ASSERT_TRUE((*loader)->Finish().ok());
  for (const IdFingerprint& d : docs) t.Record(d.id, d.fingerprint.low());
}

// Tests that start from a tracked store whose tables hold documents that
// reached them by a merge.
class MergedStoreTest : public ::testing::Test {
 protected:
  // REQUIRES: called once, before tracked().
  void Start(std::uint64_t seed, const std::vector<IdFingerprint>& docs,
             StoreOptions options = {}) {
    tracked_.emplace(dir_.Sub("store"), seed, options);
    ASSERT_TRUE(tracked_->ok());
    ASSERT_NO_FATAL_FAILURE(Fill(*tracked_, docs, Base::kMerged));
  }
  Tracked& tracked() { return *tracked_; }

 private:
  TempDir dir_;
  std::optional<Tracked> tracked_;  // after dir_: it goes first
};

// Merged documents are replaced (near and far, by Insert, InsertBatch and
// CheckAndInsert) and removed, and new ones staged, some with the
// fingerprints that leave: before the merge every answer is as if the old
// entries were gone, also after a reopen (the pending removals come back
// from the marks) and from a read-only handle; after Flush, the same with
// nothing staged.
TEST_P(StagedRemovalsTest, ReplacedAndRemovedDocumentsLeaveAtTheNextMerge) {
  const std::uint64_t seed = TestSeed(801);
  const std::vector<IdFingerprint> docs =
      MakeCorpus(seed, 160, {Plant{0, 10}, Plant{1, 10}, Plant{2, 10}, Plant{3, 10}});
  TempDir dir;
  Tracked t(dir.Sub("store"), seed);
  ASSERT_TRUE(t.ok());
  ASSERT_NO_FATAL_FAILURE(Fill(t, docs, GetParam()));
  ASSERT_EQ(StagedOf(t.store()), 0u);

  Random rnd(seed + 1);
  std::vector<IdFingerprint> batch;
  std::vector<std::uint64_t> removed_fps;
  std::uint64_t marks = 0;
  for (const IdFingerprint& d : docs) {
    switch (d.id % 8) {
      case 0:  // near: a query of the old fingerprint finds the new one
        ASSERT_NO_FATAL_FAILURE(t.Insert(d.id, Near(rnd, d.fingerprint.low())));
        ++marks;
        break;
      case 1:
        batch.push_back({d.id, rnd.Next()});
        ++marks;
        break;
      case 2:
        ASSERT_NO_FATAL_FAILURE(t.CheckAndInsert(d.id, Near(rnd, d.fingerprint.low())));
        ++marks;
        break;
      case 3:
      case 4:
        ASSERT_NO_FATAL_FAILURE(t.Remove(d.id));
        removed_fps.push_back(d.fingerprint.low());
        ++marks;
        break;
      case 5:  // the same fingerprint again: nothing leaves the tables
        ASSERT_NO_FATAL_FAILURE(t.Insert(d.id, d.fingerprint.low()));
        break;
      default:
        break;
    }
  }
  ASSERT_NO_FATAL_FAILURE(t.InsertBatch(batch));
  // New documents, staged: some take a fingerprint that is leaving.
  for (std::size_t i = 0; i < 10; ++i) {
    const std::uint64_t fp = i % 2 == 0 ? removed_fps[i] : rnd.Next();
    ASSERT_NO_FATAL_FAILURE(t.Insert(1000 + i, fp));
    ++marks;
  }
  // A crawler offers pages at fingerprints that are leaving: only what
  // stays near them may turn them away.
  for (std::size_t i = 1; i < 20; i += 2) marks += t.CheckAndInsertIfNew(2000 + i, removed_fps[i]);
  EXPECT_EQ(StagedOf(t.store()), marks);
  ASSERT_NO_FATAL_FAILURE(t.ExpectAllExact("pending"));

  ASSERT_NO_FATAL_FAILURE(t.Reopen());
  EXPECT_EQ(StagedOf(t.store()), marks) << "marks lost by a reopen";
  ASSERT_NO_FATAL_FAILURE(t.ExpectAllExact("pending, reopened"));
  ASSERT_NO_FATAL_FAILURE(t.ExpectReadOnlyExact("pending"));

  // Writes after the reopen must find what leaves in the marks read back:
  // removed documents come back, with their old fingerprint or a new one,
  // and replaced ones are replaced again or removed.
  for (const IdFingerprint& d : docs) {
    if (d.id % 8 == 3 && d.id % 16 < 8) {
      ASSERT_NO_FATAL_FAILURE(t.Insert(d.id, d.fingerprint.low()));
    } else if (d.id % 8 == 4) {
      ASSERT_NO_FATAL_FAILURE(t.Insert(d.id, Near(rnd, d.fingerprint.low())));
    } else if (d.id % 8 == 0 && d.id % 16 < 8) {
      ASSERT_NO_FATAL_FAILURE(t.Insert(d.id, d.fingerprint.low()));  // back to the tables' version
    } else if (d.id % 8 == 1) {
      ASSERT_NO_FATAL_FAILURE(t.Remove(d.id));
    }
  }
  ASSERT_NO_FATAL_FAILURE(t.ExpectAllExact("pending, written after the reopen"));

  ASSERT_NO_FATAL_FAILURE(t.Flush());
  EXPECT_EQ(StagedOf(t.store()), 0u);
  ASSERT_NO_FATAL_FAILURE(t.ExpectAllExact("flushed"));
  ASSERT_NO_FATAL_FAILURE(t.Reopen());
  EXPECT_EQ(StagedOf(t.store()), 0u);
  ASSERT_NO_FATAL_FAILURE(t.ExpectExact("flushed, reopened"));
}

INSTANTIATE_TEST_SUITE_P(Bases, StagedRemovalsTest,
                         ::testing::Values(Base::kMerged, Base::kBulkLoaded),
                         [](const ::testing::TestParamInfo<Base>& info) {
                           return info.param == Base::kMerged ? "Merged" : "BulkLoaded";
                         });

// ---- Sequences of writes to one id before a merge ----

// Each id of a merged store goes through its own sequence of writes before
// the next merge, which must leave the tables with exactly its last
// version: a mark must keep naming the version in the tables however many
// versions follow, a document back at that version must keep its entries
// (and be found once meanwhile), and a fingerprint leaving for one id may
// be arriving for another.
class StagedRemovalsSequenceTest : public MergedStoreTest {};

TEST_F(StagedRemovalsSequenceTest, SequencesOfWritesBeforeAMerge) {
  const std::uint64_t seed = TestSeed(802);
  const std::vector<IdFingerprint> docs = MakeCorpus(seed, 80, {Plant{1, 8}, Plant{3, 8}});
  ASSERT_NO_FATAL_FAILURE(Start(seed, docs));
  Tracked& t = tracked();
  Random rnd(seed + 1);
  auto x = [&](DocumentId id) { return docs[id].fingerprint.low(); };  // in the tables
  const std::uint64_t y0 = Near(rnd, x(0));

  // X -> Y -> X: back to the fingerprint in the tables, found once.
  ASSERT_NO_FATAL_FAILURE(t.Insert(0, y0));
  ASSERT_NO_FATAL_FAILURE(t.Insert(0, x(0)));
  // X -> Y, then removed: X still leaves, and Y was never in the tables.
  ASSERT_NO_FATAL_FAILURE(t.Insert(1, Near(rnd, x(1))));
  ASSERT_NO_FATAL_FAILURE(t.Remove(1));
  // Removed, then back with X.
  ASSERT_NO_FATAL_FAILURE(t.Remove(2));
  ASSERT_NO_FATAL_FAILURE(t.Insert(2, x(2)));
  // Removed, then back with a new fingerprint.
  ASSERT_NO_FATAL_FAILURE(t.Remove(3));
  ASSERT_NO_FATAL_FAILURE(t.Insert(3, Near(rnd, x(3))));
  // X -> Y -> Z: X leaves, not Y.
  ASSERT_NO_FATAL_FAILURE(t.Insert(4, Near(rnd, x(4))));
  ASSERT_NO_FATAL_FAILURE(t.Insert(4, rnd.Next()));
  // X -> Y -> X -> Y.
  const std::uint64_t y5 = Near(rnd, x(5));
  ASSERT_NO_FATAL_FAILURE(t.Insert(5, y5));
  ASSERT_NO_FATAL_FAILURE(t.Insert(5, x(5)));
  ASSERT_NO_FATAL_FAILURE(t.Insert(5, y5));
  // Removed, back with Y, removed again.
  ASSERT_NO_FATAL_FAILURE(t.Remove(6));
  ASSERT_NO_FATAL_FAILURE(t.Insert(6, rnd.Next()));
  ASSERT_NO_FATAL_FAILURE(t.Remove(6));
  // Removed, back with X, then Y.
  ASSERT_NO_FATAL_FAILURE(t.Remove(7));
  ASSERT_NO_FATAL_FAILURE(t.Insert(7, x(7)));
  ASSERT_NO_FATAL_FAILURE(t.Insert(7, Near(rnd, x(7))));
  // X -> Y, then Y again (by CheckAndInsert): X still leaves.
  const std::uint64_t y8 = rnd.Next();
  ASSERT_NO_FATAL_FAILURE(t.Insert(8, y8));
  ASSERT_NO_FATAL_FAILURE(t.CheckAndInsert(8, y8));
  // 9 and 10 swap fingerprints: each leaves for one id and arrives for
  // the other, and both stay in the tables.
  ASSERT_NO_FATAL_FAILURE(t.InsertBatch({{9, x(10)}, {10, x(9)}}));
  // 11 takes the fingerprint of 12, which is removed: it stays.
  ASSERT_NO_FATAL_FAILURE(t.Insert(11, x(12)));
  ASSERT_NO_FATAL_FAILURE(t.Remove(12));
  // A new document staged, replaced and removed before any merge.
  ASSERT_NO_FATAL_FAILURE(t.Insert(1000, x(13)));
  ASSERT_NO_FATAL_FAILURE(t.Insert(1000, rnd.Next()));
  ASSERT_NO_FATAL_FAILURE(t.Remove(1000));
  // A new document staged with the fingerprint of 14, which is removed.
  ASSERT_NO_FATAL_FAILURE(t.Remove(14));
  ASSERT_NO_FATAL_FAILURE(t.Insert(1001, x(14)));
  // One batch: new ids and replacements, some ids twice (the last wins):
  // 1002 new twice, 15 replaced twice, 16 as it is, 17 replaced and then
  // back to X, 18 removed before and now back with X, 19 replaced before
  // and now far.
  ASSERT_NO_FATAL_FAILURE(t.Remove(18));
  ASSERT_NO_FATAL_FAILURE(t.Insert(19, Near(rnd, x(19))));
  ASSERT_NO_FATAL_FAILURE(t.InsertBatch({{1002, rnd.Next()},
                                         {15, Near(rnd, x(15))},
                                         {16, x(16)},
                                         {17, rnd.Next()},
                                         {1002, x(20)},
                                         {15, rnd.Next()},
                                         {17, x(17)},
                                         {18, x(18)},
                                         {19, rnd.Next()},
                                         {1003, Near(rnd, x(21))}}));
  // By CheckAndInsert: X -> Y -> X.
  const std::uint64_t y22 = Near(rnd, x(22));
  ASSERT_NO_FATAL_FAILURE(t.CheckAndInsert(22, y22));
  ASSERT_NO_FATAL_FAILURE(t.CheckAndInsert(22, x(22)));

  ASSERT_NO_FATAL_FAILURE(t.ExpectAllExact("pending"));
  ASSERT_NO_FATAL_FAILURE(t.Reopen());
  ASSERT_NO_FATAL_FAILURE(t.ExpectAllExact("pending, reopened"));
  ASSERT_NO_FATAL_FAILURE(t.Flush());
  EXPECT_EQ(StagedOf(t.store()), 0u);
  ASSERT_NO_FATAL_FAILURE(t.ExpectAllExact("flushed"));
  ASSERT_NO_FATAL_FAILURE(t.Reopen());
  ASSERT_NO_FATAL_FAILURE(t.ExpectExact("flushed, reopened"));

  // Once more over the merged result, with the merge in between: the
  // versions just merged leave in their turn.
  ASSERT_NO_FATAL_FAILURE(t.Insert(0, y0));
  ASSERT_NO_FATAL_FAILURE(t.Remove(2));
  ASSERT_NO_FATAL_FAILURE(t.Insert(9, x(9)));
  ASSERT_NO_FATAL_FAILURE(t.Insert(10, x(10)));
  ASSERT_NO_FATAL_FAILURE(t.Remove(11));
  ASSERT_NO_FATAL_FAILURE(t.Insert(1001, rnd.Next()));
  ASSERT_NO_FATAL_FAILURE(t.ExpectAllExact("second round, pending"));
  ASSERT_NO_FATAL_FAILURE(t.Flush());
  EXPECT_EQ(StagedOf(t.store()), 0u);
  ASSERT_NO_FATAL_FAILURE(t.ExpectExact("second round, flushed"));
}

// ---- Fingerprints shared by several documents ----

// A packed table holds a fingerprint once for all its documents: a pending
// removal of one copy must hide that copy alone, and the merge must keep
// the fingerprint while any document has it and drop it with the last.
class StagedRemovalsSharedTest : public MergedStoreTest {};

TEST_F(StagedRemovalsSharedTest, SharedFingerprintLeavesWithItsLastDocument) {
  const std::uint64_t seed = TestSeed(803);
  Random rnd(seed);
  const std::uint64_t x = rnd.Next();
  std::vector<IdFingerprint> docs;
  for (DocumentId id = 0; id < 5; ++id) docs.push_back({id, x});
  docs.push_back({5, x ^ 1});  // near X, always there
  const std::uint64_t w = rnd.Next();
  docs.push_back({6, w});  // W alone
  for (DocumentId id = 10; id < 110; ++id) docs.push_back({id, rnd.Next()});
  ASSERT_NO_FATAL_FAILURE(Start(seed, docs));
  Tracked& t = tracked();

  auto ids_at = [&](std::uint64_t fp, int k) {
    Result<std::vector<Match>> found = t.store().Query(fp, k);
    EXPECT_TRUE(found.ok()) << found.status().ToString();
    std::vector<DocumentId> ids;
    if (found.ok()) {
      for (const Match& m : *found) ids.push_back(m.id);
    }
    std::sort(ids.begin(), ids.end());
    return ids;
  };

  ASSERT_NO_FATAL_FAILURE(t.Insert(0, rnd.Next()));
  EXPECT_EQ(ids_at(x, 0), (std::vector<DocumentId>{1, 2, 3, 4}));
  ASSERT_NO_FATAL_FAILURE(t.ExpectExact("one copy leaving"));
  ASSERT_NO_FATAL_FAILURE(t.Flush());
  EXPECT_EQ(ids_at(x, 0), (std::vector<DocumentId>{1, 2, 3, 4}));
  ASSERT_NO_FATAL_FAILURE(t.ExpectExact("one copy gone"));

  ASSERT_NO_FATAL_FAILURE(t.Insert(1, rnd.Next()));
  ASSERT_NO_FATAL_FAILURE(t.Insert(2, x ^ 2));  // near, as 5 is
  ASSERT_NO_FATAL_FAILURE(t.Remove(3));
  ASSERT_NO_FATAL_FAILURE(t.Remove(4));
  EXPECT_EQ(ids_at(x, 0), std::vector<DocumentId>{});
  EXPECT_EQ(ids_at(x, 1), (std::vector<DocumentId>{2, 5}));
  // W's last document leaves, and a new one brings W back before the
  // merge: the merge must keep W in every table.
  ASSERT_NO_FATAL_FAILURE(t.Remove(6));
  ASSERT_NO_FATAL_FAILURE(t.Insert(60, w));
  ASSERT_NO_FATAL_FAILURE(t.ExpectExact("every copy leaving"));
  ASSERT_NO_FATAL_FAILURE(t.Flush());
  EXPECT_EQ(ids_at(x, 0), std::vector<DocumentId>{});
  EXPECT_EQ(ids_at(x, 3), (std::vector<DocumentId>{2, 5}));
  EXPECT_EQ(ids_at(w, 3), std::vector<DocumentId>{60});
  // Verify finds any fingerprint a packed table kept without a document.
  ASSERT_NO_FATAL_FAILURE(t.ExpectExact("every copy gone"));

  // X comes back, staged, with the copy near it; the last two copies of
  // W leave at once while a third brings it back.
  ASSERT_NO_FATAL_FAILURE(t.Insert(50, x));
  ASSERT_NO_FATAL_FAILURE(t.Insert(5, x));
  ASSERT_NO_FATAL_FAILURE(t.Insert(61, w));
  ASSERT_NO_FATAL_FAILURE(t.Flush());
  ASSERT_NO_FATAL_FAILURE(t.Remove(60));
  ASSERT_NO_FATAL_FAILURE(t.Insert(61, rnd.Next()));
  ASSERT_NO_FATAL_FAILURE(t.Insert(62, w));
  EXPECT_EQ(ids_at(x, 0), (std::vector<DocumentId>{5, 50}));
  EXPECT_EQ(ids_at(w, 0), std::vector<DocumentId>{62});
  ASSERT_NO_FATAL_FAILURE(t.ExpectExact("X back, W's copies turned over"));
  ASSERT_NO_FATAL_FAILURE(t.Reopen());
  ASSERT_NO_FATAL_FAILURE(t.Flush());
  EXPECT_EQ(ids_at(w, 0), std::vector<DocumentId>{62});
  ASSERT_NO_FATAL_FAILURE(t.ExpectExact("W's copies turned over, merged"));
}

// A merge of thousands of replacements decides which fingerprints leave
// the packed tables in two halves, on two threads: a fingerprint shared by
// several documents must stay while one of them does, wherever it falls.
TEST_F(StagedRemovalsSharedTest, ManySharedFingerprintsLeaveInOneMerge) {
  const std::uint64_t seed = TestSeed(804);
  Random rnd(seed);
  constexpr DocumentId kShared = 3000;  // fingerprints, three documents each
  std::vector<IdFingerprint> docs;
  for (DocumentId g = 0; g < kShared; ++g) {
    const std::uint64_t fp = rnd.Next();
    for (DocumentId i = 0; i < 3; ++i) docs.push_back({3 * g + i, fp});
  }
  for (DocumentId id = 3 * kShared; id < 3 * kShared + 3000; ++id) docs.push_back({id, rnd.Next()});
  ASSERT_NO_FATAL_FAILURE(Start(seed, docs));
  Tracked& t = tracked();

  // Group g loses g % 3 + 1 of its documents (all three for a third of
  // the groups); every other unshared document is replaced.
  std::vector<IdFingerprint> batch;
  for (DocumentId g = 0; g < kShared; ++g) {
    for (DocumentId i = 0; i <= g % 3; ++i) batch.push_back({3 * g + i, rnd.Next()});
  }
  for (DocumentId id = 3 * kShared; id < 3 * kShared + 3000; id += 2) {
    batch.push_back({id, rnd.Next()});
  }
  ASSERT_GT(batch.size(), 4096u) << "too few to split the check";
  ASSERT_NO_FATAL_FAILURE(t.InsertBatch(batch));
  ASSERT_NO_FATAL_FAILURE(t.Flush());

  // Verify: every table holds exactly the stored documents' entries.
  const Status verified = t.store().Verify();
  ASSERT_TRUE(verified.ok()) << verified.ToString();
  for (DocumentId g = 0; g < kShared; ++g) {
    const std::uint64_t fp = docs[3 * g].fingerprint.low();
    Result<std::vector<Match>> found = t.store().Query(fp, 0);
    ASSERT_TRUE(found.ok()) << found.status().ToString();
    std::vector<DocumentId> ids;
    for (const Match& m : *found) ids.push_back(m.id);
    std::sort(ids.begin(), ids.end());
    std::vector<DocumentId> expected;
    for (DocumentId i = g % 3 + 1; i < 3; ++i) expected.push_back(3 * g + i);
    ASSERT_EQ(ids, expected) << "group " << g;
  }
}

// ---- Tables skipped ----

// A compaction while a removal is pending: the leaving version is still in
// the tables, where a query still meets it, so the member filters of the
// compacted files must count it. Had they passed it by as gone, they would
// show its prefix alone, and a query that meets it would skip the tables
// where a neighbour is to be found.
TEST(StagedRemovalsSkipTest, CompactedWhileARemovalIsPending) {
  const std::uint64_t seed = TestSeed(809);
  Random rnd(seed);
  TempDir dir;
  Tracked t(dir.Sub("store"), seed);
  ASSERT_TRUE(t.ok());
  const PermutationPlan& plan = t.store().plan();
  // X, leaving, and F near it, whose first table shared with X is not
  // table 0: a query of X meets X in table 0 first, and F later.
  const std::uint64_t x = rnd.Next();
  std::uint64_t f = x ^ rnd.Bits(3);
  while (plan.FirstSharedTable(x, f) == 0) f = x ^ rnd.Bits(3);
  std::vector<IdFingerprint> docs = {{1, x}, {2, f}};
  for (DocumentId id = 10; id < 60; ++id) docs.push_back({id, rnd.Next()});
  ASSERT_NO_FATAL_FAILURE(t.InsertBatch(docs));
  ASSERT_NO_FATAL_FAILURE(t.Flush());

  const std::uint64_t y = rnd.Next();
  ScanOptions scan;
  bool wrote = false;
  // Called after Compact's merge, before it compacts.
  scan.progress = [&](std::uint64_t, std::uint64_t) {
    if (wrote) return;
    wrote = true;
    EXPECT_TRUE(t.store().Insert(1, y, MetadataFor(1)).ok());
  };
  const Status compacted = t.store().Compact(scan);
  ASSERT_TRUE(compacted.ok()) << compacted.ToString();
  ASSERT_TRUE(wrote);
  t.Record(1, y);
  Result<StoreStats> stats = t.store().Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->staged_documents, 1u);
  // Verify checks the filters of every shared prefix against the tables.
  const Status verified = t.store().Verify();
  EXPECT_TRUE(verified.ok()) << verified.ToString();

  Result<std::vector<Match>> found = t.store().Query(x, 3);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  std::vector<DocumentId> ids;
  for (const Match& m : *found) ids.push_back(m.id);
  EXPECT_EQ(ids, std::vector<DocumentId>{2}) << "F, at " << HammingDistance(x, f);
  ASSERT_NO_FATAL_FAILURE(t.ExpectExact("compacted, X leaving"));
  ASSERT_NO_FATAL_FAILURE(t.Flush());
  ASSERT_NO_FATAL_FAILURE(t.ExpectExact("X gone"));
}

// ---- Bulk loads over pending removals ----

class StagedRemovalsBulkLoadTest : public MergedStoreTest,
                                   public ::testing::WithParamInterface<bool> {};

// A load replaces documents whose removal is pending: the fingerprint in
// the tables is the leaving one, not the staged one, and a removed
// document is new to the load though its entries are still in the tables.
// Loads of a leaving fingerprint, back to its own document or to another,
// must survive the merge that follows.
TEST_P(StagedRemovalsBulkLoadTest, LoadOverPendingRemovals) {
  const bool spilling = GetParam();
  const std::uint64_t seed = TestSeed(804);
  const std::vector<IdFingerprint> docs = MakeCorpus(seed, 100, {Plant{2, 10}});
  ASSERT_NO_FATAL_FAILURE(Start(seed, docs));
  Tracked& t = tracked();
  Random rnd(seed + 1);
  auto x = [&](DocumentId id) { return docs[id].fingerprint.low(); };

  ASSERT_NO_FATAL_FAILURE(t.Insert(0, Near(rnd, x(0))));  // loaded with a new one
  ASSERT_NO_FATAL_FAILURE(t.Remove(1));                   // loaded with a new one
  ASSERT_NO_FATAL_FAILURE(t.Insert(2, rnd.Next()));       // loaded back with X
  ASSERT_NO_FATAL_FAILURE(t.Remove(3));                   // loaded back with X
  ASSERT_NO_FATAL_FAILURE(t.Remove(5));                   // not loaded
  ASSERT_NO_FATAL_FAILURE(t.Insert(6, rnd.Next()));       // not loaded
  ASSERT_NO_FATAL_FAILURE(t.Insert(8, rnd.Next()));       // loaded with 8's X, then...
  ASSERT_NO_FATAL_FAILURE(t.Insert(1000, rnd.Next()));    // staged, new, loaded anew
  ASSERT_NO_FATAL_FAILURE(t.ExpectExact("pending, before the load"));

  BulkLoadOptions options;
  if (spilling) options.memory_bytes = 4096;
  Result<std::unique_ptr<BulkLoader>> loader = t.store().NewBulkLoader(options);
  ASSERT_TRUE(loader.ok()) << loader.status().ToString();
  const std::vector<IdFingerprint> loaded = {
      {0, Near(rnd, x(0))},
      {1, rnd.Next()},
      {2, x(2)},
      {3, x(3)},
      {4, x(0)},    // a merged document takes 0's leaving fingerprint
      {500, x(1)},  // a new one takes 1's, removed
      {7, x(7)},    // as it is
      {8, x(8)},    // back to the tables' fingerprint
      {1000, rnd.Next()},
  };
  for (const IdFingerprint& d : loaded) {
    ASSERT_TRUE((*loader)->Add(d.id, d.fingerprint, MetadataFor(d.id)).ok());
  }
  Result<BulkLoadStats> stats = (*loader)->Finish();
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->added, 3u);     // 1 and 3 were removed; 500
  EXPECT_EQ(stats->replaced, 6u);  // 0, 2, 4, 7, 8, 1000
  loader->reset();
  for (const IdFingerprint& d : loaded) t.Record(d.id, d.fingerprint.low());
  // 5 and 6 are still pending.
  ASSERT_NO_FATAL_FAILURE(t.ExpectAllExact("loaded"));
  ASSERT_NO_FATAL_FAILURE(t.Reopen());
  ASSERT_NO_FATAL_FAILURE(t.ExpectExact("loaded, reopened"));
  ASSERT_NO_FATAL_FAILURE(t.Flush());
  EXPECT_EQ(StagedOf(t.store()), 0u);
  ASSERT_NO_FATAL_FAILURE(t.ExpectAllExact("loaded, flushed"));
}

INSTANTIATE_TEST_SUITE_P(Loads, StagedRemovalsBulkLoadTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Spilling" : "InMemory";
                         });

// ---- Marks on disk ----

// The staging family of the closed store at `path`: id -> mark.
std::map<DocumentId, std::string> MarksOf(const std::string& path) {
  std::map<DocumentId, std::string> marks;
  testing::EditWithRocksDb(path, [&](rocksdb::DB& db, const auto& family) {
    std::unique_ptr<rocksdb::Iterator> it(db.NewIterator({}, family("staging")));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      EXPECT_EQ(it->key().size(), 8u);
      if (it->key().size() != 8) continue;
      DocumentId id = 0;
      for (int i = 0; i < 8; ++i) id = id << 8 | static_cast<unsigned char>(it->key()[i]);
      marks[id] = it->value().ToString();
    }
    EXPECT_TRUE(it->status().ok()) << it->status().ToString();
  });
  return marks;
}

std::string BigEndian(std::uint64_t fp) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(fp >> (56 - 8 * i));
  return out;
}

// The marks docs/format.md describes: 8 bytes, the staged fingerprint; 16,
// the staged one then the one leaving the tables; 9, the one leaving then
// a zero byte, for a removal. Unpinned: X -> Y -> X, which may keep a mark
// or drop it.
TEST(StagedRemovalsMarksTest, MarksNameTheFingerprintLeavingTheTables) {
  const std::uint64_t seed = TestSeed(805);
  Random rnd(seed);
  std::vector<std::uint64_t> x(8);
  for (std::uint64_t& fp : x) fp = rnd.Next();
  std::vector<std::uint64_t> y(8);
  for (std::uint64_t& fp : y) fp = rnd.Next();
  TempDir dir;
  const std::string path = dir.Sub("store");
  {
    std::unique_ptr<Store> store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    for (DocumentId id = 0; id < 7; ++id) ASSERT_TRUE(store->Insert(id, x[id]).ok());
    ASSERT_TRUE(store->Flush().ok());
    ASSERT_TRUE(store->Insert(0, y[0]).ok());  // replaced
    ASSERT_TRUE(store->Remove(1).ok());        // removed
    ASSERT_TRUE(store->Insert(2, y[2]).ok());  // replaced twice
    ASSERT_TRUE(store->Insert(2, rnd.Next()).ok());
    ASSERT_TRUE(store->Insert(2, y[3]).ok());
    ASSERT_TRUE(store->Insert(3, y[4]).ok());  // replaced, then removed
    ASSERT_TRUE(store->Remove(3).ok());
    ASSERT_TRUE(store->Remove(4).ok());  // removed, then back
    ASSERT_TRUE(store->Insert(4, y[5]).ok());
    ASSERT_TRUE(store->Insert(5, x[5]).ok());  // as it is
    ASSERT_TRUE(store->Insert(7, y[7]).ok());  // new
    ASSERT_TRUE(store->Insert(8, y[6]).ok());  // new, then removed
    ASSERT_TRUE(store->Remove(8).ok());
    EXPECT_EQ(StagedOf(*store), 6u);
    ASSERT_TRUE(store->Close().ok());
  }
  const std::map<DocumentId, std::string> expected = {
      {0, BigEndian(y[0]) + BigEndian(x[0])},       // staged, then leaving
      {1, BigEndian(x[1]) + std::string(1, '\0')},  // leaving, no new version
      {2, BigEndian(y[3]) + BigEndian(x[2])},       // the first version leaves
      {3, BigEndian(x[3]) + std::string(1, '\0')},  // the merged version leaves
      {4, BigEndian(y[5]) + BigEndian(x[4])},       // back, and X still leaves
      {7, BigEndian(y[7])},                         // new: staged alone
  };
  EXPECT_EQ(MarksOf(path), expected);
  {
    std::unique_ptr<Store> store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(StagedOf(*store), 6u);
    ASSERT_TRUE(store->Flush().ok());
    EXPECT_EQ(StagedOf(*store), 0u);
    ASSERT_TRUE(store->Close().ok());
  }
  EXPECT_EQ(MarksOf(path), (std::map<DocumentId, std::string>{}));
}

// ---- While a merge runs ----

// Removals staged while a merge runs (of other ids: writers of the ids it
// merges wait for it) go into the next merge: the running one must neither
// take nor drop their marks, and queries meanwhile see both the removals
// it is merging and the new ones as done.
class StagedRemovalsMergeTest : public MergedStoreTest {};

TEST_F(StagedRemovalsMergeTest, RemovalsStagedDuringAMergeWaitForTheNext) {
  const std::uint64_t seed = TestSeed(807);
  const std::vector<IdFingerprint> docs = MakeCorpus(seed, 100, {Plant{1, 10}, Plant{3, 10}});
  ASSERT_NO_FATAL_FAILURE(Start(seed, docs));
  Tracked& t = tracked();
  Random rnd(seed + 1);
  // The merge takes the even ids below 30; the odd ones between them are
  // written while it runs, so that its marks and theirs interleave.
  for (DocumentId id = 0; id < 20; id += 2) {
    ASSERT_NO_FATAL_FAILURE(t.Insert(id, Near(rnd, docs[id].fingerprint.low())));
  }
  for (DocumentId id = 20; id < 30; id += 2) ASSERT_NO_FATAL_FAILURE(t.Remove(id));

  HeldMerge held;
  std::future<Status> flush;
  std::future<Status> writer;
  const auto end_merge = [&] {
    held.Release();
    // A writer or merge that never ends hangs: the process ends instead.
    for (std::future<Status>* f : {&writer, &flush}) {
      if (f->valid() && f->wait_for(std::chrono::seconds(120)) != std::future_status::ready) {
        ADD_FAILURE() << "the merge, or a write waiting for it, did not end";
        std::fflush(nullptr);
        std::_Exit(1);
      }
    }
  };
  // On every way out: the merge and the writer must end before what they use.
  struct AtExit {
    std::function<void()> run;
    ~AtExit() { run(); }
  } at_exit{end_merge};

  flush = std::async(std::launch::async, [&] { return t.store().Flush(); });
  ASSERT_TRUE(held.WaitUntilMerging()) << "no merge started";
  // Writes of ids the merge does not hold, on a thread of their own: one
  // that waited for the merge would hang the test.
  std::vector<std::pair<DocumentId, std::optional<std::uint64_t>>> writes;
  for (DocumentId id = 1; id < 20; id += 2)
    writes.push_back({id, Near(rnd, docs[id].fingerprint.low())});
  for (DocumentId id = 21; id < 30; id += 2) writes.push_back({id, std::nullopt});
  writes.push_back({40, docs[20].fingerprint.low()});   // leaving in the running merge
  writes.push_back({2000, docs[0].fingerprint.low()});  // new, with a leaving fingerprint
  writer = std::async(std::launch::async, [&] {
    for (const auto& [id, fp] : writes) {
      const Status s = fp ? t.store().Insert(id, *fp, MetadataFor(id)) : t.store().Remove(id);
      if (!s.ok()) return s;
    }
    return Status::OK();
  });
  ASSERT_EQ(writer.wait_for(std::chrono::seconds(60)), std::future_status::ready)
      << "writes of ids outside the merge waited for it";
  const Status wrote = writer.get();
  ASSERT_TRUE(wrote.ok()) << wrote.ToString();
  Model model = t.model();
  std::set<std::uint64_t> written = t.written();
  for (const auto& [id, fp] : writes) {
    if (fp) {
      model[id] = *fp;
      written.insert(*fp);
    } else {
      model.erase(id);
    }
  }
  // Queries only: scans and Verify may wait for the merge.
  {
    SCOPED_TRACE("during the merge");
    const std::vector<IdFingerprint> now = DocsOf(model);
    for (std::uint64_t fp : written) {
      for (int k = 0; k <= 3; ++k) {
        Result<std::vector<Match>> found = t.store().Query(fp, k);
        ASSERT_TRUE(found.ok()) << found.status().ToString();
        const std::vector<IdDistance> expected = BruteForceQuery(now, fp, k);
        ASSERT_EQ(AsIdDistances(*found), expected)
            << "query " << fp << " k=" << k << " "
            << SortedDifference(expected, AsIdDistances(*found));
      }
    }
  }
  end_merge();
  const Status flushed = flush.get();
  ASSERT_TRUE(flushed.ok()) << flushed.ToString();
  // 10 replaced, 5 removed, 40 replaced by a fingerprint, 2000 new.
  EXPECT_EQ(StagedOf(t.store()), 17u) << "the merge took or dropped marks written during it";
  ASSERT_NO_FATAL_FAILURE(ExpectExact(t.store(), model, written, seed, "after the first merge"));
  ASSERT_TRUE(t.store().Flush().ok());
  EXPECT_EQ(StagedOf(t.store()), 0u);
  ASSERT_NO_FATAL_FAILURE(ExpectExact(t.store(), model, written, seed, "after the second merge"));
}

// ---- Concurrency ----

// Two writers replace and remove disjoint ids in batches, with background
// merges between them, while a reader queries: the documents nobody writes
// are always found, every match is a version its writer wrote, and no
// document is reported twice (a stale entry beside its new version). At
// the end, once merged, brute force agrees.
class StagedRemovalsConcurrencyTest : public MergedStoreTest {};

TEST_F(StagedRemovalsConcurrencyTest, ReplacementsBesideQueriesAndMerges) {
  const std::uint64_t seed = TestSeed(808);
  const std::vector<IdFingerprint> docs = MakeCorpus(seed, 200, {Plant{1, 20}, Plant{3, 20}});
  StoreOptions options;
  options.staged_documents = 48;  // merges run beside the writers
  ASSERT_NO_FATAL_FAILURE(Start(seed, docs, options));
  Tracked& t = tracked();

  // Writer w owns the ids below 160 with id % 2 == w; the rest stay. Every
  // write is planned first, so that the reader knows every version.
  constexpr int kWriters = 2;
  constexpr int kRounds = 30;
  constexpr int kBatch = 12;
  struct Write {
    DocumentId id;
    std::optional<std::uint64_t> fp;  // none: removed
  };
  std::vector<std::vector<std::vector<Write>>> plans(kWriters);
  std::map<DocumentId, std::set<std::uint64_t>> versions;
  for (const IdFingerprint& d : docs) versions[d.id].insert(d.fingerprint.low());
  Model final_model = t.model();
  Random rnd(seed + 1);
  for (int w = 0; w < kWriters; ++w) {
    for (int r = 0; r < kRounds; ++r) {
      std::vector<Write> batch;
      for (int i = 0; i < kBatch; ++i) {
        const DocumentId id = 2 * rnd.Uniform(80) + w;
        const std::uint64_t what = rnd.Uniform(4);
        std::optional<std::uint64_t> fp;
        if (what == 0) {
          fp = docs[id].fingerprint.low();  // back to the first version
        } else if (what != 3) {
          fp = Near(rnd, docs[id].fingerprint.low());
        }
        batch.push_back({id, fp});
        if (fp) versions[id].insert(*fp);
      }
      plans[w].push_back(std::move(batch));
    }
  }

  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  std::mutex failure_mu;
  std::string first_failure;
  const auto fail = [&](const std::string& what) {
    std::lock_guard lock(failure_mu);
    if (failures.fetch_add(1) == 0) first_failure = what;
  };
  std::vector<IdFingerprint> still;
  for (const IdFingerprint& d : docs) {
    if (d.id >= 160) still.push_back(d);
  }
  std::vector<std::thread> writers;
  // Each writer's last write of each id; none: removed.
  std::vector<std::map<DocumentId, std::optional<std::uint64_t>>> wrote(kWriters);
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      for (const std::vector<Write>& batch : plans[w]) {
        std::vector<NewDocument> inserts;
        std::vector<std::string> metadata;
        metadata.reserve(batch.size());
        for (const Write& write : batch) {
          if (write.fp) {
            metadata.push_back(MetadataFor(write.id));
            inserts.push_back({write.id, *write.fp, metadata.back()});
            wrote[w][write.id] = *write.fp;
            continue;
          }
          // Removals one by one; the batch's inserts go first.
          if (!inserts.empty()) {
            if (const Status s = t.store().InsertBatch(inserts).status(); !s.ok())
              fail(s.ToString());
            inserts.clear();
          }
          const Status s = t.store().Remove(write.id);
          if (!s.ok() && !s.IsNotFound()) fail("remove: " + s.ToString());
          wrote[w][write.id] = std::nullopt;
        }
        if (!inserts.empty()) {
          if (const Status s = t.store().InsertBatch(inserts).status(); !s.ok()) fail(s.ToString());
        }
      }
    });
  }
  std::thread reader([&] {
    Random pick(seed + 2);
    int rounds = 0;
    while (!done.load() || rounds < 50) {
      ++rounds;
      // Moving documents' first versions, or documents that stay, near or
      // as they are; alone, or three at once (QueryBatch's own path).
      std::vector<std::uint64_t> queries;
      for (int i = rounds % 2 == 0 ? 1 : 3; i > 0; --i) {
        const IdFingerprint& d = docs[pick.Uniform(docs.size())];
        queries.push_back(pick.Uniform(2) == 0 ? d.fingerprint.low()
                                               : Near(pick, d.fingerprint.low()));
      }
      std::vector<std::vector<Match>> answers;
      if (queries.size() == 1) {
        Result<std::vector<Match>> one = t.store().Query(queries[0], 3);
        if (!one.ok()) {
          fail(one.status().ToString());
          continue;
        }
        answers.push_back(*std::move(one));
      } else {
        Result<std::vector<std::vector<Match>>> batch =
            t.store().QueryBatch(testing::Fingerprints(queries), 3);
        if (!batch.ok()) {
          fail(batch.status().ToString());
          continue;
        }
        answers = *std::move(batch);
      }
      for (std::size_t i = 0; i < queries.size(); ++i) {
        const std::uint64_t q = queries[i];
        std::set<DocumentId> seen;
        for (const Match& m : answers[i]) {
          if (!seen.insert(m.id).second) fail("document " + std::to_string(m.id) + " found twice");
          const auto known = versions.find(m.id);
          if (known == versions.end() || !known->second.contains(m.fingerprint.low())) {
            fail("document " + std::to_string(m.id) + " found with a fingerprint never written");
          }
          if (HammingDistance(m.fingerprint, q) != m.distance || m.distance > 3) {
            fail("document " + std::to_string(m.id) + " at a wrong distance");
          }
        }
        for (const IdDistance& e : BruteForceQuery(still, q, 3)) {
          if (!seen.contains(e.id)) {
            fail("document " + std::to_string(e.id) + " that stays was lost");
          }
        }
      }
    }
  });
  for (std::thread& w : writers) w.join();
  done = true;
  reader.join();
  EXPECT_EQ(failures.load(), 0) << first_failure;

  for (const auto& last : wrote) {
    for (const auto& [id, fp] : last) {
      if (fp) {
        final_model[id] = *fp;
      } else {
        final_model.erase(id);
      }
    }
  }
  std::set<std::uint64_t> written;
  for (const auto& [id, fps] : versions) written.insert(fps.begin(), fps.end());
  ASSERT_TRUE(t.store().Flush().ok());
  EXPECT_EQ(StagedOf(t.store()), 0u);
  ASSERT_NO_FATAL_FAILURE(ExpectExact(t.store(), final_model, written, seed, "after the writers"));
}

}  // namespace
}  // namespace fpstore
