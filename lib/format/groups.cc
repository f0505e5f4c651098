#include "format/groups.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <iterator>
#include <span>
#include <type_traits>

#include "fpstore/store.h"

namespace fpstore {

double EstimateStoreBytes(const PermutationPlan& plan, std::uint64_t documents,
                          int signature_bytes) {
  // The model's constants, fitted to fpstore-bench's stores (docs/performance.md, "Choosing a
  // plan"): a document's record (LZ4), a member's filter bits, a group's key and index entry.
  constexpr double kRecordBytes = 17, kFilterBytesPerMember = 1.25, kBytesPerGroup = 12.9;
  const double n = static_cast<double>(documents);
  const int group_bits = internal::GroupBitsFor(documents);
  double bytes = n * kRecordBytes;
  if (signature_bytes > 0) bytes += n * (signature_bytes + 2);
  for (std::size_t t = 0; t < plan.table_count(); ++t) {
    const internal::GroupLayout layout = internal::TableGroupLayout(plan, t, group_bits);
    const double groups = std::ldexp(1.0, layout.group_bits());
    const double held = groups * -std::expm1(-n / groups);  // groups with a member
    bytes += n * (static_cast<double>(layout.member_bytes()) + kFilterBytesPerMember) +
             held * kBytesPerGroup;
  }
  return bytes;
}

}  // namespace fpstore

namespace fpstore::internal {

// Fewer keys make files and compactions cheaper (RocksDB's work is per key),
// larger groups each read dearer; at 16 bits members are 6 bytes.
int GroupBitsFor(std::uint64_t expected_documents) {
  constexpr std::uint64_t kMaxMembers = 256;
  int bits = 16;
  while (bits < kMaxGroupBits && expected_documents > (kMaxMembers << bits)) ++bits;
  return bits;
}

namespace {

Fingerprint BitsOf(Fingerprint member) { return member; }
Fingerprint BitsOf(const IdMember& member) { return member.bits; }

// The member bits at `at`, as one 8-byte load where `end` leaves room: folds
// and decodes read every member, and bytewise loads would dominate them.
Fingerprint LoadBits(const GroupLayout& layout, const char* at, const char* end) {
  const std::size_t width = layout.bits_bytes();  // 1 to 7 (GroupLayout): no shift by 64
  if (end - at < 8) return GetBigEndianBytes(at, width);
  std::uint64_t word;
  std::memcpy(&word, at, 8);
  if constexpr (std::endian::native == std::endian::little) word = __builtin_bswap64(word);
  return word >> (64 - 8 * width);
}

template <typename Member>
Member LoadMember(const GroupLayout& layout, const char* at, const char* end) {
  if constexpr (std::is_same_v<Member, IdMember>) {
    return {LoadBits(layout, at, end), layout.IdAt(at)};
  } else {
    return LoadBits(layout, at, end);
  }
}

// Writes `member`'s bits as a whole 8-byte word: the caller leaves room past it.
template <typename Member>
void StoreMember(const GroupLayout& layout, const Member& member, char* out) {
  std::uint64_t word = BitsOf(member) << (64 - 8 * layout.bits_bytes());
  if constexpr (std::endian::native == std::endian::little) word = __builtin_bswap64(word);
  std::memcpy(out, &word, 8);
  if constexpr (std::is_same_v<Member, IdMember>) {
    PutBigEndian64(out + layout.bits_bytes(), member.id);
  }
}

template <typename Member>
void AppendMembers(const GroupLayout& layout, std::span<const Member> members, std::string& out) {
  const std::size_t width = layout.member_bytes();
  std::size_t at = out.size();
  // A word's slack past the last member for StoreMember, cut after.
  out.resize(at + members.size() * width + 8);
  for (const Member& m : members) {
    StoreMember(layout, m, out.data() + at);
    at += width;
  }
  out.resize(at);
}

}  // namespace

// False unless `bytes` holds whole, ascending members.
template <typename Member>
bool DecodeGroupValue(const GroupLayout& layout, std::string_view bytes,
                      std::vector<Member>& members) {
  const std::size_t width = layout.member_bytes();
  if (bytes.size() % width != 0) return false;
  members.clear();
  members.reserve(bytes.size() / width);
  const char* const end = bytes.data() + bytes.size();
  for (const char* at = bytes.data(); at != end; at += width) {
    const Member m = LoadMember<Member>(layout, at, end);
    if (layout.MemberBits(BitsOf(m)) != BitsOf(m)) return false;  // pad bits must be zero
    if (!members.empty() && members.back() >= m) return false;
    members.push_back(m);
  }
  return true;
}

template <typename Member>
void EncodeGroupValue(const GroupLayout& layout, const std::vector<Member>& members,
                      std::string& out) {
  out.clear();
  AppendMembers<Member>(layout, members, out);
}

template <typename Member>
bool DecodeGroupOperand(const GroupLayout& layout, std::string_view operand,
                        BasicGroupChange<Member>& change) {
  if (operand.size() < 4) return false;
  const std::uint64_t adds = GetBigEndianBytes(operand.data(), 4);
  operand.remove_prefix(4);
  const std::uint64_t add_bytes = adds * layout.member_bytes();
  if (add_bytes > operand.size()) return false;
  return DecodeGroupValue(layout, operand.substr(0, add_bytes), change.adds) &&
         DecodeGroupValue(layout, operand.substr(add_bytes), change.removes);
}

template <typename Member>
void EncodeGroupOperand(const GroupLayout& layout, const BasicGroupChange<Member>& change,
                        std::string& out) {
  out.resize(4);
  PutBigEndianBytes(out.data(), change.adds.size(), 4);
  AppendMembers<Member>(layout, change.adds, out);
  AppendMembers<Member>(layout, change.removes, out);
}

template bool DecodeGroupValue(const GroupLayout&, std::string_view, std::vector<Fingerprint>&);
template bool DecodeGroupValue(const GroupLayout&, std::string_view, std::vector<IdMember>&);
template void EncodeGroupValue(const GroupLayout&, const std::vector<Fingerprint>&, std::string&);
template void EncodeGroupValue(const GroupLayout&, const std::vector<IdMember>&, std::string&);
template bool DecodeGroupOperand(const GroupLayout&, std::string_view, GroupChange&);
template bool DecodeGroupOperand(const GroupLayout&, std::string_view, IdGroupChange&);
template void EncodeGroupOperand(const GroupLayout&, const GroupChange&, std::string&);
template void EncodeGroupOperand(const GroupLayout&, const IdGroupChange&, std::string&);

namespace {

// `set` less `removed`, with `added`, all ascending. `scratch` is the caller's,
// so that a thread's folds stop allocating once it has grown.
template <typename Member>
void Apply(std::vector<Member>& set, const std::vector<Member>& removed,
           const std::vector<Member>& added, std::vector<Member>& scratch) {
  if (!removed.empty()) {
    scratch.clear();
    std::set_difference(set.begin(), set.end(), removed.begin(), removed.end(),
                        std::back_inserter(scratch));
    set.swap(scratch);
  }
  if (!added.empty()) {
    scratch.clear();
    std::set_union(set.begin(), set.end(), added.begin(), added.end(), std::back_inserter(scratch));
    set.swap(scratch);
  }
}

// `base` (a group's value) less change.removes, with change.adds, into `out`
// in one checked pass with no set between: compactions fold nearly every group.
template <typename Member>
bool FoldGroup(const GroupLayout& layout, std::string_view base,
               const BasicGroupChange<Member>& change, std::string& out) {
  const std::size_t width = layout.member_bytes();
  if (base.size() % width != 0) return false;
  // Room for every add and a word's slack, cut to size after: cheaper than
  // growing it per member (bench/micro_bench.cc, BM_GroupFold).
  out.resize(base.size() + change.adds.size() * width + 8);
  char* written = out.data();
  const auto write = [&](const Member& member) {
    StoreMember(layout, member, written);
    written += width;
  };
  auto add = change.adds.begin();
  auto remove = change.removes.begin();
  const char* const end = base.data() + base.size();
  Member previous{};
  for (const char* at = base.data(); at != end; at += width) {
    const Member m = LoadMember<Member>(layout, at, end);
    if (layout.MemberBits(BitsOf(m)) != BitsOf(m)) return false;  // pad bits must be zero
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
template <typename Member>
struct FoldBuffers {
  std::vector<Member> scratch;
  BasicGroupChange<Member> change, combined;
};
template <typename Member>
FoldBuffers<Member>& ThreadFoldBuffers() {
  thread_local FoldBuffers<Member> buffers;
  return buffers;
}

// Sets b.combined to `operands` applied in turn: a later remove cancels an
// earlier add, and every remove stays, for the members of the base below.
template <typename Member, typename Operands>
bool CombineOperands(const GroupLayout& layout, const Operands& operands, FoldBuffers<Member>& b) {
  // Adds alone (merges of new documents): their union, sorted once.
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

template <typename Member>
bool MergeIntoGroup(const GroupLayout& layout,
                    const rocksdb::MergeOperator::MergeOperationInput& in,
                    rocksdb::MergeOperator::MergeOperationOutput* out) {
  FoldBuffers<Member>& b = ThreadFoldBuffers<Member>();
  if (!CombineOperands(layout, in.operand_list, b)) return false;
  const std::string_view base =
      in.existing_value != nullptr ? in.existing_value->ToStringView() : std::string_view();
  return FoldGroup(layout, base, b.combined, out->new_value);
}

template <typename Member>
bool MergeOperands(const GroupLayout& layout, const std::deque<rocksdb::Slice>& operands,
                   std::string* out) {
  FoldBuffers<Member>& b = ThreadFoldBuffers<Member>();
  if (!CombineOperands(layout, operands, b)) return false;
  EncodeGroupOperand(layout, b.combined, *out);
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

std::optional<std::size_t> FirstMemberAtLeast(const GroupLayout& layout, Fingerprint group,
                                              std::string_view value, Fingerprint permuted) {
  const std::size_t width = layout.member_bytes();
  if (value.size() % width != 0) return std::nullopt;
  std::size_t lo = 0, hi = value.size() / width;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (layout.MemberAt(group, value.data() + mid * width) < permuted) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

bool GroupMergeOperator::FullMergeV2(const MergeOperationInput& in,
                                     MergeOperationOutput* out) const {
  return layout_.keeps_ids() ? MergeIntoGroup<IdMember>(layout_, in, out)
                             : MergeIntoGroup<Fingerprint>(layout_, in, out);
}

bool GroupMergeOperator::PartialMergeMulti(const rocksdb::Slice&,
                                           const std::deque<rocksdb::Slice>& operands,
                                           std::string* out, rocksdb::Logger*) const {
  return layout_.keeps_ids() ? MergeOperands<IdMember>(layout_, operands, out)
                             : MergeOperands<Fingerprint>(layout_, operands, out);
}

}  // namespace fpstore::internal
