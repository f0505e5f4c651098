// crawler_dedup: the dedup step of a web crawler, on fpstore's public API.
//
//   crawler_dedup STORE PAGES.jsonl
//   crawler_dedup STORE PAGES_DIR
//
// Reads crawled pages, either one JSON object per line with a "url" and a
// "text" (other fields are ignored), or every file under a directory (its
// path is the url, its contents the text, in path order), and asks the
// store STORE (created if missing) about each in turn with
// CheckAndInsert: has a near-copy of the page been seen before, a page
// within the store's distance whose estimated similarity passes the store's
// threshold? Prints one line per page,
//
//   new <url>
//   duplicate <url> of <earlier url> (distance <d>, similarity <s>)
//
// naming the nearest earlier page, then a summary:
//
//   pages <n>, new <n>, duplicates <n>
//
// Every page is stored, duplicates too, so a later copy of a copy is still
// caught. STORE is a directory, or redis://HOST:PORT/NAME for a store that
// crawlers on many hosts share in a Redis Cluster: the loop is the same.
// Exit status: 0 done, 1 bad input or a store error, 2 usage.

#include <simdjson.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "fpstore/store.h"

namespace {

// A page's id is a hash of its url (64-bit FNV-1a), stable across runs, so
// re-crawling a url replaces its entry instead of matching itself.
fpstore::DocumentId UrlId(std::string_view url) {
  std::uint64_t hash = 0xcbf29ce484222325;
  for (const unsigned char c : url) hash = (hash ^ c) * 0x100000001b3;
  return hash;
}

struct Page {
  std::string_view url;
  std::string_view text;
};

// Reads a page from one JSONL line; false if the line is not one.
bool ParsePage(simdjson::ondemand::parser& parser, const std::string& line, Page& page) {
  const simdjson::padded_string padded(line);
  simdjson::ondemand::document doc;
  if (parser.iterate(padded).get(doc) != simdjson::SUCCESS) return false;
  // The views point into the parser's buffer: valid until the next line.
  return doc["url"].get_string().get(page.url) == simdjson::SUCCESS &&
         doc["text"].get_string().get(page.text) == simdjson::SUCCESS;
}

// Checks each page against the store and keeps the counts.
class Deduplicator {
 public:
  explicit Deduplicator(fpstore::Store& store) : store_(store) {}

  // `where` names the page's source in error messages.
  bool Check(std::string_view url, std::string_view text, const std::string& where) {
    ++pages_;
    // The fingerprint finds candidates, the signature confirms them.
    fpstore::Result<fpstore::Sketch> sketch = store_.fingerprinter().SketchText(text);
    if (!sketch.ok()) {
      std::cerr << where << ": " << sketch.status().ToString() << "\n";
      return false;
    }
    // The url goes in as the page's metadata, so a match names its url.
    fpstore::Result<fpstore::CheckResult> seen = store_.CheckAndInsert(
        {UrlId(url), sketch->fingerprint, url, std::move(sketch->signature), {}});
    if (!seen.ok()) {
      std::cerr << seen.status().ToString() << "\n";
      return false;
    }
    if (seen->matches.empty()) {
      ++fresh_;
      std::cout << "new " << url << "\n";
    } else {
      const fpstore::Match& nearest = seen->matches.front();
      char similarity[16] = "-";
      if (nearest.similarity)
        std::snprintf(similarity, sizeof similarity, "%.3f", *nearest.similarity);
      std::cout << "duplicate " << url << " of " << nearest.metadata << " (distance "
                << nearest.distance << ", similarity " << similarity << ")\n";
    }
    return true;
  }

  void PrintSummary() const {
    std::cout << "pages " << pages_ << ", new " << fresh_ << ", duplicates " << pages_ - fresh_
              << "\n";
  }

 private:
  fpstore::Store& store_;
  std::uint64_t pages_ = 0, fresh_ = 0;
};

bool CheckJsonl(const std::string& path, Deduplicator& dedup) {
  std::ifstream pages(path);
  if (!pages) {
    std::cerr << "cannot read " << path << "\n";
    return false;
  }
  simdjson::ondemand::parser parser;
  std::uint64_t line_number = 0;
  for (std::string line; std::getline(pages, line);) {
    const std::string where = path + ":" + std::to_string(++line_number);
    Page page;
    if (!ParsePage(parser, line, page)) {
      std::cerr << where << ": not an object with \"url\" and \"text\"\n";
      return false;
    }
    if (!dedup.Check(page.url, page.text, where)) return false;
  }
  return true;
}

bool CheckDirectory(const std::filesystem::path& root, Deduplicator& dedup) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (std::filesystem::recursive_directory_iterator it(root, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->is_regular_file(ec)) files.push_back(it->path());
  }
  if (ec) {
    std::cerr << root.string() << ": " << ec.message() << "\n";
    return false;
  }
  std::sort(files.begin(), files.end());  // the same order on every run
  for (const std::filesystem::path& file : files) {
    std::ifstream in(file, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in) {
      std::cerr << "cannot read " << file.string() << "\n";
      return false;
    }
    if (!dedup.Check(file.string(), text.str(), file.string())) return false;
  }
  return true;
}

int Run(const std::string& store_path, const std::string& pages) {
  fpstore::Result<std::unique_ptr<fpstore::Store>> store = fpstore::Store::Open(store_path);
  if (!store.ok()) {
    std::cerr << fpstore::HidePassword(store_path) << ": " << store.status().ToString() << "\n";
    return 1;
  }
  Deduplicator dedup(**store);
  const bool ok = std::filesystem::is_directory(pages) ? CheckDirectory(pages, dedup)
                                                       : CheckJsonl(pages, dedup);
  if (!ok) return 1;
  dedup.PrintSummary();

  const fpstore::Status closed = (*store)->Close();
  if (!closed.ok()) {
    std::cerr << closed.ToString() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: crawler_dedup STORE (PAGES.jsonl | PAGES_DIR)\n";
    return 2;
  }
  return Run(argv[1], argv[2]);
}
