// Sorted runs of a bulk load's input documents: the loader buffers them,
// sorts each run by (id, seq), spills it to a file when the buffer outgrows
// its budget, and merges the runs in Finish, the last one from memory.

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

// Sorts a run by (id, seq).
void SortRun(std::vector<BufferedRecord>& records);

// Writes a sorted run, whose records' metadata is in `metadata`, to `path`.
Status WriteRun(const std::string& path, std::span<const BufferedRecord> records,
                std::string_view metadata);

// The documents of one sorted run, in (id, seq) order.
class RunCursor {
 public:
  virtual ~RunCursor() = default;
  virtual bool Next(DocumentId& id, std::uint64_t& seq, Fingerprint& fp, std::string& metadata) = 0;
  virtual Status status() const = 0;
};

// A run that WriteRun wrote to `path`.
std::unique_ptr<RunCursor> ReadSpilledRun(const std::string& path);

// A sorted run still in memory; it must outlive the cursor. Written out and
// read back instead, the last run cost a 10M load a second and a half.
std::unique_ptr<RunCursor> ReadBufferedRun(std::span<const BufferedRecord> records,
                                           std::string_view metadata);

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_INGEST_SPILLS_H_
