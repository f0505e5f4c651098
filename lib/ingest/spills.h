// A bulk load's input documents in sorted spills: the loader buffers them,
// sorts each spill by (id, seq), writes it to a file when the buffer
// outgrows its budget, and at Finish reads the spills side by side in id
// order, the last one from memory.

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

// One input document as buffered: a later `seq` wins. Plain data, its
// metadata kept apart, so that buffering and sorting ten million of them
// moves bytes rather than strings.
struct BufferedRecord {
  DocumentId id;
  std::uint64_t seq;
  Fingerprint fingerprint;
  std::uint64_t metadata_offset;  // into the run's metadata
  std::uint64_t metadata_size;
};

// Sorts a spill by (id, seq).
void SortSpill(std::vector<BufferedRecord>& records);

// Writes a sorted spill, whose records' metadata is in `metadata`, to `path`.
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

// A sorted spill still in memory, which must outlive the cursor: written
// out and read back instead, the last one cost a large load seconds.
std::unique_ptr<SpillCursor> ReadBuffered(std::span<const BufferedRecord> records,
                                          std::string_view metadata);

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_INGEST_SPILLS_H_
