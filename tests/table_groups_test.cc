// Packed tables: the group layout, the merge operator against a
// set kept beside it, and the member filters that every file carries,
// through RocksDB's own writes, flushes and compactions.

#include <gtest/gtest.h>
#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/table_properties.h>

#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "brute_force.h"
#include "format/families.h"
#include "format/groups.h"
#include "format/table_entries.h"
#include "fpstore/options.h"
#include "fpstore/store.h"
#include "ingest/group_writer.h"
#include "ingest/sst_sink.h"
#include "open/store_impl.h"
#include "read/tables.h"
#include "temp_dir.h"

namespace fpstore::internal {
namespace {

using testing::Random;
using testing::TempDir;
using testing::TestSeed;

// Appends the member `permuted` of its group as `layout` lays it out; `id`
// only if the layout keeps ids.
void AppendMember(const GroupLayout& layout, std::string& out, Fingerprint permuted,
                  DocumentId id = 0) {
  const std::size_t at = out.size();
  out.resize(at + layout.member_bytes());
  PutBigEndianBytes(out.data() + at, layout.HeadOf(layout.MemberBits(permuted)),
                    layout.bits_bytes());
  if (layout.keeps_tails()) PutBigEndian64(out.data() + at + layout.bits_bytes(), permuted.low());
  if (layout.keeps_ids()) PutBigEndian64(out.data() + at + layout.member_bytes() - 8, id);
}

bool FilterMayContain(std::string_view bits, std::uint64_t prefix) {
  const std::uint64_t hash = MemberFilter::Hash(prefix);
  return MemberFilter::BlockPasses(MemberFilter::BlockFor(bits, hash), hash);
}

TEST(GroupLayoutTest, KeysAndMembersRoundTripInFingerprintOrder) {
  Random rnd(TestSeed(61));
  for (int p : {1, 7, 16, 20, 25, 33, 64}) {
    for (int bits : {16, 20, 64}) {
      const GroupLayout layout(p, bits);
      const int g = std::min({p, bits, 63});
      EXPECT_EQ(layout.group_bits(), g);
      EXPECT_EQ(layout.key_bytes(), static_cast<std::size_t>((g + 7) / 8));
      EXPECT_EQ(layout.member_bytes(), static_cast<std::size_t>((64 - g + 7) / 8));
      std::string previous_key;
      Fingerprint previous = 0;
      std::vector<Fingerprint> fps;
      for (int i = 0; i < 300; ++i)
        fps.push_back(i == 0 ? 0 : i == 1 ? ~std::uint64_t{0} : rnd.Next());
      std::sort(fps.begin(), fps.end());
      for (Fingerprint fp : fps) {
        const GroupLayout::Key key = layout.KeyOf(fp);
        const std::string view(layout.KeyView(key));
        Fingerprint group = 1;
        ASSERT_TRUE(layout.DecodeKey(view, &group)) << "p=" << p;
        EXPECT_EQ(group, layout.GroupOf(fp));
        EXPECT_EQ(group | layout.MemberBits(fp), fp);
        std::vector<Fingerprint> decoded;
        ASSERT_TRUE(DecodeGroupValue(
            layout, EncodeGroupValue(layout, std::vector<Fingerprint>{layout.MemberBits(fp)}),
            decoded));
        EXPECT_EQ(decoded, std::vector<Fingerprint>{layout.MemberBits(fp)});
        // Byte order of keys is the order of their groups.
        if (!previous_key.empty()) {
          EXPECT_EQ(previous_key < view, layout.GroupOf(previous) < group) << "p=" << p;
          EXPECT_LE(previous_key, view);
        }
        previous_key = view;
        previous = fp;
      }
    }
  }
}

// 16 bits up to 256 members a group, then a bit more each time that would
// be exceeded; a shift never overflows.
TEST(GroupLayoutTest, GroupsAreCutForTheDocumentsExpected) {
  EXPECT_EQ(GroupBitsFor(0), 8);
  EXPECT_EQ(GroupBitsFor(std::uint64_t{256} << 8), 8);
  EXPECT_EQ(GroupBitsFor((std::uint64_t{256} << 8) + 1), 9);
  EXPECT_EQ(GroupBitsFor(1'000'000), 12);
  EXPECT_EQ(GroupBitsFor(std::uint64_t{256} << 16), 16);
  EXPECT_EQ(GroupBitsFor((std::uint64_t{256} << 16) + 1), 17);
  EXPECT_EQ(GroupBitsFor(100'000'000), 19);
  EXPECT_EQ(GroupBitsFor(1'000'000'000), 22);
  EXPECT_EQ(GroupBitsFor(~std::uint64_t{0}), 56);
}

TEST(GroupLayoutTest, MalformedKeysAndValuesAreRefused) {
  const GroupLayout layout(33, 20);  // 20-bit groups in 3 bytes, 44-bit members in 6
  Fingerprint group;
  EXPECT_FALSE(layout.DecodeKey(std::string("\x01\x02", 2), &group));
  EXPECT_FALSE(layout.DecodeKey(std::string("\x01\x02\x03", 3), &group));  // padding set
  EXPECT_TRUE(layout.DecodeKey(std::string("\x01\x02\x30", 3), &group));
  std::vector<Fingerprint> members;
  EXPECT_TRUE(DecodeGroupValue(layout, "", members));
  EXPECT_TRUE(members.empty());
  EXPECT_FALSE(DecodeGroupValue(layout, std::string(7, '\0'), members));
  const std::string two = EncodeGroupValue(layout, std::vector<Fingerprint>{5, 9});
  EXPECT_TRUE(DecodeGroupValue(layout, two, members));
  EXPECT_EQ(members, (std::vector<Fingerprint>{5, 9}));
  // Two members of 44 bits: a count byte, 43 low bits each in 11 bytes, and
  // a high array of 2 bits set at 0 and 1, one byte.
  EXPECT_EQ(two, std::string("\x02", 1) + two.substr(1, 11) + std::string("\x03", 1));
  EXPECT_FALSE(DecodeGroupValue(layout, two.substr(0, two.size() - 1), members));  // cut short
  EXPECT_FALSE(DecodeGroupValue(layout, two + std::string(1, '\0'), members));  // a zero byte past
  EXPECT_FALSE(
      DecodeGroupValue(layout, "\x03" + two.substr(1), members));  // a third member missing
  EXPECT_FALSE(DecodeGroupValue(layout, "\x01" + two.substr(1), members));  // one member too many
  EXPECT_FALSE(DecodeGroupValue(layout, "\x82\x00" + two.substr(1), members));  // a long count
  EXPECT_FALSE(DecodeGroupValue(layout, "\x00" + two.substr(1), members));      // no members
  // Both low parts 9: twice the same member.
  std::string twice = two;
  twice[1] = '\x09';
  twice[6] = static_cast<char>((twice[6] & 0x07) | (9 << 3));
  twice[7] = 0;
  EXPECT_FALSE(DecodeGroupValue(layout, twice, members));
  // The second member's high part 2, past 44 bits: its bit at 3.
  EXPECT_TRUE(DecodeGroupValue(layout, two.substr(0, 12) + std::string("\x05", 1), members));
  EXPECT_FALSE(DecodeGroupValue(layout, two.substr(0, 12) + std::string("\x09", 1), members));

  GroupChange change;
  change.adds = {1, 2};
  change.removes = {3};
  const std::string operand = EncodeGroupOperand(layout, change);
  GroupChange decoded;
  ASSERT_TRUE(DecodeGroupOperand(layout, operand, decoded));
  EXPECT_EQ(decoded.adds, change.adds);
  EXPECT_EQ(decoded.removes, change.removes);
  EXPECT_FALSE(DecodeGroupOperand(layout, operand.substr(0, 3), decoded));
  std::string too_many = operand;
  too_many[3] = 4;  // four adds in room for three members
  EXPECT_FALSE(DecodeGroupOperand(layout, too_many, decoded));
}

// Decoders given arbitrary bytes, for every group width asked for up to the whole 64 bits (a plan's
// prefix may be 64 bits; a store refuses to record more than 56, and a layout cuts at most 63),
// answer or refuse, and never shift a word by its full width nor divide by a member of no bytes
// (the build's UBSan would stop the test).
TEST(GroupLayoutTest, AnyBytesAtAnyWidthDecodeOrAreRefused) {
  Random rnd(TestSeed(67));
  for (int bits = 1; bits <= 64; ++bits) {
    for (GroupLayout::Ids ids : {GroupLayout::Ids::kNone, GroupLayout::Ids::kKept}) {
      const GroupLayout layout(64, bits, ids);
      const GroupMergeOperator op(layout);
      for (int round = 0; round < 20; ++round) {
        std::string bytes(rnd.Uniform(4 * (layout.member_bytes() + 1) + 8), '\0');
        for (char& c : bytes) c = static_cast<char>(rnd.Next());
        std::vector<Fingerprint> members;
        std::vector<IdMember> id_members;
        GroupChange change;
        IdGroupChange id_change;
        Fingerprint group = 0;
        (void)layout.DecodeKey(bytes.substr(0, layout.key_bytes()), &group);
        if (ids == GroupLayout::Ids::kKept) {
          (void)DecodeGroupValue(layout, bytes, id_members);
          (void)DecodeGroupOperand(layout, bytes, id_change);
        } else {
          (void)DecodeGroupValue(layout, bytes, members);
          (void)DecodeGroupOperand(layout, bytes, change);
        }
        std::vector<Fingerprint> bits;
        if (ids == GroupLayout::Ids::kNone && DecodeGroupValue(layout, bytes, bits)) {
          EXPECT_EQ(EncodeGroupValue(layout, bits), bytes);  // one code a group
        }
        (void)ForEachMemberOf(layout, bytes, round % 2 == 0, [](Fingerprint) {});
        std::string out;
        const rocksdb::Slice existing(bytes);
        rocksdb::Slice kept;
        const std::vector<rocksdb::Slice> operands{rocksdb::Slice(bytes)};
        rocksdb::MergeOperator::MergeOperationOutput merged(out, kept);
        (void)op.FullMergeV2(
            rocksdb::MergeOperator::MergeOperationInput("k", &existing, operands, nullptr),
            &merged);
      }
      // What is encoded at this width reads back, for counts from one to far more than the
      // low bits' choice assumes, and each one-byte change of it is refused or decodes to a
      // value that encodes back to it.
      if (ids == GroupLayout::Ids::kNone) {
        for (const int count : {1, 2, 5, 300}) {
          std::vector<Fingerprint> members;
          for (int i = 0; i < count; ++i) members.push_back(layout.MemberBits(rnd.Next()).low());
          std::sort(members.begin(), members.end());
          members.erase(std::unique(members.begin(), members.end()), members.end());
          const std::string code = EncodeGroupValue(layout, members);
          std::vector<Fingerprint> decoded;
          ASSERT_TRUE(DecodeGroupValue(layout, code, decoded)) << bits;
          EXPECT_EQ(decoded, members) << bits;
          // A range decodes to the members a whole decode has in it: ranges from a member or
          // between two, of one member or many, past the last.
          for (int r = 0; r < 20; ++r) {
            const std::uint64_t a = r % 2 == 0 ? members[rnd.Uniform(members.size())].low()
                                               : layout.MemberBits(rnd.Next()).low();
            const std::uint64_t b = r % 4 < 2 ? a : layout.MemberBits(rnd.Next()).low();
            const std::uint64_t lo = std::min(a, b), hi = std::max(a, b);
            GroupValue range;
            ASSERT_TRUE(range.DecodeRange(layout, code, lo, hi)) << bits;
            std::vector<Fingerprint> in_range, expected;
            for (std::size_t i = 0; i < range.size(); ++i) in_range.push_back(range.bits(i).low());
            for (const Fingerprint m : members) {
              if (m >= lo && m <= hi) expected.push_back(m);
            }
            EXPECT_EQ(in_range, expected) << bits << " [" << lo << ", " << hi << "]";
          }
          std::string changed = code;
          const std::size_t at = rnd.Uniform(code.size());
          changed[at] = static_cast<char>(changed[at] ^ (1 + rnd.Uniform(255)));
          if (DecodeGroupValue(layout, changed, decoded)) {
            EXPECT_EQ(EncodeGroupValue(layout, decoded), changed) << bits;
          }
        }
      }
    }
  }
}

TEST(GroupLayoutTest, MembersWithIdsRoundTripInBitsThenIdOrder) {
  Random rnd(TestSeed(63));
  for (int bits : {16, 20, 57}) {
    const GroupLayout layout(64, bits, GroupLayout::Ids::kKept);
    EXPECT_TRUE(layout.keeps_ids());
    EXPECT_EQ(layout.bits_bytes(), static_cast<std::size_t>((64 - bits + 7) / 8));
    EXPECT_EQ(layout.member_bytes(), layout.bits_bytes() + 8);  // in operands
    // Few fingerprints, each with several ids, in one group.
    const Fingerprint group = layout.GroupOf(rnd.Next());
    std::vector<IdMember> members;
    for (int i = 0; i < 200; ++i) {
      members.push_back(
          {layout.MemberBits(rnd.Uniform(4) == 0 ? ~std::uint64_t{0} : rnd.Uniform(5)),
           i % 3 == 0 ? ~DocumentId{0} : rnd.Uniform(1000)});
    }
    std::sort(members.begin(), members.end());
    members.erase(std::unique(members.begin(), members.end()), members.end());
    std::string previous;
    for (const IdMember& m : members) {
      std::string member;
      AppendMember(layout, member, group | m.bits, m.id);
      ASSERT_EQ(member.size(), layout.member_bytes());
      EXPECT_LT(previous, member);  // an operand's byte order is (bits, id) order
      previous = member;
    }
    std::vector<IdMember> decoded;
    const std::string value = EncodeGroupValue(layout, members);
    ASSERT_TRUE(DecodeGroupValue(layout, value, decoded));
    EXPECT_EQ(decoded, members);
    // Only the bits reach the member filters.
    std::vector<Fingerprint> seen;
    ASSERT_TRUE(
        ForEachMemberOf(layout, value, false, [&](Fingerprint b) { seen.push_back(b.low()); }));
    ASSERT_EQ(seen.size(), members.size());
    for (std::size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], members[i].bits);
    // The ids follow the count, 8 bytes each, in member order: copies of one fingerprint out of
    // id order, or one id twice, are refused, and so is a value cut short.
    GroupValue probe;
    // The copies of one fingerprint, by range: their ids in order.
    for (const std::uint64_t bits :
         {members.front().bits.low(), members.back().bits.low(), std::uint64_t{2}}) {
      ASSERT_TRUE(probe.DecodeRange(layout, value, bits, bits));
      std::vector<DocumentId> ids, expected;
      for (std::size_t i = 0; i < probe.size(); ++i) ids.push_back(probe.id(i));
      for (const IdMember& m : members) {
        if (m.bits == bits) expected.push_back(m.id);
      }
      EXPECT_EQ(ids, expected) << bits;
    }
    ASSERT_GE(members.size(), 128u);  // so that the count takes 2 bytes
    const std::size_t head = 2;
    std::size_t copy = 1;
    while (copy < members.size() && members[copy].bits != members[copy - 1].bits) ++copy;
    ASSERT_LT(copy, members.size());
    std::string swapped = value;
    std::swap_ranges(swapped.begin() + head + 8 * (copy - 1), swapped.begin() + head + 8 * copy,
                     swapped.begin() + head + 8 * copy);
    EXPECT_FALSE(DecodeGroupValue(layout, swapped, decoded));
    std::string same = value;
    std::copy_n(value.begin() + head + 8 * (copy - 1), 8, same.begin() + head + 8 * copy);
    EXPECT_FALSE(DecodeGroupValue(layout, same, decoded));
    EXPECT_FALSE(DecodeGroupValue(layout, value.substr(0, value.size() - 1), decoded));
  }
}

// The members a fold test draws: few values, so that operands meet often,
// or more, so that a group is long runs its operands leave alone; small,
// or with every member bit random; with ids, several a fingerprint. At 128
// bits, members of one head with several tails, too.
template <typename Member>
std::vector<Member> MemberPool(const GroupLayout& layout, int trial, Random& rnd) {
  constexpr bool kIds = std::is_same_v<Member, IdMember>;
  std::vector<Member> pool((trial / 8) % 2 == 0 ? 8 : 256);
  Fingerprint bits = 0;
  for (std::size_t i = 0; i < pool.size(); ++i) {
    if (!kIds || i % 3 == 0) {
      const bool small = (trial / 16) % 2 == 0;
      if (layout.width() == 64) {
        bits = layout.MemberBits(small ? i : rnd.Next());
      } else if (i % 2 == 1) {
        bits = layout.MemberBits(Fingerprint(bits.high(), small ? i : rnd.Next()));
      } else {
        bits = layout.MemberBits(small ? Fingerprint(i, i) : rnd.Next(128));
      }
    }
    if constexpr (kIds) {
      pool[i] = {bits, i % 3 == 2 ? ~DocumentId{0} : i % 3};
    } else {
      pool[i] = bits;
    }
  }
  std::sort(pool.begin(), pool.end());
  pool.erase(std::unique(pool.begin(), pool.end()), pool.end());
  return pool;
}

// Random adds and removes of a few members, folded by the operator in
// random ways (whole, or first partly merged in runs), against a set, for
// members of every width from 1 to 8 bytes, without ids and with.
template <typename Member>
void ExpectFoldsAsApplied(GroupLayout::Ids ids, int width = 64) {
  Random rnd(TestSeed(62));
  for (int trial = 0; trial < 1600; ++trial) {
    // Groups of 57 bits down to 1: members of 1 to 8 bytes (and the tail, and the id).
    const GroupLayout layout(width, std::array{57, 48, 40, 32, 24, 16, 9, 1}[trial % 8], ids,
                             width);
    const GroupMergeOperator op(layout);
    const std::vector<Member> pool = MemberPool<Member>(layout, trial, rnd);
    const auto draw = [&] { return pool[rnd.Uniform(pool.size())]; };
    std::set<Member> model;
    const bool has_base = rnd.Uniform(2) == 1;
    std::string base;
    if (has_base) {
      for (int i = static_cast<int>(rnd.Uniform(pool.size() / 2)); i > 0; --i) {
        model.insert(draw());
      }
      base = EncodeGroupValue(layout, std::vector<Member>(model.begin(), model.end()));
    }
    std::vector<std::string> operands;
    for (int o = 1 + static_cast<int>(rnd.Uniform(6)); o > 0; --o) {
      std::set<Member> adds, removes;
      for (int i = static_cast<int>(rnd.Uniform(4)); i > 0; --i) adds.insert(draw());
      for (int i = static_cast<int>(rnd.Uniform(4)); i > 0; --i) removes.insert(draw());
      BasicGroupChange<Member> change{{adds.begin(), adds.end()}, {removes.begin(), removes.end()}};
      operands.push_back(EncodeGroupOperand(layout, change));
      for (const Member& r : removes) model.erase(r);
      model.insert(adds.begin(), adds.end());
    }
    // Runs of operands partly merged first, as compactions may.
    std::vector<std::string> folded;
    for (std::size_t i = 0; i < operands.size();) {
      const std::size_t run = std::min<std::size_t>(1 + rnd.Uniform(3), operands.size() - i);
      if (run == 1) {
        folded.push_back(operands[i]);
      } else {
        std::deque<rocksdb::Slice> slices(operands.begin() + i, operands.begin() + i + run);
        std::string partial;
        ASSERT_TRUE(op.PartialMergeMulti("k", slices, &partial, nullptr));
        folded.push_back(partial);
      }
      i += run;
    }
    const rocksdb::Slice base_slice(base);
    const std::vector<rocksdb::Slice> list(folded.begin(), folded.end());
    const rocksdb::MergeOperator::MergeOperationInput in("k", has_base ? &base_slice : nullptr,
                                                         list, nullptr);
    std::string merged;
    rocksdb::Slice existing;
    rocksdb::MergeOperator::MergeOperationOutput out(merged, existing);
    ASSERT_TRUE(op.FullMergeV2(in, &out));
    std::vector<Member> members;
    ASSERT_TRUE(DecodeGroupValue(layout, merged, members));
    EXPECT_TRUE(members == std::vector<Member>(model.begin(), model.end())) << "trial " << trial;
  }
}

TEST(GroupMergeOperatorTest, FoldsOperandsAsTheyWereApplied) {
  ExpectFoldsAsApplied<Fingerprint>(GroupLayout::Ids::kNone);
}

TEST(GroupMergeOperatorTest, FoldsMembersWithIdsAsTheyWereApplied) {
  ExpectFoldsAsApplied<IdMember>(GroupLayout::Ids::kKept);
}

TEST(GroupMergeOperatorTest, FoldsMembersWithTailsAsTheyWereApplied) {
  ExpectFoldsAsApplied<Fingerprint>(GroupLayout::Ids::kNone, 128);
  ExpectFoldsAsApplied<IdMember>(GroupLayout::Ids::kKept, 128);
}

// A 128-bit layout: a member is its head bits, then its tail verbatim; the
// tails follow the count (and the ids), 8 bytes each, in member order, so
// that members of one head are ordered by tail, then id. Byte order of
// operand members is that order; a probe's range of head bits gives every
// tail; values out of order are refused.
TEST(GroupLayoutTest, MembersWithTailsRoundTripInHeadThenTailOrder) {
  Random rnd(TestSeed(64));
  for (const GroupLayout::Ids ids : {GroupLayout::Ids::kNone, GroupLayout::Ids::kKept}) {
    for (const int group_bits : {16, 20, 57}) {
      for (const int prefix_bits : {32, 96}) {
        const GroupLayout layout(prefix_bits, group_bits, ids, 128);
        EXPECT_TRUE(layout.keeps_tails());
        EXPECT_EQ(layout.member_bytes(),
                  layout.bits_bytes() + 8 + (ids == GroupLayout::Ids::kKept ? 8 : 0));
        const Fingerprint group = layout.GroupOf(rnd.Next(128));
        EXPECT_EQ(group.low(), 0u);
        // A few heads, each with several tails; with ids, several a fingerprint.
        std::vector<IdMember> members;
        for (int i = 0; i < 200; ++i) {
          const Head head = rnd.Uniform(4) == 0 ? ~Head{0} : rnd.Uniform(3);
          const std::uint64_t tail = rnd.Uniform(3) == 0 ? rnd.Next() : rnd.Uniform(4);
          members.push_back({layout.MemberBits(Fingerprint(head, tail)),
                             ids == GroupLayout::Ids::kKept ? rnd.Uniform(5) : 0});
        }
        std::sort(members.begin(), members.end());
        members.erase(std::unique(members.begin(), members.end()), members.end());
        std::vector<Fingerprint> bits;
        for (const IdMember& m : members) {
          if (bits.empty() || bits.back() != m.bits) bits.push_back(m.bits);
        }
        // Keys and member bits make the fingerprint whole again.
        for (const Fingerprint b : bits) {
          Fingerprint decoded_group;
          ASSERT_TRUE(layout.DecodeKey(layout.KeyView(layout.KeyOf(group | b)), &decoded_group));
          EXPECT_EQ(decoded_group, group);
          EXPECT_EQ(layout.MemberBits(group | b), b);
        }
        std::string previous;
        for (const IdMember& m : members) {
          std::string member;
          AppendMember(layout, member, group | m.bits, m.id);
          ASSERT_EQ(member.size(), layout.member_bytes());
          EXPECT_LT(previous, member);  // byte order is (head, tail, id) order
          previous = member;
        }
        std::string value;
        if (ids == GroupLayout::Ids::kKept) {
          value = EncodeGroupValue(layout, members);
          std::vector<IdMember> decoded;
          ASSERT_TRUE(DecodeGroupValue(layout, value, decoded));
          EXPECT_EQ(decoded, members);
          const std::string operand =
              EncodeGroupOperand(layout, IdGroupChange{members, {members.front()}});
          IdGroupChange change;
          ASSERT_TRUE(DecodeGroupOperand(layout, operand, change));
          EXPECT_EQ(change.adds, members);
          EXPECT_EQ(change.removes, std::vector<IdMember>{members.front()});
        } else {
          value = EncodeGroupValue(layout, bits);
          std::vector<Fingerprint> decoded;
          ASSERT_TRUE(DecodeGroupValue(layout, value, decoded));
          EXPECT_EQ(decoded, bits);
          const std::string operand = EncodeGroupOperand(layout, GroupChange{bits, {bits.back()}});
          GroupChange change;
          ASSERT_TRUE(DecodeGroupOperand(layout, operand, change));
          EXPECT_EQ(change.adds, bits);
          EXPECT_EQ(change.removes, std::vector<Fingerprint>{bits.back()});
          std::vector<Fingerprint> seen;
          ASSERT_TRUE(ForEachMemberOf(layout, operand, /*operand=*/true,
                                      [&](Fingerprint b) { seen.push_back(b); }));
          std::vector<Fingerprint> expected = bits;
          expected.push_back(bits.back());
          EXPECT_EQ(seen, expected);
        }
        // A probe of one head's range reads every tail of it, in order.
        for (const Head head : {Head{0}, Head{2}, layout.MemberHead(~Head{0})}) {
          GroupValue probe;
          ASSERT_TRUE(probe.DecodeRange(layout, value, head, head));
          std::vector<Fingerprint> got, expected;
          for (std::size_t i = 0; i < probe.size(); ++i) got.push_back(probe.bits(i));
          if (ids == GroupLayout::Ids::kKept) {
            for (const IdMember& m : members) {
              if (m.bits.high() == head) expected.push_back(m.bits);
            }
            for (std::size_t i = 0; i < probe.size(); ++i) {
              EXPECT_EQ(IdMember({probe.bits(i), probe.id(i)}),
                        members[std::lower_bound(members.begin(), members.end(),
                                                 IdMember{probe.bits(0), 0}) -
                                members.begin() + i]);
            }
          } else {
            for (const Fingerprint b : bits) {
              if (b.high() == head) expected.push_back(b);
            }
          }
          EXPECT_EQ(got, expected) << "head " << head;
        }
        // Two tails of one head swapped: out of order, refused.
        const std::size_t count = ids == GroupLayout::Ids::kKept ? members.size() : bits.size();
        const std::size_t tails =
            (count < 128 ? 1 : 2) + (ids == GroupLayout::Ids::kKept ? 8 * count : 0);
        std::size_t at = 1;
        auto bits_at = [&](std::size_t i) {
          return ids == GroupLayout::Ids::kKept ? members[i].bits : bits[i];
        };
        while (at < count && (bits_at(at).high() != bits_at(at - 1).high() ||
                              bits_at(at).low() == bits_at(at - 1).low())) {
          ++at;
        }
        ASSERT_LT(at, count);
        std::string swapped = value;
        std::swap_ranges(swapped.begin() + tails + 8 * (at - 1), swapped.begin() + tails + 8 * at,
                         swapped.begin() + tails + 8 * at);
        std::vector<Fingerprint> unused;
        std::vector<IdMember> unused_ids;
        EXPECT_FALSE(ids == GroupLayout::Ids::kKept ? DecodeGroupValue(layout, swapped, unused_ids)
                                                    : DecodeGroupValue(layout, swapped, unused));
        EXPECT_FALSE(DecodeGroupValue(layout, value.substr(0, value.size() - 1), unused_ids));
      }
    }
  }
}

TEST(GroupMergeOperatorTest, MalformedInputFailsTheMerge) {
  const GroupLayout layout(33, 20);
  const GroupMergeOperator op(layout);
  const std::string bad = "xyz";
  const rocksdb::Slice bad_slice(bad);
  const std::vector<rocksdb::Slice> none;
  std::string merged;
  rocksdb::Slice existing;
  rocksdb::MergeOperator::MergeOperationOutput out(merged, existing);
  using Input = rocksdb::MergeOperator::MergeOperationInput;
  EXPECT_FALSE(op.FullMergeV2(Input("k", &bad_slice, none, nullptr), &out));
  const std::vector<rocksdb::Slice> bad_operand{bad_slice};
  EXPECT_FALSE(op.FullMergeV2(Input("k", nullptr, bad_operand, nullptr), &out));
  std::string partial;
  EXPECT_FALSE(op.PartialMergeMulti("k", {bad_slice}, &partial, nullptr));

  // Groups cut short, with a byte too many, or a member too wide, under an
  // operand that leaves them alone.
  const std::string two = EncodeGroupValue(layout, std::vector<Fingerprint>{5, 9});
  const std::string operand = EncodeGroupOperand(layout, GroupChange{{7}, {}});
  const std::vector<rocksdb::Slice> operands{rocksdb::Slice(operand)};
  for (const std::string& group : {two.substr(0, two.size() - 1), two + std::string(1, '\x01'),
                                   two.substr(0, 12) + std::string("\x09", 1)}) {
    const rocksdb::Slice slice(group);
    EXPECT_FALSE(op.FullMergeV2(Input("k", &slice, operands, nullptr), &out));
  }
}

TEST(MemberFilterTest, HoldsEveryPrefixAndFewOthers) {
  Random rnd(TestSeed(63));
  std::vector<MemberFilter::Prefix> prefixes;
  for (int i = 0; i < 20000; ++i) prefixes.push_back({rnd.Next() & ~std::uint64_t{0} << 31, false});
  std::string bits;
  MemberFilter::Build(prefixes, bits);
  for (const MemberFilter::Prefix& p : prefixes) ASSERT_TRUE(FilterMayContain(bits, p.prefix));
  int passed = 0;
  constexpr int kProbes = 100000;
  for (int i = 0; i < kProbes; ++i) passed += FilterMayContain(bits, rnd.Next() << 31);
  // About 10 bits a prefix and 6 probes: near 1%; 3% leaves room.
  EXPECT_LT(passed, kProbes * 3 / 100);
}

// A property that does not add up is refused (its file may then hold
// anything), so that bytes of another layout are never read as a filter
// of no members, which would pass the file by.
TEST(MemberFilterTest, MalformedPropertiesAreRefused) {
  const std::string no_chunks(4, '\0');
  std::optional<FileMemberFilter> parsed = FileMemberFilter::Parse(no_chunks, true);
  ASSERT_TRUE(parsed.has_value());
  EXPECT_TRUE(parsed->empty());
  EXPECT_FALSE(FileMemberFilter::Parse(no_chunks + std::string(16, '\1'), false).has_value());
  EXPECT_FALSE(FileMemberFilter::Parse("", false).has_value());
  // One chunk, groups 0 to 0, its filter 64 bytes.
  std::string one(4 + 20, '\0');
  one[3] = 1;
  one[4 + 19] = 64;
  one += std::string(64, '\0');
  EXPECT_TRUE(FileMemberFilter::Parse(one, true).has_value());
  EXPECT_FALSE(FileMemberFilter::Parse(one.substr(0, one.size() - 1), false).has_value());
  std::string short_filter = one;
  short_filter[4 + 19] = 63;  // not whole blocks
  EXPECT_FALSE(
      FileMemberFilter::Parse(short_filter.substr(0, short_filter.size() - 1), true).has_value());
  std::string backwards = one;
  backwards[4 + 7] = 1;  // first group past the last
  EXPECT_FALSE(FileMemberFilter::Parse(backwards, true).has_value());
}

// The cache's pinned usage is `bytes`, and its entries' own overhead.
bool PinnedAbout(const rocksdb::Cache& cache, std::size_t bytes) {
  const std::size_t pinned = cache.GetPinnedUsage();
  return pinned >= bytes && pinned < bytes + bytes / 64;
}

// A charge larger than a shard of the cache goes in pieces that the shards
// share: charged whole, it overfilled its shard, whose other entries then
// went as soon as they came.
TEST(CacheChargeTest, LargeChargesLeaveEveryShardRoom) {
  rocksdb::LRUCacheOptions options;
  options.capacity = 64 << 20;
  options.num_shard_bits = 3;  // 8 MiB a shard
  const std::shared_ptr<rocksdb::Cache> cache = rocksdb::NewLRUCache(options);
  const CacheCharge charge(cache, 16 << 20);
  EXPECT_TRUE(PinnedAbout(*cache, std::size_t{16} << 20)) << cache->GetPinnedUsage();
  for (int i = 0; i < 256; ++i) {
    ASSERT_TRUE(cache
                    ->Insert("block" + std::to_string(i), nullptr, 1024,
                             [](const rocksdb::Slice&, void*) {})
                    .ok());
  }
  int found = 0;
  for (int i = 0; i < 256; ++i) {
    rocksdb::Cache::Handle* h = cache->Lookup("block" + std::to_string(i));
    if (h != nullptr) {
      ++found;
      cache->Release(h);
    }
  }
  EXPECT_EQ(found, 256);
}

// A file's charge is made once and shared by the filter sets that hold it,
// and made anew once none does.
TEST(CacheChargeTest, FilesAreChargedOnceWhileHeld) {
  const std::shared_ptr<rocksdb::Cache> cache = rocksdb::NewLRUCache(64 << 20);
  FileCharges charges(cache);
  const auto file = std::make_shared<const rocksdb::TableProperties>();
  std::shared_ptr<const CacheCharge> first = charges.For(file, 1 << 20);
  std::shared_ptr<const CacheCharge> second = charges.For(file, 1 << 20);
  EXPECT_EQ(first, second);
  EXPECT_TRUE(PinnedAbout(*cache, std::size_t{1} << 20)) << cache->GetPinnedUsage();
  const auto other = std::make_shared<const rocksdb::TableProperties>();
  std::shared_ptr<const CacheCharge> third = charges.For(other, 1 << 20);
  EXPECT_TRUE(PinnedAbout(*cache, std::size_t{2} << 20)) << cache->GetPinnedUsage();
  first.reset();
  second.reset();
  EXPECT_TRUE(PinnedAbout(*cache, std::size_t{1} << 20)) << cache->GetPinnedUsage();
  EXPECT_NE(charges.For(file, 1 << 20), nullptr);
  // Made and released again.
  EXPECT_TRUE(PinnedAbout(*cache, std::size_t{1} << 20)) << cache->GetPinnedUsage();
}

// A database of the metadata family and table 1 of plan (6, 3), with a
// store's options: packed, with its collector and merge operator.
class PackedTableDb {
 public:
  explicit PackedTableDb(const std::string& path) {
    StoreOptions options;
    options.block_cache_bytes = 8 << 20;
    options.write_buffer_bytes = 8 << 20;
    RocksConfig config = MakeRocksConfig(options, plan_, kGroupBits);
    std::vector<rocksdb::ColumnFamilyDescriptor> families;
    for (const rocksdb::ColumnFamilyDescriptor& f : config.families) {
      if (f.name == rocksdb::kDefaultColumnFamilyName || f.name == name()) families.push_back(f);
    }
    EXPECT_EQ(families.size(), 2u);
    config.db.create_if_missing = true;
    config.db.create_missing_column_families = true;
    rocksdb::DB* raw = nullptr;
    const rocksdb::Status s = rocksdb::DB::Open(config.db, path, families, &handles_, &raw);
    EXPECT_TRUE(s.ok()) << s.ToString();
    db_.reset(raw);
  }
  ~PackedTableDb() {
    for (rocksdb::ColumnFamilyHandle* h : handles_)
      EXPECT_TRUE(db_->DestroyColumnFamilyHandle(h).ok());
    EXPECT_TRUE(db_->Close().ok());
  }
  static constexpr std::size_t kTable = 1;
  static constexpr int kGroupBits = 16;  // a new store's, as a rule
  std::string name() const { return TableFamilyName(kTable); }
  int prefix_bits() const { return plan_.table(kTable).prefix_bits(); }
  GroupLayout layout() const { return GroupLayout(prefix_bits(), kGroupBits); }
  rocksdb::DB& db() { return *db_; }
  rocksdb::ColumnFamilyHandle* table() { return handles_[1]; }

 private:
  const PermutationPlan plan_ = *PermutationPlan::Create(6, 3);
  std::unique_ptr<rocksdb::DB> db_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
};

// A load's file adds more members than one chunk of a filter holds: its
// property is cut into chunks of whole groups, and every member still
// passes while few other prefixes do.
TEST(MemberFiltersTest, LargeFilesCarryTheirFiltersInChunks) {
  Random rnd(TestSeed(65));
  TempDir dir;
  PackedTableDb packed(dir.Sub("db"));
  ASSERT_TRUE(packed.db().GetOptions(packed.table()).merge_operator != nullptr);
  const GroupLayout layout = packed.layout();
  std::vector<Fingerprint> members;
  for (int i = 0; i < 200000; ++i) members.push_back(rnd.Next());
  std::sort(members.begin(), members.end());
  members.erase(std::unique(members.begin(), members.end()), members.end());
  {
    SstSink sink(packed.db(), packed.table(), dir.Sub("load.sst"), SstUse::kLoad);
    GroupWriter writer(sink, layout, GroupWriter::kWhole);
    for (Fingerprint m : members) ASSERT_TRUE(writer.Add(m, /*put=*/true).ok());
    ASSERT_TRUE(writer.Finish().ok());
    std::vector<std::string> paths;
    ASSERT_TRUE(sink.Finish(paths).ok());
    ASSERT_TRUE(packed.db().IngestExternalFile(packed.table(), paths, {}).ok());
  }
  rocksdb::TablePropertiesCollection properties;
  ASSERT_TRUE(packed.db().GetPropertiesOfAllTables(packed.table(), &properties).ok());
  ASSERT_EQ(properties.size(), 1u);
  const std::string& value =
      properties.begin()->second->user_collected_properties.at(kMemberFilterProperty);
  // The index (docs/format.md): whole groups, ascending and disjoint, each
  // chunk's filter whole 64-byte blocks.
  ASSERT_GE(value.size(), 4u);
  const std::size_t chunks = GetBigEndianBytes(value.data(), 4);
  ASSERT_GE(value.size(), 4 + 20 * chunks);
  const std::size_t filters = value.size() - 4 - 20 * chunks;
  std::size_t previous_end = 0;
  for (std::size_t i = 0; i < chunks; ++i) {
    const char* entry = value.data() + 4 + 20 * i;
    const std::uint64_t first = GetBigEndian64(entry), last = GetBigEndian64(entry + 8);
    const std::size_t end = GetBigEndianBytes(entry + 16, 4);
    EXPECT_LE(first, last);
    EXPECT_EQ(layout.GroupOf(first), first);
    if (i > 0) {
      EXPECT_LT(GetBigEndian64(entry - 12), first);
    }
    EXPECT_GT(end, previous_end);
    EXPECT_EQ((end - previous_end) % 64, 0u);
    previous_end = end;
  }
  EXPECT_EQ(previous_end, filters);
  EXPECT_EQ(chunks, (members.size() + 65535) / 65536);

  Result<std::shared_ptr<const TableMemberFilter>> filter =
      TableMemberFilter::Read(packed.db(), packed.table(), layout, packed.prefix_bits());
  ASSERT_TRUE(filter.ok()) << filter.status().ToString();
  for (Fingerprint m : members) ASSERT_TRUE((*filter)->MayContain(m));
  int passed = 0;
  constexpr int kProbes = 100000;
  for (int i = 0; i < kProbes; ++i) passed += (*filter)->MayContain(rnd.Next());
  EXPECT_LT(passed, kProbes * 3 / 100);
}

// A packed table written every way RocksDB writes files: ingested whole
// groups and operands, removals through the memtable and its flushes,
// compactions. Throughout, its entries are the members of a set kept
// beside it, and every member passes the files' filters.
TEST(MemberFiltersTest, CoverEveryMemberThroughFlushesAndCompactions) {
  Random rnd(TestSeed(64));
  TempDir dir;
  PackedTableDb packed(dir.Sub("db"));
  const int prefix_bits = packed.prefix_bits();
  const std::string name = packed.name();
  const GroupLayout layout = packed.layout();
  rocksdb::DB* const db = &packed.db();
  rocksdb::ColumnFamilyHandle* const table = packed.table();

  std::set<std::uint64_t> model;    // permuted fingerprints
  std::set<std::uint64_t> removed;  // once members, no longer
  // Few groups' worth of prefixes, so that groups hold several members.
  auto random_permuted = [&] { return (rnd.Next() & 0xff0000ffffffffffULL); };
  auto check = [&](const std::string& when) {
    Result<std::shared_ptr<const TableMemberFilter>> filter =
        TableMemberFilter::Read(*db, table, layout, prefix_bits);
    ASSERT_TRUE(filter.ok()) << filter.status().ToString();
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions(), table));
    TableEntryCursor cursor(*it, layout, name);
    std::vector<Fingerprint> entries;
    for (cursor.SeekToFirst(); cursor.Valid(); cursor.Next()) {
      entries.push_back(cursor.entry().permuted.low());
      EXPECT_TRUE((*filter)->MayContain(cursor.entry().permuted)) << when;
    }
    ASSERT_TRUE(cursor.status().ok()) << cursor.status().ToString();
    EXPECT_EQ(entries, std::vector<Fingerprint>(model.begin(), model.end())) << when;
    // A prefix that two members share is never shown as held by one: queries would pass the
    // second by.
    const std::uint64_t mask = PrefixMask(prefix_bits);
    for (std::size_t i = 1; i < entries.size(); ++i) {
      if ((entries[i] & mask) != (entries[i - 1] & mask)) continue;
      EXPECT_EQ((*filter)->Lookup(entries[i], /*count=*/true), PrefixMembers::kMaybeMany)
          << when << ": " << entries[i - 1] << " and " << entries[i];
    }
    // Seeks land on the first entry at or past the sought fingerprint.
    for (int i = 0; i < 50; ++i) {
      const std::uint64_t sought = i % 2 == 0 || model.empty()
                                       ? random_permuted()
                                       : *std::next(model.begin(), rnd.Uniform(model.size()));
      cursor.Seek(sought);
      const auto expected = model.lower_bound(sought);
      ASSERT_EQ(cursor.Valid(), expected != model.end()) << when;
      if (cursor.Valid()) {
        EXPECT_EQ(cursor.entry().permuted, *expected) << when;
      }
    }
    // A read of one group that passes by the files whose filters show no
    // change to a member with the probe's prefix, as queries read (so the
    // filters must cover removals too): the members with that prefix,
    // removed ones not back.
    const std::uint64_t prefix_mask = ~std::uint64_t{0} << (64 - prefix_bits);
    for (int i = 0; i < 60; ++i) {
      const std::set<std::uint64_t>& from = i % 3 == 0 ? removed : model;
      if (from.empty()) continue;
      const std::uint64_t probe = *std::next(from.begin(), rnd.Uniform(from.size()));
      rocksdb::ReadOptions ro;
      ro.table_filter = [&](const rocksdb::TableProperties& file) {
        return FileMayTouch(file, layout, prefix_mask, probe);
      };
      std::unique_ptr<rocksdb::Iterator> one(db->NewIterator(ro, table));
      const GroupLayout::Key key = layout.KeyOf(probe);
      one->Seek(rocksdb::Slice(key.data(), layout.key_bytes()));
      std::vector<Fingerprint> found;
      if (one->Valid() && one->key().ToStringView() == layout.KeyView(key)) {
        std::vector<Fingerprint> members;
        ASSERT_TRUE(DecodeGroupValue(layout, one->value().ToStringView(), members)) << when;
        for (Fingerprint m : members) {
          const std::uint64_t permuted = (layout.GroupOf(probe) | m).low();
          if ((permuted & prefix_mask) == (probe & prefix_mask)) found.push_back(permuted);
        }
      }
      ASSERT_TRUE(one->status().ok()) << one->status().ToString();
      const std::uint64_t low = probe & prefix_mask;
      std::vector<Fingerprint> expected;
      for (auto m = model.lower_bound(low); m != model.end() && (*m & prefix_mask) == low; ++m) {
        expected.push_back(*m);
      }
      EXPECT_EQ(found, expected) << when << ", probe " << probe;
    }
  };
  // An ingested file of ops, written as the store writes them.
  int files = 0;
  auto ingest = [&](std::vector<std::pair<std::uint64_t, bool>> ops, GroupWriter::Mode mode) {
    std::sort(ops.begin(), ops.end());
    ops.erase(std::unique(ops.begin(), ops.end(),
                          [](const auto& a, const auto& b) { return a.first == b.first; }),
              ops.end());
    SstSink sink(*db, table, dir.Sub("f" + std::to_string(files++) + ".sst"), SstUse::kMerge);
    GroupWriter writer(sink, layout, mode);
    for (const auto& [permuted, put] : ops) {
      ASSERT_TRUE(writer.Add(permuted, put).ok());
      if (put) {
        model.insert(permuted);
        removed.erase(permuted);
      } else {
        if (model.erase(permuted) > 0) removed.insert(permuted);
      }
    }
    ASSERT_TRUE(writer.Finish().ok());
    std::vector<std::string> paths;
    ASSERT_TRUE(sink.Finish(paths).ok());
    ASSERT_TRUE(db->IngestExternalFile(table, paths, rocksdb::IngestExternalFileOptions()).ok());
  };

  std::vector<std::pair<std::uint64_t, bool>> ops;
  for (int i = 0; i < 3000; ++i) ops.push_back({random_permuted(), true});
  ingest(ops, GroupWriter::kWhole);
  check("after the first load");
  for (int round = 0; round < 6; ++round) {
    ops.clear();
    for (int i = 0; i < 500; ++i) ops.push_back({random_permuted(), true});
    for (int i = 0; i < 100; ++i) {
      ops.push_back({*std::next(model.begin(), rnd.Uniform(model.size())), false});
    }
    ingest(ops, GroupWriter::kOperands);
    // Removals through the memtable, as a store's writers make them.
    for (int i = 0; i < 50; ++i) {
      const std::uint64_t gone = *std::next(model.begin(), rnd.Uniform(model.size()));
      GroupChange change;
      change.removes.push_back(layout.MemberBits(gone));
      const GroupLayout::Key key = layout.KeyOf(gone);
      ASSERT_TRUE(db->Merge(rocksdb::WriteOptions(), table,
                            rocksdb::Slice(key.data(), layout.key_bytes()),
                            EncodeGroupOperand(layout, change))
                      .ok());
      model.erase(gone);
      removed.insert(gone);
    }
    check("round " + std::to_string(round) + ", removals in the memtable");
    if (round % 2 == 1) {
      ASSERT_TRUE(db->Flush(rocksdb::FlushOptions(), table).ok());
      check("round " + std::to_string(round) + ", flushed");
    }
    if (round % 3 == 2) {
      ASSERT_TRUE(db->CompactRange(rocksdb::CompactRangeOptions(), table, nullptr, nullptr).ok());
      check("round " + std::to_string(round) + ", compacted");
    }
  }
}

// A merge's files go in while queries go on, their filters published
// first: they must stay in every view until the ingestion is done, a
// refresh after a compaction included, which reads the family's files
// before the new ones are among them. After it, the tables' own hold them.
TEST(MemberFiltersTest, PendingFilesStayThroughRefreshesUntilIngested) {
  Random rnd(TestSeed(66));
  TempDir dir;
  PackedTableDb packed(dir.Sub("db"));
  const GroupLayout layout = packed.layout();
  const auto random_members = [&] {
    std::vector<Fingerprint> members;
    for (int i = 0; i < 3000; ++i) members.push_back(rnd.Next());
    std::sort(members.begin(), members.end());
    members.erase(std::unique(members.begin(), members.end()), members.end());
    return members;
  };
  const auto write = [&](const std::string& name, const std::vector<Fingerprint>& members,
                         GroupWriter::Mode mode) {
    rocksdb::IngestExternalFileArg arg = IngestionInto(packed.table());
    SstSink sink(packed.db(), packed.table(), dir.Sub(name), SstUse::kMerge);
    GroupWriter writer(sink, layout, mode);
    for (Fingerprint m : members) EXPECT_TRUE(writer.Add(m, /*put=*/true).ok());
    EXPECT_TRUE(writer.Finish().ok());
    EXPECT_TRUE(sink.Finish(arg.external_files).ok());
    return arg;
  };
  const std::vector<Fingerprint> loaded = random_members();
  const rocksdb::IngestExternalFileArg load = write("load.sst", loaded, GroupWriter::kWhole);
  ASSERT_TRUE(packed.db().IngestExternalFiles({load}).ok());

  TableFilters filters(*PermutationPlan::Create(6, 3), PackedTableDb::kGroupBits, nullptr);
  const std::vector<rocksdb::ColumnFamilyHandle*> tables = {packed.table(), packed.table()};
  filters.Attach(&packed.db(), tables);
  const auto passing = [&](const std::vector<Fingerprint>& members) {
    const TableFilters::View view = filters.Current();
    return std::count_if(members.begin(), members.end(),
                         [&](Fingerprint m) { return (*view)[1]->MayContain(m); });
  };
  // An ingestion's files, with their filters read ahead (as the table writer reads them) or not.
  const auto output = [&](const rocksdb::IngestExternalFileArg& arg, bool read_ahead) {
    TableWriter::Output out;
    out.args = {arg};
    if (read_ahead) {
      Result<std::vector<WrittenFile>> read = ReadWrittenFiles(packed.db(), arg);
      EXPECT_TRUE(read.ok()) << read.status().ToString();
      out.properties = *std::move(read);
    }
    return out;
  };
  ASSERT_EQ(passing(loaded), std::ssize(loaded));

  const std::vector<Fingerprint> merged = random_members();
  const rocksdb::IngestExternalFileArg merge = write("merge.sst", merged, GroupWriter::kOperands);
  EXPECT_LT(passing(merged), std::ssize(merged) / 20);
  const TableWriter::Output merge_files = output(merge, /*read_ahead=*/true);
  filters.AddPending(merge_files);
  EXPECT_EQ(passing(merged), std::ssize(merged));
  filters.Refresh({packed.table()->GetID()});  // as after a compaction, before the file is in
  EXPECT_EQ(passing(merged), std::ssize(merged));
  EXPECT_EQ(passing(loaded), std::ssize(loaded));
  ASSERT_TRUE(packed.db().IngestExternalFiles({merge}).ok());
  filters.EndPending(merge_files, /*ingested=*/true);
  filters.Refresh({packed.table()->GetID()});
  EXPECT_EQ(passing(merged), std::ssize(merged));
  EXPECT_EQ(passing(loaded), std::ssize(loaded));

  // A file that never went in leaves the views when its ingestion ends.
  const std::vector<Fingerprint> failed = random_members();
  const TableWriter::Output failed_files =
      output(write("failed.sst", failed, GroupWriter::kOperands), /*read_ahead=*/true);
  filters.AddPending(failed_files);
  EXPECT_EQ(passing(failed), std::ssize(failed));
  filters.EndPending(failed_files, /*ingested=*/false);
  EXPECT_LT(passing(failed), std::ssize(failed) / 20);

  // Files whose filters were not read ahead: the table passes every probe while they go in, a
  // refresh after a compaction included, and has their filters once they are in.
  const std::vector<Fingerprint> unread = random_members();
  const rocksdb::IngestExternalFileArg late = write("unread.sst", unread, GroupWriter::kOperands);
  const TableWriter::Output unread_files = output(late, /*read_ahead=*/false);
  filters.AddPending(unread_files);
  EXPECT_EQ(passing(unread), std::ssize(unread));
  const std::vector<Fingerprint> others = random_members();
  EXPECT_EQ(passing(others), std::ssize(others)) << "every probe passes";
  filters.Refresh({packed.table()->GetID()});
  EXPECT_EQ(passing(unread), std::ssize(unread));
  ASSERT_TRUE(packed.db().IngestExternalFiles({late}).ok());
  filters.EndPending(unread_files, /*ingested=*/true);
  EXPECT_EQ(passing(unread), std::ssize(unread));
  EXPECT_EQ(passing(merged), std::ssize(merged));
  filters.Detach();
}

}  // namespace
}  // namespace fpstore::internal
