// Runs examples/crawler_dedup on the sample corpus and checks every line it
// prints against a brute-force scan of the corpus's fingerprints and
// signatures, and the corpus's planted copies (data/sample_truth.tsv)
// against what it reports.

#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/scratch_dir.h"
#include "cli/tool_runner.h"
#include "fpstore/fingerprinter.h"
#include "fpstore/options.h"
#include "fpstore/simhash.h"

namespace fpstore {
namespace {

using testing::RunTool;
using testing::ScratchDir;
using testing::ToolResult;

const std::string kSample = FPSTORE_SOURCE_DIR "/data/sample.jsonl";
const std::string kTruth = FPSTORE_SOURCE_DIR "/data/sample_truth.tsv";
constexpr int kDistance = 3;  // the default plan's, which the example uses

struct Page {
  std::uint64_t id = 0;  // the corpus's id, which the example ignores
  std::string url;
  Fingerprint fingerprint = 0;
  Signature signature;
};

// Whether `b` is a match of `a` at the store's defaults, and how it prints.
bool Matches(const Page& a, const Page& b, std::string* similarity = nullptr) {
  if (HammingDistance(a.fingerprint, b.fingerprint) > kDistance) return false;
  const double s = EstimateSimilarity(a.signature, b.signature).value();
  if (similarity != nullptr) {
    char text[16];
    std::snprintf(text, sizeof text, "%.3f", s);
    *similarity = text;
  }
  return s >= StoreOptions::kDefaultMinSimilarity;
}

// The corpus in file order, fingerprinted with the default options.
std::vector<Page> ReadCorpus() {
  const Result<Fingerprinter> fingerprinter = Fingerprinter::Create();
  EXPECT_TRUE(fingerprinter.ok());
  simdjson::dom::parser parser;
  std::vector<Page> pages;
  std::ifstream in(kSample);
  for (std::string line; std::getline(in, line);) {
    const simdjson::dom::element doc = parser.parse(line);
    Page page;
    page.id = doc["id"].get_uint64().value();
    page.url = std::string(doc["url"].get_string().value());
    Sketch sketch = fingerprinter->SketchText(doc["text"].get_string().value()).value();
    page.fingerprint = sketch.fingerprint;
    page.signature = std::move(sketch.signature);
    pages.push_back(std::move(page));
  }
  return pages;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

class CrawlerDedupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pages_ = ReadCorpus();
    ASSERT_EQ(pages_.size(), 323u);
    result_ = RunTool(FPSTORE_CRAWLER_DEDUP_BINARY, {(dir_.path() / "store").string(), kSample});
    ASSERT_EQ(result_.exit_code, 0) << result_.err;
    lines_ = Lines(result_.out);
    ASSERT_EQ(lines_.size(), pages_.size() + 1) << result_.out;
  }

  ScratchDir dir_;
  std::vector<Page> pages_;
  ToolResult result_;
  std::vector<std::string> lines_;
};

// Page i is a duplicate iff an earlier page is within the distance and its
// similarity passes the default threshold, and the example names one of
// the nearest such pages, with its similarity.
TEST_F(CrawlerDedupTest, EveryLineAgreesWithBruteForce) {
  std::uint64_t duplicates = 0, refused = 0;
  for (std::size_t i = 0; i < pages_.size(); ++i) {
    int nearest = kDistance + 1;
    std::map<std::string, std::string> nearest_urls;  // url -> its similarity, printed
    for (std::size_t j = 0; j < i; ++j) {
      std::string similarity;
      if (!Matches(pages_[i], pages_[j], &similarity)) {
        refused += HammingDistance(pages_[i].fingerprint, pages_[j].fingerprint) <= kDistance;
        continue;
      }
      const int d = HammingDistance(pages_[i].fingerprint, pages_[j].fingerprint);
      if (d < nearest) {
        nearest = d;
        nearest_urls.clear();
      }
      if (d == nearest) nearest_urls[pages_[j].url] = similarity;
    }
    const std::string& line = lines_[i];
    if (nearest > kDistance) {
      EXPECT_EQ(line, "new " + pages_[i].url);
      continue;
    }
    ++duplicates;
    const std::string head = "duplicate " + pages_[i].url + " of ";
    const std::string tail = " (distance " + std::to_string(nearest) + ", similarity ";
    ASSERT_TRUE(line.starts_with(head)) << line;
    const std::size_t at = line.rfind(tail);
    ASSERT_NE(at, std::string::npos) << line;
    const std::string of = line.substr(head.size(), at - head.size());
    ASSERT_TRUE(nearest_urls.contains(of)) << line;
    EXPECT_EQ(line.substr(at + tail.size()), nearest_urls[of] + ")") << line;
  }
  EXPECT_GT(refused, 0u) << "the corpus must hold candidates that are not near-copies";
  EXPECT_EQ(lines_.back(), "pages 323, new " + std::to_string(pages_.size() - duplicates) +
                               ", duplicates " + std::to_string(duplicates));
}

// Of each exact or light copy and its original (which must pair at k = 3,
// data/README.md), whichever comes later is reported as a duplicate.
TEST_F(CrawlerDedupTest, ReportsEveryCopyThatMustPair) {
  std::map<std::uint64_t, std::size_t> position;  // corpus id -> line
  for (std::size_t i = 0; i < pages_.size(); ++i) position[pages_[i].id] = i;
  std::ifstream truth(kTruth);
  int must_pair = 0;
  std::uint64_t copy = 0, original = 0;
  for (std::string kind; truth >> copy >> original >> kind;) {
    if (kind != "exact" && kind != "light") continue;
    ++must_pair;
    const std::size_t later = std::max(position.at(copy), position.at(original));
    EXPECT_TRUE(lines_[later].starts_with("duplicate ")) << lines_[later];
  }
  EXPECT_EQ(must_pair, 32 + 43);
}

// Pages stay in the store: a second run sees every page stored, so a page
// is a duplicate iff any other page, earlier or later, is within the
// distance, and never of itself (same url, same id).
TEST_F(CrawlerDedupTest, SecondRunSeesEveryPageButItself) {
  const ToolResult again =
      RunTool(FPSTORE_CRAWLER_DEDUP_BINARY, {(dir_.path() / "store").string(), kSample});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const std::vector<std::string> lines = Lines(again.out);
  ASSERT_EQ(lines.size(), lines_.size());
  std::uint64_t duplicates = 0;
  for (std::size_t i = 0; i < pages_.size(); ++i) {
    bool has_other = false;
    for (std::size_t j = 0; j < pages_.size() && !has_other; ++j) {
      has_other = j != i && Matches(pages_[i], pages_[j]);
    }
    duplicates += has_other;
    if (!has_other) {
      EXPECT_EQ(lines[i], "new " + pages_[i].url);
      continue;
    }
    EXPECT_TRUE(lines[i].starts_with("duplicate " + pages_[i].url + " of ")) << lines[i];
    EXPECT_EQ(lines[i].find(" of " + pages_[i].url + " "), std::string::npos) << lines[i];
  }
  const auto first_run = static_cast<std::uint64_t>(
      std::count_if(lines_.begin(), lines_.end(),
                    [](const std::string& l) { return l.starts_with("duplicate "); }));
  EXPECT_GT(duplicates, first_run) << "originals now find their later copies too";
}

// A directory of files: each file is a page, its path the url, in path order.
TEST(CrawlerDedupDirectoryTest, FilesArePagesInPathOrder) {
  ScratchDir dir;
  const std::string text =
      "the permutation tables of the paper find every fingerprint within three bits of a "
      "query by a prefix range scan per table, and a popcount confirms each candidate";
  const std::string a = dir.Write("site/a.txt", text);
  // Different bytes, the same words: a copy at distance 0.
  const std::string b = dir.Write("site/b/copy.txt", text + "\n");
  const std::string c = dir.Write("site/c.txt", "an unrelated page about something else entirely");
  const ToolResult r = RunTool(FPSTORE_CRAWLER_DEDUP_BINARY,
                               {(dir.path() / "store").string(), (dir.path() / "site").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "new " + a + "\nduplicate " + b + " of " + a +
                       " (distance 0, similarity 1.000)\nnew " + c +
                       "\npages 3, new 2, duplicates 1\n");
}

TEST(CrawlerDedupUsageTest, BadInputAndUsage) {
  ScratchDir dir;
  const std::string bad =
      dir.Write("bad.jsonl", "{\"url\": \"a\", \"text\": \"x\"}\n{\"url\": 1}\n");
  const ToolResult result =
      RunTool(FPSTORE_CRAWLER_DEDUP_BINARY, {(dir.path() / "store").string(), bad});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("bad.jsonl:2: "), std::string::npos) << result.err;
  EXPECT_EQ(RunTool(FPSTORE_CRAWLER_DEDUP_BINARY, {}).exit_code, 2);
}

}  // namespace
}  // namespace fpstore
