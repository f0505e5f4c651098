#include "format/table_entries.h"

#include <algorithm>

#include "plan/table_entry.h"
#include "util/rocks_status.h"

namespace fpstore::internal {

void TableEntryCursor::SeekToFirst() {
  it_.SeekToFirst();
  Settle(0);
}

void TableEntryCursor::Seek(Word permuted) {
  const GroupLayout& g = layout_;
  const GroupLayout::Key key = g.KeyOf(permuted);
  it_.Seek(rocksdb::Slice(key.data(), g.key_bytes()));
  // Within the group sought, from the member bits of `permuted`; in a
  // later group, from its first member.
  Settle(it_.Valid() && it_.key().ToStringView() == g.KeyView(key) ? g.MemberBits(permuted) : 0);
}

void TableEntryCursor::Next() {
  if (!valid_) return;
  if (++member_ < GroupSize()) {
    SetEntry();
    return;
  }
  it_.Next();
  Settle(0);
}

std::size_t TableEntryCursor::GroupSize() const {
  return layout_.keeps_ids() ? id_members_.size() : members_.size();
}

void TableEntryCursor::SetEntry() {
  if (layout_.keeps_ids()) {
    entry_ = {group_ | id_members_[member_].bits, id_members_[member_].id};
  } else {
    entry_ = {group_ | members_[member_], 0};
  }
}

void TableEntryCursor::Settle(Word member_bits) {
  valid_ = false;
  for (; it_.Valid(); it_.Next(), member_bits = 0) {
    const std::string_view key = it_.key().ToStringView();
    const GroupLayout& g = layout_;
    const std::string_view value = it_.value().ToStringView();
    if (!g.DecodeKey(key, &group_) || !(g.keeps_ids() ? DecodeGroupValue(g, value, id_members_)
                                                      : DecodeGroupValue(g, value, members_))) {
      corruption_ =
          Status::Corruption(table_ + " holds a malformed group " + it_.key().ToString(true));
      return;  // valid_ is false
    }
    member_ =
        g.keeps_ids()
            ? std::lower_bound(id_members_.begin(), id_members_.end(), IdMember{member_bits, 0}) -
                  id_members_.begin()
            : std::lower_bound(members_.begin(), members_.end(), member_bits) - members_.begin();
    if (member_ < GroupSize()) {
      SetEntry();
      valid_ = true;
      return;
    }
  }
}

Status TableEntryCursor::status() const {
  if (!corruption_.ok()) return corruption_;
  if (it_.status().ok()) return Status::OK();
  return FromRocks(it_.status(), "reading " + table_);
}

}  // namespace fpstore::internal
