#include "write/ingestion.h"

#include <algorithm>

#include "plan/table_entry.h"
#include "util/rocks_status.h"
#include "util/test_hooks.h"

namespace fpstore::internal {

Result<std::vector<bool>> Ingestion::OldKeysLeaving(std::vector<IdFingerprint> leaving,
                                                    const Changes& changes) const {
  if (leaving.empty()) return std::vector<bool>();
  std::vector<Word> dropped;
  std::sort(leaving.begin(), leaving.end(), ByFingerprint);
  for (const IdFingerprint& l : leaving) {
    if (dropped.empty() || dropped.back() != l.fingerprint) dropped.push_back(l.fingerprint);
  }
  // A fingerprint stays if a document that stays in the tables has it...
  Result<std::vector<Word>> kept = tables_.FingerprintsKept(leaving);
  if (!kept.ok()) return kept.status();
  std::vector<bool> stays(dropped.size(), false);
  for (Word fp : *kept) {
    stays[std::lower_bound(dropped.begin(), dropped.end(), fp) - dropped.begin()] = true;
  }
  // ... or a document of the changes takes it.
  Status s = changes.ForEach([&](const Change& c, std::uint64_t) {
    if (!c.adds) return Status::OK();
    auto at = std::lower_bound(dropped.begin(), dropped.end(), c.fingerprint);
    if (at != dropped.end() && *at == c.fingerprint) stays[at - dropped.begin()] = true;
    return Status::OK();
  });
  if (!s.ok()) return s;
  std::size_t n = 0;
  for (std::size_t i = 0; i < dropped.size(); ++i) {
    if (!stays[i]) dropped[n++] = dropped[i];
  }
  dropped.resize(n);
  if (dropped.empty()) return std::vector<bool>();
  // Looked up once here rather than by every table as it reads the changes.
  std::vector<bool> old_keys_leaving(changes.count());
  s = changes.ForEach([&](const Change& c, std::uint64_t i) {
    if (c.had_old && std::binary_search(dropped.begin(), dropped.end(), c.old)) {
      old_keys_leaving[i] = true;
    }
    return Status::OK();
  });
  if (!s.ok()) return s;
  return old_keys_leaving;
}

Status Ingestion::Ingest(const TableWriter::Output& files, Readers readers) {
  // Filters first: a query that sees the files must have theirs.
  TableFilters& filters = tables_.filters();
  filters.AddPending(files);
  Status s;
  if (readers == Readers::kBesideReaders) {
    // While a snapshot lives, RocksDB gives each file a sequence number above it; with none, a file
    // for an empty table would go in at 0, seen by queries whose snapshot still has its marks.
    rocksdb::ManagedSnapshot pinned(&db_);
    s = guard_.Ingest(db_, files.args, "ingesting into the tables");
  } else {
    s = staging_.HoldingReadPoints(
        [&] { return guard_.Ingest(db_, files.args, "ingesting into the tables"); });
  }
  filters.EndPending(files, s.ok());
  if (s.ok()) AfterIngestion();
  return s;
}

void Ingestion::FlushBefore(const TableWriter::Output& files) const {
  std::vector<rocksdb::ColumnFamilyHandle*> families;
  for (const rocksdb::IngestExternalFileArg& arg : files.args) {
    std::uint64_t active = 0, immutable = 0;
    if (db_.GetIntProperty(arg.column_family, "rocksdb.num-entries-active-mem-table", &active) &&
        db_.GetIntProperty(arg.column_family, "rocksdb.num-entries-imm-mem-tables", &immutable) &&
        active + immutable == 0) {
      continue;
    }
    families.push_back(arg.column_family);
  }
  // As the ingestion's own flush would: at once, even if writes then stall. A failure only leaves
  // the flush to the ingestion.
  rocksdb::FlushOptions flush;
  flush.allow_write_stall = true;
  if (!families.empty()) db_.Flush(flush, families).PermitUncheckedError();
}

}  // namespace fpstore::internal
