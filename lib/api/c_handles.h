// What the C API's files share (include/fpstore/c.h): the opaque handles, and
// how a call reports its Status as an int and a malloc'd message.

#ifndef FPSTORE_LIB_API_C_HANDLES_H_
#define FPSTORE_LIB_API_C_HANDLES_H_

#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fpstore/bulk_loader.h"
#include "fpstore/c.h"
#include "fpstore/fingerprinter.h"
#include "fpstore/store.h"

struct fpstore_t {
  std::unique_ptr<fpstore::Store> store;
};

struct fpstore_options_t {
  fpstore::StoreOptions options;
};

struct fpstore_matches_t {
  std::vector<fpstore::Match> matches;
};

struct fpstore_bulk_loader_t {
  fpstore_t* store;
  std::unique_ptr<fpstore::BulkLoader> loader;
};

struct fpstore_stats_t {
  fpstore::StoreStats stats;
};

struct fpstore_fingerprinter_t {
  fpstore::Fingerprinter fingerprinter;
};

namespace fpstore::internal::c_api {

// Sets *errmsg (if wanted) and returns `code`. Allocates with malloc only,
// so it cannot throw: it is what reports exceptions too.
inline int Report(int code, std::string_view message, char** errmsg) noexcept {
  if (errmsg == nullptr) return code;
  *errmsg = nullptr;
  if (code == FPSTORE_OK) return code;
  if (char* copy = static_cast<char*>(std::malloc(message.size() + 1))) {
    std::memcpy(copy, message.data(), message.size());
    copy[message.size()] = '\0';
    *errmsg = copy;
  }
  return code;
}

// Runs `body`, which returns a Status, and reports its result; an
// exception (in practice std::bad_alloc) must not unwind into C.
template <typename Body>
inline int Guard(char** errmsg, Body&& body) noexcept {
  try {
    const Status status = body();
    return Report(static_cast<int>(status.code()), status.ToString(), errmsg);
  } catch (const std::exception& e) {
    return Report(FPSTORE_IO_ERROR, e.what(), errmsg);
  } catch (...) {
    return Report(FPSTORE_IO_ERROR, "unknown C++ exception", errmsg);
  }
}

inline Status Null(std::string_view what) {
  return Status::InvalidArgument(std::string(what) + " is NULL");
}

// The bytes [data, data + len); NULL is allowed for the empty string.
// InvalidArgument unless `fp` fits the 64 bits a call without "128" gives; `wider` names the call
// that gives all of it.
inline Status FitsCall(Fingerprint fp, std::string_view wider) {
  if (fp.fits_64()) return Status::OK();
  return Status::InvalidArgument("the fingerprint is 128 bits wide; " + std::string(wider) +
                                 " gives all of it");
}

inline Result<std::string_view> Bytes(const char* data, std::size_t len, std::string_view what) {
  if (data == nullptr && len != 0) return Null(what);
  return len == 0 ? std::string_view() : std::string_view(data, len);
}

// The fingerprint and signature of a text under the store's options.
inline Result<fpstore::Sketch> SketchOf(const fpstore_t* store, const char* text, std::size_t len) {
  if (store == nullptr) return Null("store");
  Result<std::string_view> utf8 = Bytes(text, len, "text");
  if (!utf8.ok()) return utf8.status();
  return store->store->fingerprinter().SketchText(*utf8);
}

// Entry `i` of an array of times (FPSTORE_NO_TIME: none, the store's clock's); none for a null
// array.
inline std::optional<fpstore::DocumentTime> TimeOf(const int64_t* times, std::size_t i) {
  if (times == nullptr || times[i] == FPSTORE_NO_TIME) return std::nullopt;
  return times[i];
}

inline std::optional<double> ThresholdOf(double min_similarity) {
  return min_similarity < 0 ? std::nullopt : std::optional<double>(min_similarity);
}

}  // namespace fpstore::internal::c_api

#endif  // FPSTORE_LIB_API_C_HANDLES_H_
