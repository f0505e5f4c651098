// One sorted SST file for ingestion into a column family (bulk loads, merges).

#ifndef FPSTORE_LIB_INGEST_SST_SINK_H_
#define FPSTORE_LIB_INGEST_SST_SINK_H_

#include <rocksdb/db.h>
#include <rocksdb/sst_file_writer.h>

#include <string>
#include <utility>
#include <vector>

#include "fpstore/status.h"
#include "util/rocks_status.h"

namespace fpstore::internal {

// What a file is written for, which decides whether it stays in the page cache.
enum class SstUse {
  // A bulk load's files, dropped from the page cache: keeping them costs system time.
  kLoad,
  // A merge's table files, which queries read right after: kept cached.
  kMerge,
};

// The family's options, with LZ4 at every level if it compresses at all
// (compactions write the bottom level with its own compression).
inline rocksdb::Options WriterOptions(rocksdb::DB& db, rocksdb::ColumnFamilyHandle* family) {
  rocksdb::Options options = db.GetOptions(family);
  if (options.compression == rocksdb::kNoCompression &&
      options.bottommost_compression == rocksdb::kDisableCompressionOption) {
    return options;
  }
  options.compression = rocksdb::kLZ4Compression;
  options.bottommost_compression = rocksdb::kDisableCompressionOption;
  return options;
}

// Ingestion into `family`: files moved (hard-linked), with no global seqno
// written into each, a random write and fdatasync while queries wait.
inline rocksdb::IngestExternalFileArg IngestionInto(rocksdb::ColumnFamilyHandle* family) {
  rocksdb::IngestExternalFileArg arg;
  arg.column_family = family;
  arg.options.move_files = true;
  arg.options.write_global_seqno = false;
  return arg;
}

// Writes one sorted SST for a family, none if empty (RocksDB cannot ingest one).
class SstSink {
 public:
  SstSink(rocksdb::DB& db, rocksdb::ColumnFamilyHandle* family, std::string path,
          SstUse use = SstUse::kLoad)
      : writer_(rocksdb::EnvOptions(), WriterOptions(db, family), family,
                /*invalidate_page_cache=*/use == SstUse::kLoad),
        family_(family),
        path_(std::move(path)) {}

  Status Put(rocksdb::Slice key, rocksdb::Slice value) {
    if (Status s = OpenOnce(); !s.ok()) return s;
    return Checked(writer_.Put(key, value));
  }
  Status Delete(rocksdb::Slice key) {
    if (Status s = OpenOnce(); !s.ok()) return s;
    return Checked(writer_.Delete(key));
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
  // Finishes the file; appends its ingestion into the family to `args` unless it is empty.
  Status FinishInto(std::vector<rocksdb::IngestExternalFileArg>& args) {
    rocksdb::IngestExternalFileArg arg = IngestionInto(family_);
    if (Status s = Finish(arg.external_files); !s.ok()) return s;
    if (!arg.external_files.empty()) args.push_back(std::move(arg));
    return Status::OK();
  }

 private:
  // Builds the context string only on error: this runs for every key.
  Status Checked(const rocksdb::Status& s) const {
    return s.ok() ? Status::OK() : FromRocks(s, "writing " + path_);
  }
  Status OpenOnce() {
    if (opened_) return Status::OK();
    opened_ = true;
    return FromRocks(writer_.Open(path_), "creating " + path_);
  }

  rocksdb::SstFileWriter writer_;
  rocksdb::ColumnFamilyHandle* const family_;
  std::string path_;
  bool opened_ = false;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_INGEST_SST_SINK_H_
