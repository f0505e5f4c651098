/* The C API of fpstore: the Store of store.h behind opaque handles, for C
 * programs and for bindings (Python ctypes, Go cgo, Rust FFI).
 *
 *   fpstore_t* store = NULL;
 *   char* err = NULL;
 *   if (fpstore_open("/var/lib/crawl/dedup", NULL, &store, &err) != FPSTORE_OK) {
 *     fprintf(stderr, "%s\n", err);
 *     fpstore_free(err);
 *     return 1;
 *   }
 *   fpstore_matches_t* seen = NULL;
 *   int inserted;
 *   if (fpstore_check_and_insert_text(store, id, text, strlen(text), url, strlen(url),
 *                                     FPSTORE_INSERT_ALWAYS, &seen, &inserted,
 *                                     &err) == FPSTORE_OK) {
 *     if (fpstore_matches_count(seen) > 0) skip(id);  // a near-duplicate
 *     fpstore_matches_destroy(seen);
 *   }
 *   fpstore_close(store, NULL);
 *
 * Conventions, the same for every function:
 *
 * - A function that can fail returns an int: FPSTORE_OK (0) or the error's
 *   code, one of enum fpstore_code. (An int, not the enum, because the
 *   size of a C enum varies and bindings need a fixed one.)
 *   FPSTORE_NOT_FOUND is a normal answer (e.g. removing an id that is not
 *   stored), not a failure of the store.
 * - Its last parameter, `char** errmsg`, may be NULL. Otherwise *errmsg is
 *   set to NULL on success and, on failure, to a NUL-terminated message
 *   that the caller owns and frees with fpstore_free. Its previous value
 *   is overwritten, not freed.
 * - A NULL handle or a NULL out-parameter gives FPSTORE_INVALID_ARGUMENT.
 *   Byte strings (text, metadata) are a pointer and a length, so they may
 *   hold NUL bytes; a NULL pointer with length 0 is the empty string.
 * - Out-parameters are written only on success.
 * - No C++ exception leaves these functions. Running out of memory inside
 *   one is reported as FPSTORE_IO_ERROR.
 *
 * Thread safety: an fpstore_t may be used from any number of threads at
 * once, like Store. An fpstore_options_t is not thread-safe. An
 * fpstore_matches_t is immutable once returned.
 *
 * Versions: fpstore_version() returns the library's version; version.h,
 * which is valid C, has the headers' FPSTORE_VERSION_* macros. */

#ifndef FPSTORE_C_H_
#define FPSTORE_C_H_

#include <stddef.h>
#include <stdint.h>

#include "fpstore/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The Status codes of status.h, with the same values: never renumber. */
enum fpstore_code {
  FPSTORE_OK = 0,
  FPSTORE_NOT_FOUND = 1,
  FPSTORE_CORRUPTION = 2,
  FPSTORE_INVALID_ARGUMENT = 3,
  FPSTORE_IO_ERROR = 4,
  FPSTORE_BUSY = 5,
  FPSTORE_NOT_SUPPORTED = 6
};

/* Durability (options.h), with the same values: never renumber. */
enum {
  FPSTORE_DURABILITY_SYNC = 0,
  FPSTORE_DURABILITY_GROUP_COMMIT = 1,
  FPSTORE_DURABILITY_NO_SYNC = 2
};

/* InsertPolicy (store.h) for fpstore_check_and_insert: never renumber. */
enum {
  FPSTORE_INSERT_ALWAYS = 0,     /* insert the document in any case */
  FPSTORE_INSERT_IF_NO_MATCH = 1 /* insert it only if nothing is within k */
};

typedef struct fpstore_t fpstore_t;
typedef struct fpstore_options_t fpstore_options_t;
typedef struct fpstore_matches_t fpstore_matches_t;

/* The library's version, "MAJOR.MINOR.PATCH"; static storage. */
FPSTORE_EXPORT const char* fpstore_version(void);

/* Frees a message returned through errmsg. NULL is ignored. */
FPSTORE_EXPORT void fpstore_free(void* ptr);

/* ---- Options: StoreOptions of options.h ---- */

/* New options with StoreOptions' defaults: create_if_missing, read-write,
 * the default plan (6 blocks, distance 3) for a new store and the store's
 * own plan for an existing one, group commit. NULL if out of memory. */
FPSTORE_EXPORT fpstore_options_t* fpstore_options_create(void);
FPSTORE_EXPORT void fpstore_options_destroy(fpstore_options_t* options); /* NULL is ignored */

/* The setters below ignore NULL options. */

/* Non-zero `value` means true. */
FPSTORE_EXPORT void fpstore_options_set_create_if_missing(fpstore_options_t* options, int value);
FPSTORE_EXPORT void fpstore_options_set_read_only(fpstore_options_t* options, int value);

/* The width of the store's fingerprints, 64 or 128 (StoreOptions::bits):
 * used when creating a store; on an existing store a value other than its
 * own makes fpstore_open fail with FPSTORE_INVALID_ARGUMENT. A 128-bit
 * store's bare fingerprints go through the calls ending in 128, each one
 * as two uint64_t, its high half and its low half (as
 * fpstore_fingerprinter_sketch gives them); the calls without it take and
 * give fingerprints below 2^64, and fail with FPSTORE_INVALID_ARGUMENT
 * rather than give part of a wider one. */
FPSTORE_EXPORT void fpstore_options_set_bits(fpstore_options_t* options, int bits);

/* The plan: `blocks` m and `distance` k. Used when creating a store; on an
 * existing store a value other than its own makes fpstore_open fail with
 * FPSTORE_INVALID_ARGUMENT. Out-of-range values fail at fpstore_open. */
FPSTORE_EXPORT void fpstore_options_set_blocks(fpstore_options_t* options, int blocks);
FPSTORE_EXPORT void fpstore_options_set_distance(fpstore_options_t* options, int distance);

/* About how many documents the store will hold: used when creating a store,
 * to size its tables' groups (StoreOptions::expected_documents). */
FPSTORE_EXPORT void fpstore_options_set_expected_documents(fpstore_options_t* options,
                                                           uint64_t documents);

/* One of FPSTORE_DURABILITY_*; another value fails at fpstore_open. */
FPSTORE_EXPORT void fpstore_options_set_durability(fpstore_options_t* options, int durability);

/* Non-zero: open a store whose write-ahead log is damaged in its middle by
 * dropping the writes after the damage (StoreOptions::drop_damaged_log);
 * zero, the default: such an open fails with FPSTORE_CORRUPTION, naming them. */
FPSTORE_EXPORT void fpstore_options_set_drop_damaged_log(fpstore_options_t* options, int value);

/* The least estimated similarity of a match that both sides have a
 * signature for (StoreOptions::min_similarity), from 0 to 1: recorded when
 * creating a store; on an existing store a value other than its own makes
 * fpstore_open fail with FPSTORE_INVALID_ARGUMENT, as does one out of
 * range. */
FPSTORE_EXPORT void fpstore_options_set_min_similarity(fpstore_options_t* options,
                                                       double min_similarity);

/* The store's clock (StoreOptions::clock): clock(context) gives the time,
 * in seconds since the Unix epoch, that a document written without one
 * takes and that the retention counts back from; called from the threads
 * that write and query, it must be thread-safe. NULL: the system's clock. */
typedef int64_t (*fpstore_clock_fn)(void* context);
FPSTORE_EXPORT void fpstore_options_set_clock(fpstore_options_t* options, fpstore_clock_fn clock,
                                              void* context);

/* The store's retention in seconds (StoreOptions::retention_seconds): a
 * document whose time is older than the store's clock minus this is never
 * returned again and is removed in the background; 0 for none. Recorded
 * when creating a store; on an existing store a value other than its own
 * makes fpstore_open fail with FPSTORE_INVALID_ARGUMENT, as does one out of
 * range. */
FPSTORE_EXPORT void fpstore_options_set_retention_seconds(fpstore_options_t* options,
                                                          int64_t seconds);

/* CheckAndInsert gives each document it matched the checked document's
 * time when that is later (StoreOptions::refresh_matches): 1 on, 0 off
 * (the default). */
FPSTORE_EXPORT void fpstore_options_set_refresh_matches(fpstore_options_t* options, int value);

/* A store in Redis: the ACL user and the password (NUL-terminated; NULL
 * for none) that fpstore signs in with on every connection to the cluster
 * (StoreOptions::redis_user, redis_password), instead of in the URL. The
 * options keep a copy. No error message holds the password. */
FPSTORE_EXPORT void fpstore_options_set_redis_user(fpstore_options_t* options, const char* user);
FPSTORE_EXPORT void fpstore_options_set_redis_password(fpstore_options_t* options,
                                                       const char* password);

/* A "rediss://" store's TLS files (NUL-terminated PEM paths; NULL for
 * none): the CA certificates the nodes' certificates must chain to (NULL:
 * the system's), and the client's certificate and key for a cluster that
 * asks for one (StoreOptions::redis_tls_ca_file, redis_tls_cert_file,
 * redis_tls_key_file). The options keep a copy. */
FPSTORE_EXPORT void fpstore_options_set_redis_tls(fpstore_options_t* options, const char* ca_file,
                                                  const char* cert_file, const char* key_file);

/* ---- The store ---- */

/* Opens the store at `path` (NUL-terminated): a directory, or
 * "redis://[USER[:PASSWORD]@]HOST:PORT/NAME" for the store NAME in the Redis
 * Cluster that the node at HOST:PORT belongs to (the credentials
 * percent-encoded, or set in `options`; FPSTORE_INVALID_ARGUMENT names what
 * the cluster refused). Sets *store to a new handle, which the
 * caller closes with fpstore_close. `options` may be NULL for the defaults,
 * and is not needed after the call. Errors as Store::Open: e.g.
 * FPSTORE_NOT_FOUND when there is no store at `path` and create_if_missing
 * is off, FPSTORE_INVALID_ARGUMENT when `path` holds something else,
 * FPSTORE_BUSY when another writer has an embedded store open. */
FPSTORE_EXPORT int fpstore_open(const char* path, const fpstore_options_t* options,
                                fpstore_t** store, char** errmsg);

/* Removes the store at `path` (NUL-terminated) for good: its directory, or
 * every key of a "redis://HOST:PORT/NAME" store (DestroyStore).
 * FPSTORE_NOT_FOUND if there is none; FPSTORE_BUSY if a process has an
 * embedded store open for writing. A store in Redis must not be open
 * anywhere meanwhile: nothing there can tell. */
FPSTORE_EXPORT int fpstore_destroy(const char* path, char** errmsg);
/* fpstore_destroy with the credentials of `options` (may be NULL). */
FPSTORE_EXPORT int fpstore_destroy_with_options(const char* path, const fpstore_options_t* options,
                                                char** errmsg);

/* Flushes, closes and frees the handle, whatever the result; `store` must
 * not be used afterwards. NULL is ignored (FPSTORE_OK). */
FPSTORE_EXPORT int fpstore_close(fpstore_t* store, char** errmsg);

/* The fingerprint of a UTF-8 text under the store's fingerprint options.
 * FPSTORE_INVALID_ARGUMENT for invalid UTF-8. */
FPSTORE_EXPORT int fpstore_fingerprint(const fpstore_t* store, const char* text, size_t text_len,
                                       uint64_t* fingerprint, char** errmsg);

/* fpstore_fingerprint of a store of either width: the fingerprint's high
 * half in *fingerprint_high (0 at 64 bits), its low half in *fingerprint. */
FPSTORE_EXPORT int fpstore_fingerprint128(const fpstore_t* store, const char* text, size_t text_len,
                                          uint64_t* fingerprint_high, uint64_t* fingerprint,
                                          char** errmsg);

/* Inserts or replaces document `id` with `fingerprint` and `metadata`
 * (opaque bytes kept beside it, e.g. its URL), atomically across tables.
 * FPSTORE_NOT_SUPPORTED on a read-only store. */
FPSTORE_EXPORT int fpstore_insert(fpstore_t* store, uint64_t id, uint64_t fingerprint,
                                  const char* metadata, size_t metadata_len, char** errmsg);

/* fpstore_insert of the fingerprint (fingerprint_high << 64) | fingerprint;
 * a 64-bit store refuses one with fingerprint_high set. */
FPSTORE_EXPORT int fpstore_insert128(fpstore_t* store, uint64_t id, uint64_t fingerprint_high,
                                     uint64_t fingerprint, const char* metadata,
                                     size_t metadata_len, char** errmsg);

/* fpstore_insert with the fingerprint and the verification signature of a
 * UTF-8 text: its matches are confirmed by similarity (signature.h). */
FPSTORE_EXPORT int fpstore_insert_text(fpstore_t* store, uint64_t id, const char* text,
                                       size_t text_len, const char* metadata, size_t metadata_len,
                                       char** errmsg);

/* Removes document `id`; FPSTORE_NOT_FOUND if it is not stored. */
FPSTORE_EXPORT int fpstore_remove(fpstore_t* store, uint64_t id, char** errmsg);

/* Moves the documents staged by inserts into the tables now (Store::Flush);
 * queries find staged documents either way. FPSTORE_NOT_SUPPORTED on a
 * read-only store. */
FPSTORE_EXPORT int fpstore_flush(fpstore_t* store, char** errmsg);

/* Removes every document whose time is earlier than `before` (seconds since
 * the Unix epoch), in atomic batches (Store::Expire); *removed (if not NULL)
 * is set to how many. FPSTORE_NOT_SUPPORTED on a read-only store and on a
 * store in Redis. */
FPSTORE_EXPORT int fpstore_expire(fpstore_t* store, int64_t before, uint64_t* removed,
                                  char** errmsg);

/* Sets *matches to every stored document within Hamming distance k of
 * `fingerprint`, nearest first (ties by id); the caller frees it with
 * fpstore_matches_destroy. FPSTORE_INVALID_ARGUMENT unless
 * 0 <= k <= the store's distance. */
FPSTORE_EXPORT int fpstore_query(const fpstore_t* store, uint64_t fingerprint, int k,
                                 fpstore_matches_t** matches, char** errmsg);

/* fpstore_query of (fingerprint_high << 64) | fingerprint. */
FPSTORE_EXPORT int fpstore_query128(const fpstore_t* store, uint64_t fingerprint_high,
                                    uint64_t fingerprint, int k, fpstore_matches_t** matches,
                                    char** errmsg);

/* The stored documents within k of a UTF-8 text's fingerprint whose
 * similarity to it passes the store's threshold (or that have no
 * signature), as fpstore_query. */
FPSTORE_EXPORT int fpstore_query_text(const fpstore_t* store, const char* text, size_t text_len,
                                      int k, fpstore_matches_t** matches, char** errmsg);

/* fpstore_query_text with a threshold of its own, from 0 to 1 (0 keeps
 * every document within k), or negative for the store's threshold;
 * FPSTORE_INVALID_ARGUMENT above 1. */
FPSTORE_EXPORT int fpstore_query_text_min_similarity(const fpstore_t* store, const char* text,
                                                     size_t text_len, int k, double min_similarity,
                                                     fpstore_matches_t** matches, char** errmsg);

/* Store::CheckAndInsert of a bare fingerprint: sets *matches to the
 * documents already stored within the store's distance of `fingerprint`
 * (the document itself excluded), nearest first, and inserts the document
 * as `policy` (FPSTORE_INSERT_*) says; *inserted is set to 1 if it was
 * inserted, 0 if not. Check and insert are atomic with respect to other
 * such calls. The caller frees *matches with fpstore_matches_destroy. A
 * bare fingerprint has no signature: its matches stand on distance alone,
 * and the document is stored without one. */
FPSTORE_EXPORT int fpstore_check_and_insert(fpstore_t* store, uint64_t id, uint64_t fingerprint,
                                            const char* metadata, size_t metadata_len, int policy,
                                            fpstore_matches_t** matches, int* inserted,
                                            char** errmsg);

/* fpstore_check_and_insert of (fingerprint_high << 64) | fingerprint. */
FPSTORE_EXPORT int fpstore_check_and_insert128(fpstore_t* store, uint64_t id,
                                               uint64_t fingerprint_high, uint64_t fingerprint,
                                               const char* metadata, size_t metadata_len,
                                               int policy, fpstore_matches_t** matches,
                                               int* inserted, char** errmsg);

/* The crawler's call for a text: fpstore_check_and_insert with the text's
 * fingerprint and signature, so that only candidates whose similarity
 * passes the store's threshold are matches, and the document is stored
 * with its signature. */
FPSTORE_EXPORT int fpstore_check_and_insert_text(fpstore_t* store, uint64_t id, const char* text,
                                                 size_t text_len, const char* metadata,
                                                 size_t metadata_len, int policy,
                                                 fpstore_matches_t** matches, int* inserted,
                                                 char** errmsg);

/* fpstore_check_and_insert_text with a search of its own: candidates within
 * k bits (negative: the store's distance) whose similarity is at least
 * min_similarity (from 0 to 1; negative: the store's threshold). */
FPSTORE_EXPORT int fpstore_check_and_insert_text_with(fpstore_t* store, uint64_t id,
                                                      const char* text, size_t text_len,
                                                      const char* metadata, size_t metadata_len,
                                                      int policy, int k, double min_similarity,
                                                      fpstore_matches_t** matches, int* inserted,
                                                      char** errmsg);

/* A document's time given as none: it takes the store's clock's. */
#define FPSTORE_NO_TIME INT64_MIN

/* The crawler's call in full (Store::CheckAndInsert): document `id` is the
 * text `text` of text_len bytes (fingerprinted and signed with the store's
 * options), with fingerprint_high and fingerprint 0, or, with text NULL,
 * the bare fingerprint (fingerprint_high << 64) | fingerprint; both is
 * FPSTORE_INVALID_ARGUMENT; `time` is its time in seconds
 * since the Unix epoch, or FPSTORE_NO_TIME for the store's clock's. Its
 * matches are the documents within k bits (negative: the store's distance)
 * whose similarity is at least min_similarity (negative: the store's
 * threshold). Sets *matches and *inserted as fpstore_check_and_insert does,
 * and *past_retention (if not NULL) to 1 if the document was inserted
 * with a time already past the store's retention (it is never returned),
 * else 0. */
FPSTORE_EXPORT int fpstore_check_and_insert_at(fpstore_t* store, uint64_t id,
                                               uint64_t fingerprint_high, uint64_t fingerprint,
                                               const char* text, size_t text_len,
                                               const char* metadata, size_t metadata_len,
                                               int64_t time, int policy, int k,
                                               double min_similarity, fpstore_matches_t** matches,
                                               int* inserted, int* past_retention, char** errmsg);

/* ---- Documents, batches and scans ---- */

/* Document `id`'s fingerprint and metadata. *metadata (if metadata is not
 * NULL) is set to a NUL-terminated copy that the caller frees with
 * fpstore_free, *metadata_len (if not NULL) to its length. FPSTORE_NOT_FOUND
 * if the id is not stored. */
FPSTORE_EXPORT int fpstore_get(const fpstore_t* store, uint64_t id, uint64_t* fingerprint,
                               char** metadata, size_t* metadata_len, char** errmsg);
/* fpstore_get of a store of either width: the high half of the fingerprint
 * in *fingerprint_high. */
FPSTORE_EXPORT int fpstore_get128(const fpstore_t* store, uint64_t id, uint64_t* fingerprint_high,
                                  uint64_t* fingerprint, char** metadata, size_t* metadata_len,
                                  char** errmsg);

/* Document `id`'s time, seconds since the Unix epoch (Document::time), in
 * *time. FPSTORE_NOT_FOUND if the id is not stored. */
FPSTORE_EXPORT int fpstore_get_time(const fpstore_t* store, uint64_t id, int64_t* time,
                                    char** errmsg);

/* Inserts or replaces `count` documents as one atomic batch: ids[i] with
 * either fingerprints[i] (a bare fingerprint) or the text texts[i] of
 * text_lens[i] bytes (fingerprinted and signed with the store's options);
 * give fingerprints or texts, not both. metadata and metadata_lens may be
 * NULL for no metadata. */
FPSTORE_EXPORT int fpstore_insert_batch(fpstore_t* store, size_t count, const uint64_t* ids,
                                        const uint64_t* fingerprints, const char* const* texts,
                                        const size_t* text_lens, const char* const* metadata,
                                        const size_t* metadata_lens, char** errmsg);

/* The matches of `count` queries, each a fingerprint (fingerprints[i]) or a
 * text (texts[i], text_lens[i] bytes), within k and, for signed documents,
 * of estimated similarity min_similarity or more (a negative value: the
 * store's threshold). On success results[0 .. count-1] are set, each for the
 * caller to free with fpstore_matches_destroy; on failure none is. Faster
 * per query than fpstore_query, as each table is walked once per call. */
FPSTORE_EXPORT int fpstore_query_batch(const fpstore_t* store, size_t count,
                                       const uint64_t* fingerprints, const char* const* texts,
                                       const size_t* text_lens, int k, double min_similarity,
                                       fpstore_matches_t** results, char** errmsg);

/* fpstore_insert_batch in full: document i is ids[i] with the text
 * texts[i] of text_lens[i] bytes or the bare fingerprint
 * (fingerprint_highs[i] << 64) | fingerprints[i] (fingerprint_highs NULL:
 * 0): exactly one of texts and fingerprints is not NULL (both, or neither,
 * is FPSTORE_INVALID_ARGUMENT; with texts, fingerprint_highs is not read),
 * and the time times[i] in seconds since the Unix epoch, or
 * FPSTORE_NO_TIME (times NULL: all) for the store's clock's. Sets *added,
 * *replaced and *past_retention (each if not NULL) to how many documents
 * were new, replaced, or already past the store's retention when they
 * arrived (stored, never returned), each id counted once. */
FPSTORE_EXPORT int fpstore_insert_batch_at(fpstore_t* store, size_t count, const uint64_t* ids,
                                           const uint64_t* fingerprint_highs,
                                           const uint64_t* fingerprints, const char* const* texts,
                                           const size_t* text_lens, const char* const* metadata,
                                           const size_t* metadata_lens, const int64_t* times,
                                           uint64_t* added, uint64_t* replaced,
                                           uint64_t* past_retention, char** errmsg);

/* fpstore_insert_batch and fpstore_query_batch of bare fingerprints of
 * either width: (fingerprint_highs[i] << 64) | fingerprints[i]. */
FPSTORE_EXPORT int fpstore_insert_batch128(fpstore_t* store, size_t count, const uint64_t* ids,
                                           const uint64_t* fingerprint_highs,
                                           const uint64_t* fingerprints,
                                           const char* const* metadata, const size_t* metadata_lens,
                                           char** errmsg);
FPSTORE_EXPORT int fpstore_query_batch128(const fpstore_t* store, size_t count,
                                          const uint64_t* fingerprint_highs,
                                          const uint64_t* fingerprints, int k,
                                          double min_similarity, fpstore_matches_t** results,
                                          char** errmsg);

/* Calls pair(context, first, second, distance, similarity) for every pair of
 * stored documents within k (first < second) whose similarity passes
 * min_similarity (negative: the store's threshold); similarity is -1 when
 * either has no signature. In no order, one call at a time but possibly
 * from the scan's own threads; a callback must return normally (no longjmp)
 * and must not close the store. */
typedef void (*fpstore_pair_fn)(void* context, uint64_t first, uint64_t second, int distance,
                                double similarity);
FPSTORE_EXPORT int fpstore_find_all(const fpstore_t* store, int k, double min_similarity,
                                    fpstore_pair_fn pair, void* context, char** errmsg);

/* Calls cluster(context, ids, count) for every cluster of two or more
 * documents: the connected components of fpstore_find_all's pairs. Ids
 * ascend; the array is valid during the call only. */
typedef void (*fpstore_cluster_fn)(void* context, const uint64_t* ids, size_t count);
FPSTORE_EXPORT int fpstore_clusters(const fpstore_t* store, int k, double min_similarity,
                                    fpstore_cluster_fn cluster, void* context, char** errmsg);

/* ---- Bulk loads: many documents into a store at once, through sorted files ---- */

typedef struct fpstore_bulk_loader_t fpstore_bulk_loader_t;

/* A bulk load into `store` (bulk_loader.h): memory_bytes to sort in (0: the
 * default, 1 GiB), threads to sort with (0: one per core). Writes to the
 * store wait while its finish runs. The store must outlive the loader, and
 * a loader takes one call at a time (it is not thread-safe). */
FPSTORE_EXPORT int fpstore_bulk_loader_create(fpstore_t* store, size_t memory_bytes, int threads,
                                              fpstore_bulk_loader_t** loader, char** errmsg);
FPSTORE_EXPORT int fpstore_bulk_loader_add(fpstore_bulk_loader_t* loader, uint64_t id,
                                           uint64_t fingerprint, const char* metadata,
                                           size_t metadata_len, char** errmsg);
FPSTORE_EXPORT int fpstore_bulk_loader_add128(fpstore_bulk_loader_t* loader, uint64_t id,
                                              uint64_t fingerprint_high, uint64_t fingerprint,
                                              const char* metadata, size_t metadata_len,
                                              char** errmsg);
/* Adds a text, fingerprinted and signed with the store's options. */
FPSTORE_EXPORT int fpstore_bulk_loader_add_text(fpstore_bulk_loader_t* loader, uint64_t id,
                                                const char* text, size_t text_len,
                                                const char* metadata, size_t metadata_len,
                                                char** errmsg);
/* Puts everything added into the store at once. *added counts documents new
 * to the store, *replaced those whose id was stored before (either may be
 * NULL). Until it returns FPSTORE_OK the store is unchanged. Finished or
 * failed, the load is over: later calls on the loader fail. */
FPSTORE_EXPORT int fpstore_bulk_loader_finish(fpstore_bulk_loader_t* loader, uint64_t* added,
                                              uint64_t* replaced, char** errmsg);
/* Abandons the load unless it finished; NULL is ignored. */
FPSTORE_EXPORT void fpstore_bulk_loader_destroy(fpstore_bulk_loader_t* loader);

/* ---- Looking after a store ---- */

typedef struct fpstore_stats_t fpstore_stats_t;

/* What the store holds and how it was created (StoreStats); the caller frees
 * *stats with fpstore_stats_destroy. */
FPSTORE_EXPORT int fpstore_stats(const fpstore_t* store, fpstore_stats_t** stats, char** errmsg);
/* A field of `stats`; 0 for NULL. */
FPSTORE_EXPORT uint64_t fpstore_stats_documents(const fpstore_stats_t* stats);
FPSTORE_EXPORT uint64_t fpstore_stats_staged_documents(const fpstore_stats_t* stats);
FPSTORE_EXPORT uint64_t fpstore_stats_bytes_on_disk(const fpstore_stats_t* stats);
FPSTORE_EXPORT int fpstore_stats_blocks(const fpstore_stats_t* stats);
FPSTORE_EXPORT int fpstore_stats_distance(const fpstore_stats_t* stats);
FPSTORE_EXPORT double fpstore_stats_min_similarity(const fpstore_stats_t* stats);
FPSTORE_EXPORT int64_t fpstore_stats_retention_seconds(const fpstore_stats_t* stats);
/* Documents past the retention not yet removed (StoreStats::expired_documents). */
FPSTORE_EXPORT uint64_t fpstore_stats_expired_documents(const fpstore_stats_t* stats);
/* The oldest and newest document's times; -1 for an empty store or NULL. */
FPSTORE_EXPORT int64_t fpstore_stats_oldest_time(const fpstore_stats_t* stats);
FPSTORE_EXPORT int64_t fpstore_stats_newest_time(const fpstore_stats_t* stats);
FPSTORE_EXPORT void fpstore_stats_destroy(fpstore_stats_t* stats); /* NULL is ignored */

/* Checks the store's block checksums and that every table agrees with the
 * documents: FPSTORE_CORRUPTION, naming the first problems, if not. */
FPSTORE_EXPORT int fpstore_verify(const fpstore_t* store, char** errmsg);

/* Writes a consistent copy of the store into the new directory `dir`, with
 * hard links where it can. */
FPSTORE_EXPORT int fpstore_checkpoint(const fpstore_t* store, const char* dir, char** errmsg);

/* Merges what is staged and compacts every table fully. */
FPSTORE_EXPORT int fpstore_compact(fpstore_t* store, char** errmsg);

/* Mends what writes cut short left in a store in Redis, table entries of
 * writes that never took effect and entries a failover lost, and checks the
 * rest as fpstore_verify does (Store::Repair): FPSTORE_CORRUPTION for damage
 * it cannot mend, FPSTORE_NOT_SUPPORTED on a read-only handle of a store in
 * Redis. An embedded store's writes are atomic: there it is fpstore_verify. */
FPSTORE_EXPORT int fpstore_repair(fpstore_t* store, char** errmsg);

/* ---- Fingerprints and signatures without a store ---- */

typedef struct fpstore_fingerprinter_t fpstore_fingerprinter_t;

/* A fingerprinter (thread-safe once made) with the options of fingerprinter.h: window (0: the
 * default, 1), weighting "tf" or "presence" (NULL: "tf"), signature_bytes
 * (0: 64; else 16, 32, 64, 128 or 256), signature_window (0: 5) and bits,
 * the fingerprints' width (0: 64; else 64 or 128). */
FPSTORE_EXPORT int fpstore_fingerprinter_create(int window, const char* weighting,
                                                int signature_bytes, int signature_window, int bits,
                                                fpstore_fingerprinter_t** fingerprinter,
                                                char** errmsg);
/* A UTF-8 text's fingerprint and, if signature is not NULL, its
 * verification signature: *signature_len bytes (signature_len must then not
 * be NULL) in a buffer the caller frees with fpstore_free. A 128-bit
 * fingerprint is two uint64_t: its low 64 bits in *fingerprint, its high 64
 * bits in *fingerprint_high, which a 128-bit fingerprinter needs and a
 * 64-bit one sets to 0 (fingerprint_high may then be NULL). */
FPSTORE_EXPORT int fpstore_fingerprinter_sketch(const fpstore_fingerprinter_t* fingerprinter,
                                                const char* text, size_t text_len,
                                                uint64_t* fingerprint, uint64_t* fingerprint_high,
                                                char** signature, size_t* signature_len,
                                                char** errmsg);
FPSTORE_EXPORT void fpstore_fingerprinter_destroy(fpstore_fingerprinter_t* fingerprinter);

/* The Hamming distance of two fingerprints of up to 128 bits, each given as
 * its high and low 64 bits (high 0 for a 64-bit one): 0 to 128. */
FPSTORE_EXPORT int fpstore_hamming_distance(uint64_t a_high, uint64_t a, uint64_t b_high,
                                            uint64_t b);

/* The estimated similarity of two signatures, from 0 to 1; -1 when either
 * is empty or they are not signatures of the same size. */
FPSTORE_EXPORT double fpstore_estimate_similarity(const char* a, size_t a_len, const char* b,
                                                  size_t b_len);

/* ---- Matches: the answer of a query, a list of stored documents ---- */

/* The number of matches; 0 for NULL. */
FPSTORE_EXPORT size_t fpstore_matches_count(const fpstore_matches_t* matches);

/* Match `i`'s fields. For NULL matches or i >= fpstore_matches_count(matches):
 * 0 (id, fingerprint) and -1 (distance). A fingerprint is its low 64 bits;
 * fpstore_matches_fingerprint_high gives the high 64 of a 128-bit store's. */
FPSTORE_EXPORT uint64_t fpstore_matches_id(const fpstore_matches_t* matches, size_t i);
FPSTORE_EXPORT uint64_t fpstore_matches_fingerprint(const fpstore_matches_t* matches, size_t i);
FPSTORE_EXPORT uint64_t fpstore_matches_fingerprint_high(const fpstore_matches_t* matches,
                                                         size_t i);
FPSTORE_EXPORT int fpstore_matches_distance(const fpstore_matches_t* matches, size_t i);
/* The stored document's time, seconds since the Unix epoch (Match::time). */
FPSTORE_EXPORT int64_t fpstore_matches_time(const fpstore_matches_t* matches, size_t i);

/* Match `i`'s estimated similarity to the query, from 0 to 1, or -1 when
 * the query or the document has no signature (the match stands on its
 * distance alone), for NULL matches or i >= fpstore_matches_count(matches). */
FPSTORE_EXPORT double fpstore_matches_similarity(const fpstore_matches_t* matches, size_t i);

/* Match `i`'s metadata: *len bytes (len may be NULL), NUL-terminated, owned
 * by `matches`. For NULL matches or i >= fpstore_matches_count(matches): NULL,
 * and *len is 0. */
FPSTORE_EXPORT const char* fpstore_matches_metadata(const fpstore_matches_t* matches, size_t i,
                                                    size_t* len);

FPSTORE_EXPORT void fpstore_matches_destroy(fpstore_matches_t* matches); /* NULL is ignored */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FPSTORE_C_H_ */
