// Writes a packed table's file (format/groups.h) from ops in key order: per
// group, its value into a table with no members yet, else a merge operand.

#ifndef FPSTORE_LIB_INGEST_GROUP_WRITER_H_
#define FPSTORE_LIB_INGEST_GROUP_WRITER_H_

#include "format/groups.h"
#include "ingest/sst_sink.h"
#include "plan/table_entry.h"

namespace fpstore::internal {

class GroupWriter {
 public:
  enum Mode { kWhole, kOperands };

  GroupWriter(SstSink& sink, GroupLayout layout, Mode mode)
      : sink_(sink), layout_(layout), mode_(mode) {}

  // `id` counts only where the layout keeps ids.
  // REQUIRES: (permuted, id) ascending from call to call; each once.
  Status Add(Word permuted, bool put, DocumentId id = 0) {
    const Word group = layout_.GroupOf(permuted);
    if (group != group_ || !started_) {
      if (Status s = Flush(); !s.ok()) return s;
      group_ = group;
      started_ = true;
    }
    if (layout_.keeps_ids()) {
      return Append(put ? id_change_.adds : id_change_.removes,
                    IdMember{layout_.MemberBits(permuted), id});
    }
    return Append(put ? change_.adds : change_.removes, layout_.MemberBits(permuted));
  }

  // Writes the last group.
  Status Finish() { return Flush(); }

 private:
  // Members out of order would make a value every read and compaction refuses.
  template <typename Member>
  static Status Append(std::vector<Member>& members, const Member& member) {
    if (!members.empty() && !(members.back() < member)) {
      return Status::Corruption("a packed table's members out of order");
    }
    members.push_back(member);
    return Status::OK();
  }

  Status Flush() { return layout_.keeps_ids() ? Flush(id_change_) : Flush(change_); }

  template <typename Change>
  Status Flush(Change& change) {
    if (change.empty()) return Status::OK();
    const GroupLayout::Key key = layout_.KeyOf(group_);
    const rocksdb::Slice key_slice(key.data(), layout_.key_bytes());
    Status s;
    // A table without members loses nothing to removals.
    if (mode_ == kWhole) {
      if (!change.adds.empty()) {
        EncodeGroupValue(layout_, change.adds, value_);
        s = sink_.Put(key_slice, value_);
      }
    } else {
      EncodeGroupOperand(layout_, change, value_);
      s = sink_.Merge(key_slice, value_);
    }
    change.clear();
    return s;
  }

  SstSink& sink_;
  const GroupLayout layout_;
  const Mode mode_;
  Word group_ = 0;
  bool started_ = false;
  GroupChange change_;       // without ids
  IdGroupChange id_change_;  // with ids
  std::string value_;        // the entry being written, its capacity kept
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_INGEST_GROUP_WRITER_H_
