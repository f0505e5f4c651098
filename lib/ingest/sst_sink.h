// Writing one sorted SST file for ingestion into a column family: the bulk
// loader's tables, documents and marks, and the merges' files.

#ifndef FPSTORE_LIB_INGEST_SST_SINK_H_
#define FPSTORE_LIB_INGEST_SST_SINK_H_

#include <rocksdb/db.h>
#include <rocksdb/sst_file_writer.h>

#include <string>
#include <vector>

#include "fpstore/status.h"
#include "util/rocks_status.h"

namespace fpstore::internal {

// What a file is written for, which decides how it is written.
enum class SstUse {
  // A bulk load's files, there to stay: compressed with LZ4. Since format
  // 6 only table 0 and the documents compress at all (packed tables do
  // not), their keys nearly random bytes: ZSTD's fast level -1 left them
  // 15% smaller (a 10M store 1,847 MiB against 1,900) for 3-4% more of the
  // load's CPU, on its critical path (three alternated loads: 13.8-14.5 s
  // of user CPU against 13.3-13.7). In format 5, every table a key a
  // document, ZSTD was worth it: LZ4 was no faster and 27% larger.
  // Compactions write the bottom level with ZSTD still. Their pages
  // leave the OS page cache: a load writes gigabytes, and keeping them cost
  // system time for no faster load.
  kLoad,
  // A merge's table file for a table that has files: a few MB, ingested
  // into level 0 (its keys span the table's), which queries read right
  // after the merge and a level-0 compaction soon rewrites. Kept in the
  // page cache, and not compressed: the compression was work thrown away,
  // and merges of 2 s of inserts ran 8-16% faster without it
  // (docs/performance.md).
  kMergeIntoLevel0,
  // A merge's table file for an empty table: ingested at the bottom level,
  // where it stays. Kept in the page cache, and compressed as kLoad.
  kMergeIntoEmpty,
};

// The family's options, but for the compression `use` asks for.
inline rocksdb::Options WriterOptions(rocksdb::DB& db, rocksdb::ColumnFamilyHandle* family,
                                      SstUse use) {
  rocksdb::Options options = db.GetOptions(family);
  // A family that compresses nothing (packed tables: random bits) gets
  // files that are not compressed either.
  if (options.compression == rocksdb::kNoCompression &&
      options.bottommost_compression == rocksdb::kDisableCompressionOption) {
    return options;
  }
  if (use == SstUse::kMergeIntoLevel0) {
    options.compression = rocksdb::kNoCompression;
  } else {
    options.compression = rocksdb::kLZ4Compression;
  }
  options.bottommost_compression = rocksdb::kDisableCompressionOption;
  return options;
}

// The ingestion of files written here into `family`: moved (hard-linked),
// and without RocksDB writing each one's sequence number into it, a random
// write and an fdatasync a file inside the ingestion, which holds queries
// off (RocksDB reads it from the manifest since 5.16).
inline rocksdb::IngestExternalFileArg IngestionInto(rocksdb::ColumnFamilyHandle* family) {
  rocksdb::IngestExternalFileArg arg;
  arg.column_family = family;
  arg.options.move_files = true;
  arg.options.write_global_seqno = false;
  return arg;
}

// Writes one sorted SST for a column family; skips the file if it stays
// empty (RocksDB cannot ingest an empty file).
class SstSink {
 public:
  SstSink(rocksdb::DB& db, rocksdb::ColumnFamilyHandle* family, std::string path,
          SstUse use = SstUse::kLoad)
      : writer_(rocksdb::EnvOptions(), WriterOptions(db, family, use), family,
                /*invalidate_page_cache=*/use == SstUse::kLoad),
        path_(std::move(path)) {}

  Status Put(rocksdb::Slice key, rocksdb::Slice value) {
    if (Status s = OpenOnce(); !s.ok()) return s;
    return Checked(writer_.Put(key, value));
  }
  Status Delete(rocksdb::Slice key) {
    if (Status s = OpenOnce(); !s.ok()) return s;
    return Checked(writer_.Delete(key));
  }
  // Deletes [begin, end) from what the family held before the file:
  // RocksDB applies a file's range deletions to no key of the same file.
  Status DeleteRange(rocksdb::Slice begin, rocksdb::Slice end) {
    if (Status s = OpenOnce(); !s.ok()) return s;
    return Checked(writer_.DeleteRange(begin, end));
  }
  Status Merge(rocksdb::Slice key, rocksdb::Slice value) {
    if (Status s = OpenOnce(); !s.ok()) return s;
    return Checked(writer_.Merge(key, value));
  }
  // Finishes the file; appends it to `files` unless it is empty.
  Status Finish(std::vector<std::string>& files) {
    if (!opened_) return Status::OK();
    if (Status s = FromRocks(writer_.Finish(), "finishing " + path_); !s.ok()) return s;
    files.push_back(path_);
    return Status::OK();
  }

 private:
  // The error's context only on error: a load writes hundreds of millions
  // of keys, and building it for each was 4% of a 10M load's CPU.
  Status Checked(const rocksdb::Status& s) const {
    return s.ok() ? Status::OK() : FromRocks(s, "writing " + path_);
  }
  Status OpenOnce() {
    if (opened_) return Status::OK();
    opened_ = true;
    return FromRocks(writer_.Open(path_), "creating " + path_);
  }

  rocksdb::SstFileWriter writer_;
  std::string path_;
  bool opened_ = false;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_INGEST_SST_SINK_H_
