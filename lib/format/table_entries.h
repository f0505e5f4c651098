// Reads a table's entries, its groups' members (format/groups.h), in order.

#ifndef FPSTORE_LIB_FORMAT_TABLE_ENTRIES_H_
#define FPSTORE_LIB_FORMAT_TABLE_ENTRIES_H_

#include <rocksdb/iterator.h>

#include <string>
#include <vector>

#include "format/groups.h"
#include "fpstore/status.h"
#include "plan/table_entry.h"

namespace fpstore::internal {

// Entries in (permuted, id) order; those of a table without ids have id 0.
// A malformed key or group ends the walk with Corruption, naming `table`.
class TableEntryCursor {
 public:
  TableEntryCursor(rocksdb::Iterator& it, const GroupLayout& layout, std::string table)
      : it_(it), layout_(layout), table_(std::move(table)) {}

  void SeekToFirst();
  // To the first entry at or past `permuted`.
  void Seek(Word permuted);
  bool Valid() const { return valid_; }
  const TableEntry& entry() const { return entry_; }
  void Next();
  Status status() const;

 private:
  // From the iterator's position: the first entry of its key, or of a later
  // one (a group may have no members left), at or past `member_bits`.
  void Settle(Word member_bits);
  std::size_t GroupSize() const;
  void SetEntry();

  rocksdb::Iterator& it_;
  const GroupLayout layout_;
  const std::string table_;
  bool valid_ = false;
  TableEntry entry_{};
  Word group_ = 0;
  // The group's members: bits alone, or with ids where the layout keeps them.
  std::vector<Word> members_;
  std::vector<IdMember> id_members_;
  std::size_t member_ = 0;
  Status corruption_;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_FORMAT_TABLE_ENTRIES_H_
