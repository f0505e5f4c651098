// The changes a load or a merge makes to the tables, as the tables' writers
// read them (lib/bulk_loader_tables.cc).

#ifndef FPSTORE_LIB_TABLE_CHANGES_H_
#define FPSTORE_LIB_TABLE_CHANGES_H_

#include <cstdint>
#include <span>
#include <string>
#include <utility>

#include "fpstore/status.h"
#include "record_file.h"
#include "store_impl.h"

namespace fpstore::internal {

// A document whose table entries change: a bulk load's changes file
// holds one per document, as four integers.
struct Change {
  DocumentId id = 0;
  Fingerprint fingerprint = 0;
  Fingerprint old = 0;        // the replaced version's fingerprint
  std::uint64_t had_old = 0;  // whether that version is in the tables

  // One write of 32 bytes: four calls each cost a 10M load 10 million more.
  static constexpr std::size_t kBytes = 32;
  void Write(RecordWriter& out) const {
    char bytes[kBytes];
    PutBigEndian64(bytes, id);
    PutBigEndian64(bytes + 8, fingerprint);
    PutBigEndian64(bytes + 16, old);
    PutBigEndian64(bytes + 24, had_old);
    out.PutBytes(std::string_view(bytes, kBytes));
  }
  // REQUIRES: `bytes` holds kBytes.
  void Decode(const char* bytes) {
    id = GetBigEndian64(bytes);
    fingerprint = GetBigEndian64(bytes + 8);
    old = GetBigEndian64(bytes + 16);
    had_old = GetBigEndian64(bytes + 24);
  }
};

// Tables read every change in order, its place being the change's number.
// A bulk load's changes live in a file, for they may not fit beside the
// tables' buffers; a merge's are its staged documents, already in memory.
class Changes {
 public:
  static Changes InFile(std::string path, std::uint64_t count) {
    return Changes(std::move(path), {}, count);
  }
  static Changes Staged(std::span<const StagedDocument> staged) {
    return Changes({}, staged, staged.size());
  }

  std::uint64_t count() const { return count_; }

  // Calls visit(change, number) for each change in order; stops at the
  // first error, of reading or from visit.
  template <typename Visit>
  Status ForEach(Visit&& visit) const {
    if (path_.empty()) {
      // A staged version has no table entries to replace.
      for (std::size_t i = 0; i < staged_.size(); ++i) {
        if (Status s = visit(Change{staged_[i].id, staged_[i].fingerprint, 0, false}, i); !s.ok()) {
          return s;
        }
      }
      return Status::OK();
    }
    const MappedFile file(path_);
    if (!file.status().ok()) return file.status();
    const std::string_view bytes = file.bytes();
    if (bytes.size() != count_ * Change::kBytes) {
      return Status::IOError(path_ + " holds " + std::to_string(bytes.size()) + " bytes, not " +
                             std::to_string(count_) + " changes");
    }
    for (std::uint64_t i = 0; i < count_; ++i) {
      Change c;
      c.Decode(bytes.data() + i * Change::kBytes);
      if (Status s = visit(c, i); !s.ok()) return s;
    }
    return Status::OK();
  }

 private:
  Changes(std::string path, std::span<const StagedDocument> staged, std::uint64_t count)
      : path_(std::move(path)), staged_(staged), count_(count) {}

  std::string path_;
  std::span<const StagedDocument> staged_;
  std::uint64_t count_;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_TABLE_CHANGES_H_
