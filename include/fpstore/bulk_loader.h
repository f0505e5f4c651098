// Bulk loading: many documents into a store in one atomic step.
//
// A BulkLoader collects documents, sorts them (spilling sorted runs to disk
// when they outgrow the memory budget), writes one sorted table file per
// column family with RocksDB's SstFileWriter, and ingests all of them in a
// single IngestExternalFiles call. Until Finish returns OK the store is
// unchanged; if the loader is destroyed first, or the process dies, the
// store is as it was before (spilled files are removed, or swept by the
// next loader).
//
//   Result<std::unique_ptr<BulkLoader>> loader = store->NewBulkLoader();
//   for (const auto& doc : docs) {
//     if (Status s = (*loader)->Add(doc.id, doc.fp, doc.url); !s.ok()) return s;
//   }
//   Result<BulkLoadStats> stats = (*loader)->Finish();
//
// Thread safety: a BulkLoader is not thread-safe; use it from one thread.
// Other threads may query and scan the store meanwhile: a query, or a scan
// taking its snapshot, waits only while Finish ingests its files, at its
// very end. Writes to the store wait for the whole of Finish.

#ifndef FPSTORE_BULK_LOADER_H_
#define FPSTORE_BULK_LOADER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "fpstore/document.h"
#include "fpstore/export.h"
#include "fpstore/status.h"

namespace fpstore {

struct BulkLoadOptions {
  // Bytes of memory for buffering documents and sorting table entries;
  // beyond it, sorted runs are spilled to temp_dir and merged. The table
  // threads share it. Default: 1 GiB.
  std::size_t memory_bytes = std::size_t{1} << 30;

  // Threads that sort and write the tables; 0 means one per core.
  int threads = 0;

  // Where spilled runs and table files are written; empty means a fresh
  // directory inside the store's own, so that ingestion can move the files
  // instead of copying them. Default: empty.
  std::string temp_dir;

  // Called now and then during Finish with the work done and the work
  // expected, in index entries written; may be empty. Called from
  // Finish's threads, one call at a time. An exception it throws stops the
  // load: Finish returns an error and the store is left as it was.
  std::function<void(std::uint64_t done, std::uint64_t total)> progress;
};

struct BulkLoadStats {
  std::uint64_t added = 0;       // documents new to the store
  std::uint64_t replaced = 0;    // documents whose id was stored before
  std::uint64_t superseded = 0;  // input documents overridden by a later one with the same id
  // Documents loaded whose time was already past the store's retention when
  // the load began (in Redis: when each round of 1,000 was written):
  // stored, and never returned; the sweep removes them.
  std::uint64_t past_retention = 0;
};

class FPSTORE_EXPORT BulkLoader {
 public:
  BulkLoader() = default;
  BulkLoader(const BulkLoader&) = delete;
  BulkLoader& operator=(const BulkLoader&) = delete;

  // Abandons the load unless Finish succeeded.
  virtual ~BulkLoader() = default;

  // Adds a document. When an id is added more than once, the last one wins;
  // a document already in the store is replaced. A document without a time
  // takes the store's clock's when the load began (NewBulkLoader).
  // InvalidArgument if its signature is neither empty nor of the store's slot
  // count, or its time is not one (document.h).
  virtual Status Add(const NewDocument& doc) = 0;
  // A bare fingerprint: it matches by distance alone.
  Status Add(DocumentId id, Fingerprint fingerprint, std::string_view metadata = {}) {
    return Add(NewDocument{id, fingerprint, metadata, {}, {}});
  }

  // Documents added so far.
  virtual std::uint64_t added() const = 0;

  // Sorts, writes and ingests everything added, atomically. After it, the
  // loader accepts nothing more.
  virtual Result<BulkLoadStats> Finish() = 0;
};

}  // namespace fpstore

#endif  // FPSTORE_BULK_LOADER_H_
