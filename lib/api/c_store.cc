// The C API's store handle (include/fpstore/c.h): options, open and close,
// writes and queries a document at a time, and the matches they return.

#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/c_handles.h"
#include "fpstore/c.h"
#include "fpstore/signature.h"
#include "fpstore/store.h"
#include "fpstore/version.h"

namespace {

using fpstore::Fingerprint;
using fpstore::Result;
using fpstore::Status;
using namespace fpstore::internal::c_api;

// c.h spells these values out for C; they must stay equal.
static_assert(FPSTORE_OK == static_cast<int>(Status::Code::kOk));
static_assert(FPSTORE_NOT_FOUND == static_cast<int>(Status::Code::kNotFound));
static_assert(FPSTORE_CORRUPTION == static_cast<int>(Status::Code::kCorruption));
static_assert(FPSTORE_INVALID_ARGUMENT == static_cast<int>(Status::Code::kInvalidArgument));
static_assert(FPSTORE_IO_ERROR == static_cast<int>(Status::Code::kIOError));
static_assert(FPSTORE_BUSY == static_cast<int>(Status::Code::kBusy));
static_assert(FPSTORE_NOT_SUPPORTED == static_cast<int>(Status::Code::kNotSupported));
static_assert(FPSTORE_DURABILITY_SYNC == static_cast<int>(fpstore::Durability::kSync));
static_assert(FPSTORE_DURABILITY_GROUP_COMMIT ==
              static_cast<int>(fpstore::Durability::kGroupCommit));
static_assert(FPSTORE_DURABILITY_NO_SYNC == static_cast<int>(fpstore::Durability::kNoSync));

Result<Fingerprint> FingerprintOf(const fpstore_t* store, const char* text, std::size_t len) {
  if (store == nullptr) return Null("store");
  Result<std::string_view> utf8 = Bytes(text, len, "text");
  if (!utf8.ok()) return utf8.status();
  return store->store->fingerprinter().FromText(*utf8);
}

Result<fpstore::InsertPolicy> PolicyOf(int policy) {
  if (policy != FPSTORE_INSERT_ALWAYS && policy != FPSTORE_INSERT_IF_NO_MATCH) {
    return Status::InvalidArgument("policy " + std::to_string(policy) +
                                   " is none of FPSTORE_INSERT_*");
  }
  return policy == FPSTORE_INSERT_ALWAYS ? fpstore::InsertPolicy::kAlways
                                         : fpstore::InsertPolicy::kIfNoMatch;
}

// CheckAndInsert of `doc`, its answer handed to the caller.
Status CheckAndInsert(fpstore_t* store, const fpstore::NewDocument& doc, int policy,
                      const fpstore::QueryOptions& options, fpstore_matches_t** matches,
                      int* inserted, int* past_retention = nullptr) {
  if (matches == nullptr) return Null("matches");
  if (inserted == nullptr) return Null("inserted");
  Result<fpstore::InsertPolicy> how = PolicyOf(policy);
  if (!how.ok()) return how.status();
  Result<fpstore::CheckResult> checked = store->store->CheckAndInsert(doc, *how, options);
  if (!checked.ok()) return checked.status();
  *matches = new fpstore_matches_t{std::move(checked->matches)};
  *inserted = checked->inserted ? 1 : 0;
  if (past_retention != nullptr) *past_retention = checked->past_retention ? 1 : 0;
  return Status::OK();
}

// Match `i`, or null for NULL matches or an index past the end.
const fpstore::Match* MatchAt(const fpstore_matches_t* matches, std::size_t i) {
  if (matches == nullptr || i >= matches->matches.size()) return nullptr;
  return &matches->matches[i];
}

// Hands a query's answer to the caller as a new fpstore_matches_t.
Status SetMatches(Result<std::vector<fpstore::Match>> found, fpstore_matches_t** matches) {
  if (!found.ok()) return found.status();
  *matches = new fpstore_matches_t{std::move(*found)};
  return Status::OK();
}

// Query of a text's sketch, its answer handed to the caller.
Status QueryText(const fpstore_t* store, const char* text, std::size_t len,
                 const fpstore::QueryOptions& options, fpstore_matches_t** matches) {
  if (matches == nullptr) return Null("matches");
  Result<fpstore::Sketch> sketch = SketchOf(store, text, len);
  if (!sketch.ok()) return sketch.status();
  return SetMatches(store->store->Query(*sketch, options), matches);
}

}  // namespace

extern "C" {

const char* fpstore_version(void) { return FPSTORE_VERSION_STRING; }

void fpstore_free(void* ptr) { std::free(ptr); }

fpstore_options_t* fpstore_options_create(void) { return new (std::nothrow) fpstore_options_t; }

void fpstore_options_destroy(fpstore_options_t* options) { delete options; }

void fpstore_options_set_create_if_missing(fpstore_options_t* options, int value) {
  if (options == nullptr) return;
  options->options.create_if_missing = value != 0;
}

void fpstore_options_set_read_only(fpstore_options_t* options, int value) {
  if (options == nullptr) return;
  options->options.read_only = value != 0;
}

void fpstore_options_set_drop_damaged_log(fpstore_options_t* options, int value) {
  if (options == nullptr) return;
  options->options.drop_damaged_log = value != 0;
}

void fpstore_options_set_bits(fpstore_options_t* options, int bits) {
  if (options == nullptr) return;
  options->options.bits = bits;
}

void fpstore_options_set_blocks(fpstore_options_t* options, int blocks) {
  if (options == nullptr) return;
  options->options.blocks = blocks;
}

void fpstore_options_set_distance(fpstore_options_t* options, int distance) {
  if (options == nullptr) return;
  options->options.distance = distance;
}

void fpstore_options_set_expected_documents(fpstore_options_t* options, uint64_t documents) {
  if (options == nullptr) return;
  options->options.expected_documents = documents;
}

void fpstore_options_set_durability(fpstore_options_t* options, int durability) {
  if (options == nullptr) return;
  // Any int converts to Durability; fpstore_open rejects values naming no enumerator.
  options->options.durability = static_cast<fpstore::Durability>(durability);
}

void fpstore_options_set_min_similarity(fpstore_options_t* options, double min_similarity) {
  if (options == nullptr) return;
  options->options.min_similarity = min_similarity;
}

void fpstore_options_set_clock(fpstore_options_t* options, fpstore_clock_fn clock, void* context) {
  if (options == nullptr) return;
  options->options.clock = nullptr;
  if (clock != nullptr) options->options.clock = [clock, context] { return clock(context); };
}

void fpstore_options_set_retention_seconds(fpstore_options_t* options, int64_t seconds) {
  if (options == nullptr) return;
  options->options.retention_seconds = seconds;
}

void fpstore_options_set_refresh_matches(fpstore_options_t* options, int value) {
  if (options == nullptr) return;
  options->options.refresh_matches = value != 0;
}

void fpstore_options_set_redis_user(fpstore_options_t* options, const char* user) {
  if (options == nullptr) return;
  options->options.redis_user = user != nullptr ? user : "";
}

void fpstore_options_set_redis_password(fpstore_options_t* options, const char* password) {
  if (options == nullptr) return;
  options->options.redis_password = password != nullptr ? password : "";
}

void fpstore_options_set_redis_tls(fpstore_options_t* options, const char* ca_file,
                                   const char* cert_file, const char* key_file) {
  if (options == nullptr) return;
  options->options.redis_tls_ca_file = ca_file != nullptr ? ca_file : "";
  options->options.redis_tls_cert_file = cert_file != nullptr ? cert_file : "";
  options->options.redis_tls_key_file = key_file != nullptr ? key_file : "";
}

int fpstore_open(const char* path, const fpstore_options_t* options, fpstore_t** store,
                 char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    if (path == nullptr) return Null("path");
    if (store == nullptr) return Null("store");
    const fpstore::StoreOptions defaults;
    const fpstore::StoreOptions& chosen = options != nullptr ? options->options : defaults;
    const int durability = static_cast<int>(chosen.durability);
    if (durability < FPSTORE_DURABILITY_SYNC || durability > FPSTORE_DURABILITY_NO_SYNC) {
      return Status::InvalidArgument("durability " + std::to_string(durability) +
                                     " is none of FPSTORE_DURABILITY_*");
    }
    Result<std::unique_ptr<fpstore::Store>> opened = fpstore::Store::Open(path, chosen);
    if (!opened.ok()) return opened.status();
    *store = new fpstore_t{std::move(*opened)};
    return Status::OK();
  });
}

int fpstore_destroy(const char* path, char** errmsg) {
  return fpstore_destroy_with_options(path, nullptr, errmsg);
}

int fpstore_destroy_with_options(const char* path, const fpstore_options_t* options,
                                 char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    if (path == nullptr) return Null("path");
    return fpstore::DestroyStore(path,
                                 options != nullptr ? options->options : fpstore::StoreOptions{});
  });
}

int fpstore_close(fpstore_t* store, char** errmsg) {
  const std::unique_ptr<fpstore_t> owned(store);
  return Guard(errmsg, [&] { return owned ? owned->store->Close() : Status::OK(); });
}

int fpstore_fingerprint(const fpstore_t* store, const char* text, size_t text_len,
                        uint64_t* fingerprint, char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    if (fingerprint == nullptr) return Null("fingerprint");
    Result<Fingerprint> fp = FingerprintOf(store, text, text_len);
    if (!fp.ok()) return fp.status();
    if (Status s = FitsCall(*fp, "fpstore_fingerprint128"); !s.ok()) return s;
    *fingerprint = fp->low();
    return Status::OK();
  });
}

int fpstore_fingerprint128(const fpstore_t* store, const char* text, size_t text_len,
                           uint64_t* fingerprint_high, uint64_t* fingerprint, char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    if (fingerprint_high == nullptr) return Null("fingerprint_high");
    if (fingerprint == nullptr) return Null("fingerprint");
    Result<Fingerprint> fp = FingerprintOf(store, text, text_len);
    if (!fp.ok()) return fp.status();
    *fingerprint_high = fp->high();
    *fingerprint = fp->low();
    return Status::OK();
  });
}

int fpstore_insert(fpstore_t* store, uint64_t id, uint64_t fingerprint, const char* metadata,
                   size_t metadata_len, char** errmsg) {
  return fpstore_insert128(store, id, 0, fingerprint, metadata, metadata_len, errmsg);
}

int fpstore_insert128(fpstore_t* store, uint64_t id, uint64_t fingerprint_high,
                      uint64_t fingerprint, const char* metadata, size_t metadata_len,
                      char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    if (store == nullptr) return Null("store");
    Result<std::string_view> meta = Bytes(metadata, metadata_len, "metadata");
    if (!meta.ok()) return meta.status();
    return store->store->Insert(id, Fingerprint(fingerprint_high, fingerprint), *meta);
  });
}

int fpstore_insert_text(fpstore_t* store, uint64_t id, const char* text, size_t text_len,
                        const char* metadata, size_t metadata_len, char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    Result<fpstore::Sketch> sketch = SketchOf(store, text, text_len);
    if (!sketch.ok()) return sketch.status();
    Result<std::string_view> meta = Bytes(metadata, metadata_len, "metadata");
    if (!meta.ok()) return meta.status();
    return store->store->Insert({id, sketch->fingerprint, *meta, std::move(sketch->signature), {}});
  });
}

int fpstore_remove(fpstore_t* store, uint64_t id, char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    if (store == nullptr) return Null("store");
    return store->store->Remove(id);
  });
}

int fpstore_flush(fpstore_t* store, char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    if (store == nullptr) return Null("store");
    return store->store->Flush();
  });
}

int fpstore_expire(fpstore_t* store, int64_t before, uint64_t* removed, char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    if (store == nullptr) return Null("store");
    Result<std::uint64_t> expired = store->store->Expire(before);
    if (!expired.ok()) return expired.status();
    if (removed != nullptr) *removed = *expired;
    return Status::OK();
  });
}

int fpstore_query(const fpstore_t* store, uint64_t fingerprint, int k, fpstore_matches_t** matches,
                  char** errmsg) {
  return fpstore_query128(store, 0, fingerprint, k, matches, errmsg);
}

int fpstore_query128(const fpstore_t* store, uint64_t fingerprint_high, uint64_t fingerprint, int k,
                     fpstore_matches_t** matches, char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    if (store == nullptr) return Null("store");
    if (matches == nullptr) return Null("matches");
    return SetMatches(store->store->Query(Fingerprint(fingerprint_high, fingerprint), k), matches);
  });
}

int fpstore_query_text(const fpstore_t* store, const char* text, size_t text_len, int k,
                       fpstore_matches_t** matches, char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    return QueryText(store, text, text_len, {k, std::nullopt}, matches);
  });
}

int fpstore_query_text_min_similarity(const fpstore_t* store, const char* text, size_t text_len,
                                      int k, double min_similarity, fpstore_matches_t** matches,
                                      char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    return QueryText(store, text, text_len, {k, ThresholdOf(min_similarity)}, matches);
  });
}

int fpstore_check_and_insert(fpstore_t* store, uint64_t id, uint64_t fingerprint,
                             const char* metadata, size_t metadata_len, int policy,
                             fpstore_matches_t** matches, int* inserted, char** errmsg) {
  return fpstore_check_and_insert128(store, id, 0, fingerprint, metadata, metadata_len, policy,
                                     matches, inserted, errmsg);
}

int fpstore_check_and_insert128(fpstore_t* store, uint64_t id, uint64_t fingerprint_high,
                                uint64_t fingerprint, const char* metadata, size_t metadata_len,
                                int policy, fpstore_matches_t** matches, int* inserted,
                                char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    if (store == nullptr) return Null("store");
    Result<std::string_view> meta = Bytes(metadata, metadata_len, "metadata");
    if (!meta.ok()) return meta.status();
    return CheckAndInsert(store, {id, Fingerprint(fingerprint_high, fingerprint), *meta, {}, {}},
                          policy, {}, matches, inserted);
  });
}

int fpstore_check_and_insert_text(fpstore_t* store, uint64_t id, const char* text, size_t text_len,
                                  const char* metadata, size_t metadata_len, int policy,
                                  fpstore_matches_t** matches, int* inserted, char** errmsg) {
  return fpstore_check_and_insert_text_with(store, id, text, text_len, metadata, metadata_len,
                                            policy, -1, -1, matches, inserted, errmsg);
}

int fpstore_check_and_insert_text_with(fpstore_t* store, uint64_t id, const char* text,
                                       size_t text_len, const char* metadata, size_t metadata_len,
                                       int policy, int k, double min_similarity,
                                       fpstore_matches_t** matches, int* inserted, char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    Result<fpstore::Sketch> sketch = SketchOf(store, text, text_len);
    if (!sketch.ok()) return sketch.status();
    Result<std::string_view> meta = Bytes(metadata, metadata_len, "metadata");
    if (!meta.ok()) return meta.status();
    const fpstore::QueryOptions options{k < 0 ? std::nullopt : std::optional<int>(k),
                                        ThresholdOf(min_similarity)};
    return CheckAndInsert(store, {id, sketch->fingerprint, *meta, std::move(sketch->signature), {}},
                          policy, options, matches, inserted);
  });
}

int fpstore_check_and_insert_at(fpstore_t* store, uint64_t id, uint64_t fingerprint_high,
                                uint64_t fingerprint, const char* text, size_t text_len,
                                const char* metadata, size_t metadata_len, int64_t time, int policy,
                                int k, double min_similarity, fpstore_matches_t** matches,
                                int* inserted, int* past_retention, char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    if (store == nullptr) return Null("store");
    fpstore::Sketch sketch{Fingerprint(fingerprint_high, fingerprint), {}};
    if (text != nullptr) {
      if (fingerprint_high != 0 || fingerprint != 0) {
        return Status::InvalidArgument("give a text or a fingerprint, not both");
      }
      Result<fpstore::Sketch> of_text = SketchOf(store, text, text_len);
      if (!of_text.ok()) return of_text.status();
      sketch = *std::move(of_text);
    }
    Result<std::string_view> meta = Bytes(metadata, metadata_len, "metadata");
    if (!meta.ok()) return meta.status();
    const fpstore::QueryOptions options{k < 0 ? std::nullopt : std::optional<int>(k),
                                        ThresholdOf(min_similarity)};
    return CheckAndInsert(
        store, {id, sketch.fingerprint, *meta, std::move(sketch.signature), TimeOf(&time, 0)},
        policy, options, matches, inserted, past_retention);
  });
}

size_t fpstore_matches_count(const fpstore_matches_t* matches) {
  return matches != nullptr ? matches->matches.size() : 0;
}

uint64_t fpstore_matches_id(const fpstore_matches_t* matches, size_t i) {
  const fpstore::Match* match = MatchAt(matches, i);
  return match != nullptr ? match->id : 0;
}

uint64_t fpstore_matches_fingerprint(const fpstore_matches_t* matches, size_t i) {
  const fpstore::Match* match = MatchAt(matches, i);
  return match != nullptr ? match->fingerprint.low() : 0;
}

uint64_t fpstore_matches_fingerprint_high(const fpstore_matches_t* matches, size_t i) {
  const fpstore::Match* match = MatchAt(matches, i);
  return match != nullptr ? match->fingerprint.high() : 0;
}

int fpstore_matches_distance(const fpstore_matches_t* matches, size_t i) {
  const fpstore::Match* match = MatchAt(matches, i);
  return match != nullptr ? match->distance : -1;
}

int64_t fpstore_matches_time(const fpstore_matches_t* matches, size_t i) {
  const fpstore::Match* match = MatchAt(matches, i);
  return match != nullptr ? match->time : 0;
}

double fpstore_matches_similarity(const fpstore_matches_t* matches, size_t i) {
  const fpstore::Match* match = MatchAt(matches, i);
  return match != nullptr && match->similarity ? *match->similarity : -1;
}

const char* fpstore_matches_metadata(const fpstore_matches_t* matches, size_t i, size_t* len) {
  const fpstore::Match* match = MatchAt(matches, i);
  if (len != nullptr) *len = match != nullptr ? match->metadata.size() : 0;
  return match != nullptr ? match->metadata.c_str() : nullptr;
}

void fpstore_matches_destroy(fpstore_matches_t* matches) { delete matches; }

}  // extern "C"
