// The C API (include/fpstore/c.h): opaque handles over Store, Status codes
// as ints, messages as malloc'd strings.

#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fpstore/bulk_loader.h"
#include "fpstore/c.h"
#include "fpstore/fingerprinter.h"
#include "fpstore/signature.h"
#include "fpstore/store.h"
#include "fpstore/version.h"

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

namespace {

using fpstore::Fingerprint;
using fpstore::Result;
using fpstore::Status;

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

// Sets *errmsg (if wanted) and returns `code`. Allocates with malloc only,
// so it cannot throw: it is what reports exceptions too.
int Report(int code, std::string_view message, char** errmsg) noexcept {
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
int Guard(char** errmsg, Body&& body) noexcept {
  try {
    const Status status = body();
    return Report(static_cast<int>(status.code()), status.ToString(), errmsg);
  } catch (const std::exception& e) {
    return Report(FPSTORE_IO_ERROR, e.what(), errmsg);
  } catch (...) {
    return Report(FPSTORE_IO_ERROR, "unknown C++ exception", errmsg);
  }
}

Status Null(std::string_view what) {
  return Status::InvalidArgument(std::string(what) + " is NULL");
}

// The bytes [data, data + len); NULL is allowed for the empty string.
Result<std::string_view> Bytes(const char* data, std::size_t len, std::string_view what) {
  if (data == nullptr && len != 0) return Null(what);
  return len == 0 ? std::string_view() : std::string_view(data, len);
}

Result<Fingerprint> FingerprintOf(const fpstore_t* store, const char* text, std::size_t len) {
  if (store == nullptr) return Null("store");
  Result<std::string_view> utf8 = Bytes(text, len, "text");
  if (!utf8.ok()) return utf8.status();
  return store->store->fingerprinter().FromText(*utf8);
}

// The fingerprint and signature of a text under the store's options.
Result<fpstore::Sketch> SketchOf(const fpstore_t* store, const char* text, std::size_t len) {
  if (store == nullptr) return Null("store");
  Result<std::string_view> utf8 = Bytes(text, len, "text");
  if (!utf8.ok()) return utf8.status();
  return store->store->fingerprinter().SketchText(*utf8);
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
                      int* inserted) {
  if (matches == nullptr) return Null("matches");
  if (inserted == nullptr) return Null("inserted");
  Result<fpstore::InsertPolicy> how = PolicyOf(policy);
  if (!how.ok()) return how.status();
  Result<fpstore::CheckResult> checked = store->store->CheckAndInsert(doc, *how, options);
  if (!checked.ok()) return checked.status();
  *matches = new fpstore_matches_t{std::move(checked->matches)};
  *inserted = checked->inserted ? 1 : 0;
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

// A malloc'd copy of `bytes`, NUL-terminated, for the caller to fpstore_free.
Status CopyOut(std::string_view bytes, char** out, std::size_t* len) {
  if (out != nullptr) {
    char* copy = static_cast<char*>(std::malloc(bytes.size() + 1));
    if (copy == nullptr) return Status::IOError("out of memory");
    if (!bytes.empty()) std::memcpy(copy, bytes.data(), bytes.size());
    copy[bytes.size()] = '\0';
    *out = copy;
  }
  if (len != nullptr) *len = bytes.size();
  return Status::OK();
}

// Entry `i` of the optional parallel arrays `data` and `lens`; empty when `data` is NULL.
Result<std::string_view> Entry(const char* const* data, const std::size_t* lens, std::size_t i,
                               std::string_view what) {
  if (data == nullptr) return std::string_view();
  if (lens == nullptr) return Null(std::string(what) + "_lens");
  return Bytes(data[i], lens[i], what);
}

// The sketches of a batch: fingerprints[i] bare, or texts[i] under the store's options.
Result<std::vector<fpstore::Sketch>> SketchesOf(const fpstore_t* store, std::size_t count,
                                                const uint64_t* fingerprints,
                                                const char* const* texts,
                                                const std::size_t* text_lens) {
  if ((fingerprints == nullptr) == (texts == nullptr)) {
    return Status::InvalidArgument("give fingerprints or texts, exactly one of them");
  }
  std::vector<fpstore::Sketch> sketches;
  sketches.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    if (fingerprints != nullptr) {
      sketches.push_back({fingerprints[i], {}});
      continue;
    }
    if (text_lens == nullptr) return Null("text_lens");
    Result<fpstore::Sketch> sketch = SketchOf(store, texts[i], text_lens[i]);
    if (!sketch.ok()) return sketch.status().WithContext("text " + std::to_string(i));
    sketches.push_back(*std::move(sketch));
  }
  return sketches;
}

std::optional<double> ThresholdOf(double min_similarity) {
  return min_similarity < 0 ? std::nullopt : std::optional<double>(min_similarity);
}

fpstore::ScanOptions ScanOf(double min_similarity) {
  fpstore::ScanOptions scan;
  scan.min_similarity = ThresholdOf(min_similarity);
  return scan;
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
  return Guard(errmsg, [&]() -> Status {
    if (path == nullptr) return Null("path");
    return fpstore::DestroyStore(path);
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
    *fingerprint = *fp;
    return Status::OK();
  });
}

int fpstore_insert(fpstore_t* store, uint64_t id, uint64_t fingerprint, const char* metadata,
                   size_t metadata_len, char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    if (store == nullptr) return Null("store");
    Result<std::string_view> meta = Bytes(metadata, metadata_len, "metadata");
    if (!meta.ok()) return meta.status();
    return store->store->Insert(id, fingerprint, *meta);
  });
}

int fpstore_insert_text(fpstore_t* store, uint64_t id, const char* text, size_t text_len,
                        const char* metadata, size_t metadata_len, char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    Result<fpstore::Sketch> sketch = SketchOf(store, text, text_len);
    if (!sketch.ok()) return sketch.status();
    Result<std::string_view> meta = Bytes(metadata, metadata_len, "metadata");
    if (!meta.ok()) return meta.status();
    return store->store->Insert({id, sketch->fingerprint, *meta, std::move(sketch->signature)});
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

int fpstore_query(const fpstore_t* store, uint64_t fingerprint, int k, fpstore_matches_t** matches,
                  char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    if (store == nullptr) return Null("store");
    if (matches == nullptr) return Null("matches");
    return SetMatches(store->store->Query(fingerprint, k), matches);
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
  return Guard(errmsg, [&]() -> Status {
    if (store == nullptr) return Null("store");
    Result<std::string_view> meta = Bytes(metadata, metadata_len, "metadata");
    if (!meta.ok()) return meta.status();
    return CheckAndInsert(store, {id, fingerprint, *meta, {}}, policy, {}, matches, inserted);
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
    return CheckAndInsert(store, {id, sketch->fingerprint, *meta, std::move(sketch->signature)},
                          policy, options, matches, inserted);
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
  return match != nullptr ? match->fingerprint : 0;
}

int fpstore_matches_distance(const fpstore_matches_t* matches, size_t i) {
  const fpstore::Match* match = MatchAt(matches, i);
  return match != nullptr ? match->distance : -1;
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

int fpstore_get(const fpstore_t* store, uint64_t id, uint64_t* fingerprint, char** metadata,
                size_t* metadata_len, char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    if (store == nullptr) return Null("store");
    if (fingerprint == nullptr) return Null("fingerprint");
    Result<fpstore::Document> doc = store->store->Get(id);
    if (!doc.ok()) return doc.status();
    if (Status s = CopyOut(doc->metadata, metadata, metadata_len); !s.ok()) return s;
    *fingerprint = doc->fingerprint;
    return Status::OK();
  });
}

int fpstore_insert_batch(fpstore_t* store, size_t count, const uint64_t* ids,
                         const uint64_t* fingerprints, const char* const* texts,
                         const size_t* text_lens, const char* const* metadata,
                         const size_t* metadata_lens, char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    if (store == nullptr) return Null("store");
    if (count == 0) return Status::OK();
    if (ids == nullptr) return Null("ids");
    Result<std::vector<fpstore::Sketch>> sketches =
        SketchesOf(store, count, fingerprints, texts, text_lens);
    if (!sketches.ok()) return sketches.status();
    std::vector<fpstore::NewDocument> docs;
    docs.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
      Result<std::string_view> meta = Entry(metadata, metadata_lens, i, "metadata");
      if (!meta.ok()) return meta.status();
      docs.push_back(
          {ids[i], (*sketches)[i].fingerprint, *meta, std::move((*sketches)[i].signature)});
    }
    return store->store->InsertBatch(docs);
  });
}

int fpstore_query_batch(const fpstore_t* store, size_t count, const uint64_t* fingerprints,
                        const char* const* texts, const size_t* text_lens, int k,
                        double min_similarity, fpstore_matches_t** results, char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    if (store == nullptr) return Null("store");
    if (count == 0) return Status::OK();
    if (results == nullptr) return Null("results");
    Result<std::vector<fpstore::Sketch>> sketches =
        SketchesOf(store, count, fingerprints, texts, text_lens);
    if (!sketches.ok()) return sketches.status();
    Result<std::vector<std::vector<fpstore::Match>>> answers =
        store->store->QueryBatch(*sketches, {k, ThresholdOf(min_similarity)});
    if (!answers.ok()) return answers.status();
    std::vector<std::unique_ptr<fpstore_matches_t>> out;
    out.reserve(count);
    for (std::vector<fpstore::Match>& matches : *answers) {
      out.push_back(std::make_unique<fpstore_matches_t>(fpstore_matches_t{std::move(matches)}));
    }
    for (std::size_t i = 0; i < count; ++i) results[i] = out[i].release();
    return Status::OK();
  });
}

int fpstore_find_all(const fpstore_t* store, int k, double min_similarity, fpstore_pair_fn pair,
                     void* context, char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    if (store == nullptr) return Null("store");
    if (pair == nullptr) return Null("pair");
    return store->store->FindAll(
        k,
        [&](const fpstore::NearPair& p) {
          pair(context, p.first, p.second, p.distance, p.similarity.value_or(-1));
        },
        ScanOf(min_similarity));
  });
}

int fpstore_clusters(const fpstore_t* store, int k, double min_similarity,
                     fpstore_cluster_fn cluster, void* context, char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    if (store == nullptr) return Null("store");
    if (cluster == nullptr) return Null("cluster");
    return store->store->Clusters(
        k,
        [&](std::span<const fpstore::DocumentId> ids) { cluster(context, ids.data(), ids.size()); },
        ScanOf(min_similarity));
  });
}

int fpstore_bulk_loader_create(fpstore_t* store, size_t memory_bytes, int threads,
                               fpstore_bulk_loader_t** loader, char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    if (store == nullptr) return Null("store");
    if (loader == nullptr) return Null("loader");
    fpstore::BulkLoadOptions options;
    if (memory_bytes != 0) options.memory_bytes = memory_bytes;
    options.threads = threads;
    Result<std::unique_ptr<fpstore::BulkLoader>> made = store->store->NewBulkLoader(options);
    if (!made.ok()) return made.status();
    *loader = new fpstore_bulk_loader_t{store, *std::move(made)};
    return Status::OK();
  });
}

int fpstore_bulk_loader_add(fpstore_bulk_loader_t* loader, uint64_t id, uint64_t fingerprint,
                            const char* metadata, size_t metadata_len, char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    if (loader == nullptr) return Null("loader");
    if (!loader->loader) return Status::InvalidArgument("the bulk loader has finished or failed");
    Result<std::string_view> meta = Bytes(metadata, metadata_len, "metadata");
    if (!meta.ok()) return meta.status();
    return loader->loader->Add(id, fingerprint, *meta);
  });
}

int fpstore_bulk_loader_add_text(fpstore_bulk_loader_t* loader, uint64_t id, const char* text,
                                 size_t text_len, const char* metadata, size_t metadata_len,
                                 char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    if (loader == nullptr) return Null("loader");
    if (!loader->loader) return Status::InvalidArgument("the bulk loader has finished or failed");
    Result<fpstore::Sketch> sketch = SketchOf(loader->store, text, text_len);
    if (!sketch.ok()) return sketch.status();
    Result<std::string_view> meta = Bytes(metadata, metadata_len, "metadata");
    if (!meta.ok()) return meta.status();
    return loader->loader->Add({id, sketch->fingerprint, *meta, std::move(sketch->signature)});
  });
}

int fpstore_bulk_loader_finish(fpstore_bulk_loader_t* loader, uint64_t* added, uint64_t* replaced,
                               char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    if (loader == nullptr) return Null("loader");
    if (!loader->loader) return Status::InvalidArgument("the bulk loader has finished or failed");
    Result<fpstore::BulkLoadStats> stats = loader->loader->Finish();
    loader->loader.reset();
    if (!stats.ok()) return stats.status();
    if (added != nullptr) *added = stats->added;
    if (replaced != nullptr) *replaced = stats->replaced;
    return Status::OK();
  });
}

void fpstore_bulk_loader_destroy(fpstore_bulk_loader_t* loader) { delete loader; }

int fpstore_stats(const fpstore_t* store, fpstore_stats_t** stats, char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    if (store == nullptr) return Null("store");
    if (stats == nullptr) return Null("stats");
    Result<fpstore::StoreStats> got = store->store->Stats();
    if (!got.ok()) return got.status();
    *stats = new fpstore_stats_t{*std::move(got)};
    return Status::OK();
  });
}

uint64_t fpstore_stats_documents(const fpstore_stats_t* stats) {
  return stats != nullptr ? stats->stats.documents : 0;
}
uint64_t fpstore_stats_staged_documents(const fpstore_stats_t* stats) {
  return stats != nullptr ? stats->stats.staged_documents : 0;
}
uint64_t fpstore_stats_bytes_on_disk(const fpstore_stats_t* stats) {
  return stats != nullptr ? stats->stats.bytes_on_disk : 0;
}
int fpstore_stats_blocks(const fpstore_stats_t* stats) {
  return stats != nullptr ? stats->stats.blocks : 0;
}
int fpstore_stats_distance(const fpstore_stats_t* stats) {
  return stats != nullptr ? stats->stats.distance : 0;
}
double fpstore_stats_min_similarity(const fpstore_stats_t* stats) {
  return stats != nullptr ? stats->stats.min_similarity : 0;
}
void fpstore_stats_destroy(fpstore_stats_t* stats) { delete stats; }

int fpstore_verify(const fpstore_t* store, char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    if (store == nullptr) return Null("store");
    return store->store->Verify();
  });
}

int fpstore_checkpoint(const fpstore_t* store, const char* dir, char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    if (store == nullptr) return Null("store");
    if (dir == nullptr) return Null("dir");
    return store->store->Checkpoint(dir);
  });
}

int fpstore_compact(fpstore_t* store, char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    if (store == nullptr) return Null("store");
    return store->store->Compact();
  });
}

int fpstore_repair(fpstore_t* store, char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    if (store == nullptr) return Null("store");
    return store->store->Repair();
  });
}

int fpstore_fingerprinter_create(int window, const char* weighting, int signature_slots,
                                 int signature_window, fpstore_fingerprinter_t** fingerprinter,
                                 char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    if (fingerprinter == nullptr) return Null("fingerprinter");
    fpstore::FingerprintOptions options;
    if (window != 0) options.window = window;
    if (signature_slots != 0) options.signature_slots = signature_slots;
    if (signature_window != 0) options.signature_window = signature_window;
    if (weighting != nullptr) {
      const std::string_view w = weighting;
      if (w == "presence") {
        options.weighting = fpstore::FeatureWeighting::kPresence;
      } else if (w != "tf") {
        return Status::InvalidArgument("weighting \"" + std::string(w) +
                                       "\" is neither \"tf\" nor \"presence\"");
      }
    }
    Result<fpstore::Fingerprinter> made = fpstore::Fingerprinter::Create(options);
    if (!made.ok()) return made.status();
    *fingerprinter = new fpstore_fingerprinter_t{*std::move(made)};
    return Status::OK();
  });
}

int fpstore_fingerprinter_sketch(const fpstore_fingerprinter_t* fingerprinter, const char* text,
                                 size_t text_len, uint64_t* fingerprint, char** signature,
                                 size_t* signature_len, char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    if (fingerprinter == nullptr) return Null("fingerprinter");
    if (fingerprint == nullptr) return Null("fingerprint");
    if (signature != nullptr && signature_len == nullptr) return Null("signature_len");
    Result<std::string_view> utf8 = Bytes(text, text_len, "text");
    if (!utf8.ok()) return utf8.status();
    Result<fpstore::Sketch> sketch = fingerprinter->fingerprinter.SketchText(*utf8);
    if (!sketch.ok()) return sketch.status();
    if (Status s = CopyOut(sketch->signature.bytes(), signature, signature_len); !s.ok()) return s;
    *fingerprint = sketch->fingerprint;
    return Status::OK();
  });
}

void fpstore_fingerprinter_destroy(fpstore_fingerprinter_t* fingerprinter) { delete fingerprinter; }

double fpstore_estimate_similarity(const char* a, size_t a_len, const char* b, size_t b_len) {
  try {
    if (a == nullptr || b == nullptr) return -1;
    Result<fpstore::Signature> sa = fpstore::Signature::FromBytes(std::string_view(a, a_len));
    Result<fpstore::Signature> sb = fpstore::Signature::FromBytes(std::string_view(b, b_len));
    if (!sa.ok() || !sb.ok()) return -1;
    return fpstore::EstimateSimilarity(*sa, *sb).value_or(-1);
  } catch (...) {
    return -1;
  }
}

}  // extern "C"
