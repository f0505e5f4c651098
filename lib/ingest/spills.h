// A bulk load's input in sorted spills: buffered, sorted by (id, seq), written
// out when the buffer outgrows its budget, and read back side by side in id
// order at Finish, the last from memory.

#ifndef FPSTORE_LIB_INGEST_SPILLS_H_
#define FPSTORE_LIB_INGEST_SPILLS_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fpstore/document.h"
#include "fpstore/status.h"
#include "plan/table_entry.h"
#include "util/record_file.h"

namespace fpstore::internal {

// One buffered input document (a later `seq` wins). Plain data, its record tail
// apart, so that sorting moves bytes rather than strings.
struct BufferedRecord {
  DocumentId id;
  std::uint64_t seq;
  Word fingerprint;
  std::uint64_t tail_offset;  // into the run's tails
  std::uint64_t tail_size;
};

void SortSpill(std::vector<BufferedRecord>& records);

// `records`' tail offsets are into `tails`.
Status WriteSpill(const std::string& path, std::span<const BufferedRecord> records,
                  std::string_view tails);

// The documents of one sorted spill, in (id, seq) order: one WriteSpill wrote
// to `path`, or one kept in memory (the last), which must outlive the cursor.
class SpillCursor {
 public:
  explicit SpillCursor(const std::string& path) : reader_(std::in_place, path) {}
  SpillCursor(std::span<const BufferedRecord> records, std::string_view tails)
      : records_(records), tails_(tails) {}

  bool Next(DocumentId& id, std::uint64_t& seq, Word& fp, std::string& tail);
  Status status() const { return reader_ ? reader_->status() : Status::OK(); }

 private:
  std::optional<RecordReader> reader_;  // else the records in memory
  std::span<const BufferedRecord> records_;
  std::string_view tails_;  // of the records in memory
  std::size_t next_ = 0;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_INGEST_SPILLS_H_
