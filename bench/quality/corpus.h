// The labelled corpus of fpstore-quality: reading it, and the word
// 5-shingle sets that define its truth.

#ifndef FPSTORE_BENCH_QUALITY_CORPUS_H_
#define FPSTORE_BENCH_QUALITY_CORPUS_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fpstore::quality {

struct Document {
  std::uint64_t id = 0;
  std::string text;
  std::string url;     // empty when the line has none
  std::string source;  // empty when the line has none
};

// Reads a JSONL corpus (bench/quality/make_corpus.py writes one): one JSON
// object per line with "id", an integer from 0 to 2^64-1 unique in the file,
// "text", a non-empty string, and optionally "url" and "source", strings.
// Other keys are ignored; blank lines are skipped but counted. Stops the
// program with "FILE:LINE: reason" at the first bad line, and with a message
// naming the file if it cannot be read or holds no document.
std::vector<Document> ReadCorpus(const std::string& path);

// Words: maximal runs of code points that are letters (general category L)
// or decimal digits (Nd) by ICU's u_isalnum, each lower-cased with ICU's
// simple case mapping (u_tolower). Anything else, invalid UTF-8 included,
// separates words. Each word is hashed with XXH3-64 over its UTF-8 bytes.
std::vector<std::uint64_t> WordHashes(std::string_view utf8);

// What the truth and the MinHash baseline see of a document.
struct ShingleSet {
  // The distinct shingles, as XXH3-64 hashes of `width` consecutive word
  // hashes, ascending. A document with fewer words than `width` has one
  // shingle of all its words; one without words has none.
  std::vector<std::uint64_t> hashes;
  // XXH3-128 of the whole word sequence: two documents are exact copies
  // when their digests are equal (their texts are identical after the word
  // tokenization, up to hash collisions, which are ignored).
  std::array<std::uint64_t, 2> words_digest{};
};

ShingleSet MakeShingles(std::string_view utf8, int width);

}  // namespace fpstore::quality

#endif  // FPSTORE_BENCH_QUALITY_CORPUS_H_
