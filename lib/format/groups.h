// The tables' layout (docs/format.md): one key per group of fingerprints
// that share their first G permuted bits, the members' other bits end to
// end in the value (in table 0 each with its document's id). RocksDB's work
// per key, in writing files and in compactions, is then paid per group
// rather than per fingerprint (docs/design.md, "Packed tables").

#ifndef FPSTORE_LIB_FORMAT_GROUPS_H_
#define FPSTORE_LIB_FORMAT_GROUPS_H_

#include <rocksdb/merge_operator.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fpstore/document.h"
#include "fpstore/options.h"
#include "fpstore/permutation.h"
#include "util/big_endian.h"

namespace fpstore::internal {

// The bits at which a store created for `expected_documents` cuts its
// tables' groups (the prefix, if shorter): 16, and one more for each
// doubling that would put more than 256 fingerprints in a group.
int GroupBitsFor(std::uint64_t expected_documents);

// A member of a group that keeps ids (table 0): a document's member bits
// and its id, in (bits, id) order.
struct IdMember {
  Fingerprint bits;
  DocumentId id;
  friend auto operator<=>(const IdMember&, const IdMember&) = default;
};

// Where a table's groups are cut, and how their keys and members are laid
// out. A group key is the first G bits of the permuted fingerprint,
// left-aligned in whole bytes; a member is the other 64 - G bits,
// big-endian in whole bytes, and in a table that keeps ids then the
// document's id (8 bytes): byte order is (bits, id) order.
class GroupLayout {
 public:
  enum class Ids { kNone, kKept };

  // G is the store's `group_bits`, or the prefix if shorter, so that a
  // probe never reads more than one group.
  // REQUIRES: 1 <= prefix_bits <= 64, 1 <= group_bits
  GroupLayout(int prefix_bits, int group_bits, Ids ids = Ids::kNone)
      : group_bits_(std::min(prefix_bits, group_bits)),
        key_bytes_((group_bits_ + 7) / 8),
        bits_bytes_((64 - group_bits_ + 7) / 8),
        id_bytes_(ids == Ids::kKept ? 8 : 0) {}

  static constexpr std::size_t kMaxKeySize = 8;
  using Key = std::array<char, kMaxKeySize>;

  int group_bits() const { return group_bits_; }
  std::size_t key_bytes() const { return key_bytes_; }
  // A member's bytes: its bits, then its id if the table keeps ids.
  std::size_t member_bytes() const { return bits_bytes_ + id_bytes_; }
  std::size_t bits_bytes() const { return bits_bytes_; }
  bool keeps_ids() const { return id_bytes_ != 0; }

  // The first fingerprint of `permuted`'s group.
  Fingerprint GroupOf(Fingerprint permuted) const {
    return group_bits_ == 64 ? permuted : permuted & ~(~Fingerprint{0} >> group_bits_);
  }
  // The key of `permuted`'s group; its first key_bytes() bytes are used.
  Key KeyOf(Fingerprint permuted) const {
    Key key{};
    PutBigEndianBytes(key.data(), GroupOf(permuted) >> (64 - 8 * key_bytes_), key_bytes_);
    return key;
  }
  std::string_view KeyView(const Key& key) const { return {key.data(), key_bytes_}; }
  // False if `key` is not a group key of this layout.
  bool DecodeKey(std::string_view key, Fingerprint* group) const;

  // The member bits of `permuted` (the low 64 - G).
  Fingerprint MemberBits(Fingerprint permuted) const {
    return group_bits_ == 64 ? 0 : permuted & (~Fingerprint{0} >> group_bits_);
  }
  // Appends the member of `permuted` (with `id` if the table keeps ids).
  void AppendMember(std::string& out, Fingerprint permuted, DocumentId id = 0) const {
    const std::size_t at = out.size();
    out.resize(at + member_bytes());
    PutBigEndianBytes(out.data() + at, MemberBits(permuted), bits_bytes_);
    if (keeps_ids()) PutBigEndian64(out.data() + at + bits_bytes_, id);
  }
  // The permuted fingerprint of the member at `in`, in `group`.
  Fingerprint MemberAt(Fingerprint group, const char* in) const {
    return group | GetBigEndianBytes(in, bits_bytes_);
  }
  // The id of the member at `in`. REQUIRES: keeps_ids()
  DocumentId IdAt(const char* in) const { return GetBigEndian64(in + bits_bytes_); }

 private:
  int group_bits_;
  std::size_t key_bytes_;
  std::size_t bits_bytes_;
  std::size_t id_bytes_;
};

// Table t's groups in a store whose groups are cut at `group_bits`: table
// 0's members keep their documents' ids, the others' do not.
inline GroupLayout TableGroupLayout(const PermutationPlan& plan, std::size_t t, int group_bits) {
  return GroupLayout(plan.table(t).prefix_bits(), group_bits,
                     t == 0 ? GroupLayout::Ids::kKept : GroupLayout::Ids::kNone);
}

// A group's value: its members, ascending, each once.
// A merge operand: the count of members it adds (4 bytes, big-endian), the
// members it adds, then the members it removes, each part ascending. Applied
// to a group: its members less those removed, with those added.
// Members are their bits (Fingerprint), or in a table that keeps ids
// IdMember; each function below takes both, and the layout must say which.
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
using GroupChange = BasicGroupChange<Fingerprint>;
using IdGroupChange = BasicGroupChange<IdMember>;

// Encodes a group's value from members, ascending and unique, into `out`
// (its old contents gone; its capacity kept, for writers of many).
void EncodeGroupValue(const GroupLayout& layout, std::span<const Fingerprint> members,
                      std::string& out);
void EncodeGroupValue(const GroupLayout& layout, std::span<const IdMember> members,
                      std::string& out);
inline std::string EncodeGroupValue(const GroupLayout& layout,
                                    std::span<const Fingerprint> members) {
  std::string value;
  EncodeGroupValue(layout, members, value);
  return value;
}
inline std::string EncodeGroupValue(const GroupLayout& layout, std::span<const IdMember> members) {
  std::string value;
  EncodeGroupValue(layout, members, value);
  return value;
}
// False if `value` is not a whole number of members in ascending order.
bool DecodeGroupValue(const GroupLayout& layout, std::string_view value,
                      std::vector<Fingerprint>& members);
bool DecodeGroupValue(const GroupLayout& layout, std::string_view value,
                      std::vector<IdMember>& members);

void EncodeGroupOperand(const GroupLayout& layout, const GroupChange& change, std::string& out);
void EncodeGroupOperand(const GroupLayout& layout, const IdGroupChange& change, std::string& out);
inline std::string EncodeGroupOperand(const GroupLayout& layout, const GroupChange& change) {
  std::string operand;
  EncodeGroupOperand(layout, change, operand);
  return operand;
}
inline std::string EncodeGroupOperand(const GroupLayout& layout, const IdGroupChange& change) {
  std::string operand;
  EncodeGroupOperand(layout, change, operand);
  return operand;
}
bool DecodeGroupOperand(const GroupLayout& layout, std::string_view operand, GroupChange& change);
bool DecodeGroupOperand(const GroupLayout& layout, std::string_view operand, IdGroupChange& change);

// The index of the first member of `group`'s `value` whose permuted
// fingerprint is at least `permuted`, found by binary search over the
// fixed-width members; none if the value is not whole members.
std::optional<std::size_t> FirstMemberAtLeast(const GroupLayout& layout, Fingerprint group,
                                              std::string_view value, Fingerprint permuted);

// Calls visit(member bits) for each member a group's value holds
// (`operand` false) or a merge operand adds or removes (true), checking
// only that the bytes divide into whole members: for readers that need
// the members' bits and not their order. False if they do not.
template <typename Visit>
bool ForEachMemberOf(const GroupLayout& layout, std::string_view value, bool operand,
                     Visit&& visit) {
  if (operand) {
    if (value.size() < 4 ||
        GetBigEndianBytes(value.data(), 4) * layout.member_bytes() > value.size() - 4) {
      return false;
    }
    value.remove_prefix(4);
  }
  const std::size_t width = layout.member_bytes();
  if (value.size() % width != 0) return false;
  for (std::size_t i = 0; i < value.size(); i += width) {
    visit(GetBigEndianBytes(value.data() + i, layout.bits_bytes()));
  }
  return true;
}

// Folds merge operands into their group (FullMergeV2), or into one operand
// (PartialMergeMulti), with or without ids as its layout says. Malformed
// input fails the merge, which RocksDB reports as corruption of the read
// or compaction that met it.
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
