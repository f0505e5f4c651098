// The merge operator of the tables' groups (format/groups.h): operands folded into their group,
// or into one operand, by decoding, applying and coding again. A 64-bit layout's groups are
// folded as 64-bit members (Head, NarrowIdMember), half the bytes of the 128-bit word.

#include <algorithm>
#include <deque>
#include <iterator>
#include <string>
#include <vector>

#include "format/groups.h"

namespace fpstore::internal {

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

// `base` (a group's value) less change.removes, with change.adds, into `out`:
// decoded, applied and coded again.
template <typename Member>
bool FoldGroup(const GroupLayout& layout, std::string_view base,
               const BasicGroupChange<Member>& change, std::string& out) {
  thread_local std::vector<Member> members, scratch;
  if (!DecodeGroupValue(layout, base, members)) return false;
  Apply(members, change.removes, change.adds, scratch);
  EncodeGroupValue(layout, members, out);
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

bool GroupMergeOperator::FullMergeV2(const MergeOperationInput& in,
                                     MergeOperationOutput* out) const {
  if (layout_.keeps_tails()) {
    return layout_.keeps_ids() ? MergeIntoGroup<IdMember>(layout_, in, out)
                               : MergeIntoGroup<Word>(layout_, in, out);
  }
  return layout_.keeps_ids() ? MergeIntoGroup<NarrowIdMember>(layout_, in, out)
                             : MergeIntoGroup<Head>(layout_, in, out);
}

bool GroupMergeOperator::PartialMergeMulti(const rocksdb::Slice&,
                                           const std::deque<rocksdb::Slice>& operands,
                                           std::string* out, rocksdb::Logger*) const {
  if (layout_.keeps_tails()) {
    return layout_.keeps_ids() ? MergeOperands<IdMember>(layout_, operands, out)
                               : MergeOperands<Word>(layout_, operands, out);
  }
  return layout_.keeps_ids() ? MergeOperands<NarrowIdMember>(layout_, operands, out)
                             : MergeOperands<Head>(layout_, operands, out);
}

}  // namespace fpstore::internal
