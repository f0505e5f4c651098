// A bulk load's input in sorted spills: buffered, sorted by (id, seq), written
// out when the buffer outgrows its budget, and read back side by side in id
// order at Finish, the last from memory.

#ifndef FPSTORE_LIB_INGEST_SPILLS_H_
#define FPSTORE_LIB_INGEST_SPILLS_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fpstore/document.h"
#include "fpstore/status.h"

namespace fpstore::internal {

// One buffered input document (a later `seq` wins). Plain data, its metadata
// apart, so that sorting moves bytes rather than strings.
struct BufferedRecord {
  DocumentId id;
  std::uint64_t seq;
  Fingerprint fingerprint;
  std::uint64_t metadata_offset;  // into the run's metadata
  std::uint64_t metadata_size;
};

void SortSpill(std::vector<BufferedRecord>& records);

// `records`' metadata offsets are into `metadata`.
Status WriteSpill(const std::string& path, std::span<const BufferedRecord> records,
                  std::string_view metadata);

// The documents of one sorted spill, in (id, seq) order.
class SpillCursor {
 public:
  virtual ~SpillCursor() = default;
  virtual bool Next(DocumentId& id, std::uint64_t& seq, Fingerprint& fp, std::string& metadata) = 0;
  virtual Status status() const = 0;
};

// A spill that WriteSpill wrote to `path`.
std::unique_ptr<SpillCursor> ReadSpill(const std::string& path);

// A sorted spill kept in memory (the last one), which must outlive the cursor.
std::unique_ptr<SpillCursor> ReadBuffered(std::span<const BufferedRecord> records,
                                          std::string_view metadata);

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_INGEST_SPILLS_H_
