#include "table_entries.h"

#include <algorithm>

#include "rocks_status.h"

namespace fpstore::internal {

void TableEntryCursor::SeekToFirst() {
  it_.SeekToFirst();
  Settle(0);
}

void TableEntryCursor::Seek(Fingerprint permuted) {
  if (!layout_.groups) {
    it_.Seek(rocksdb::Slice(layout_.keys.Encode(permuted, 0).data(), layout_.keys.size()));
    Settle(0);
    return;
  }
  const GroupLayout& g = *layout_.groups;
  const GroupLayout::Key key = g.KeyOf(permuted);
  it_.Seek(rocksdb::Slice(key.data(), g.key_bytes()));
  // Within the group sought, from the member bits of `permuted`; in a
  // later group, from its first member.
  Settle(it_.Valid() && it_.key().ToStringView() == g.KeyView(key) ? g.MemberBits(permuted) : 0);
}

void TableEntryCursor::Next() {
  if (!valid_) return;
  if (layout_.groups && ++member_ < members_.size()) {
    entry_.permuted = group_ | members_[member_];
    return;
  }
  it_.Next();
  Settle(0);
}

void TableEntryCursor::Settle(Fingerprint member_bits) {
  valid_ = false;
  for (; it_.Valid(); it_.Next(), member_bits = 0) {
    const std::string_view key = it_.key().ToStringView();
    if (!layout_.groups) {
      if (!layout_.keys.Decode(key, &entry_)) {
        Corrupt("a malformed key " + it_.key().ToString(true));
        return;
      }
      valid_ = true;
      return;
    }
    const GroupLayout& g = *layout_.groups;
    if (!g.DecodeKey(key, &group_) || !DecodeGroupValue(g, it_.value().ToStringView(), members_)) {
      Corrupt("a malformed group " + it_.key().ToString(true));
      return;
    }
    member_ = std::lower_bound(members_.begin(), members_.end(), member_bits) - members_.begin();
    if (member_ < members_.size()) {
      entry_ = {group_ | members_[member_], 0};
      valid_ = true;
      return;
    }
  }
}

bool TableEntryCursor::Corrupt(const std::string& what) {
  corruption_ = Status::Corruption(table_ + " holds " + what);
  valid_ = false;
  return false;
}

Status TableEntryCursor::status() const {
  if (!corruption_.ok()) return corruption_;
  if (it_.status().ok()) return Status::OK();
  return FromRocks(it_.status(), "reading " + table_);
}

}  // namespace fpstore::internal
