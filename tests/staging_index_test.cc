#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "read/staging.h"

namespace fpstore::internal {
namespace {

using Found = std::set<std::tuple<DocumentId, std::uint64_t, int>>;

std::uint64_t FlipBits(std::uint64_t fp, int bits, std::mt19937_64& rnd) {
  std::vector<int> positions(64);
  for (int i = 0; i < 64; ++i) positions[i] = i;
  std::shuffle(positions.begin(), positions.end(), rnd);
  for (int i = 0; i < bits; ++i) fp ^= std::uint64_t{1} << positions[i];
  return fp;
}

Found Probe(const StagingIndex& index, std::uint64_t query, int k) {
  Found found;
  index.ForEachWithin(query, k, [&](DocumentId id, Fingerprint fp, int d) {
    EXPECT_TRUE(found.insert({id, fp.low(), d}).second) << "entry " << id << " reported twice";
  });
  return found;
}

Found BruteForce(const std::vector<StagingIndex::Entry>& entries, std::uint64_t query, int k) {
  Found found;
  for (const StagingIndex::Entry& e : entries) {
    const int d = HammingDistance(e.fingerprint, query);
    if (d <= k) found.insert({e.id, e.fingerprint.low(), d});
  }
  return found;
}

// Batches of every size, from far below the room made up front to far past
// it, so that the index grows both inside one batch and between batches;
// near-duplicates and repeated fingerprints throughout.
class StagingIndexGrowthTest : public testing::TestWithParam<std::size_t> {};

TEST_P(StagingIndexGrowthTest, FindsExactlyTheEntriesWithinKWhileItGrows) {
  std::mt19937_64 rnd(7);
  StagingIndex index(3, 64, GetParam());
  std::vector<StagingIndex::Entry> added;
  std::vector<std::uint64_t> bases;
  DocumentId next_id = 1;
  for (std::size_t batch_size : {1, 7, 90, 500, 3000, 1, 12000}) {
    std::vector<StagingIndex::Entry> batch;
    for (std::size_t i = 0; i < batch_size; ++i) {
      std::uint64_t fp = rnd();
      if (!bases.empty() && rnd() % 3 == 0) {
        fp = FlipBits(bases[rnd() % bases.size()], static_cast<int>(rnd() % 5), rnd);
      } else {
        bases.push_back(fp);
      }
      batch.push_back({next_id++, fp});
    }
    index.Add(batch);
    added.insert(added.end(), batch.begin(), batch.end());
    ASSERT_EQ(index.size(), added.size());

    for (int q = 0; q < 300; ++q) {
      const std::uint64_t query =
          FlipBits(bases[rnd() % bases.size()], static_cast<int>(rnd() % 5), rnd);
      for (int k = 0; k <= 3; ++k) {
        ASSERT_EQ(Probe(index, query, k), BruteForce(added, query, k))
            << "after " << added.size() << " entries, k " << k;
      }
    }
  }
}

// No room: from the smallest tables. Room for 5,000: tables larger than
// the smallest, filled past their room by the last batch.
INSTANTIATE_TEST_SUITE_P(Rooms, StagingIndexGrowthTest, testing::Values(0, 5000));

// A store opened with nothing staged makes its room at the first write:
// the entries already in are placed again, and later ones fit without growth.
TEST(StagingIndexTest, RoomMadeLaterKeepsWhatIsInAndFindsWhatComes) {
  std::mt19937_64 rnd(13);
  StagingIndex index(3, 64, 0);
  std::vector<StagingIndex::Entry> added;
  const auto add = [&](std::size_t n) {
    std::vector<StagingIndex::Entry> batch;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t fp =
          added.empty() || rnd() % 2 ? rnd() : FlipBits(added.back().fingerprint.low(), 2, rnd);
      batch.push_back({added.size() + batch.size() + 1, fp});
    }
    index.Add(batch);
    added.insert(added.end(), batch.begin(), batch.end());
  };
  const auto check = [&](const char* when) {
    for (int q = 0; q < 200; ++q) {
      const std::uint64_t query =
          FlipBits(added[rnd() % added.size()].fingerprint.low(), rnd() % 4, rnd);
      for (int k = 0; k <= 3; ++k) {
        ASSERT_EQ(Probe(index, query, k), BruteForce(added, query, k)) << when << ", k " << k;
      }
    }
  };
  add(700);
  index.Reserve(50'000);
  check("after the room was made");
  index.Reserve(10);  // less than it has: nothing changes
  add(20'000);
  check("after more entries");
  EXPECT_EQ(index.size(), added.size());
}

TEST(StagingIndexTest, SortedIdsNameEachIdOnceThoughAddedAgain) {
  StagingIndex index(3, 64, 4);
  const std::vector<StagingIndex::Entry> first = {{9, 1}, {3, 2}, {7, 3}};
  const std::vector<StagingIndex::Entry> again = {{3, 4}, {12, 5}, {9, 6}};
  index.Add(first);
  index.Add(again);
  index.Add({});
  EXPECT_EQ(index.size(), 6u);  // superseded entries stay until the merge
  EXPECT_EQ(index.SortedIds(), (std::vector<DocumentId>{3, 7, 9, 12}));
  // Every version is found; the store keeps the current one.
  EXPECT_EQ(Probe(index, 2, 3),
            (Found{{3, 2, 0}, {3, 4, 2}, {7, 3, 1}, {9, 1, 2}, {9, 6, 1}, {12, 5, 3}}));
}

TEST(StagingIndexTest, HoldsEntryOnlyForTheSameIdAndFingerprint) {
  std::mt19937_64 rnd(5);
  StagingIndex index(3, 64, 16);
  std::vector<StagingIndex::Entry> entries;
  for (DocumentId id = 1; id <= 2000; ++id) entries.push_back({id, rnd()});
  entries.push_back({3000, entries[10].fingerprint});  // shared with document 11
  index.Add(entries);
  for (const StagingIndex::Entry& e : entries) {
    ASSERT_TRUE(index.HoldsEntry(e.id, e.fingerprint)) << e.id;
    ASSERT_FALSE(index.HoldsEntry(e.id + 5000, e.fingerprint)) << e.id;
    ASSERT_FALSE(index.HoldsEntry(e.id, FlipBits(e.fingerprint.low(), 1, rnd))) << e.id;
  }
  EXPECT_FALSE(index.HoldsEntry(11, entries[11].fingerprint));
}

// A merged index is emptied and staged into again (the store keeps one
// spare): nothing of its old entries, buckets or removals may show.
TEST(StagingIndexTest, ClearedIndexFindsOnlyWhatIsAddedAfter) {
  std::mt19937_64 rnd(11);
  StagingIndex index(3, 64, 1000);
  std::vector<StagingIndex::Entry> old_entries;
  for (DocumentId id = 1; id <= 3000; ++id) old_entries.push_back({id, rnd()});  // past its room
  index.Add(old_entries);
  index.AddRemoval(77);

  index.Clear();
  EXPECT_EQ(index.size(), 0u);
  EXPECT_FALSE(index.HasRemoval(77));
  EXPECT_TRUE(index.SortedIds().empty());
  for (int q = 0; q < 100; ++q) {
    ASSERT_TRUE(Probe(index, old_entries[rnd() % old_entries.size()].fingerprint.low(), 3).empty());
  }

  std::vector<StagingIndex::Entry> added;
  for (DocumentId id = 5000; id < 5500; ++id) {
    const std::uint64_t fp =
        rnd() % 2 == 0 ? rnd() : FlipBits(old_entries[id % 3000].fingerprint.low(), 1, rnd);
    added.push_back({id, fp});
  }
  index.Add(added);
  EXPECT_EQ(index.size(), added.size());
  for (int q = 0; q < 300; ++q) {
    const std::uint64_t query =
        FlipBits(q % 2 == 0 ? added[rnd() % added.size()].fingerprint.low()
                            : old_entries[rnd() % old_entries.size()].fingerprint.low(),
                 static_cast<int>(rnd() % 4), rnd);
    ASSERT_EQ(Probe(index, query, 3), BruteForce(added, query, 3)) << "query " << q;
  }
}

}  // namespace
}  // namespace fpstore::internal
