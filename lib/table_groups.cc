#include "table_groups.h"

#include <iterator>

namespace fpstore {

// Fewer keys make every file and compaction cheaper (RocksDB's work is per
// key), larger groups every read of one dearer: 16 bits, where members are
// still 6 bytes, and more only where that would put more than 256 members
// in a group (docs/performance.md, "Groups cut to the store's size").
int GroupBitsFor(std::uint64_t expected_documents) {
  constexpr std::uint64_t kMaxMembers = 256;
  int bits = 16;
  while (bits < 56 && expected_documents > (kMaxMembers << bits)) ++bits;
  return bits;
}

}  // namespace fpstore

namespace fpstore::internal {

namespace {

// Member bits from `bytes`, which must hold whole, ascending members.
bool DecodeMembers(const GroupLayout& layout, std::string_view bytes,
                   std::vector<Fingerprint>& members) {
  const std::size_t width = layout.member_bytes();
  if (bytes.size() % width != 0) return false;
  members.clear();
  members.reserve(bytes.size() / width);
  for (std::size_t i = 0; i < bytes.size(); i += width) {
    const Fingerprint m = layout.MemberAt(0, bytes.data() + i);
    if (layout.MemberBits(m) != m) return false;  // pad bits must be zero
    if (!members.empty() && members.back() >= m) return false;
    members.push_back(m);
  }
  return true;
}

void AppendMembers(const GroupLayout& layout, std::span<const Fingerprint> members,
                   std::string& out) {
  const std::size_t width = layout.member_bytes();
  std::size_t at = out.size();
  out.resize(at + members.size() * width);
  for (Fingerprint m : members) {
    PutBigEndianBytes(out.data() + at, layout.MemberBits(m), width);
    at += width;
  }
}

// Sets `set` to itself less `removed`, with `added`, all ascending; `scratch`
// is work space. Compactions fold an operand into nearly every group: the
// buffers are the caller's, so that a fold allocates nothing once they have
// grown.
void Apply(std::vector<Fingerprint>& set, const std::vector<Fingerprint>& removed,
           const std::vector<Fingerprint>& added, std::vector<Fingerprint>& scratch) {
  if (!removed.empty()) {
    scratch.clear();
    std::set_difference(set.begin(), set.end(), removed.begin(), removed.end(),
                        std::back_inserter(scratch));
    set.swap(scratch);
  }
  if (!added.empty()) {
    scratch.clear();
    std::set_union(set.begin(), set.end(), added.begin(), added.end(),
                   std::back_inserter(scratch));
    set.swap(scratch);
  }
}

// Work space of one thread's folds.
struct FoldBuffers {
  std::vector<Fingerprint> members, scratch;
  GroupChange change, combined;
};
FoldBuffers& ThreadFoldBuffers() {
  thread_local FoldBuffers buffers;
  return buffers;
}

}  // namespace

bool GroupLayout::DecodeKey(std::string_view key, Fingerprint* group) const {
  if (key.size() != key_bytes_) return false;
  const std::uint64_t bits = GetBigEndianBytes(key.data(), key_bytes_);
  const Fingerprint g = key_bytes_ == 8 ? bits : bits << (64 - 8 * key_bytes_);
  if (GroupOf(g) != g) return false;  // padding must be zero
  *group = g;
  return true;
}

void EncodeGroupValue(const GroupLayout& layout, std::span<const Fingerprint> members,
                      std::string& out) {
  out.clear();
  AppendMembers(layout, members, out);
}

bool DecodeGroupValue(const GroupLayout& layout, std::string_view value,
                      std::vector<Fingerprint>& members) {
  return DecodeMembers(layout, value, members);
}

void EncodeGroupOperand(const GroupLayout& layout, const GroupChange& change, std::string& out) {
  out.resize(4);
  PutBigEndianBytes(out.data(), change.adds.size(), 4);
  AppendMembers(layout, change.adds, out);
  AppendMembers(layout, change.removes, out);
}

bool DecodeGroupOperand(const GroupLayout& layout, std::string_view operand, GroupChange& change) {
  if (operand.size() < 4) return false;
  const std::uint64_t adds = GetBigEndianBytes(operand.data(), 4);
  operand.remove_prefix(4);
  const std::uint64_t add_bytes = adds * layout.member_bytes();
  if (add_bytes > operand.size()) return false;
  return DecodeMembers(layout, operand.substr(0, add_bytes), change.adds) &&
         DecodeMembers(layout, operand.substr(add_bytes), change.removes);
}

bool GroupMergeOperator::FullMergeV2(const MergeOperationInput& in,
                                     MergeOperationOutput* out) const {
  FoldBuffers& b = ThreadFoldBuffers();
  b.members.clear();
  if (in.existing_value != nullptr &&
      !DecodeGroupValue(layout_, in.existing_value->ToStringView(), b.members)) {
    return false;
  }
  for (const rocksdb::Slice& operand : in.operand_list) {
    if (!DecodeGroupOperand(layout_, operand.ToStringView(), b.change)) return false;
    Apply(b.members, b.change.removes, b.change.adds, b.scratch);
  }
  EncodeGroupValue(layout_, b.members, out->new_value);
  return true;
}

bool GroupMergeOperator::PartialMergeMulti(const rocksdb::Slice&,
                                           const std::deque<rocksdb::Slice>& operands,
                                           std::string* out, rocksdb::Logger*) const {
  // One operand that does what they do in turn: what a later one removes
  // is no longer added, and every removal stays, for the members of the
  // group below them.
  FoldBuffers& b = ThreadFoldBuffers();
  b.combined.clear();
  for (const rocksdb::Slice& operand : operands) {
    if (!DecodeGroupOperand(layout_, operand.ToStringView(), b.change)) return false;
    Apply(b.combined.adds, b.change.removes, b.change.adds, b.scratch);
    Apply(b.combined.removes, {}, b.change.removes, b.scratch);
  }
  EncodeGroupOperand(layout_, b.combined, *out);
  return true;
}

}  // namespace fpstore::internal
