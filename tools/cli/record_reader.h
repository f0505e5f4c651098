// Reading input records: JSONL documents, id<TAB>hash lines, or bare hashes.
//
// A RecordReader turns one input (a file or standard input) into Records,
// independent of any store: the loader, `fpstore-admin insert` and
// `fpstore-query --input` all read through it. Malformed input throws an
// InputError whose message names the place, e.g.
//
//   data.jsonl:17: missing "text" field
//
// and reading stops there: there is no partial record.
//
// The formats (see docs/tools/fpstore-query.md):
//
//   jsonl  One JSON object per line, e.g. {"id": 7, "text": "...", "url": "..."}.
//          id (--id-column): a JSON integer from 0 to 2^64 - 1, or a string
//          of decimal digits ("7"), since JSON producers often quote 64-bit
//          ids that JavaScript numbers cannot hold. Floats (7.0, 7e0),
//          negatives, other strings, and other types are errors.
//          text (--text-column): a non-empty JSON string. simdjson checks
//          that the whole line is valid UTF-8 and that escapes are well formed.
//          metadata (--meta-column, optional): a string is taken as is; any
//          other value as its compact JSON text; a missing field or null
//          gives empty metadata. Other fields are ignored. If a key repeats,
//          the first occurrence counts.
//          time (--time-column, optional): seconds since the Unix epoch as a
//          JSON integer, or a string ParseTime reads (RFC 3339); missing or
//          null: none.
//   tsv    id<TAB>hash, or id<TAB>hash<TAB>metadata (the rest of the line).
//          A header naming "time" and "signature" columns after the hash
//          (what `fpstore-admin dump` writes) puts them before the metadata.
//   hash   One hash per line; the id is the line number (1-based).
//
// In every format a line ending in "\r\n" is read as if it ended in "\n",
// blank lines (nothing, or only spaces and tabs) are skipped but still
// counted, so ids and messages use physical line numbers, and an input
// with no records is an error unless ReaderOptions::allow_empty.
// Hashes are decimal or 0x hexadecimal (see ParseFingerprint).
//
// Thread safety: one thread per RecordReader. Records are plain values that
// may be handed to other threads.

#ifndef FPSTORE_TOOLS_CLI_RECORD_READER_H_
#define FPSTORE_TOOLS_CLI_RECORD_READER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "cli/parse.h"
#include "fpstore/document.h"
#include "fpstore/simhash.h"

namespace fpstore::cli {

struct Record {
  std::uint64_t id = 0;

  // Set by the tsv and hash formats. Unset for jsonl, whose text still has
  // to be fingerprinted, with the store's options.
  std::optional<Fingerprint> fingerprint;

  // The document's text (jsonl only), UTF-8.
  std::string text;

  // The --meta-column value (jsonl) or last field (tsv); may be empty.
  std::string metadata;

  // tsv whose header names a signature column (what `fpstore-admin dump`
  // writes): the signature's bytes, one a slot; empty for none.
  std::string signature;

  // The document's time (jsonl --time-column, or a tsv time column); none
  // when the input gives none.
  std::optional<DocumentTime> time;

  // The 1-based line the record came from, for messages about it found
  // after reading (RecordReader::name() gives the file).
  std::uint64_t line = 0;
};

struct ReaderOptions {
  // The file to read; "-" means standard input.
  std::string path = "-";

  InputFormat format = InputFormat::kJsonl;

  // tsv and hash: how the hashes are written.
  HashEncoding hash_encoding = HashEncoding::kUnsigned;

  // jsonl: the top-level keys holding each field. An empty meta_column
  // means no metadata.
  std::string text_column = "text";
  std::string id_column = "id";
  std::string meta_column;
  std::string time_column = "time";

  // Whether an input without records is fine. Default: false, because an
  // empty input is nearly always a mistake (a wrong path, a failed export).
  bool allow_empty = false;

  // What to do with a malformed line. Empty (the default): Next throws
  // InputError. Otherwise Next calls it with the line's 1-based number, its
  // text (without the line end; valid during the call) and the reason, as
  // InputError::reason() would have it, and goes on with the next line. A
  // skipped line is no record: an input of bad lines only is empty. Read
  // errors still throw.
  std::function<void(std::uint64_t line, std::string_view text, const std::string& reason)>
      on_bad_line;
};

class RecordReader {
 public:
  // Opens options.path. Throws RuntimeError if it cannot be opened.
  static std::unique_ptr<RecordReader> Open(const ReaderOptions& options);

  virtual ~RecordReader() = default;

  // tsv and hash: the width of the fingerprints to read, 64 (the default)
  // or 128; a signed hash is a two's complement of that many bits, and a
  // wider value is a bad line. Set before the first Next: a load learns it
  // from the store, opened after its input.
  void SetFingerprintBits(int bits) { bits_ = bits; }

  // Fills *record with the next record and returns true, or returns false
  // at the end of the input. Throws InputError for malformed input (and at
  // the end of an input without records, unless allow_empty), RuntimeError
  // for a read error. After a throw the reader must not be used again.
  virtual bool Next(Record* record) = 0;

  // The input's name for messages ("data.jsonl", "<stdin>").
  virtual const std::string& name() const = 0;

  // Bytes consumed so far, and the total when known (regular files), for
  // progress reports.
  virtual std::uint64_t bytes_read() const = 0;
  virtual std::optional<std::uint64_t> total_bytes() const = 0;

 protected:
  int bits() const { return bits_; }

 private:
  int bits_ = 64;
};

}  // namespace fpstore::cli

#endif  // FPSTORE_TOOLS_CLI_RECORD_READER_H_
