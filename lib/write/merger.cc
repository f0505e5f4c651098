#include "write/merger.h"

#include <rocksdb/env.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "util/test_hooks.h"

namespace fpstore::internal {

void Merger::Start() {
  thread_ = std::thread([this] {
    while (!stopping_) {
      if (!staging_.WaitUntilDue()) continue;
      MergeTurnLock merge(locks_.merge, MergeTurnLock::kBehind);
      (void)Merge();  // a failure is kept by staging_, and stops writes
    }
  });
}

void Merger::Stop() {
  stopping_ = true;
  staging_.Stop();
  if (thread_.joinable()) thread_.join();
}

Status Merger::MergeNow() {
  MergeTurnLock merge(locks_.merge, MergeTurnLock::kAhead);
  return Merge();
}

namespace {

double MillisecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

Status Merger::Merge() {
  const auto began = std::chrono::steady_clock::now();
  // Made before the lock, so that writers do not wait while the new index's pages fault in.
  std::shared_ptr<StagingIndex> next = staging_.NextIndex();
  Result<std::vector<DocumentId>> ids = std::vector<DocumentId>();
  // From asking for the writers' lock, which new writers then queue behind, to giving it back.
  double writers_held_ms = 0;
  {
    const auto asked = std::chrono::steady_clock::now();
    WriterLock writers(locks_.writers);
    ids = staging_.BeginMerge(std::move(next));
    writers_held_ms = MillisecondsSince(asked);
  }
  if (!ids.ok()) return ids.status();
  if (ids->empty()) return Status::OK();
  Status s = DuringMerge();

  // Writers to these ids wait for the merge, so the versions read here stay current. One pass over
  // the marks from the first id to the last, joined with the ids: earlier merges' mark deletions,
  // not yet compacted away, lie below that range when ids grow.
  std::vector<StagedDocument> docs;
  if (s.ok()) {
    Result<std::vector<StagedDocument>> staged = staging_.Documents(nullptr, *ids);
    s = staged.status();
    if (staged.ok()) {
      auto id = ids->begin();
      for (const StagedDocument& doc : *staged) {
        id = std::lower_bound(id, ids->end(), doc.id);
        if (id == ids->end()) break;
        if (*id == doc.id) docs.push_back(doc);
      }
    }
  }
  TableWriter::Output files;
  std::optional<ScratchDir> dir;
  if (s.ok() && !docs.empty()) {
    Result<ScratchDir> made = ScratchDir::Make(store_path_);
    s = made.status();
    if (made.ok()) {
      dir.emplace(*std::move(made));
      s = WriteFiles(docs, *dir, files);
    }
  }
  if (s.ok() && !files.args.empty()) {
    ingestion_.FlushBefore(files);
    const auto asked = std::chrono::steady_clock::now();
    WriterLock writers(locks_.writers);
    s = ingestion_.Ingest(files, Ingestion::Readers::kBesideReaders);
    writers_held_ms += MillisecondsSince(asked);
  }
  // Writers wait while the merge asks for and holds their lock: what a write's latency meets
  // (docs/performance.md, "A crawl").
  rocksdb::Log(rocksdb::InfoLogLevel::INFO_LEVEL, db_.GetDBOptions().info_log.get(),
               "fpstore: merge of %zu documents in %.1f ms, writers held out %.1f ms: %s",
               docs.size(), MillisecondsSince(began), writers_held_ms, s.ToString().c_str());
  // The tables hold the merged documents at every snapshot from the ingestion on; readers that
  // took the index with an older one keep it.
  staging_.EndMerge(s);
  return s;
}

Status Merger::WriteFiles(std::span<const StagedDocument> staged, const ScratchDir& dir,
                          TableWriter::Output& out) {
  SstSink marks(db_, staging_.family(), dir.Path("staging.sst"));
  std::vector<IdFingerprint> leaving;
  for (const StagedDocument& doc : staged) {
    if (doc.leaving) leaving.push_back({doc.id, *doc.leaving});
    if (Status s = marks.Delete(Key8(doc.id).view()); !s.ok()) return s;
  }
  const Changes changes = Changes::Staged(staged);
  Result<std::vector<bool>> old_keys_leaving =
      ingestion_.OldKeysLeaving(std::move(leaving), changes);
  if (!old_keys_leaving.ok()) return old_keys_leaving.status();
  if (Status s = marks.FinishInto(out.args); !s.ok()) return s;
  TableWriter::Options options;
  options.memory_bytes = memory_bytes_;
  options.use = SstUse::kMerge;
  return TableWriter(ingestion_.target(), dir).Write(changes, *old_keys_leaving, options, out);
}

}  // namespace fpstore::internal
