#include "read/tables.h"

#include <algorithm>
#include <optional>

#include "format/families.h"
#include "util/parallel.h"
#include "util/rocks_status.h"

namespace fpstore::internal {

namespace {

std::vector<GroupLayout> LayoutsOf(const PermutationPlan& plan, int group_bits) {
  std::vector<GroupLayout> layouts;
  for (std::size_t t = 0; t < plan.table_count(); ++t) {
    layouts.push_back(TableGroupLayout(plan, t, group_bits));
  }
  return layouts;
}

// fpstore deletes no ranges from the tables: spare every read the check.
rocksdb::ReadOptions TableReadOptions(const rocksdb::Snapshot* snapshot) {
  rocksdb::ReadOptions options;
  options.ignore_range_deletions = true;
  options.snapshot = snapshot;
  return options;
}

}  // namespace

Tables::Tables(rocksdb::DB& db, const PermutationPlan& plan, int group_bits,
               std::vector<rocksdb::ColumnFamilyHandle*> families,
               std::shared_ptr<TableFilters> filters)
    : db_(db),
      plan_(plan),
      group_bits_(group_bits),
      families_(std::move(families)),
      layouts_(LayoutsOf(plan, group_bits)),
      filters_(std::move(filters)) {}

rocksdb::Iterator* Tables::NewIterator(std::size_t t, const rocksdb::ReadOptions& options) const {
  return db_.NewIterator(options, families_[t]);
}

Result<bool> Tables::ReadGroup(std::size_t t, const TableMemberFilter& filter,
                               const rocksdb::Snapshot* snapshot, Fingerprint permuted,
                               rocksdb::PinnableSlice& value) const {
  const GroupLayout& layout = layouts_[t];
  const GroupLayout::Key key = layout.KeyOf(permuted);
  const rocksdb::Slice key_slice(key.data(), layout.key_bytes());
  rocksdb::ReadOptions ro = TableReadOptions(snapshot);
  if (filter.files() <= 1) {
    const rocksdb::Status s = db_.Get(ro, families_[t], key_slice, &value);
    if (s.IsNotFound()) return false;
    if (!s.ok()) return FromRocks(s, "reading " + TableFamilyName(t));
    return true;
  }
  // Merges and removals write operands for nearly every group, so each group is in every file:
  // passing by files whose filters rule out the prefix saves reads.
  const Fingerprint prefix_mask = plan_.table(t).prefix_mask();
  ro.table_filter = [&](const rocksdb::TableProperties& file) {
    return FileMayTouch(file, layout, prefix_mask, permuted);
  };
  std::unique_ptr<rocksdb::Iterator> it(db_.NewIterator(ro, families_[t]));
  it->Seek(key_slice);
  if (!it->Valid() || it->key() != key_slice) {
    if (it->status().ok()) return false;
    return FromRocks(it->status(), "reading " + TableFamilyName(t));
  }
  value.PinSelf(it->value());
  return true;
}

Status Tables::ForEachIdOf(rocksdb::Iterator& table0, Fingerprint fingerprint,
                           const std::function<bool(DocumentId)>& found) const {
  const Fingerprint permuted = plan_.table(0).Apply(fingerprint);
  // The fingerprint's documents are a run of members of one group.
  const GroupLayout& layout = layouts_[0];
  const GroupLayout::Key key = layout.KeyOf(permuted);
  const rocksdb::Slice key_slice(key.data(), layout.key_bytes());
  if (!table0.Valid() || table0.key() != key_slice) table0.Seek(key_slice);
  if (!table0.Valid() || table0.key() != key_slice) {
    if (table0.status().ok()) return Status::OK();
    return FromRocks(table0.status(), "reading " + TableFamilyName(0));
  }
  const std::string_view value = table0.value().ToStringView();
  const Fingerprint group = layout.GroupOf(permuted);
  const std::optional<std::size_t> first = FirstMemberAtLeast(layout, group, value, permuted);
  if (!first) {
    return Status::Corruption(TableFamilyName(0) + " holds a malformed group " +
                              table0.key().ToString(true));
  }
  const std::size_t width = layout.member_bytes();
  for (std::size_t i = *first; i < value.size() / width; ++i) {
    const char* member = value.data() + i * width;
    if (layout.MemberAt(group, member) != permuted || !found(layout.IdAt(member))) break;
  }
  return Status::OK();
}

Result<std::vector<Fingerprint>> Tables::FingerprintsKept(
    std::span<const IdFingerprint> leaving) const {
  // A table-0 seek per fingerprint: large inputs take two threads, split between fingerprints.
  const auto kept_of = [&](std::span<const IdFingerprint> part,
                           std::vector<Fingerprint>& kept) -> Status {
    std::unique_ptr<rocksdb::Iterator> table0(
        db_.NewIterator(TableReadOptions(nullptr), families_[0]));
    // Each fingerprint once, in table 0's order, so that each group is read once.
    std::vector<Fingerprint> fps;
    for (std::size_t i = 0; i < part.size(); ++i) {
      if (i == 0 || part[i - 1].fingerprint != part[i].fingerprint) {
        fps.push_back(part[i].fingerprint);
      }
    }
    const TablePermutation& perm0 = plan_.table(0);
    std::sort(fps.begin(), fps.end(),
              [&](Fingerprint a, Fingerprint b) { return perm0.Apply(a) < perm0.Apply(b); });
    for (const Fingerprint fp : fps) {
      bool keeps = false;
      Status s = ForEachIdOf(*table0, fp, [&](DocumentId id) {
        keeps = !std::binary_search(leaving.begin(), leaving.end(), IdFingerprint{id, fp},
                                    ByFingerprint);
        return !keeps;
      });
      if (!s.ok()) return s;
      if (keeps) kept.push_back(fp);
    }
    return Status::OK();
  };
  constexpr std::size_t kSplitAbove = 4096;
  std::vector<Fingerprint> kept, kept_after;
  const Status s = ForEachHalf(
      leaving, leaving.size() > kSplitAbove, [](const IdFingerprint& f) { return f.fingerprint; },
      [&](std::size_t part, std::span<const IdFingerprint> items) {
        return kept_of(items, part == 0 ? kept : kept_after);
      },
      "finding the fingerprints that stay: ");
  if (!s.ok()) return s;
  kept.insert(kept.end(), kept_after.begin(), kept_after.end());
  std::sort(kept.begin(), kept.end());
  return kept;
}

}  // namespace fpstore::internal
