// Bulk loads: exact answers afterwards, last-wins for repeated ids,
// replacement of stored documents, and all-or-nothing when abandoned or
// killed part-way.

#include "fpstore/bulk_loader.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <future>
#include <map>
#include <stdexcept>

#include "brute_force.h"
#include "fpstore/store.h"
#include "raw_store.h"
#include "store_checks.h"
#include "temp_dir.h"
#include "util/test_hooks.h"

namespace fpstore {
namespace {

using internal::IdFingerprint;
using testing::ExpectMatchesBruteForce;
using testing::MakeCorpus;
using testing::MetadataFor;
using testing::MustOpen;
using testing::Plant;
using testing::Random;
using testing::TempDir;
using testing::TestSeed;

std::vector<IdFingerprint> Corpus(std::uint64_t seed, std::size_t n) {
  return MakeCorpus(seed, n,
                    {Plant{0, 30}, Plant{1, 30}, Plant{2, 30}, Plant{3, 30}, Plant{4, 30}});
}

// A tiny memory budget forces spilled runs and multi-way merges; table 0
// then reads its ids from the changes file, where with the default budget
// it copies them.
BulkLoadOptions SpillingOptions() {
  BulkLoadOptions options;
  options.memory_bytes = 4096;
  return options;
}

// Tables are written by one thread per core unless told otherwise.
BulkLoadOptions OneThreadOptions() {
  BulkLoadOptions options;
  options.threads = 1;
  return options;
}

// Three threads share the 20 tables unevenly, whatever the machine's cores.
BulkLoadOptions ThreeThreadOptions() {
  BulkLoadOptions options;
  options.threads = 3;
  return options;
}

// Adds two crowds the loader's sort handles apart: 400 fingerprints that
// share their top 16 bits (in the tables that lead with the first block,
// buckets of hundreds, spread by a second counting pass) and 400 that
// differ only in their last 8 bits, about 200 distinct (in most tables,
// runs of hundreds with equal leading bits, too long for insertion sort,
// and equal fingerprints that tables without ids hold once).
std::vector<IdFingerprint> WithCrowds(std::vector<IdFingerprint> docs, std::uint64_t seed) {
  Random rnd(seed);
  const std::uint64_t base = rnd.Next();
  for (int i = 0; i < 400; ++i) {
    docs.push_back({docs.size(), (base & ~(~std::uint64_t{0} >> 16)) | (rnd.Next() >> 16)});
  }
  for (int i = 0; i < 400; ++i) docs.push_back({docs.size(), base ^ rnd.Uniform(256)});
  return docs;
}

TEST(BulkLoaderTest, LoadsAnEmptyStoreExactly) {
  const std::uint64_t seed = TestSeed(11);
  for (const std::vector<IdFingerprint>& docs :
       {Corpus(seed, 1500), WithCrowds(Corpus(seed, 1500), seed + 7)}) {
    for (const BulkLoadOptions& options :
         {BulkLoadOptions{}, SpillingOptions(), OneThreadOptions(), ThreeThreadOptions()}) {
      TempDir dir;
      std::unique_ptr<Store> store = MustOpen(dir.Sub("store"));
      Result<std::unique_ptr<BulkLoader>> loader = store->NewBulkLoader(options);
      ASSERT_TRUE(loader.ok()) << loader.status().ToString();
      for (const IdFingerprint& d : docs) {
        ASSERT_TRUE((*loader)->Add(d.id, d.fingerprint, MetadataFor(d.id)).ok());
      }
      EXPECT_EQ((*loader)->added(), docs.size());
      Result<BulkLoadStats> stats = (*loader)->Finish();
      ASSERT_TRUE(stats.ok()) << stats.status().ToString();
      EXPECT_EQ(stats->added, docs.size());
      EXPECT_EQ(stats->replaced, 0u);
      ExpectMatchesBruteForce(*store, docs, seed, "after a bulk load");
      loader->reset();
      // Only the store's own files remain: the temporary directory is gone.
      for (const auto& entry : std::filesystem::directory_iterator(dir.Sub("store"))) {
        EXPECT_FALSE(entry.is_directory()) << entry.path();
      }
    }
  }
}

// A 128-bit store's load: tables cut on the head, with crowds whose heads
// are all one (their tails set apart in the writer's runs) or whose tails are
// (two copies of each fingerprint), whatever the load's budget and threads.
TEST(BulkLoaderTest, LoadsA128BitStoreExactly) {
  const std::uint64_t seed = TestSeed(12);
  std::vector<IdFingerprint> docs = MakeCorpus(
      seed, 1500, {Plant{0, 30}, Plant{2, 30}, Plant{4, 30}, Plant{6, 30}, Plant{7, 30}}, 128);
  Random rnd(seed + 7);
  const Fingerprint base = rnd.Next(128);
  for (int i = 0; i < 300; ++i) docs.push_back({docs.size(), {base.high(), rnd.Uniform(64)}});
  for (int i = 0; i < 100; ++i) docs.push_back({docs.size(), {rnd.Next(), base.low()}});
  for (const BulkLoadOptions& options :
       {BulkLoadOptions{}, SpillingOptions(), OneThreadOptions()}) {
    TempDir dir;
    StoreOptions store_options;
    store_options.bits = 128;
    std::unique_ptr<Store> store = MustOpen(dir.Sub("store"), store_options);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->plan().bits(), 128);
    Result<std::unique_ptr<BulkLoader>> loader = store->NewBulkLoader(options);
    ASSERT_TRUE(loader.ok()) << loader.status().ToString();
    for (const IdFingerprint& d : docs) {
      ASSERT_TRUE((*loader)->Add(d.id, d.fingerprint, MetadataFor(d.id)).ok());
    }
    Result<BulkLoadStats> stats = (*loader)->Finish();
    ASSERT_TRUE(stats.ok()) << stats.status().ToString();
    ExpectMatchesBruteForce(*store, docs, seed, "after a 128-bit bulk load");
    // A second load replaces a third of them and adds more, through merge operands.
    Result<std::unique_ptr<BulkLoader>> again = store->NewBulkLoader(options);
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    for (std::size_t i = 0; i < docs.size(); i += 3) {
      docs[i].fingerprint = docs[(i + 1) % docs.size()].fingerprint ^ rnd.Bits(1, 128);
      ASSERT_TRUE((*again)->Add(docs[i].id, docs[i].fingerprint, MetadataFor(docs[i].id)).ok());
    }
    for (int i = 0; i < 100; ++i) {
      docs.push_back({docs.size(), {base.high(), 64 + rnd.Uniform(64)}});
      ASSERT_TRUE(
          (*again)->Add(docs.back().id, docs.back().fingerprint, MetadataFor(docs.back().id)).ok());
    }
    ASSERT_TRUE((*again)->Finish().ok());
    ExpectMatchesBruteForce(*store, docs, seed, "after a second 128-bit bulk load");
    loader->reset();
    again->reset();
  }
}

// Progress comes from the table threads, one call at a time, never goes
// back, and ends at its total; an exception from it fails the load cleanly.
TEST(BulkLoaderTest, ProgressFromTableThreadsEndsAtTheTotal) {
  const std::vector<IdFingerprint> docs = Corpus(TestSeed(13), 300);
  TempDir dir;
  std::unique_ptr<Store> store = MustOpen(dir.Sub("store"));
  std::uint64_t last_done = 0, last_total = 0, calls = 0;
  bool went_back = false;
  BulkLoadOptions options = ThreeThreadOptions();
  options.progress = [&](std::uint64_t done, std::uint64_t total) {
    went_back |= done < last_done;
    last_done = done;
    last_total = total;
    ++calls;
  };
  auto loader = store->NewBulkLoader(options);
  ASSERT_TRUE(loader.ok()) << loader.status().ToString();
  for (const IdFingerprint& d : docs) ASSERT_TRUE((*loader)->Add(d.id, d.fingerprint).ok());
  ASSERT_TRUE((*loader)->Finish().ok());
  EXPECT_FALSE(went_back);
  EXPECT_GT(calls, 20u);  // at least once per table
  EXPECT_EQ(last_done, last_total);
  EXPECT_EQ(last_total, docs.size() * (1 + store->plan().table_count()));

  // Thrown from a table thread, after the first table.
  options.progress = [&docs](std::uint64_t done, std::uint64_t) {
    if (done > docs.size()) throw std::runtime_error("stop");
  };
  loader = store->NewBulkLoader(options);
  ASSERT_TRUE(loader.ok());
  for (const IdFingerprint& d : docs) ASSERT_TRUE((*loader)->Add(d.id + 1000, d.fingerprint).ok());
  Result<BulkLoadStats> failed = (*loader)->Finish();
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().ToString().find("stop"), std::string::npos)
      << failed.status().ToString();
  Result<StoreStats> stats = store->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->documents, docs.size()) << "a failed load must leave the store as it was";
}

TEST(BulkLoaderTest, LastOccurrenceWinsAndStoredDocumentsAreReplaced) {
  const std::uint64_t seed = TestSeed(12);
  std::vector<IdFingerprint> docs = Corpus(seed, 800);
  TempDir dir;
  std::unique_ptr<Store> store = MustOpen(dir.Sub("store"));
  // The first half goes in by ordinary inserts: the even ones merged into
  // the tables, the odd ones still staged.
  for (std::size_t parity : {0, 1}) {
    for (std::size_t i = parity; i < docs.size() / 2; i += 2) {
      ASSERT_TRUE(store->Insert(docs[i].id, docs[i].fingerprint, MetadataFor(docs[i].id)).ok());
    }
    if (parity == 0) {
      ASSERT_TRUE(store->Flush().ok());
    }
  }
  Random rnd(seed);
  Result<std::unique_ptr<BulkLoader>> loader = store->NewBulkLoader(SpillingOptions());
  ASSERT_TRUE(loader.ok());
  // The load brings the second half, new fingerprints for 100 stored
  // documents, the unchanged fingerprint for 50 others, and 100 ids twice.
  for (std::size_t i = docs.size() / 2; i < docs.size(); ++i) {
    ASSERT_TRUE((*loader)->Add(docs[i].id, rnd.Next(), "superseded").ok());
  }
  for (std::size_t i = 0; i < 100; ++i) docs[i].fingerprint ^= std::uint64_t{1} << (i % 64);
  for (std::size_t i = 0; i < 150; ++i) {
    ASSERT_TRUE((*loader)->Add(docs[i].id, docs[i].fingerprint, MetadataFor(docs[i].id)).ok());
  }
  for (std::size_t i = docs.size() / 2; i < docs.size(); ++i) {
    ASSERT_TRUE((*loader)->Add(docs[i].id, docs[i].fingerprint, MetadataFor(docs[i].id)).ok());
  }
  Result<BulkLoadStats> stats = (*loader)->Finish();
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->added, docs.size() - docs.size() / 2);
  EXPECT_EQ(stats->replaced, 150u);
  EXPECT_EQ(stats->superseded, docs.size() - docs.size() / 2);
  ExpectMatchesBruteForce(*store, docs, seed, "after a bulk load over stored documents");
}

// While a load's Finish writes its tables, queries answer from the store as
// it was, and writes wait for the load: a write begun meanwhile wins.
TEST(BulkLoaderTest, QueriesGoOnAndWritesWaitWhileALoadFinishes) {
  const std::uint64_t seed = TestSeed(14);
  std::vector<IdFingerprint> docs = Corpus(seed, 600);
  TempDir dir;
  std::unique_ptr<Store> store = MustOpen(dir.Sub("store"));
  const std::size_t stored = docs.size() / 2;
  for (std::size_t i = 0; i < stored; ++i) {
    ASSERT_TRUE(store->Insert(docs[i].id, docs[i].fingerprint, MetadataFor(docs[i].id)).ok());
  }
  ASSERT_TRUE(store->Flush().ok());

  // The write replaces a document the load brings.
  const IdFingerprint written{docs.back().id, ~docs.back().fingerprint.low()};
  std::future<Result<std::vector<Match>>> query;
  std::future<Status> write;
  bool answered_during_load = false;
  bool write_waited = false;
  BulkLoadOptions options;
  options.progress = [&](std::uint64_t, std::uint64_t) {
    if (query.valid()) return;  // the first call only; calls come one at a time
    query = std::async(std::launch::async, [&] { return store->Query(docs[0].fingerprint, 3); });
    answered_during_load = query.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
    write = std::async(std::launch::async, [&] {
      return store->Insert(written.id, written.fingerprint, MetadataFor(written.id));
    });
    write_waited = write.wait_for(std::chrono::milliseconds(200)) == std::future_status::timeout;
  };
  Result<std::unique_ptr<BulkLoader>> loader = store->NewBulkLoader(options);
  ASSERT_TRUE(loader.ok());
  for (std::size_t i = stored; i < docs.size(); ++i) {
    ASSERT_TRUE((*loader)->Add(docs[i].id, docs[i].fingerprint, MetadataFor(docs[i].id)).ok());
  }
  Result<BulkLoadStats> stats = (*loader)->Finish();
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  ASSERT_TRUE(query.valid()) << "no progress was reported";

  EXPECT_TRUE(answered_during_load) << "a query waited for the load's tables";
  Result<std::vector<Match>> answer = query.get();
  ASSERT_TRUE(answer.ok()) << answer.status().ToString();
  EXPECT_TRUE(std::any_of(answer->begin(), answer->end(),
                          [&](const Match& m) { return m.id == docs[0].id; }));
  EXPECT_TRUE(write_waited) << "a write went ahead while the load was writing its tables";
  const Status wrote = write.get();
  ASSERT_TRUE(wrote.ok()) << wrote.ToString();
  Result<Document> got = store->Get(written.id);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->fingerprint, written.fingerprint) << "the load overwrote a later write";
  docs.back().fingerprint = written.fingerprint;
  ExpectMatchesBruteForce(*store, docs, seed, "after a write that waited for a load");
  const Status verified = store->Verify();
  EXPECT_TRUE(verified.ok()) << verified.ToString();
}

TEST(BulkLoaderTest, AbandonedLoadLeavesTheStoreAsItWas) {
  const std::uint64_t seed = TestSeed(13);
  const std::vector<IdFingerprint> docs = Corpus(seed, 300);
  TempDir dir;
  std::unique_ptr<Store> store = MustOpen(dir.Sub("store"));
  for (const IdFingerprint& d : docs) {
    ASSERT_TRUE(store->Insert(d.id, d.fingerprint, MetadataFor(d.id)).ok());
  }
  {
    Result<std::unique_ptr<BulkLoader>> loader = store->NewBulkLoader(SpillingOptions());
    ASSERT_TRUE(loader.ok());
    Random rnd(seed);
    for (DocumentId id = 0; id < 500; ++id) ASSERT_TRUE((*loader)->Add(id, rnd.Next(), "x").ok());
  }
  ExpectMatchesBruteForce(*store, docs, seed, "after an abandoned load");
}

// A loader killed at a random moment: afterwards the store holds either the
// whole load or none of it.
TEST(BulkLoaderTest, KilledLoadIsAllOrNothing) {
  const std::uint64_t seed = TestSeed(14);
  const std::vector<IdFingerprint> before = Corpus(seed, 200);
  std::vector<IdFingerprint> after = before;
  Random rnd(seed);
  for (DocumentId id = 1000; id < 4000; ++id) after.push_back({id, rnd.Next()});
  for (std::size_t i = 0; i < 50; ++i) after[i].fingerprint = rnd.Next();

  TempDir dir;
  {
    std::unique_ptr<Store> store = MustOpen(dir.Sub("store"));
    for (const IdFingerprint& d : before) {
      ASSERT_TRUE(store->Insert(d.id, d.fingerprint, MetadataFor(d.id)).ok());
    }
    ASSERT_TRUE(store->Close().ok());
  }
  // Round 0 runs to completion and times the load; later rounds kill the
  // loader at a random moment within that time and a bit beyond.
  int saw_none = 0, saw_all = 0;
  std::int64_t load_micros = 0;
  for (int round = 0; round < 7; ++round) {
    const auto start = std::chrono::steady_clock::now();
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      std::unique_ptr<Store> store = MustOpen(dir.Sub("store"));
      if (store == nullptr) _exit(2);
      auto loader = store->NewBulkLoader(SpillingOptions());
      if (!loader.ok()) _exit(3);
      for (const IdFingerprint& d : after) {
        if (!(*loader)->Add(d.id, d.fingerprint, MetadataFor(d.id)).ok()) _exit(4);
      }
      _exit((*loader)->Finish().ok() ? 0 : 5);
    }
    if (round > 0) {
      ::usleep(static_cast<useconds_t>(rnd.Uniform(load_micros * 5 / 4 + 1)));
      ::kill(child, SIGKILL);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    if (round == 0) {
      load_micros = std::chrono::duration_cast<std::chrono::microseconds>(
                        std::chrono::steady_clock::now() - start)
                        .count();
    }
    ASSERT_TRUE(WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) == 0))
        << "child failed with exit status " << WEXITSTATUS(status);

    std::unique_ptr<Store> store = MustOpen(dir.Sub("store"));
    ASSERT_NE(store, nullptr);
    Result<StoreStats> stats = store->Stats();
    ASSERT_TRUE(stats.ok());
    const bool loaded = stats->documents == after.size();
    EXPECT_TRUE(loaded || stats->documents == before.size()) << stats->documents;
    ExpectMatchesBruteForce(
        *store, loaded ? after : before, seed,
        "round " + std::to_string(round) + (loaded ? " (loaded)" : " (not loaded)"));
    ++(loaded ? saw_all : saw_none);
    if (loaded) {
      // Start the next round from the state before the load.
      for (DocumentId id = 1000; id < 4000; ++id) ASSERT_TRUE(store->Remove(id).ok());
      for (std::size_t i = 0; i < 50; ++i) {
        ASSERT_TRUE(
            store->Insert(before[i].id, before[i].fingerprint, MetadataFor(before[i].id)).ok());
      }
    }
  }
  RecordProperty("rounds_loaded", saw_all);
  RecordProperty("rounds_not_loaded", saw_none);
}

}  // namespace
}  // namespace fpstore
