// How fpstore-query prints its matches: an aligned table or JSON lines, with
// each match's similarity.

#ifndef FPSTORE_TOOLS_CLI_MATCH_PRINTER_H_
#define FPSTORE_TOOLS_CLI_MATCH_PRINTER_H_

#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "fpstore/document.h"

namespace fpstore::cli {

// A similarity with three decimals, or `none` when a match or pair stands
// on its distance alone (a side without a signature): "-" in tables, "null"
// in JSON.
std::string SimilarityText(std::optional<double> similarity, const char* none);

// Prints matches as an aligned table or as JSON lines.
class MatchPrinter {
 public:
  enum class Format {
    kTable,         // aligned columns, for people
    kTsv,           // a header line, then tab-separated rows; tabs and such in metadata escaped
    kJson,          // one JSON object per match
    kJsonPerQuery,  // one JSON object per query, {"query":ID,"matches":[...]}, even with none
  };

  // `batch`: each match says which input document it answers. `bits`: the
  // store's fingerprints', printed as 16 or 32 hex digits.
  MatchPrinter(std::FILE* out, Format format, bool batch, int bits)
      : out_(out), format_(format), batch_(batch), bits_(bits) {}

  // Prints the matches of the queries in `ids` (only read when batch).
  void Print(std::span<const DocumentId> ids, std::span<const std::vector<Match>> answers);

  // Hands what was printed to the operating system.
  void Flush() { std::fflush(out_); }

  std::uint64_t matches() const { return matches_; }

 private:
  // Columns as wide as their widest cell in this call (the header's at
  // least), two spaces apart; the metadata last, as it is.
  void PrintTable(const std::vector<std::vector<std::string>>& rows);
  // The header once, then the rows, tab-separated.
  void PrintTsv(const std::vector<std::vector<std::string>>& rows);

  std::FILE* out_;
  Format format_;
  bool batch_;
  int bits_;
  bool header_printed_ = false;
  std::uint64_t matches_ = 0;
};

}  // namespace fpstore::cli

#endif  // FPSTORE_TOOLS_CLI_MATCH_PRINTER_H_
