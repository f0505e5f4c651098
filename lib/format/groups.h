// The tables' layout (docs/format.md): one key per group of fingerprints
// sharing their first G permuted bits, the members' other bits in the value
// as an Elias-Fano code (in table 0 after the documents' ids), so RocksDB's
// per-key work is paid per group (docs/design.md, "Packed tables") and a
// member costs about 2 bits more than the log of the gap between members.

#ifndef FPSTORE_LIB_FORMAT_GROUPS_H_
#define FPSTORE_LIB_FORMAT_GROUPS_H_

#include <rocksdb/merge_operator.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fpstore/document.h"
#include "fpstore/options.h"
#include "fpstore/permutation.h"
#include "plan/table_entry.h"
#include "util/big_endian.h"

namespace fpstore::internal {

// The most group bits a store is cut at: a member keeps at least a byte of its
// fingerprint. A store that records more is corrupt.
inline constexpr int kMaxGroupBits = 56;

// Where a store created for `expected_documents` cuts its groups (the prefix,
// if shorter): the least bits from 8 (a member fits 7 bytes) that keep a group
// at 256 fingerprints or fewer, at most kMaxGroupBits.
int GroupBitsFor(std::uint64_t expected_documents);

// A member of a group that keeps ids (table 0), ordered by (bits, id).
struct IdMember {
  Word bits;
  DocumentId id;
  friend auto operator<=>(const IdMember&, const IdMember&) = default;
};

// A member of a 64-bit layout's group that keeps ids, as folds hold it: without the 128-bit
// word, folds move half the bytes. Members are Word or IdMember in any layout, Head or
// NarrowIdMember in a 64-bit one.
struct NarrowIdMember {
  Head bits;
  DocumentId id;
  friend auto operator<=>(const NarrowIdMember&, const NarrowIdMember&) = default;
};

// A table's group cut and byte layout. A key is the permuted head's first G
// bits, left-aligned in whole bytes; a member's bits are the head's other
// 64 - G and, in a 128-bit store, the tail (the low half), kept verbatim: it
// is as random as the fingerprint, so no code makes it shorter. In a merge
// operand a member is its head bits, big-endian in whole bytes, then the
// 8-byte tail (128 bits), then (if ids are kept) the 8-byte id, so byte
// order is (bits, id) order; a group's value codes them (EncodeGroupValue).
class GroupLayout {
 public:
  enum class Ids { kNone, kKept };

  // G = min(prefix_bits, group_bits), so that a probe reads one group, and at most 63, so that a
  // member keeps a byte of its head (a group of 63 bits holds at most two heads).
  // REQUIRES: 1 <= prefix_bits <= width, 1 <= group_bits, width is 64 or 128
  GroupLayout(int prefix_bits, int group_bits, Ids ids = Ids::kNone, int width = 64)
      : width_(width),
        group_bits_(std::min({prefix_bits, group_bits, 63})),
        key_bytes_((group_bits_ + 7) / 8),
        bits_bytes_((64 - group_bits_ + 7) / 8),
        tail_bytes_(width == 128 ? 8 : 0),
        id_bytes_(ids == Ids::kKept ? 8 : 0) {}

  static constexpr std::size_t kMaxKeySize = 8;
  using Key = std::array<char, kMaxKeySize>;

  int width() const { return width_; }
  int group_bits() const { return group_bits_; }
  // A member's bits of the head.
  int member_bits() const { return 64 - group_bits_; }
  std::size_t key_bytes() const { return key_bytes_; }
  std::size_t member_bytes() const { return bits_bytes_ + tail_bytes_ + id_bytes_; }
  // A member's head bits, in whole bytes.
  std::size_t bits_bytes() const { return bits_bytes_; }
  bool keeps_tails() const { return tail_bytes_ != 0; }
  bool keeps_ids() const { return id_bytes_ != 0; }

  Head HeadOf(Word permuted) const { return internal::HeadOf(permuted, width_); }
  // The word of `head` and (128 bits) `tail`.
  Word WordOf(Head head, std::uint64_t tail) const {
    return width_ == 64 ? Word(head) : Word(head, tail);
  }

  // The first fingerprint of `permuted`'s group.
  Word GroupOf(Word permuted) const { return WordOf(GroupHead(HeadOf(permuted)), 0); }
  Head GroupHead(Head head) const { return head & ~(~Head{0} >> group_bits_); }
  // Only the first key_bytes() bytes are used.
  Key KeyOf(Word permuted) const {
    Key key{};
    PutBigEndianBytes(key.data(), GroupHead(HeadOf(permuted)) >> (64 - 8 * key_bytes_), key_bytes_);
    return key;
  }
  std::string_view KeyView(const Key& key) const { return {key.data(), key_bytes_}; }
  // False if `key` is not a group key of this layout.
  bool DecodeKey(std::string_view key, Word* group) const;

  // `permuted` less its group's bits: a member's bits.
  Word MemberBits(Word permuted) const {
    return WordOf(MemberHead(HeadOf(permuted)), permuted.low());
  }
  Head MemberHead(Head head) const { return head & (~Head{0} >> group_bits_); }

 private:
  int width_;
  int group_bits_;
  std::size_t key_bytes_;
  std::size_t bits_bytes_;
  std::size_t tail_bytes_;
  std::size_t id_bytes_;
};

// Table t's layout: only table 0 keeps ids.
inline GroupLayout TableGroupLayout(const PermutationPlan& plan, std::size_t t, int group_bits) {
  return GroupLayout(plan.table(t).prefix_bits(), group_bits,
                     t == 0 ? GroupLayout::Ids::kKept : GroupLayout::Ids::kNone, plan.bits());
}

// A group's value: its members, ascending, each once, coded as
// docs/format.md, "Tables", says: their count, their ids if the layout keeps
// them, their tails if it keeps them, then the Elias-Fano code of their head
// bits. A merge operand: the count
// of members it adds (4 bytes), the adds, then the removes, each ascending,
// in the operand layout; applied to a group, removes go first, then adds.
// Members are Word bits, or IdMember where the layout keeps ids.
template <typename Member>
struct BasicGroupChange {
  std::vector<Member> adds;     // ascending, unique
  std::vector<Member> removes;  // ascending, unique

  bool empty() const { return adds.empty() && removes.empty(); }
  void clear() {
    adds.clear();
    removes.clear();
  }
};
using GroupChange = BasicGroupChange<Word>;
using IdGroupChange = BasicGroupChange<IdMember>;

// `members` ascending and unique; `out` is overwritten, its capacity kept.
// Member is Word or IdMember (groups.cc instantiates both).
template <typename Member>
void EncodeGroupValue(const GroupLayout& layout, const std::vector<Member>& members,
                      std::string& out);
template <typename Member>
std::string EncodeGroupValue(const GroupLayout& layout, const std::vector<Member>& members) {
  std::string value;
  EncodeGroupValue(layout, members, value);
  return value;
}
// False unless `value` is a well-formed group value: its members ascending,
// each once, and coded as EncodeGroupValue codes them.
template <typename Member>
bool DecodeGroupValue(const GroupLayout& layout, std::string_view value,
                      std::vector<Member>& members);

// A group's value, decoded for probes: its members' bits in order (the
// group's G bits clear) and, where the layout keeps them, their ids.
class GroupValue {
 public:
  std::size_t size() const { return heads_.size(); }
  Word bits(std::size_t i) const {
    return tails_ == nullptr ? Word(heads_[i]) : Word(heads_[i], GetBigEndian64(tails_ + 8 * i));
  }
  // REQUIRES: the layout keeps ids.
  DocumentId id(std::size_t i) const { return GetBigEndian64(ids_ + 8 * i); }

  // Decodes only the members whose head bits (GroupLayout::MemberHead) lie in
  // [lo, hi], as a probe wants: it finds their bucket of the high array by
  // counting, not decoding, the members before. False if what it reads is
  // malformed; the rest of the value is not checked (DecodeGroupValue, as
  // scans and folds use it, checks values whole).
  bool DecodeRange(const GroupLayout& layout, std::string_view value, Head lo, Head hi);

 private:
  std::vector<Head> heads_;
  const char* ids_ = nullptr;    // of the first member decoded
  const char* tails_ = nullptr;  // of the first member decoded, where the layout keeps them
};

template <typename Member>
void EncodeGroupOperand(const GroupLayout& layout, const BasicGroupChange<Member>& change,
                        std::string& out);
template <typename Member>
std::string EncodeGroupOperand(const GroupLayout& layout, const BasicGroupChange<Member>& change) {
  std::string operand;
  EncodeGroupOperand(layout, change, operand);
  return operand;
}
template <typename Member>
bool DecodeGroupOperand(const GroupLayout& layout, std::string_view operand,
                        BasicGroupChange<Member>& change);

// Calls visit(member bits) for each member of a group's value, or
// (`operand`) each a merge operand adds or removes. Checks a value whole, an
// operand only for whole members, not their order; false if malformed.
template <typename Visit>
bool ForEachMemberOf(const GroupLayout& layout, std::string_view value, bool operand,
                     Visit&& visit) {
  if (!operand) {
    thread_local std::vector<Word> bits;
    if (!DecodeGroupValue(layout, value, bits)) return false;
    for (const Word b : bits) visit(b);
    return true;
  }
  if (value.size() < 4 ||
      GetBigEndianBytes(value.data(), 4) * layout.member_bytes() > value.size() - 4) {
    return false;
  }
  value.remove_prefix(4);
  const std::size_t width = layout.member_bytes();
  if (value.size() % width != 0) return false;
  for (std::size_t i = 0; i < value.size(); i += width) {
    const char* member = value.data() + i;
    visit(layout.WordOf(GetBigEndianBytes(member, layout.bits_bytes()),
                        layout.keeps_tails() ? GetBigEndian64(member + layout.bits_bytes()) : 0));
  }
  return true;
}

// Folds operands into their group (FullMergeV2) or into one operand
// (PartialMergeMulti; format/group_merge.cc). Malformed input fails the merge, which RocksDB
// reports as corruption of the read or compaction that met it.
class GroupMergeOperator final : public rocksdb::MergeOperator {
 public:
  explicit GroupMergeOperator(GroupLayout layout) : layout_(layout) {}
  bool FullMergeV2(const MergeOperationInput& in, MergeOperationOutput* out) const override;
  bool PartialMergeMulti(const rocksdb::Slice& key, const std::deque<rocksdb::Slice>& operands,
                         std::string* out, rocksdb::Logger* logger) const override;
  const char* Name() const override { return "fpstore.groups"; }

 private:
  GroupLayout layout_;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_FORMAT_GROUPS_H_
