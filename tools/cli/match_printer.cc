#include "cli/match_printer.h"

#include <algorithm>

#include "cli/parse.h"

namespace fpstore::cli {

namespace {

// `text` for a table cell: control characters (tabs and line ends too)
// written as \t, \n, \r or \xHH, so that each match stays on one line.
std::string TableCell(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (byte < 0x20 || byte == 0x7f) {
      char escape[8];
      std::snprintf(escape, sizeof(escape), "\\x%02x", byte);
      out += escape;
    } else {
      out += c;
    }
  }
  return out;
}

// `text` for a TSV cell: a backslash doubled, then as TableCell, so that the escapes read back.
std::string TsvCell(std::string_view text) {
  std::string doubled;
  for (const char c : text) {
    if (c == '\\') doubled += '\\';
    doubled += c;
  }
  return TableCell(doubled);
}

}  // namespace

std::string SimilarityText(std::optional<double> similarity, const char* none) {
  if (!similarity) return none;
  char text[16];
  std::snprintf(text, sizeof text, "%.3f", *similarity);
  return text;
}

void MatchPrinter::Print(std::span<const DocumentId> ids,
                         std::span<const std::vector<Match>> answers) {
  const auto json_match = [this](const Match& match) {
    return "\"id\":" + std::to_string(match.id) +
           ",\"distance\":" + std::to_string(match.distance) +
           ",\"similarity\":" + SimilarityText(match.similarity, "null") + ",\"fingerprint\":\"" +
           FormatFingerprint(match.fingerprint, bits_) +
           "\",\"time\":" + std::to_string(match.time) +
           ",\"metadata\":" + JsonString(match.metadata);
  };
  std::vector<std::vector<std::string>> rows;
  for (std::size_t q = 0; q < answers.size(); ++q) {
    if (format_ == Format::kJsonPerQuery) {
      std::string line = "{";
      if (batch_) line += "\"query\":" + std::to_string(ids[q]) + ",";
      line += "\"matches\":[";
      for (std::size_t m = 0; m < answers[q].size(); ++m) {
        line += (m == 0 ? "{" : ",{") + json_match(answers[q][m]) + "}";
      }
      line += "]}\n";
      std::fputs(line.c_str(), out_);
      matches_ += answers[q].size();
      continue;
    }
    for (const Match& match : answers[q]) {
      ++matches_;
      if (format_ == Format::kJson) {
        std::string line = "{";
        if (batch_) line += "\"query\":" + std::to_string(ids[q]) + ",";
        line += json_match(match) + "}\n";
        std::fputs(line.c_str(), out_);
        continue;
      }
      std::vector<std::string> row;
      if (batch_) row.push_back(std::to_string(ids[q]));
      row.push_back(std::to_string(match.id));
      row.push_back(std::to_string(match.distance));
      row.push_back(SimilarityText(match.similarity, "-"));
      row.push_back(FormatFingerprint(match.fingerprint, bits_));
      row.push_back(FormatTime(match.time));
      row.push_back(format_ == Format::kTsv ? TsvCell(match.metadata) : TableCell(match.metadata));
      rows.push_back(std::move(row));
    }
  }
  if (format_ == Format::kTsv) {
    PrintTsv(rows);
  } else if (!rows.empty()) {
    PrintTable(rows);
  }
}

void MatchPrinter::PrintTsv(const std::vector<std::vector<std::string>>& rows) {
  const auto print_row = [&](const std::vector<std::string>& row) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) line += (c == 0 ? "" : "\t") + row[c];
    std::fprintf(out_, "%s\n", line.c_str());
  };
  if (!header_printed_) {
    std::vector<std::string> header;
    if (batch_) header.push_back("query");
    for (const char* name : {"id", "distance", "similarity", "fingerprint", "time", "metadata"}) {
      header.push_back(name);
    }
    print_row(header);
    header_printed_ = true;
  }
  for (const auto& row : rows) print_row(row);
}

void MatchPrinter::PrintTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::string> header;
  if (batch_) header.push_back("query");
  for (const char* name : {"id", "distance", "similarity", "fingerprint", "time", "metadata"}) {
    header.push_back(name);
  }
  std::vector<std::size_t> widths(header.size());
  for (std::size_t c = 0; c < header.size(); ++c) widths[c] = header[c].size();
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  const auto print_row = [&](const std::vector<std::string>& row) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(widths[c] - row[c].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::fprintf(out_, "%s\n", line.c_str());
  };
  if (!header_printed_) {
    print_row(header);
    header_printed_ = true;
  }
  for (const auto& row : rows) print_row(row);
}

}  // namespace fpstore::cli
