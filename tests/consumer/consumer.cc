// A program built against fpstore as a dependency, the way tests/consumer/
// finds it: checks that headers, library and package agree on the version,
// then dedups three texts in a new store in the directory it is given.

#include <cstdio>
#include <string>
#include <string_view>

#include "fpstore/store.h"
#include "fpstore/version.h"

namespace {

int Fail(const std::string& what) {
  std::fprintf(stderr, "consumer: %s\n", what.c_str());
  return 1;
}

// Inserts `text` as document `id` and returns how many stored documents
// it duplicates, or -1 on error.
int Check(fpstore::Store& store, fpstore::DocumentId id, std::string_view text,
          std::string_view url) {
  fpstore::Result<fpstore::Fingerprint> fingerprint = store.fingerprinter().FromText(text);
  if (!fingerprint.ok()) return -1;
  fpstore::Result<fpstore::CheckResult> seen = store.CheckAndInsert(id, *fingerprint, url);
  if (!seen.ok() || !seen->inserted) return -1;
  if (!seen->matches.empty() && seen->matches.front().metadata != "https://example.org/a") {
    return -1;
  }
  return static_cast<int>(seen->matches.size());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return Fail("usage: consumer STORE_DIR");
  // FPSTORE_EXPECTED_VERSION is the version the package said it was.
  if (std::string_view(FPSTORE_VERSION_STRING) != FPSTORE_EXPECTED_VERSION) {
    return Fail("headers are " FPSTORE_VERSION_STRING ", package " FPSTORE_EXPECTED_VERSION);
  }
  if (fpstore::Version() != FPSTORE_VERSION_STRING) {
    return Fail("library is " + std::string(fpstore::Version()) +
                ", headers " FPSTORE_VERSION_STRING);
  }

  fpstore::Result<std::unique_ptr<fpstore::Store>> store = fpstore::Store::Open(argv[1]);
  if (!store.ok()) return Fail(store.status().ToString());
  const int a = Check(**store, 1, "The quick brown fox jumps over the lazy dog by the river bank",
                      "https://example.org/a");
  const int b = Check(**store, 2, "THE QUICK BROWN FOX jumps over the lazy dog, by the river bank!",
                      "https://example.org/b");
  const int c = Check(**store, 3, "Completely different words about storage engines and disks",
                      "https://example.org/c");
  if (a != 0 || b != 1 || c != 0) {
    return Fail("duplicates found: " + std::to_string(a) + " " + std::to_string(b) + " " +
                std::to_string(c) + ", expected 0 1 0");
  }
  if (const fpstore::Status closed = (*store)->Close(); !closed.ok()) {
    return Fail(closed.ToString());
  }
  std::printf("consumer: ok, fpstore %s\n", std::string(fpstore::Version()).c_str());
  return 0;
}
