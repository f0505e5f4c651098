// The C API's calls over many documents or the whole store (include/fpstore/c.h):
// batches, scans, bulk loads, stats and upkeep; and the fingerprinter without a
// store.

#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/c_handles.h"
#include "fpstore/bulk_loader.h"
#include "fpstore/c.h"
#include "fpstore/fingerprinter.h"
#include "fpstore/signature.h"
#include "fpstore/store.h"

namespace {

using fpstore::Result;
using fpstore::Status;
using namespace fpstore::internal::c_api;

// InvalidArgument for a null loader, or one whose Finish was called.
Status CheckLive(const fpstore_bulk_loader_t* loader) {
  if (loader == nullptr) return Null("loader");
  if (!loader->loader) return Status::InvalidArgument("the bulk loader has finished or failed");
  return Status::OK();
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

// The sketches of a batch: fingerprints[i] bare (with fingerprint_highs[i] above it, where
// given), or texts[i] under the store's options.
Result<std::vector<fpstore::Sketch>> SketchesOf(const fpstore_t* store, std::size_t count,
                                                const uint64_t* fingerprint_highs,
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
      const uint64_t high = fingerprint_highs != nullptr ? fingerprint_highs[i] : 0;
      sketches.push_back({fpstore::Fingerprint(high, fingerprints[i]), {}});
      continue;
    }
    if (text_lens == nullptr) return Null("text_lens");
    Result<fpstore::Sketch> sketch = SketchOf(store, texts[i], text_lens[i]);
    if (!sketch.ok()) return sketch.status().WithContext("text " + std::to_string(i));
    sketches.push_back(*std::move(sketch));
  }
  return sketches;
}

// Document `id`'s fingerprint and metadata; without `high`, only a fingerprint that fits 64 bits.
Status Get(const fpstore_t* store, uint64_t id, uint64_t* high, uint64_t* low, char** metadata,
           size_t* metadata_len) {
  if (store == nullptr) return Null("store");
  Result<fpstore::Document> doc = store->store->Get(id);
  if (!doc.ok()) return doc.status();
  if (high == nullptr) {
    if (Status s = FitsCall(doc->fingerprint, "fpstore_get128"); !s.ok()) return s;
  }
  if (Status s = CopyOut(doc->metadata, metadata, metadata_len); !s.ok()) return s;
  if (high != nullptr) *high = doc->fingerprint.high();
  *low = doc->fingerprint.low();
  return Status::OK();
}

fpstore::ScanOptions ScanOf(double min_similarity) {
  fpstore::ScanOptions scan;
  scan.min_similarity = ThresholdOf(min_similarity);
  return scan;
}

}  // namespace

extern "C" {

int fpstore_get(const fpstore_t* store, uint64_t id, uint64_t* fingerprint, char** metadata,
                size_t* metadata_len, char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    if (fingerprint == nullptr) return Null("fingerprint");
    return Get(store, id, nullptr, fingerprint, metadata, metadata_len);
  });
}

int fpstore_get128(const fpstore_t* store, uint64_t id, uint64_t* fingerprint_high,
                   uint64_t* fingerprint, char** metadata, size_t* metadata_len, char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    if (fingerprint_high == nullptr) return Null("fingerprint_high");
    if (fingerprint == nullptr) return Null("fingerprint");
    return Get(store, id, fingerprint_high, fingerprint, metadata, metadata_len);
  });
}

int fpstore_get_time(const fpstore_t* store, uint64_t id, int64_t* time, char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    if (store == nullptr) return Null("store");
    if (time == nullptr) return Null("time");
    Result<fpstore::Document> doc = store->store->Get(id);
    if (!doc.ok()) return doc.status();
    *time = doc->time;
    return Status::OK();
  });
}

}  // extern "C"

namespace {

// Writes the batch; `times` may be null (the clock's), `stats` may be null.
Status InsertBatch(fpstore_t* store, size_t count, const uint64_t* ids,
                   const uint64_t* fingerprint_highs, const uint64_t* fingerprints,
                   const char* const* texts, const size_t* text_lens, const char* const* metadata,
                   const size_t* metadata_lens, const int64_t* times = nullptr,
                   fpstore::InsertStats* stats = nullptr) {
  if (store == nullptr) return Null("store");
  if (count == 0) return Status::OK();
  if (ids == nullptr) return Null("ids");
  Result<std::vector<fpstore::Sketch>> sketches =
      SketchesOf(store, count, fingerprint_highs, fingerprints, texts, text_lens);
  if (!sketches.ok()) return sketches.status();
  std::vector<fpstore::NewDocument> docs;
  docs.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    Result<std::string_view> meta = Entry(metadata, metadata_lens, i, "metadata");
    if (!meta.ok()) return meta.status();
    docs.push_back({ids[i], (*sketches)[i].fingerprint, *meta, std::move((*sketches)[i].signature),
                    TimeOf(times, i)});
  }
  Result<fpstore::InsertStats> wrote = store->store->InsertBatch(docs);
  if (!wrote.ok()) return wrote.status();
  if (stats != nullptr) *stats = *wrote;
  return Status::OK();
}

Status QueryBatch(const fpstore_t* store, size_t count, const uint64_t* fingerprint_highs,
                  const uint64_t* fingerprints, const char* const* texts, const size_t* text_lens,
                  int k, double min_similarity, fpstore_matches_t** results) {
  if (store == nullptr) return Null("store");
  if (count == 0) return Status::OK();
  if (results == nullptr) return Null("results");
  Result<std::vector<fpstore::Sketch>> sketches =
      SketchesOf(store, count, fingerprint_highs, fingerprints, texts, text_lens);
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
}

}  // namespace

extern "C" {

int fpstore_insert_batch(fpstore_t* store, size_t count, const uint64_t* ids,
                         const uint64_t* fingerprints, const char* const* texts,
                         const size_t* text_lens, const char* const* metadata,
                         const size_t* metadata_lens, char** errmsg) {
  return Guard(errmsg, [&] {
    return InsertBatch(store, count, ids, nullptr, fingerprints, texts, text_lens, metadata,
                       metadata_lens);
  });
}

int fpstore_insert_batch128(fpstore_t* store, size_t count, const uint64_t* ids,
                            const uint64_t* fingerprint_highs, const uint64_t* fingerprints,
                            const char* const* metadata, const size_t* metadata_lens,
                            char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    if (count > 0 && fingerprint_highs == nullptr) return Null("fingerprint_highs");
    if (count > 0 && fingerprints == nullptr) return Null("fingerprints");
    return InsertBatch(store, count, ids, fingerprint_highs, fingerprints, nullptr, nullptr,
                       metadata, metadata_lens);
  });
}

int fpstore_insert_batch_at(fpstore_t* store, size_t count, const uint64_t* ids,
                            const uint64_t* fingerprint_highs, const uint64_t* fingerprints,
                            const char* const* texts, const size_t* text_lens,
                            const char* const* metadata, const size_t* metadata_lens,
                            const int64_t* times, uint64_t* added, uint64_t* replaced,
                            uint64_t* past_retention, char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    fpstore::InsertStats stats;
    Status s = InsertBatch(store, count, ids, fingerprint_highs, fingerprints, texts, text_lens,
                           metadata, metadata_lens, times, &stats);
    if (!s.ok()) return s;
    if (added != nullptr) *added = stats.added;
    if (replaced != nullptr) *replaced = stats.replaced;
    if (past_retention != nullptr) *past_retention = stats.past_retention;
    return Status::OK();
  });
}

int fpstore_query_batch(const fpstore_t* store, size_t count, const uint64_t* fingerprints,
                        const char* const* texts, const size_t* text_lens, int k,
                        double min_similarity, fpstore_matches_t** results, char** errmsg) {
  return Guard(errmsg, [&] {
    return QueryBatch(store, count, nullptr, fingerprints, texts, text_lens, k, min_similarity,
                      results);
  });
}

int fpstore_query_batch128(const fpstore_t* store, size_t count, const uint64_t* fingerprint_highs,
                           const uint64_t* fingerprints, int k, double min_similarity,
                           fpstore_matches_t** results, char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    if (count > 0 && fingerprint_highs == nullptr) return Null("fingerprint_highs");
    if (count > 0 && fingerprints == nullptr) return Null("fingerprints");
    return QueryBatch(store, count, fingerprint_highs, fingerprints, nullptr, nullptr, k,
                      min_similarity, results);
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
    if (Status s = CheckLive(loader); !s.ok()) return s;
    Result<std::string_view> meta = Bytes(metadata, metadata_len, "metadata");
    if (!meta.ok()) return meta.status();
    return loader->loader->Add(id, fingerprint, *meta);
  });
}

int fpstore_bulk_loader_add128(fpstore_bulk_loader_t* loader, uint64_t id,
                               uint64_t fingerprint_high, uint64_t fingerprint,
                               const char* metadata, size_t metadata_len, char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    if (Status s = CheckLive(loader); !s.ok()) return s;
    Result<std::string_view> meta = Bytes(metadata, metadata_len, "metadata");
    if (!meta.ok()) return meta.status();
    return loader->loader->Add(id, fpstore::Fingerprint(fingerprint_high, fingerprint), *meta);
  });
}

int fpstore_bulk_loader_add_text(fpstore_bulk_loader_t* loader, uint64_t id, const char* text,
                                 size_t text_len, const char* metadata, size_t metadata_len,
                                 char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    if (Status s = CheckLive(loader); !s.ok()) return s;
    Result<fpstore::Sketch> sketch = SketchOf(loader->store, text, text_len);
    if (!sketch.ok()) return sketch.status();
    Result<std::string_view> meta = Bytes(metadata, metadata_len, "metadata");
    if (!meta.ok()) return meta.status();
    return loader->loader->Add({id, sketch->fingerprint, *meta, std::move(sketch->signature), {}});
  });
}

int fpstore_bulk_loader_finish(fpstore_bulk_loader_t* loader, uint64_t* added, uint64_t* replaced,
                               char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    if (Status s = CheckLive(loader); !s.ok()) return s;
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
int64_t fpstore_stats_retention_seconds(const fpstore_stats_t* stats) {
  return stats != nullptr ? stats->stats.retention_seconds : 0;
}
uint64_t fpstore_stats_expired_documents(const fpstore_stats_t* stats) {
  return stats != nullptr ? stats->stats.expired_documents : 0;
}
int64_t fpstore_stats_oldest_time(const fpstore_stats_t* stats) {
  return stats != nullptr ? stats->stats.oldest_time.value_or(-1) : -1;
}
int64_t fpstore_stats_newest_time(const fpstore_stats_t* stats) {
  return stats != nullptr ? stats->stats.newest_time.value_or(-1) : -1;
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

int fpstore_fingerprinter_create(int window, const char* weighting, int signature_bytes,
                                 int signature_window, int bits,
                                 fpstore_fingerprinter_t** fingerprinter, char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    if (fingerprinter == nullptr) return Null("fingerprinter");
    fpstore::FingerprintOptions options;
    if (bits != 0) options.bits = bits;
    if (window != 0) options.window = window;
    if (signature_bytes != 0) options.signature_bytes = signature_bytes;
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
                                 size_t text_len, uint64_t* fingerprint, uint64_t* fingerprint_high,
                                 char** signature, size_t* signature_len, char** errmsg) {
  return Guard(errmsg, [&]() -> Status {
    if (fingerprinter == nullptr) return Null("fingerprinter");
    if (fingerprint == nullptr) return Null("fingerprint");
    if (fingerprint_high == nullptr && fingerprinter->fingerprinter.options().bits == 128) {
      return Status::InvalidArgument(
          "fingerprint_high is NULL; this fingerprinter makes 128-bit "
          "fingerprints");
    }
    if (signature != nullptr && signature_len == nullptr) return Null("signature_len");
    Result<std::string_view> utf8 = Bytes(text, text_len, "text");
    if (!utf8.ok()) return utf8.status();
    Result<fpstore::Sketch> sketch = fingerprinter->fingerprinter.SketchText(*utf8);
    if (!sketch.ok()) return sketch.status();
    if (Status s = CopyOut(sketch->signature.bytes(), signature, signature_len); !s.ok()) return s;
    *fingerprint = sketch->fingerprint.low();
    if (fingerprint_high != nullptr) *fingerprint_high = sketch->fingerprint.high();
    return Status::OK();
  });
}

int fpstore_hamming_distance(uint64_t a_high, uint64_t a, uint64_t b_high, uint64_t b) {
  return fpstore::HammingDistance({a_high, a}, {b_high, b});
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
