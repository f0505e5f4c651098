#include "scan/verify.h"

#include <rocksdb/sst_file_reader.h>
#include <xxhash.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>
#include <roaring/roaring64map.hh>
#include <unordered_map>
#include <utility>

#include "format/families.h"
#include "format/table_entries.h"
#include "plan/table_entry.h"
#include "util/parallel.h"
#include "util/rocks_status.h"
#include "util/test_hooks.h"

// CRoaring before 0.3 (as in Debian 12) declares its C++ classes globally, later releases in
// namespace roaring: this reaches them either way.
namespace roaring {}

namespace fpstore::internal {

using namespace ::roaring;  // NOLINT(google-build-using-namespace)

namespace {

// A table-0 entry's hash: its permuted fingerprint and id.
std::uint64_t EntryHash(Word permuted, DocumentId id) {
  const std::uint64_t entry[3] = {permuted.high(), permuted.low(), id};
  return XXH3_64bits(entry, sizeof entry);
}

// A table without ids hashes each entry's fingerprint, unpermuted, so that one sum over table 0's
// distinct fingerprints is what each must match.
std::uint64_t FingerprintHash(Word fp) {
  const std::uint64_t halves[2] = {fp.high(), fp.low()};
  return XXH3_64bits(halves, sizeof halves);
}

constexpr std::size_t kMaxProblems = 20;
// Documents whose time keys are looked up at once.
constexpr std::size_t kTimeKeysPerRead = 4096;

}  // namespace

// One verification: per-table counts and order-independent hash sums checked while streaming; a
// table that disagrees gets a closer look naming what is off.
class Verifier::Verification {
 public:
  Verification(const Verifier& v, const ScanOptions& scan)
      : v_(v),
        plan_(v.tables_.plan()),
        tables_(v.tables_.plan().table_count()),
        scan_(scan),
        snapshot_(&v.db_, v.scanner_.WholeSnapshot(&filters_)),
        actual_sum_(tables_, 0),
        actual_count_(tables_, 0) {}

  Status Run() {
    if (Status s = ReadStaging(); !s.ok()) return s;
    if (Status s = ReadDocuments(); !s.ok()) return s;
    ProgressMeter progress(scan_.progress, documents_ + ids_.cardinality() * tables_);
    progress.Add(documents_);
    Status s = ForEachInParallel(tables_, scan_.threads,
                                 [&](std::size_t t, int) { return ScanTable(t, progress); });
    progress.Finish();
    if (!s.ok()) return s;
    for (std::size_t t = 0; t < tables_; ++t) {
      if (t == 0 && (actual_count_[0] != ids_.cardinality() || actual_sum_[0] != expected_sum_)) {
        DiagnoseTableZero();
      } else if (t > 0 &&
                 (actual_count_[t] != fingerprint_count_ || actual_sum_[t] != fingerprint_sum_)) {
        DiagnoseTable(t);
      }
    }
    CheckDocumentCount();
    return Verdict();
  }

 private:
  void Problem(std::string what) {
    std::lock_guard lock(mu_);
    if (problems_.size() < kMaxProblems) problems_.push_back(std::move(what));
  }
  const rocksdb::Snapshot* snapshot() const { return snapshot_.snapshot(); }

  Status ReadStaging() {
    Result<std::vector<StagedDocument>> staged = v_.staging_.Documents(snapshot());
    if (!staged.ok()) return staged.status();
    for (const StagedDocument& doc : *staged) {
      if (!doc.removal) staged_.emplace(doc.id, doc.fingerprint);
      if (doc.leaving) leaving_.emplace(doc.id, *doc.leaving);
    }
    return Status::OK();
  }

  // Every one of `times` (documents' times and ids) has its key in the times family; empties it.
  Status CheckTimeKeys(std::vector<TimeIndex::Entry>& times) {
    Status s = v_.times_.FindMissing(snapshot(), times, [&](const TimeIndex::Entry& e) {
      Problem("times: no key for document " + std::to_string(e.id) + "'s time " +
              std::to_string(e.time));
    });
    times.clear();
    return s;
  }

  // Every document but the staged ones has table-0 entries, and so has every leaving version.
  // Every document has its time's key.
  Status ReadDocuments() {
    std::vector<TimeIndex::Entry> times;
    std::unordered_map<DocumentId, Word> unseen = staged_;
    std::unique_ptr<rocksdb::Iterator> it(
        v_.db_.NewIterator(ScanReadOptions(snapshot()), v_.documents_.family()));
    Result<bool> signed_record = v_.documents_.AnySigned(snapshot());
    if (!signed_record.ok()) return signed_record.status();
    bool unsigned_reported = false;
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      Fingerprint decoded;
      DocumentTime time;
      Signature signature;
      if (it->key().size() != 8 ||
          !DecodeDocumentValue(it->value().ToStringView(), v_.documents_.width(), &decoded, &time,
                               &signature, nullptr)) {
        Problem("documents: malformed record with key " + it->key().ToString(true));
        continue;
      }
      const Word fp = decoded;
      const DocumentId id = GetBigEndian64(it->key().data());
      if (Status s = CheckTime(time, "documents: document " + std::to_string(id) + "'s time");
          !s.ok()) {
        Problem(s.message());
      }
      times.push_back({time, id});
      if (times.size() == kTimeKeysPerRead) {
        if (Status s = CheckTimeKeys(times); !s.ok()) return s;
      }
      if (!signature.empty() && !*signed_record && !std::exchange(unsigned_reported, true)) {
        Problem("documents: document " + std::to_string(id) + " has a signature, but no " +
                kSignedKey + " record says so");
      }
      ++documents_;
      if (leaving_.contains(id) && !staged_.contains(id)) {
        Problem("staging: the removal of document " + std::to_string(id) +
                " is staged, but it is stored");
      }
      if (auto mark = unseen.find(id); mark != unseen.end()) {
        if (mark->second != fp) {
          Problem("staging: the mark of document " + std::to_string(id) +
                  " does not match its fingerprint");
        }
        unseen.erase(mark);
        continue;
      }
      ids_.add(id);
      expected_sum_ += EntryHash(Permute(plan_.table(0), fp), id);
    }
    if (!it->status().ok()) return FromRocks(it->status(), "scanning documents");
    if (Status s = CheckTimeKeys(times); !s.ok()) return s;
    for (const auto& [id, fp] : unseen) {
      Problem("staging: mark for document " + std::to_string(id) + ", which is not stored");
    }
    for (const auto& [id, fp] : leaving_) {
      ids_.add(id);
      expected_sum_ += EntryHash(Permute(plan_.table(0), fp), id);
    }
    return Status::OK();
  }

  // Streams table t: count and sum (and table 0's distinct fingerprints), each member against its
  // filters, which must not show a prefix that several fingerprints share as held by one.
  Status ScanTable(std::size_t t, ProgressMeter& progress) {
    const TablePermutation& perm = plan_.table(t);
    const TableMemberFilter& filter = *(*filters_)[t];
    std::unique_ptr<rocksdb::Iterator> it(v_.tables_.NewIterator(t, ScanReadOptions(snapshot())));
    TableEntryCursor entries(*it, v_.tables_.layout(t), TableFamilyName(t));
    std::vector<Word> sharing;  // the fingerprints with the current prefix
    for (entries.SeekToFirst(); entries.Valid(); entries.Next()) {
      const TableEntry& e = entries.entry();
      const Word fp = Unpermute(perm, e.permuted);
      if (t == 0) {
        actual_sum_[0] += EntryHash(e.permuted, e.id);
        if (fingerprint_count_ == 0 || e.permuted != last0_) {
          last0_ = e.permuted;
          fingerprint_sum_ += FingerprintHash(fp);
          ++fingerprint_count_;
        }
      } else {
        actual_sum_[t] += FingerprintHash(fp);
      }
      if (++actual_count_[t] % 4096 == 0) progress.Add(4096);
      if (!filter.MayContain(e.permuted)) {
        Problem(TableFamilyName(t) + ": fingerprint " + FingerprintText(fp) +
                " is missing from its files' member filters");
      }
      if (!sharing.empty() &&
          (Permute(perm, sharing.back()) & PrefixMask(perm)) != (e.permuted & PrefixMask(perm))) {
        CheckShared(t, filter, sharing);
        sharing.clear();
      }
      if (sharing.empty() || sharing.back() != fp) sharing.push_back(fp);
    }
    if (Status s = entries.status(); !s.ok()) {
      if (!s.IsCorruption()) return s;
      Problem(s.message());
    }
    CheckShared(t, filter, sharing);
    return Status::OK();
  }

  // The fingerprints of `sharing` have one prefix in table t: if several, its filters must not say
  // that at most one has it, or queries would pass by the others.
  void CheckShared(std::size_t t, const TableMemberFilter& filter,
                   const std::vector<Word>& sharing) {
    if (sharing.size() < 2) return;
    const Word permuted = Permute(plan_.table(t), sharing.front());
    if (filter.Lookup(permuted, /*count=*/true) == PrefixMembers::kAtMostOne) {
      Problem(TableFamilyName(t) + ": the member filters show fingerprint " +
              FingerprintText(sharing.front()) + " alone with its prefix, which " +
              std::to_string(sharing.size() - 1) + " more share");
    }
  }

  // Table 0 disagrees with the documents: names its orphans, duplicates, wrong and missing entries.
  void DiagnoseTableZero() {
    std::uint64_t found = 0;
    Roaring64Map seen;
    std::unique_ptr<rocksdb::Iterator> it(v_.tables_.NewIterator(0, ScanReadOptions(snapshot())));
    TableEntryCursor entries(*it, v_.tables_.layout(0), TableFamilyName(0));
    for (entries.SeekToFirst(); entries.Valid(); entries.Next()) {
      const TableEntry& e = entries.entry();
      if (!ids_.contains(e.id)) {
        ++found;
        Problem(TableFamilyName(0) + ": entry for document " + std::to_string(e.id) +
                ", which is not stored or is staged");
        continue;
      }
      if (!seen.addChecked(e.id)) {
        ++found;
        Problem(TableFamilyName(0) + ": document " + std::to_string(e.id) +
                " has more than one entry");
      }
      std::optional<Word> fp;
      if (const auto l = leaving_.find(e.id); l != leaving_.end()) {
        fp = l->second;
      } else {
        (void)v_.documents_.Read(
            snapshot(), std::span(&e.id, 1), false,
            [&](std::size_t, const Document& doc) { fp = doc.fingerprint.low(); });
      }
      if (fp && Permute(plan_.table(0), *fp) != e.permuted) {
        ++found;
        Problem(TableFamilyName(0) + ": entry for document " + std::to_string(e.id) +
                " does not match its fingerprint");
      }
    }
    if (Status s = entries.status(); !s.ok()) Problem(s.ToString());
    const Roaring64Map missing = ids_ - seen;
    for (auto id = missing.begin(); id != missing.end(); ++id) {
      ++found;
      Problem(TableFamilyName(0) + ": document " + std::to_string(*id) + " has no entry");
      if (problems_.size() >= kMaxProblems) break;
    }
    if (found == 0) Problem(TableFamilyName(0) + ": entry hashes disagree with the documents");
  }

  // Table t, which holds each fingerprint of table 0 once, disagrees: fingerprints no document in
  // table 0 has, and the other way round.
  void DiagnoseTable(std::size_t t) {
    const std::size_t before = problems_.size();
    const TablePermutation& perm = plan_.table(t);
    rocksdb::ReadOptions lookups;  // no readahead
    lookups.snapshot = snapshot();
    std::unique_ptr<rocksdb::Iterator> it(v_.tables_.NewIterator(t, ScanReadOptions(snapshot())));
    std::unique_ptr<rocksdb::Iterator> table0(v_.tables_.NewIterator(0, lookups));
    TableEntryCursor entries(*it, v_.tables_.layout(t), TableFamilyName(t));
    for (entries.SeekToFirst(); entries.Valid(); entries.Next()) {
      const Word fp = Unpermute(perm, entries.entry().permuted);
      bool held = false;
      Status s = v_.tables_.ForEachIdOf(*table0, fp, [&](DocumentId) { return !(held = true); });
      // A malformed group of table 0 ends the walk: table 0's own problem.
      if (!s.ok()) return Problem(s.ToString());
      if (!held) {
        Problem(TableFamilyName(t) + ": fingerprint " + FingerprintText(fp) +
                ", which no document in the tables has");
      }
    }
    if (Status s = entries.status(); !s.ok()) Problem(s.ToString());
    it.reset(v_.tables_.NewIterator(t, lookups));
    table0.reset(v_.tables_.NewIterator(0, ScanReadOptions(snapshot())));
    TableEntryCursor in_t(*it, v_.tables_.layout(t), TableFamilyName(t));
    TableEntryCursor in_0(*table0, v_.tables_.layout(0), TableFamilyName(0));
    for (in_0.SeekToFirst(); in_0.Valid(); in_0.Next()) {
      const Word fp = Unpermute(plan_.table(0), in_0.entry().permuted);
      in_t.Seek(Permute(perm, fp));
      if (in_t.Valid() && in_t.entry().permuted == Permute(perm, fp)) continue;
      if (Status s = in_t.status(); !s.ok()) return Problem(s.ToString());
      Problem(TableFamilyName(t) + ": fingerprint " + FingerprintText(fp) + " of document " +
              std::to_string(in_0.entry().id) + " has no entry");
    }
    if (problems_.size() == before) {
      Problem(TableFamilyName(t) + ": entry hashes disagree with table 0");
    }
  }

  void CheckDocumentCount() {
    Result<std::uint64_t> recorded = v_.documents_.Count(snapshot());
    if (!recorded.ok()) return Problem(recorded.status().ToString());
    if (*recorded != documents_) {
      Problem("document count record says " + std::to_string(*recorded) + ", but " +
              std::to_string(documents_) + " documents are stored");
    }
  }

  Status Verdict() const {
    if (problems_.empty()) return Status::OK();
    std::string message = std::to_string(problems_.size()) +
                          (problems_.size() == kMaxProblems ? "+" : "") + " problem(s) in " +
                          v_.path_ + ":";
    for (const std::string& p : problems_) message += "\n  " + p;
    return Status::Corruption(message);
  }

  const Verifier& v_;
  const PermutationPlan& plan_;
  const std::size_t tables_;
  const ScanOptions& scan_;
  TableFilters::View filters_;
  mutable rocksdb::ManagedSnapshot snapshot_;
  std::mutex mu_;
  std::vector<std::string> problems_;  // guarded by mu_
  // The staged versions and those whose removal is staged, by id.
  std::unordered_map<DocumentId, Word> staged_, leaving_;
  std::uint64_t documents_ = 0;
  // The documents with table entries, and the sum of their table-0 hashes.
  Roaring64Map ids_;
  std::uint64_t expected_sum_ = 0;
  std::vector<std::uint64_t> actual_sum_, actual_count_;  // per table, each its thread's
  // Table 0's distinct fingerprints, by its scan's thread.
  Word last0_ = 0;
  std::uint64_t fingerprint_sum_ = 0, fingerprint_count_ = 0;
};

// Each live file is opened anew by name to read it whole. A file that is gone by then was deleted
// by a writer that compacted or merged after this handle listed it (a read-only handle beside
// another process, or this handle's own background work): it is skipped, not called corrupt, and
// its blocks are still read, checksums checked, through the file this handle keeps open by the
// consistency pass that follows.
Status Verifier::VerifyBlockChecksums() const {
  std::map<std::string, rocksdb::Options> options;  // by family name
  for (rocksdb::ColumnFamilyHandle* family : families_) {
    options.emplace(family->GetName(), db_.GetOptions(family));
  }
  std::vector<rocksdb::LiveFileMetaData> files;
  db_.GetLiveFilesMetaData(&files);
  for (const rocksdb::LiveFileMetaData& file : files) {
    const auto family = options.find(file.column_family_name);
    if (family == options.end()) continue;
    const std::string name = file.directory + "/" + file.relative_filename;
    rocksdb::SstFileReader reader(family->second);
    rocksdb::Status rs = reader.Open(name);
    if (rs.ok()) rs = reader.VerifyChecksum();
    if (rs.ok()) continue;
    std::error_code ec;
    if (!std::filesystem::exists(name, ec) && !ec) continue;
    return Status::Corruption("verifying block checksums of " + name + ": " + rs.ToString());
  }
  return Status::OK();
}

Status Verifier::Run(const ScanOptions& scan) const {
  if (Status s = VerifyBlockChecksums(); !s.ok()) return s;
  return Verification(*this, scan).Run();
}

}  // namespace fpstore::internal
