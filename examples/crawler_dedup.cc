// crawler_dedup: the dedup step of a web crawler, on fpstore's public API.
//
//   crawler_dedup STORE_DIR PAGES.jsonl
//
// Reads crawled pages, one JSON object per line with a "url" and a "text"
// (other fields are ignored), and asks the store at STORE_DIR (created if
// missing) about each in turn with CheckAndInsert: has a page within the
// store's distance been seen before? Prints one line per page,
//
//   new <url>
//   duplicate <url> of <earlier url> (distance <d>)
//
// naming the nearest earlier page, then a summary:
//
//   pages <n>, new <n>, duplicates <n>
//
// Every page is stored, duplicates too, so a later copy of a copy is still
// caught. Exit status: 0 done, 1 bad input or a store error, 2 usage.

#include <simdjson.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>

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

int Run(const std::string& store_dir, const std::string& pages_path) {
  std::ifstream pages(pages_path);
  if (!pages) {
    std::cerr << "cannot read " << pages_path << "\n";
    return 1;
  }
  fpstore::Result<std::unique_ptr<fpstore::Store>> store = fpstore::Store::Open(store_dir);
  if (!store.ok()) {
    std::cerr << store_dir << ": " << store.status().ToString() << "\n";
    return 1;
  }

  simdjson::ondemand::parser parser;
  std::uint64_t line_number = 0, fresh = 0, duplicates = 0;
  for (std::string line; std::getline(pages, line);) {
    ++line_number;
    Page page;
    if (!ParsePage(parser, line, page)) {
      std::cerr << pages_path << ":" << line_number
                << ": not an object with \"url\" and \"text\"\n";
      return 1;
    }
    fpstore::Result<fpstore::Fingerprint> fingerprint =
        (*store)->fingerprinter().FromText(page.text);
    if (!fingerprint.ok()) {
      std::cerr << pages_path << ":" << line_number << ": " << fingerprint.status().ToString()
                << "\n";
      return 1;
    }
    // The url goes in as the page's metadata, so a match names its url.
    fpstore::Result<fpstore::CheckResult> seen =
        (*store)->CheckAndInsert(UrlId(page.url), *fingerprint, page.url);
    if (!seen.ok()) {
      std::cerr << seen.status().ToString() << "\n";
      return 1;
    }
    if (seen->matches.empty()) {
      ++fresh;
      std::cout << "new " << page.url << "\n";
    } else {
      ++duplicates;
      const fpstore::Match& nearest = seen->matches.front();
      std::cout << "duplicate " << page.url << " of " << nearest.metadata << " (distance "
                << nearest.distance << ")\n";
    }
  }
  std::cout << "pages " << line_number << ", new " << fresh << ", duplicates " << duplicates
            << "\n";

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
    std::cerr << "usage: crawler_dedup STORE_DIR PAGES.jsonl\n";
    return 2;
  }
  return Run(argv[1], argv[2]);
}
