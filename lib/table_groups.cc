#include "table_groups.h"

#include <bit>
#include <cstring>
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

// The member bits at `at`, read as one 8-byte word where `end` leaves room:
// folds and decodes read every member of a group, and a byte at a time
// that was most of their work.
Fingerprint LoadMember(const GroupLayout& layout, const char* at, const char* end) {
  const std::size_t width = layout.member_bytes();
  if (end - at < 8) return GetBigEndianBytes(at, width);
  std::uint64_t word;
  std::memcpy(&word, at, 8);
  if constexpr (std::endian::native == std::endian::little) word = __builtin_bswap64(word);
  return word >> (64 - 8 * width);
}

// Writes `member`'s bits at `out` as LoadMember reads them, as a whole
// 8-byte word: the caller leaves room for the bytes past the member's.
void StoreMember(const GroupLayout& layout, Fingerprint member, char* out) {
  std::uint64_t word = member << (64 - 8 * layout.member_bytes());
  if constexpr (std::endian::native == std::endian::little) word = __builtin_bswap64(word);
  std::memcpy(out, &word, 8);
}

// Member bits from `bytes`, which must hold whole, ascending members.
bool DecodeMembers(const GroupLayout& layout, std::string_view bytes,
                   std::vector<Fingerprint>& members) {
  const std::size_t width = layout.member_bytes();
  if (bytes.size() % width != 0) return false;
  members.clear();
  members.reserve(bytes.size() / width);
  const char* const end = bytes.data() + bytes.size();
  for (const char* at = bytes.data(); at != end; at += width) {
    const Fingerprint m = LoadMember(layout, at, end);
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
// is work space, the caller's, so that a thread's folds allocate nothing once
// it has grown.
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

// Writes to `out` the members of `base` (a group's value) less
// change.removes, with change.adds. Compactions fold operands into nearly
// every group, each a few members in a hundred or more: this passes over
// the base once, checking it as DecodeMembers does, with no set between
// (folds by whole sets took two fifths of compactions' time).
bool FoldGroup(const GroupLayout& layout, std::string_view base, const GroupChange& change,
               std::string& out) {
  const std::size_t width = layout.member_bytes();
  if (base.size() % width != 0) return false;
  // Each member is written as one 8-byte word, through a pointer into room
  // for every add and a word's slack, then the string is cut to size:
  // growing it a member at a time (1.22 µs a fold of 150 members and four
  // operands of 8) and copying runs of the base with memcpy (1.07 µs)
  // were slower (0.99 µs).
  out.resize(base.size() + change.adds.size() * width + 8);
  char* written = out.data();
  const auto write = [&](Fingerprint member) {
    StoreMember(layout, member, written);
    written += width;
  };
  auto add = change.adds.begin();
  auto remove = change.removes.begin();
  const char* const end = base.data() + base.size();
  Fingerprint previous = 0;
  for (const char* at = base.data(); at != end; at += width) {
    const Fingerprint m = LoadMember(layout, at, end);
    if (layout.MemberBits(m) != m) return false;  // pad bits must be zero
    if (at != base.data() && previous >= m) return false;
    previous = m;
    for (; add != change.adds.end() && *add < m; ++add) write(*add);
    const bool added_again = add != change.adds.end() && *add == m;
    if (added_again) ++add;
    while (remove != change.removes.end() && *remove < m) ++remove;
    if (added_again || remove == change.removes.end() || *remove != m) write(m);
  }
  for (; add != change.adds.end(); ++add) write(*add);
  out.resize(written - out.data());
  return true;
}

// Work space of one thread's folds.
struct FoldBuffers {
  std::vector<Fingerprint> scratch;
  GroupChange change, combined;
};
FoldBuffers& ThreadFoldBuffers() {
  thread_local FoldBuffers buffers;
  return buffers;
}

// Sets b.combined to one change that does what `operands` do in turn:
// what a later one removes is no longer added, and every removal stays,
// for the members of the group below them.
template <typename Operands>
bool CombineOperands(const GroupLayout& layout, const Operands& operands, FoldBuffers& b) {
  // Adds alone, as merges of new documents write them: their union, sorted
  // once.
  b.combined.clear();
  bool removes = false;
  for (const rocksdb::Slice& operand : operands) {
    if (!DecodeGroupOperand(layout, operand.ToStringView(), b.change)) return false;
    removes = !b.change.removes.empty();
    if (removes) break;
    b.combined.adds.insert(b.combined.adds.end(), b.change.adds.begin(), b.change.adds.end());
  }
  if (!removes) {
    std::sort(b.combined.adds.begin(), b.combined.adds.end());
    b.combined.adds.erase(std::unique(b.combined.adds.begin(), b.combined.adds.end()),
                          b.combined.adds.end());
    return true;
  }
  // With removals, order matters: each in turn.
  b.combined.clear();
  for (const rocksdb::Slice& operand : operands) {
    if (!DecodeGroupOperand(layout, operand.ToStringView(), b.change)) return false;
    Apply(b.combined.adds, b.change.removes, b.change.adds, b.scratch);
    Apply(b.combined.removes, {}, b.change.removes, b.scratch);
  }
  return true;
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
  if (!CombineOperands(layout_, in.operand_list, b)) return false;
  const std::string_view base =
      in.existing_value != nullptr ? in.existing_value->ToStringView() : std::string_view();
  return FoldGroup(layout_, base, b.combined, out->new_value);
}

bool GroupMergeOperator::PartialMergeMulti(const rocksdb::Slice&,
                                           const std::deque<rocksdb::Slice>& operands,
                                           std::string* out, rocksdb::Logger*) const {
  FoldBuffers& b = ThreadFoldBuffers();
  if (!CombineOperands(layout_, operands, b)) return false;
  EncodeGroupOperand(layout_, b.combined, *out);
  return true;
}

}  // namespace fpstore::internal
