// The changes a bulk load or a merge makes to the tables (ingest/table_writer.h).

#ifndef FPSTORE_LIB_INGEST_CHANGES_H_
#define FPSTORE_LIB_INGEST_CHANGES_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "format/records.h"
#include "fpstore/status.h"
#include "plan/table_entry.h"
#include "util/record_file.h"

namespace fpstore::internal {

// A document whose table entries change: a bulk load's changes file
// holds one per document: its id, fingerprint, old fingerprint and whether
// the old one is in the tables, big-endian, each fingerprint of the store's
// width.
struct Change {
  DocumentId id = 0;
  Word fingerprint = 0;
  Word old = 0;               // the replaced version's fingerprint
  std::uint64_t had_old = 0;  // whether that version is in the tables
  // False for a merge's removal, which only takes `old` out; not in files.
  bool adds = true;

  // A change's bytes in a store of `width`-bit fingerprints.
  static constexpr std::size_t Bytes(int width) { return 16 + 2 * FingerprintBytes(width); }
  void Write(RecordWriter& out, int width) const {
    constexpr std::size_t kMaxBytes = Bytes(128);
    const std::size_t f = FingerprintBytes(width);
    char bytes[kMaxBytes];
    PutBigEndian64(bytes, id);
    PutFingerprint(bytes + 8, fingerprint, width);
    PutFingerprint(bytes + 8 + f, old, width);
    PutBigEndian64(bytes + 8 + 2 * f, had_old);
    out.PutBytes(std::string_view(bytes, Bytes(width)));
  }
  // REQUIRES: `bytes` holds Bytes(width).
  void Decode(const char* bytes, int width) {
    const std::size_t f = FingerprintBytes(width);
    id = GetBigEndian64(bytes);
    fingerprint = GetFingerprint(bytes + 8, width);
    old = GetFingerprint(bytes + 8 + f, width);
    had_old = GetBigEndian64(bytes + 8 + 2 * f);
  }
};

// Changes numbered in id order: a bulk load's in a file mapped once for all
// tables (they may not fit beside the tables' buffers); a merge's are its
// staged documents, in memory.
class Changes {
 public:
  static Result<Changes> InFile(const std::string& path, std::uint64_t count, int width) {
    auto file = std::make_shared<const MappedFile>(path);
    if (!file->status().ok()) return file->status();
    if (file->bytes().size() != count * Change::Bytes(width)) {
      return Status::IOError(path + " holds " + std::to_string(file->bytes().size()) +
                             " bytes, not " + std::to_string(count) + " changes");
    }
    return Changes(std::move(file), {}, count, width);
  }
  static Changes Staged(std::span<const StagedDocument> staged) {
    return Changes(nullptr, staged, staged.size(), 0);
  }

  std::uint64_t count() const { return count_; }
  // Whether the changes are a bulk load's, read from a mapped file.
  bool mapped() const { return file_ != nullptr; }

  // Calls visit(change, number) in order, until visit fails.
  template <typename Visit>
  Status ForEach(Visit&& visit) const {
    for (std::uint64_t i = 0; i < count_; ++i) {
      if (Status s = visit(At(i), i); !s.ok()) return s;
    }
    return Status::OK();
  }

  // Change `i`. REQUIRES: i < count()
  Change At(std::uint64_t i) const {
    Change c;
    if (file_ != nullptr) {
      c.Decode(file_->bytes().data() + i * Change::Bytes(width_), width_);
    } else {
      // A version back at the fingerprint it has in the tables: nothing leaves.
      const StagedDocument& doc = staged_[i];
      const bool leaves = doc.leaving && (doc.removal || *doc.leaving != doc.fingerprint);
      c = Change{doc.id, doc.fingerprint, doc.leaving.value_or(0), leaves, !doc.removal};
    }
    return c;
  }

  // The id of change `i`, and where it is read, to fetch it ahead: tables
  // that keep ids read them in key order. REQUIRES: i < count()
  DocumentId IdOf(std::uint64_t i) const {
    return file_ != nullptr ? GetBigEndian64(IdAddress(i)) : staged_[i].id;
  }
  const char* IdAddress(std::uint64_t i) const {
    return file_ != nullptr ? file_->bytes().data() + i * Change::Bytes(width_)
                            : reinterpret_cast<const char*>(&staged_[i].id);
  }

 private:
  Changes(std::shared_ptr<const MappedFile> file, std::span<const StagedDocument> staged,
          std::uint64_t count, int width)
      : file_(std::move(file)), staged_(staged), count_(count), width_(width) {}

  std::shared_ptr<const MappedFile> file_;  // null for staged changes
  std::span<const StagedDocument> staged_;
  std::uint64_t count_;
  int width_;  // of the file's fingerprints
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_INGEST_CHANGES_H_
