/* The C API (include/fpstore/c.h) from a C11 program, as a C user or a
 * binding sees it: codes, messages, handles and who frees what. Under the
 * sanitizer build LeakSanitizer also checks that each handle and message
 * the API hands out is freed by its documented function. */

#define _XOPEN_SOURCE 700 /* mkdtemp, nftw */

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fpstore/c.h"
#include "fpstore/version.h"

static int failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

/* Checks that `call`, which passes `&errmsg` (a variable this macro
 * declares), returned `code` and, for an error, a message that contains
 * `needle`; frees the message. */
#define CHECK_CODE(call, code, needle)                                                         \
  do {                                                                                         \
    char* errmsg = NULL;                                                                       \
    const int got_ = (call);                                                                   \
    if (got_ != (code)) {                                                                      \
      fprintf(stderr, "%s:%d: %s returned %d (%s), expected %d\n", __FILE__, __LINE__, #call,  \
              got_, errmsg ? errmsg : "no message", (code));                                   \
      ++failures;                                                                              \
    } else if ((code) != FPSTORE_OK && (errmsg == NULL || strstr(errmsg, (needle)) == NULL)) { \
      fprintf(stderr, "%s:%d: %s: message \"%s\" lacks \"%s\"\n", __FILE__, __LINE__, #call,   \
              errmsg ? errmsg : "(null)", (needle));                                           \
      ++failures;                                                                              \
    }                                                                                          \
    fpstore_free(errmsg);                                                                      \
  } while (0)

#define CHECK_OK(call) CHECK_CODE(call, FPSTORE_OK, "")

static const char kText[] =
    "The quick brown fox jumps over the lazy dog while the cat sleeps on the warm "
    "windowsill and the birds sing in the old oak tree behind the house.";
static const char kOther[] =
    "Permission is hereby granted, free of charge, to any person obtaining a copy of "
    "this software and associated documentation files, to deal in the software.";

static int RemoveEntry(const char* path, const struct stat* sb, int flag, struct FTW* ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path);
}

static fpstore_options_t* Options(int create, int read_only) {
  fpstore_options_t* options = fpstore_options_create();
  fpstore_options_set_create_if_missing(options, create);
  fpstore_options_set_read_only(options, read_only);
  fpstore_options_set_durability(options, FPSTORE_DURABILITY_NO_SYNC);
  return options;
}

/* Opens the store at `path`, counting a failure as a failed check. */
static fpstore_t* MustOpen(const char* path, int create, int read_only) {
  fpstore_options_t* options = Options(create, read_only);
  fpstore_t* store = NULL;
  CHECK_OK(fpstore_open(path, options, &store, &errmsg));
  fpstore_options_destroy(options);
  return store;
}

static void TestVersion(void) { CHECK(strcmp(fpstore_version(), FPSTORE_VERSION_STRING) == 0); }

static void TestBadArguments(const char* dir) {
  fpstore_t* store = NULL;
  CHECK_CODE(fpstore_open(NULL, NULL, &store, &errmsg), FPSTORE_INVALID_ARGUMENT, "path is NULL");
  CHECK_CODE(fpstore_open(dir, NULL, NULL, &errmsg), FPSTORE_INVALID_ARGUMENT, "store is NULL");
  CHECK(store == NULL);
  CHECK_CODE(fpstore_insert(NULL, 1, 0, NULL, 0, &errmsg), FPSTORE_INVALID_ARGUMENT,
             "store is NULL");

  fpstore_options_t* options = Options(1, 0);
  fpstore_options_set_durability(options, 7);
  CHECK_CODE(fpstore_open(dir, options, &store, &errmsg), FPSTORE_INVALID_ARGUMENT, "durability 7");
  fpstore_options_set_durability(options, FPSTORE_DURABILITY_NO_SYNC);
  fpstore_options_set_blocks(options, 3); /* blocks must exceed the distance */
  CHECK_CODE(fpstore_open(dir, options, &store, &errmsg), FPSTORE_INVALID_ARGUMENT, "blocks");
  fpstore_options_destroy(options);
  CHECK(store == NULL);

  /* Setters ignore NULL options; matches accessors answer NULL or an index
   * past the end without reading out of bounds. */
  fpstore_options_set_create_if_missing(NULL, 1);
  fpstore_options_set_read_only(NULL, 1);
  fpstore_options_set_blocks(NULL, 6);
  fpstore_options_set_distance(NULL, 3);
  fpstore_options_set_expected_documents(NULL, 1000);
  fpstore_options_set_durability(NULL, FPSTORE_DURABILITY_SYNC);
  fpstore_options_destroy(NULL);
  {
    size_t len = 99;
    CHECK(fpstore_matches_count(NULL) == 0);
    CHECK(fpstore_matches_id(NULL, 0) == 0);
    CHECK(fpstore_matches_fingerprint(NULL, 0) == 0);
    CHECK(fpstore_matches_distance(NULL, 0) == -1);
    CHECK(fpstore_matches_metadata(NULL, 0, &len) == NULL && len == 0);
    CHECK(fpstore_matches_metadata(NULL, 0, NULL) == NULL);
    fpstore_matches_destroy(NULL);
  }

  /* errmsg is optional; closing NULL is a no-op. */
  CHECK(fpstore_open(NULL, NULL, &store, NULL) == FPSTORE_INVALID_ARGUMENT);
  CHECK(fpstore_close(NULL, NULL) == FPSTORE_OK);
}

static void TestMissingStore(const char* dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/missing", dir);
  fpstore_options_t* options = Options(0, 0);
  fpstore_t* store = NULL;
  CHECK_CODE(fpstore_open(path, options, &store, &errmsg), FPSTORE_NOT_FOUND, "no store at");
  CHECK(store == NULL);
  fpstore_options_destroy(options);
}

/* Creates a store at `path` and exercises every call; leaves ids 1, 3 and
 * 4 stored. */
static void TestReadWrite(const char* path) {
  fpstore_t* store = MustOpen(path, 1, 0);
  if (store == NULL) return;

  /* A second writer is refused while the first is open. */
  fpstore_t* second = NULL;
  CHECK_CODE(fpstore_open(path, NULL, &second, &errmsg), FPSTORE_BUSY, "");

  uint64_t fp = 0;
  CHECK_OK(fpstore_fingerprint(store, kText, strlen(kText), &fp, &errmsg));
  CHECK(fp != 0);
  CHECK_CODE(fpstore_fingerprint(store, "\xff\xfe", 2, &fp, &errmsg), FPSTORE_INVALID_ARGUMENT,
             "UTF-8");

  /* A success sets *errmsg to NULL. */
  char sentinel = 0;
  char* err = &sentinel;
  const int64_t before = (int64_t)time(NULL);
  CHECK(fpstore_insert_text(store, 1, kText, strlen(kText), "url-1", 5, &err) == FPSTORE_OK);
  CHECK(err == NULL);
  /* Id 2 is one bit away; its metadata holds a NUL byte. */
  CHECK_OK(fpstore_insert(store, 2, fp ^ 1, "a\0b", 3, &errmsg));

  fpstore_matches_t* matches = NULL;
  CHECK_OK(fpstore_query_text(store, kText, strlen(kText), 3, &matches, &errmsg));
  CHECK(fpstore_matches_count(matches) == 2);
  if (fpstore_matches_count(matches) == 2) {
    size_t len = 0;
    CHECK(fpstore_matches_id(matches, 0) == 1);
    CHECK(fpstore_matches_fingerprint(matches, 0) == fp);
    CHECK(fpstore_matches_distance(matches, 0) == 0);
    CHECK(strcmp(fpstore_matches_metadata(matches, 0, &len), "url-1") == 0 && len == 5);
    CHECK(fpstore_matches_similarity(matches, 0) == 1.0); /* the same text, signed */
    /* Inserted without a time: the clock's at the insert, as Get says. */
    int64_t stored = -1;
    CHECK_OK(fpstore_get_time(store, 1, &stored, &errmsg));
    CHECK(stored >= before && stored <= (int64_t)time(NULL));
    CHECK(fpstore_matches_time(matches, 0) == stored);
    CHECK(fpstore_matches_id(matches, 1) == 2);
    CHECK(fpstore_matches_distance(matches, 1) == 1);
    CHECK(memcmp(fpstore_matches_metadata(matches, 1, &len), "a\0b", 3) == 0 && len == 3);
    CHECK(fpstore_matches_similarity(matches, 1) == -1); /* a bare fingerprint */
  }
  {
    size_t len = 99;
    CHECK(fpstore_matches_id(matches, 2) == 0);
    CHECK(fpstore_matches_fingerprint(matches, 2) == 0);
    CHECK(fpstore_matches_distance(matches, 2) == -1);
    CHECK(fpstore_matches_time(matches, 2) == 0);
    CHECK(fpstore_matches_similarity(matches, 2) == -1);
    CHECK(fpstore_matches_similarity(NULL, 0) == -1);
    CHECK(fpstore_matches_metadata(matches, 2, &len) == NULL && len == 0);
  }
  fpstore_matches_destroy(matches);

  matches = NULL;
  CHECK_OK(fpstore_query(store, fp, 0, &matches, &errmsg));
  CHECK(fpstore_matches_count(matches) == 1);
  fpstore_matches_destroy(matches);
  CHECK_CODE(fpstore_query(store, fp, 4, &matches, &errmsg), FPSTORE_INVALID_ARGUMENT, "");
  CHECK_CODE(fpstore_query(store, fp, 3, NULL, &errmsg), FPSTORE_INVALID_ARGUMENT,
             "matches is NULL");

  /* The crawler's call: a near-duplicate is reported and, by default,
   * inserted too. */
  int inserted = -1;
  matches = NULL;
  CHECK_OK(fpstore_check_and_insert(store, 3, fp ^ 3, NULL, 0, FPSTORE_INSERT_ALWAYS, &matches,
                                    &inserted, &errmsg));
  CHECK(inserted == 1);
  CHECK(fpstore_matches_count(matches) == 2);
  fpstore_matches_destroy(matches);

  /* Something new goes in under either policy... */
  uint64_t other = 0;
  CHECK_OK(fpstore_fingerprint(store, kOther, strlen(kOther), &other, &errmsg));
  matches = NULL;
  CHECK_OK(fpstore_check_and_insert(store, 4, other, "url-4", 5, FPSTORE_INSERT_IF_NO_MATCH,
                                    &matches, &inserted, &errmsg));
  CHECK(inserted == 1);
  CHECK(fpstore_matches_count(matches) == 0);
  fpstore_matches_destroy(matches);

  /* ...a duplicate does not under FPSTORE_INSERT_IF_NO_MATCH. */
  matches = NULL;
  CHECK_OK(fpstore_check_and_insert(store, 5, fp, NULL, 0, FPSTORE_INSERT_IF_NO_MATCH, &matches,
                                    &inserted, &errmsg));
  CHECK(inserted == 0);
  CHECK(fpstore_matches_count(matches) == 3);
  fpstore_matches_destroy(matches);
  CHECK_CODE(fpstore_check_and_insert(store, 5, fp, NULL, 0, 9, &matches, &inserted, &errmsg),
             FPSTORE_INVALID_ARGUMENT, "policy 9");

  CHECK_OK(fpstore_remove(store, 2, &errmsg));
  CHECK_CODE(fpstore_remove(store, 2, &errmsg), FPSTORE_NOT_FOUND, "");
  CHECK_CODE(fpstore_remove(store, 5, &errmsg), FPSTORE_NOT_FOUND, "");
  /* What is staged moves into the tables; TestReadOnly finds it there. */
  CHECK_OK(fpstore_flush(store, &errmsg));

  CHECK_OK(fpstore_close(store, &errmsg));
}

/* Texts are signed, and a store's threshold decides what is a match. */
static void TestConfirmation(const char* dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/strict", dir);
  fpstore_options_t* options = fpstore_options_create();
  fpstore_options_set_min_similarity(options, 1.5);
  fpstore_t* store = NULL;
  CHECK_CODE(fpstore_open(path, options, &store, &errmsg), FPSTORE_INVALID_ARGUMENT,
             "min_similarity");
  /* A store that calls only identical shingle sets near-duplicates. */
  fpstore_options_set_min_similarity(options, 1.0);
  CHECK_OK(fpstore_open(path, options, &store, &errmsg));
  fpstore_options_destroy(options);
  if (store == NULL) return;
  int inserted = -1;
  fpstore_matches_t* matches = NULL;
  CHECK_OK(fpstore_check_and_insert_text(store, 1, kText, strlen(kText), "one", 3,
                                         FPSTORE_INSERT_IF_NO_MATCH, &matches, &inserted, &errmsg));
  CHECK(inserted == 1 && fpstore_matches_count(matches) == 0);
  fpstore_matches_destroy(matches);
  /* The same text again is a match, at similarity 1. */
  matches = NULL;
  CHECK_OK(fpstore_check_and_insert_text(store, 2, kText, strlen(kText), NULL, 0,
                                         FPSTORE_INSERT_IF_NO_MATCH, &matches, &inserted, &errmsg));
  CHECK(inserted == 0 && fpstore_matches_count(matches) == 1);
  CHECK(fpstore_matches_similarity(matches, 0) == 1.0);
  fpstore_matches_destroy(matches);
  /* One word changed: near in bits, but below 1, so not a match here;
   * its bare fingerprint is one by distance alone. */
  char edited[sizeof kText];
  memcpy(edited, kText, sizeof kText);
  memcpy(edited, "ABC", 3);
  uint64_t fp = 0;
  CHECK_OK(fpstore_fingerprint(store, edited, strlen(edited), &fp, &errmsg));
  matches = NULL;
  CHECK_OK(fpstore_query(store, fp, 3, &matches, &errmsg));
  CHECK(fpstore_matches_count(matches) == 1);
  fpstore_matches_destroy(matches);
  matches = NULL;
  CHECK_OK(fpstore_check_and_insert_text(store, 3, edited, strlen(edited), NULL, 0,
                                         FPSTORE_INSERT_IF_NO_MATCH, &matches, &inserted, &errmsg));
  CHECK(inserted == 1 && fpstore_matches_count(matches) == 0);
  fpstore_matches_destroy(matches);
  /* A query may set its own threshold: at 0.5 the edited text matches the
   * original (and itself), at the store's 1.0 only itself. */
  matches = NULL;
  CHECK_OK(
      fpstore_query_text_min_similarity(store, edited, strlen(edited), 3, 0.5, &matches, &errmsg));
  CHECK(fpstore_matches_count(matches) == 2);
  fpstore_matches_destroy(matches);
  matches = NULL;
  CHECK_OK(fpstore_query_text(store, edited, strlen(edited), 3, &matches, &errmsg));
  CHECK(fpstore_matches_count(matches) == 1 && fpstore_matches_id(matches, 0) == 3);
  fpstore_matches_destroy(matches);
  CHECK_CODE(
      fpstore_query_text_min_similarity(store, edited, strlen(edited), 3, 1.5, &matches, &errmsg),
      FPSTORE_INVALID_ARGUMENT, "min_similarity");
  /* Negative: the store's threshold. */
  matches = NULL;
  CHECK_OK(
      fpstore_query_text_min_similarity(store, edited, strlen(edited), 3, -1, &matches, &errmsg));
  CHECK(fpstore_matches_count(matches) == 1 && fpstore_matches_id(matches, 0) == 3);
  fpstore_matches_destroy(matches);
  /* So may a check: at 0.5 the edited text has near-duplicates (the original
   * and its own copy, id 3), and a policy of "if no match" leaves it out. */
  matches = NULL;
  CHECK_OK(fpstore_check_and_insert_text_with(store, 4, edited, strlen(edited), NULL, 0,
                                              FPSTORE_INSERT_IF_NO_MATCH, -1, 0.5, &matches,
                                              &inserted, &errmsg));
  CHECK(inserted == 0 && fpstore_matches_count(matches) == 2);
  fpstore_matches_destroy(matches);
  /* Within 0 bits only the copy with the very same fingerprint is a candidate. */
  matches = NULL;
  CHECK_OK(fpstore_check_and_insert_text_with(store, 4, edited, strlen(edited), NULL, 0,
                                              FPSTORE_INSERT_IF_NO_MATCH, 0, 0, &matches, &inserted,
                                              &errmsg));
  CHECK(inserted == 0 && fpstore_matches_count(matches) == 1 &&
        fpstore_matches_id(matches, 0) == 3);
  fpstore_matches_destroy(matches);
  CHECK_CODE(fpstore_check_and_insert_text_with(store, 4, edited, strlen(edited), NULL, 0,
                                                FPSTORE_INSERT_ALWAYS, 9, -1, &matches, &inserted,
                                                &errmsg),
             FPSTORE_INVALID_ARGUMENT, "distance");
  CHECK_CODE(fpstore_check_and_insert_text_with(store, 4, edited, strlen(edited), NULL, 0,
                                                FPSTORE_INSERT_ALWAYS, 3, 2.0, &matches, &inserted,
                                                &errmsg),
             FPSTORE_INVALID_ARGUMENT, "min_similarity");
  CHECK_CODE(fpstore_check_and_insert_text(store, 4, "\xff", 1, NULL, 0, FPSTORE_INSERT_ALWAYS,
                                           &matches, &inserted, &errmsg),
             FPSTORE_INVALID_ARGUMENT, "UTF-8");
  CHECK_CODE(fpstore_check_and_insert_text(NULL, 4, kText, strlen(kText), NULL, 0,
                                           FPSTORE_INSERT_ALWAYS, &matches, &inserted, &errmsg),
             FPSTORE_INVALID_ARGUMENT, "store is NULL");
  CHECK_OK(fpstore_close(store, &errmsg));
}

/* Reopens what TestReadWrite left, read-only. */
static void TestReadOnly(const char* path) {
  fpstore_t* store = MustOpen(path, 0, 1);
  if (store == NULL) return;

  fpstore_matches_t* matches = NULL;
  CHECK_OK(fpstore_query_text(store, kText, strlen(kText), 3, &matches, &errmsg));
  CHECK(fpstore_matches_count(matches) == 2); /* ids 1 and 3; 2 was removed */
  if (fpstore_matches_count(matches) == 2) {
    CHECK(fpstore_matches_id(matches, 0) == 1);
    CHECK(fpstore_matches_id(matches, 1) == 3);
  }
  fpstore_matches_destroy(matches);

  CHECK_CODE(fpstore_insert_text(store, 6, kText, strlen(kText), NULL, 0, &errmsg),
             FPSTORE_NOT_SUPPORTED, "");
  CHECK_CODE(fpstore_remove(store, 1, &errmsg), FPSTORE_NOT_SUPPORTED, "");
  CHECK_CODE(fpstore_flush(store, &errmsg), FPSTORE_NOT_SUPPORTED, "");
  CHECK_OK(fpstore_close(store, &errmsg));

  /* The plan is the store's: asking for another one fails. */
  fpstore_options_t* options = Options(0, 1);
  fpstore_options_set_blocks(options, 5);
  CHECK_CODE(fpstore_open(path, options, &store, &errmsg), FPSTORE_INVALID_ARGUMENT, "");
  fpstore_options_destroy(options);

  /* The documents expected shape a new store only: an existing one opens
   * with its groups as they were cut. With its top bit flipped, document
   * 1's fingerprint misses table 0 (whose prefix holds block 0) and is
   * found through the tables of groups alone. */
  options = Options(0, 1);
  fpstore_options_set_expected_documents(options, 1000000000);
  CHECK_OK(fpstore_open(path, options, &store, &errmsg));
  fpstore_options_destroy(options);
  uint64_t fp = 0;
  CHECK_OK(fpstore_fingerprint(store, kText, strlen(kText), &fp, &errmsg));
  CHECK_OK(fpstore_query(store, fp ^ (UINT64_C(1) << 63), 1, &matches, &errmsg));
  CHECK(fpstore_matches_count(matches) == 1);
  if (fpstore_matches_count(matches) == 1) CHECK(fpstore_matches_id(matches, 0) == 1);
  fpstore_matches_destroy(matches);
  CHECK_OK(fpstore_close(store, &errmsg));
}

/* A log damaged in its middle after a crash: the open fails with FPSTORE_CORRUPTION naming the
 * log; with drop_damaged_log it opens, without the writes after the damage. */
static void TestDamagedLog(const char* dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/damaged", dir);
  const pid_t pid = fork();
  if (pid == 0) { /* inserts, each synced, and exits without closing: a crash */
    fpstore_options_t* options = Options(1, 0);
    fpstore_options_set_durability(options, FPSTORE_DURABILITY_SYNC);
    fpstore_t* store = NULL;
    if (fpstore_open(path, options, &store, NULL) != FPSTORE_OK) _exit(3);
    for (uint64_t id = 0; id < 40; ++id) {
      if (fpstore_insert(store, id, id * 0x9e3779b97f4a7c15u, "0123456789", 10, NULL) !=
          FPSTORE_OK) {
        _exit(4);
      }
    }
    _exit(0);
  }
  int status = 0;
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
        WEXITSTATUS(status) == 0);
  /* Damage 16 bytes in the middle of the log that holds the inserts. */
  char log[4096 + 512] = "";
  DIR* d = opendir(path);
  for (struct dirent* e; d != NULL && (e = readdir(d)) != NULL;) {
    const size_t n = strlen(e->d_name);
    char file[4096 + 512];
    snprintf(file, sizeof file, "%s/%s", path, e->d_name);
    struct stat st;
    if (n > 4 && strcmp(e->d_name + n - 4, ".log") == 0 && stat(file, &st) == 0 && st.st_size > 0) {
      snprintf(log, sizeof log, "%s", file);
    }
  }
  if (d != NULL) closedir(d);
  CHECK(log[0] != '\0');
  FILE* f = fopen(log, "r+b");
  CHECK(f != NULL);
  if (f == NULL) return;
  fseek(f, 0, SEEK_END);
  const long middle = ftell(f) / 2;
  unsigned char bytes[16];
  fseek(f, middle, SEEK_SET);
  CHECK(fread(bytes, 1, sizeof bytes, f) == sizeof bytes);
  for (size_t i = 0; i < sizeof bytes; ++i) bytes[i] ^= 0x5a;
  fseek(f, middle, SEEK_SET);
  CHECK(fwrite(bytes, 1, sizeof bytes, f) == sizeof bytes);
  fclose(f);

  fpstore_options_t* options = Options(0, 0);
  fpstore_t* store = NULL;
  char* err = NULL;
  CHECK(fpstore_open(path, options, &store, &err) == FPSTORE_CORRUPTION);
  CHECK(store == NULL);
  CHECK(err != NULL && strstr(err, log) != NULL && strstr(err, "drop_damaged_log") != NULL);
  fpstore_free(err);
  fpstore_options_set_drop_damaged_log(NULL, 1); /* ignored */
  fpstore_options_set_drop_damaged_log(options, 1);
  CHECK_OK(fpstore_open(path, options, &store, &errmsg));
  fpstore_options_destroy(options);
  /* The first insert is kept, the last dropped. */
  const uint64_t ids[2] = {0, 39};
  const size_t expected[2] = {1, 0};
  for (int i = 0; i < 2; ++i) {
    fpstore_matches_t* matches = NULL;
    CHECK_OK(fpstore_query(store, ids[i] * 0x9e3779b97f4a7c15u, 0, &matches, &errmsg));
    CHECK(fpstore_matches_count(matches) == expected[i]);
    fpstore_matches_destroy(matches);
  }
  CHECK_OK(fpstore_close(store, &errmsg));
}

/* ---- The whole store from C: batches, get, scans, bulk loads, upkeep ---- */

enum { kDocs = 120, kTexts = 3 };

static int Popcount(uint64_t x) {
  int n = 0;
  for (; x != 0; x &= x - 1) ++n;
  return n;
}

/* Fingerprints in groups of four: a random one and three variants a few bits away. */
static void MakeFingerprints(uint64_t* fps) {
  uint64_t state = 0x2545f4914f6cdd1dULL;
  for (int i = 0; i < kDocs; ++i) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    fps[i] = i % 4 == 0 ? state : fps[i - i % 4] ^ (state & 0x0101010101010101ULL & (state >> 3));
  }
}

struct Pairs {
  int count;
  int bad; /* pairs out of order or beyond k */
  int k;
  const uint64_t* fps; /* by id - 1 */
};

static void CountPair(void* context, uint64_t first, uint64_t second, int distance,
                      double similarity) {
  struct Pairs* pairs = context;
  ++pairs->count;
  if (first == 0 || first >= second || distance > pairs->k || similarity != -1 || first > kDocs ||
      second > kDocs || Popcount(pairs->fps[first - 1] ^ pairs->fps[second - 1]) != distance) {
    ++pairs->bad;
  }
}

struct Clusters {
  size_t documents;
  int unordered;
};

static void CountCluster(void* context, const uint64_t* ids, size_t count) {
  struct Clusters* clusters = context;
  clusters->documents += count;
  for (size_t i = 1; i < count; ++i) {
    if (ids[i - 1] >= ids[i]) ++clusters->unordered;
  }
}

static void TestWholeStore(const char* dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/whole", dir);
  fpstore_t* store = MustOpen(path, 1, 0);
  if (store == NULL) return;
  uint64_t ids[kDocs], fps[kDocs];
  const char* metadata[kDocs];
  size_t metadata_lens[kDocs];
  MakeFingerprints(fps);
  for (int i = 0; i < kDocs; ++i) {
    ids[i] = (uint64_t)i + 1;
    metadata[i] = i % 2 == 0 ? "even" : "odd";
    metadata_lens[i] = strlen(metadata[i]);
  }
  CHECK_OK(
      fpstore_insert_batch(store, kDocs, ids, fps, NULL, NULL, metadata, metadata_lens, &errmsg));
  const char* texts[kTexts] = {kText, kOther, "a third text, short"};
  size_t text_lens[kTexts];
  uint64_t text_ids[kTexts];
  for (int i = 0; i < kTexts; ++i) {
    text_lens[i] = strlen(texts[i]);
    text_ids[i] = 1000 + (uint64_t)i;
  }
  CHECK_OK(
      fpstore_insert_batch(store, kTexts, text_ids, NULL, texts, text_lens, NULL, NULL, &errmsg));
  CHECK_CODE(fpstore_insert_batch(store, 1, ids, fps, texts, text_lens, NULL, NULL, &errmsg),
             FPSTORE_INVALID_ARGUMENT, "exactly one");
  CHECK_CODE(fpstore_insert_batch(store, 1, NULL, fps, NULL, NULL, NULL, NULL, &errmsg),
             FPSTORE_INVALID_ARGUMENT, "ids is NULL");
  CHECK_CODE(fpstore_insert_batch(NULL, 1, ids, fps, NULL, NULL, NULL, NULL, &errmsg),
             FPSTORE_INVALID_ARGUMENT, "store is NULL");
  CHECK_OK(fpstore_insert_batch(store, 0, NULL, NULL, NULL, NULL, NULL, NULL, &errmsg));

  /* get: a bare fingerprint with its metadata, a text's, a missing id. */
  uint64_t fp = 0;
  char* meta = NULL;
  size_t meta_len = 0;
  CHECK_OK(fpstore_get(store, 2, &fp, &meta, &meta_len, &errmsg));
  CHECK(fp == fps[1] && meta != NULL && strcmp(meta, "odd") == 0 && meta_len == 3);
  fpstore_free(meta);
  uint64_t text_fp = 0;
  CHECK_OK(fpstore_fingerprint(store, kText, strlen(kText), &text_fp, &errmsg));
  CHECK_OK(fpstore_get(store, 1000, &fp, NULL, NULL, &errmsg));
  CHECK(fp == text_fp);
  CHECK_CODE(fpstore_get(store, 99999, &fp, NULL, NULL, &errmsg), FPSTORE_NOT_FOUND, "");
  int64_t no_time = 0;
  CHECK_CODE(fpstore_get_time(store, 99999, &no_time, &errmsg), FPSTORE_NOT_FOUND, "");
  CHECK_CODE(fpstore_get_time(store, 1, NULL, &errmsg), FPSTORE_INVALID_ARGUMENT, "time");
  CHECK_CODE(fpstore_get(store, 1, NULL, NULL, NULL, &errmsg), FPSTORE_INVALID_ARGUMENT,
             "fingerprint is NULL");

  /* query_batch against brute force over the bare fingerprints, and a text. */
  const int k = 3;
  fpstore_matches_t* results[kDocs];
  CHECK_OK(fpstore_query_batch(store, kDocs, fps, NULL, NULL, k, -1, results, &errmsg));
  for (int q = 0; q < kDocs; ++q) {
    size_t expected = 0;
    for (int d = 0; d < kDocs; ++d) expected += Popcount(fps[q] ^ fps[d]) <= k;
    for (int t = 0; t < kTexts; ++t) {
      uint64_t tfp = 0;
      CHECK_OK(fpstore_get(store, text_ids[t], &tfp, NULL, NULL, &errmsg));
      expected += Popcount(fps[q] ^ tfp) <= k;
    }
    CHECK(fpstore_matches_count(results[q]) == expected);
    fpstore_matches_destroy(results[q]);
  }
  CHECK_OK(fpstore_query_batch(store, 1, NULL, texts, text_lens, k, 0.5, results, &errmsg));
  CHECK(fpstore_matches_count(results[0]) >= 1 && fpstore_matches_id(results[0], 0) == 1000 &&
        fpstore_matches_similarity(results[0], 0) == 1.0);
  fpstore_matches_destroy(results[0]);
  CHECK_CODE(fpstore_query_batch(store, 1, fps, NULL, NULL, k, -1, NULL, &errmsg),
             FPSTORE_INVALID_ARGUMENT, "results is NULL");
  CHECK_CODE(fpstore_query_batch(store, 1, fps, NULL, NULL, 40, -1, results, &errmsg),
             FPSTORE_INVALID_ARGUMENT, "distance");

  /* find_all and clusters over the bare fingerprints. */
  CHECK_OK(fpstore_remove(store, 1000, &errmsg));
  CHECK_OK(fpstore_remove(store, 1001, &errmsg));
  CHECK_OK(fpstore_remove(store, 1002, &errmsg));
  struct Pairs pairs = {0, 0, k, fps};
  CHECK_OK(fpstore_find_all(store, k, -1, CountPair, &pairs, &errmsg));
  int expected_pairs = 0;
  for (int a = 0; a < kDocs; ++a) {
    for (int b = a + 1; b < kDocs; ++b) expected_pairs += Popcount(fps[a] ^ fps[b]) <= k;
  }
  CHECK(pairs.count == expected_pairs && pairs.bad == 0);
  CHECK(expected_pairs > 0);
  struct Clusters clusters = {0, 0};
  CHECK_OK(fpstore_clusters(store, k, -1, CountCluster, &clusters, &errmsg));
  CHECK(clusters.documents > 0 && clusters.documents <= kDocs && clusters.unordered == 0);
  CHECK_CODE(fpstore_find_all(store, k, -1, NULL, NULL, &errmsg), FPSTORE_INVALID_ARGUMENT,
             "pair is NULL");
  CHECK_CODE(fpstore_clusters(NULL, k, -1, CountCluster, NULL, &errmsg), FPSTORE_INVALID_ARGUMENT,
             "store is NULL");

  /* Upkeep: stats, verify, compact, checkpoint. */
  fpstore_stats_t* stats = NULL;
  CHECK_OK(fpstore_stats(store, &stats, &errmsg));
  CHECK(fpstore_stats_documents(stats) == kDocs);
  CHECK(fpstore_stats_blocks(stats) == 6 && fpstore_stats_distance(stats) == 3);
  CHECK(fpstore_stats_min_similarity(stats) == 0.9);
  CHECK(fpstore_stats_bytes_on_disk(stats) > 0);
  CHECK(fpstore_stats_staged_documents(stats) <= kDocs);
  fpstore_stats_destroy(stats);
  CHECK(fpstore_stats_documents(NULL) == 0 && fpstore_stats_blocks(NULL) == 0);
  fpstore_stats_destroy(NULL);
  CHECK_OK(fpstore_verify(store, &errmsg));
  CHECK_OK(fpstore_compact(store, &errmsg));
  CHECK_OK(fpstore_verify(store, &errmsg));
  CHECK_OK(fpstore_repair(store, &errmsg)); /* an embedded store: it verifies */
  CHECK_CODE(fpstore_repair(NULL, &errmsg), FPSTORE_INVALID_ARGUMENT, "store is NULL");
  char copy[4200];
  snprintf(copy, sizeof copy, "%s/whole-copy", dir);
  CHECK_OK(fpstore_checkpoint(store, copy, &errmsg));
  CHECK_CODE(fpstore_checkpoint(store, NULL, &errmsg), FPSTORE_INVALID_ARGUMENT, "dir is NULL");
  CHECK_CODE(fpstore_verify(NULL, &errmsg), FPSTORE_INVALID_ARGUMENT, "store is NULL");
  CHECK_CODE(fpstore_compact(NULL, &errmsg), FPSTORE_INVALID_ARGUMENT, "store is NULL");
  CHECK_OK(fpstore_close(store, &errmsg));
  store = MustOpen(copy, 0, 1);
  if (store != NULL) {
    CHECK_OK(fpstore_stats(store, &stats, &errmsg));
    CHECK(fpstore_stats_documents(stats) == kDocs);
    fpstore_stats_destroy(stats);
    CHECK_OK(fpstore_repair(store, &errmsg)); /* read-only: verifying needs no writes */
    CHECK_OK(fpstore_close(store, &errmsg));
  }

  /* Destroying: refused while a writer has the store open, then for good. */
  store = MustOpen(copy, 0, 0);
  CHECK_CODE(fpstore_destroy(copy, &errmsg), FPSTORE_BUSY, "");
  CHECK_OK(fpstore_close(store, &errmsg));
  CHECK_OK(fpstore_destroy(copy, &errmsg));
  struct stat st;
  CHECK(stat(copy, &st) != 0 && errno == ENOENT);
  fpstore_options_t* options = Options(0, 0);
  CHECK_CODE(fpstore_open(copy, options, &store, &errmsg), FPSTORE_NOT_FOUND, "no store at");
  fpstore_options_destroy(options);
  CHECK_CODE(fpstore_destroy(copy, &errmsg), FPSTORE_NOT_FOUND, "no store at");
  CHECK_CODE(fpstore_destroy(NULL, &errmsg), FPSTORE_INVALID_ARGUMENT, "path is NULL");
}

static void TestBulkLoad(const char* dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/bulk", dir);
  fpstore_t* store = MustOpen(path, 1, 0);
  if (store == NULL) return;
  uint64_t fps[kDocs];
  MakeFingerprints(fps);
  fpstore_bulk_loader_t* loader = NULL;
  CHECK_OK(fpstore_bulk_loader_create(store, 0, 1, &loader, &errmsg));
  for (int i = 0; i < kDocs; ++i) {
    CHECK_OK(fpstore_bulk_loader_add(loader, (uint64_t)i, fps[i], "m", 1, &errmsg));
  }
  CHECK_OK(fpstore_bulk_loader_add_text(loader, 5000, kText, strlen(kText), NULL, 0, &errmsg));
  uint64_t added = 0, replaced = 7;
  CHECK_OK(fpstore_bulk_loader_finish(loader, &added, &replaced, &errmsg));
  CHECK(added == kDocs + 1 && replaced == 0);
  CHECK_CODE(fpstore_bulk_loader_add(loader, 1, 1, NULL, 0, &errmsg), FPSTORE_INVALID_ARGUMENT,
             "finished or failed");
  CHECK_CODE(fpstore_bulk_loader_finish(loader, NULL, NULL, &errmsg), FPSTORE_INVALID_ARGUMENT,
             "finished or failed");
  fpstore_bulk_loader_destroy(loader);
  /* An abandoned load changes nothing. */
  CHECK_OK(fpstore_bulk_loader_create(store, 0, 0, &loader, &errmsg));
  CHECK_OK(fpstore_bulk_loader_add(loader, 9999, 1, NULL, 0, &errmsg));
  fpstore_bulk_loader_destroy(loader);
  fpstore_bulk_loader_destroy(NULL);
  uint64_t fp = 0;
  CHECK_CODE(fpstore_get(store, 9999, &fp, NULL, NULL, &errmsg), FPSTORE_NOT_FOUND, "");
  CHECK_OK(fpstore_get(store, kDocs - 1, &fp, NULL, NULL, &errmsg));
  CHECK(fp == fps[kDocs - 1]);
  fpstore_matches_t* matches = NULL;
  CHECK_OK(fpstore_query_text(store, kText, strlen(kText), 0, &matches, &errmsg));
  CHECK(fpstore_matches_count(matches) == 1 && fpstore_matches_id(matches, 0) == 5000 &&
        fpstore_matches_similarity(matches, 0) == 1.0);
  fpstore_matches_destroy(matches);
  CHECK_CODE(fpstore_bulk_loader_create(NULL, 0, 0, &loader, &errmsg), FPSTORE_INVALID_ARGUMENT,
             "store is NULL");
  CHECK_CODE(fpstore_bulk_loader_add_text(NULL, 1, "x", 1, NULL, 0, &errmsg),
             FPSTORE_INVALID_ARGUMENT, "loader is NULL");
  CHECK_OK(fpstore_close(store, &errmsg));
}

static void TestFingerprinter(void) {
  /* The golden fingerprints of tests/fingerprinter_test.cc. */
  static const char kQuick[] = "The quick brown fox jumps over the lazy dog.";
  fpstore_fingerprinter_t* words = NULL;
  fpstore_fingerprinter_t* shingles = NULL;
  CHECK_OK(fpstore_fingerprinter_create(0, NULL, 0, 0, 0, &words, &errmsg));
  CHECK_OK(fpstore_fingerprinter_create(3, "tf", 0, 0, 0, &shingles, &errmsg));
  uint64_t fp = 0;
  char* signature = NULL;
  size_t signature_len = 0;
  CHECK_OK(fpstore_fingerprinter_sketch(words, kQuick, strlen(kQuick), &fp, NULL, &signature,
                                        &signature_len, &errmsg));
  CHECK(fp == 0x8212868318d29267ULL && signature != NULL && signature_len == 64);
  CHECK_OK(fpstore_fingerprinter_sketch(shingles, kQuick, strlen(kQuick), &fp, NULL, NULL, NULL,
                                        &errmsg));
  CHECK(fp == 0x75a5b714549a617aULL);
  /* 128 bits: the golden value of tests/fingerprinter_test.cc, high and low. */
  fpstore_fingerprinter_t* wide = NULL;
  CHECK_OK(fpstore_fingerprinter_create(3, NULL, 0, 0, 128, &wide, &errmsg));
  uint64_t high = 1;
  CHECK_OK(
      fpstore_fingerprinter_sketch(wide, kQuick, strlen(kQuick), &fp, &high, NULL, NULL, &errmsg));
  CHECK(high == 0x9c191798e28cb3c7ULL && fp == 0xda976debf49010b8ULL);
  CHECK(fpstore_hamming_distance(high, fp, high, fp ^ 5) == 2);
  CHECK(fpstore_hamming_distance(~0ULL, ~0ULL, 0, 0) == 128);
  CHECK_CODE(
      fpstore_fingerprinter_sketch(wide, kQuick, strlen(kQuick), &fp, NULL, NULL, NULL, &errmsg),
      FPSTORE_INVALID_ARGUMENT, "fingerprint_high is NULL");
  high = 7;
  CHECK_OK(fpstore_fingerprinter_sketch(shingles, kQuick, strlen(kQuick), &fp, &high, NULL, NULL,
                                        &errmsg));
  CHECK(high == 0 && fp == 0x75a5b714549a617aULL);
  fpstore_fingerprinter_destroy(wide);
  char* other = NULL;
  size_t other_len = 0;
  CHECK_OK(fpstore_fingerprinter_sketch(words, kOther, strlen(kOther), &fp, NULL, &other,
                                        &other_len, &errmsg));
  CHECK(fpstore_estimate_similarity(signature, signature_len, signature, signature_len) == 1.0);
  const double similarity = fpstore_estimate_similarity(signature, signature_len, other, other_len);
  CHECK(similarity >= 0 && similarity < 0.75); /* not near-copies; coarse when low */
  CHECK(fpstore_estimate_similarity(NULL, 0, other, other_len) == -1);
  CHECK(fpstore_estimate_similarity(signature, 3, other, 3) == -1);
  fpstore_free(signature);
  fpstore_free(other);
  fpstore_fingerprinter_t* bad = NULL;
  CHECK_CODE(fpstore_fingerprinter_create(1, "idf", 0, 0, 0, &bad, &errmsg),
             FPSTORE_INVALID_ARGUMENT, "weighting");
  CHECK_CODE(fpstore_fingerprinter_create(-1, NULL, 0, 0, 0, &bad, &errmsg),
             FPSTORE_INVALID_ARGUMENT, "window");
  CHECK(bad == NULL);
  CHECK_CODE(fpstore_fingerprinter_create(1, NULL, 0, 0, 96, &bad, &errmsg),
             FPSTORE_INVALID_ARGUMENT, "bits 96");
  CHECK_CODE(fpstore_fingerprinter_sketch(NULL, "x", 1, &fp, NULL, NULL, NULL, &errmsg),
             FPSTORE_INVALID_ARGUMENT, "fingerprinter is NULL");
  char* unsized = NULL;
  CHECK_CODE(fpstore_fingerprinter_sketch(words, "x", 1, &fp, NULL, &unsized, NULL, &errmsg),
             FPSTORE_INVALID_ARGUMENT, "signature_len is NULL");
  CHECK(unsized == NULL);
  fpstore_fingerprinter_destroy(words);
  fpstore_fingerprinter_destroy(shingles);
  fpstore_fingerprinter_destroy(NULL);
}

/* A 128-bit store: each call that takes or gives a bare fingerprint has a
 * 128 form, high half then low; the 64-bit forms refuse, rather than cut,
 * a wider one, and a 64-bit store refuses one with high bits. */
static void Test128BitStore(const char* dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/wide", dir);
  fpstore_options_t* options = fpstore_options_create();
  fpstore_options_set_bits(options, 128);
  fpstore_t* store = NULL;
  CHECK_OK(fpstore_open(path, options, &store, &errmsg));
  if (store == NULL) {
    fpstore_options_destroy(options);
    return;
  }
  const uint64_t high = 0x0123456789abcdefULL, low = 0xfedcba9876543210ULL;
  CHECK_OK(fpstore_insert128(store, 1, high, low, "one", 3, &errmsg));
  CHECK_OK(fpstore_insert(store, 2, low, "two", 3, &errmsg)); /* below 2^64: a 128-bit one too */
  const uint64_t ids[2] = {3, 4}, highs[2] = {high, high ^ 1}, lows[2] = {low ^ 2, low};
  CHECK_OK(fpstore_insert_batch128(store, 2, ids, highs, lows, NULL, NULL, &errmsg));
  fpstore_matches_t* matches = NULL;
  CHECK_OK(fpstore_query128(store, high, low, 1, &matches, &errmsg));
  CHECK(fpstore_matches_count(matches) == 3);
  CHECK(fpstore_matches_id(matches, 0) == 1 && fpstore_matches_distance(matches, 0) == 0);
  CHECK(fpstore_matches_fingerprint_high(matches, 0) == high);
  CHECK(fpstore_matches_fingerprint(matches, 0) == low);
  CHECK(fpstore_matches_fingerprint_high(matches, 2) == (high ^ 1));
  fpstore_matches_destroy(matches);
  matches = NULL;
  fpstore_matches_t* results[2] = {NULL, NULL};
  CHECK_OK(fpstore_query_batch128(store, 2, highs, lows, 0, -1, results, &errmsg));
  CHECK(fpstore_matches_count(results[0]) == 1 && fpstore_matches_id(results[0], 0) == 3);
  CHECK(fpstore_matches_count(results[1]) == 1 && fpstore_matches_id(results[1], 0) == 4);
  fpstore_matches_destroy(results[0]);
  fpstore_matches_destroy(results[1]);
  int inserted = -1;
  CHECK_OK(fpstore_check_and_insert128(store, 5, high, low ^ 4, NULL, 0, FPSTORE_INSERT_IF_NO_MATCH,
                                       &matches, &inserted, &errmsg));
  CHECK(inserted == 0 && fpstore_matches_count(matches) == 3);
  fpstore_matches_destroy(matches);
  uint64_t got_high = 0, got_low = 0;
  char* metadata = NULL;
  CHECK_OK(fpstore_get128(store, 1, &got_high, &got_low, &metadata, NULL, &errmsg));
  CHECK(got_high == high && got_low == low && metadata != NULL && strcmp(metadata, "one") == 0);
  fpstore_free(metadata);
  CHECK_CODE(fpstore_get(store, 1, &got_low, NULL, NULL, &errmsg), FPSTORE_INVALID_ARGUMENT,
             "fpstore_get128");
  CHECK_OK(fpstore_get(store, 2, &got_low, NULL, NULL, &errmsg));
  CHECK(got_low == low);
  uint64_t text_high = 0, text_low = 0;
  CHECK_OK(fpstore_fingerprint128(store, kText, strlen(kText), &text_high, &text_low, &errmsg));
  CHECK(text_high != 0);
  CHECK_CODE(fpstore_fingerprint(store, kText, strlen(kText), &text_low, &errmsg),
             FPSTORE_INVALID_ARGUMENT, "fpstore_fingerprint128");
  fpstore_bulk_loader_t* loader = NULL;
  CHECK_OK(fpstore_bulk_loader_create(store, 0, 0, &loader, &errmsg));
  CHECK_OK(fpstore_bulk_loader_add128(loader, 6, ~high, low, NULL, 0, &errmsg));
  CHECK_OK(fpstore_bulk_loader_finish(loader, NULL, NULL, &errmsg));
  fpstore_bulk_loader_destroy(loader);
  CHECK_OK(fpstore_query128(store, ~high, low, 0, &matches, &errmsg));
  CHECK(fpstore_matches_count(matches) == 1 && fpstore_matches_id(matches, 0) == 6);
  fpstore_matches_destroy(matches);
  CHECK_OK(fpstore_verify(store, &errmsg));
  CHECK_OK(fpstore_close(store, &errmsg));
  /* Reopened as 64 bits: refused; a 64-bit store refuses a wider fingerprint. */
  fpstore_options_set_bits(options, 64);
  store = NULL;
  CHECK_CODE(fpstore_open(path, options, &store, &errmsg), FPSTORE_INVALID_ARGUMENT,
             "bits 128, not 64");
  snprintf(path, sizeof path, "%s/narrow", dir);
  CHECK_OK(fpstore_open(path, options, &store, &errmsg));
  CHECK_CODE(fpstore_insert128(store, 1, 1, 0, NULL, 0, &errmsg), FPSTORE_INVALID_ARGUMENT,
             "128-bit fingerprint");
  CHECK_OK(fpstore_close(store, &errmsg));
  fpstore_options_destroy(options);
}

static int64_t TestClock(void* context) { return *(const int64_t*)context; }

/* Times, a retention and expiry: past the retention, no query returns a document. */
/* Store `name` of `dir`, with a retention of 100 s by the clock `*now`, refreshing matches if
 * `refresh`; NULL if it did not open. */
static fpstore_t* OpenRetained(const char* dir, const char* name, int64_t* now, int refresh) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  fpstore_options_t* options = fpstore_options_create();
  fpstore_options_set_clock(options, TestClock, now);
  fpstore_options_set_retention_seconds(options, 100);
  fpstore_options_set_refresh_matches(options, refresh);
  fpstore_options_set_durability(options, FPSTORE_DURABILITY_NO_SYNC);
  fpstore_t* store = NULL;
  CHECK_OK(fpstore_open(path, options, &store, &errmsg));
  fpstore_options_destroy(options);
  return store;
}

static void TestRetention(const char* dir) {
  int64_t now = 1000;
  fpstore_t* store = OpenRetained(dir, "retained", &now, 0);
  if (store == NULL) return;
  CHECK_OK(fpstore_insert(store, 1, 0x1234, NULL, 0, &errmsg)); /* at 1000 */
  now = 1050;
  CHECK_OK(fpstore_insert(store, 2, 0x1235, NULL, 0, &errmsg)); /* at 1050 */
  now = 1120; /* document 1 is past the retention, 2 is not */
  fpstore_matches_t* matches = NULL;
  CHECK_OK(fpstore_query(store, 0x1234, 3, &matches, &errmsg));
  CHECK(fpstore_matches_count(matches) == 1 && fpstore_matches_id(matches, 0) == 2);
  CHECK(fpstore_matches_time(matches, 0) == 1050);
  fpstore_matches_destroy(matches);
  int64_t time = 0;
  CHECK_CODE(fpstore_get_time(store, 1, &time, &errmsg), FPSTORE_NOT_FOUND, "retention");
  fpstore_stats_t* stats = NULL;
  CHECK_OK(fpstore_stats(store, &stats, &errmsg));
  CHECK(fpstore_stats_retention_seconds(stats) == 100);
  CHECK(fpstore_stats_newest_time(stats) == 1050);
  CHECK(fpstore_stats_oldest_time(stats) == 1000 || fpstore_stats_oldest_time(stats) == 1050);
  fpstore_stats_destroy(stats);
  CHECK(fpstore_stats_oldest_time(NULL) == -1);
  uint64_t removed = 99;
  CHECK_OK(fpstore_expire(store, 1051, &removed, &errmsg));
  CHECK(removed <= 2); /* the sweep may have taken document 1 already */
  CHECK_OK(fpstore_stats(store, &stats, &errmsg));
  CHECK(fpstore_stats_documents(stats) == 0 && fpstore_stats_oldest_time(stats) == -1);
  fpstore_stats_destroy(stats);
  CHECK_CODE(fpstore_expire(NULL, 5, NULL, &errmsg), FPSTORE_INVALID_ARGUMENT, "store is NULL");
  CHECK_OK(fpstore_close(store, &errmsg));
}

/* Times given with each write, what arrived past the retention, and matches refreshed. */
static void TestTimesPerWrite(const char* dir) {
  int64_t now = 1000;
  fpstore_t* store = OpenRetained(dir, "timed", &now, 1);
  if (store == NULL) return;
  const uint64_t ids[] = {1, 2, 3, 2};
  const uint64_t fps[] = {0x10000, 0x20000000, 0x300000000000, 0x20000000};
  const int64_t times[] = {950, 800, FPSTORE_NO_TIME, 890}; /* 2: the last one, past */
  uint64_t added = 0, replaced = 9, past = 0;
  CHECK_OK(fpstore_insert_batch_at(store, 4, ids, NULL, fps, NULL, NULL, NULL, NULL, times, &added,
                                   &replaced, &past, &errmsg));
  CHECK(added == 3 && replaced == 0 && past == 1);
  int64_t time = 0;
  CHECK_OK(fpstore_get_time(store, 1, &time, &errmsg));
  CHECK(time == 950);
  CHECK_OK(fpstore_get_time(store, 3, &time, &errmsg));
  CHECK(time == 1000);
  CHECK_CODE(fpstore_get_time(store, 2, &time, &errmsg), FPSTORE_NOT_FOUND, "retention");
  const int64_t bad[] = {-5};
  CHECK_CODE(fpstore_insert_batch_at(store, 1, ids, NULL, fps, NULL, NULL, NULL, NULL, bad, NULL,
                                     NULL, NULL, &errmsg),
             FPSTORE_INVALID_ARGUMENT, "time");

  /* A near-copy of 1 seen at 1040 keeps 1 alive, and is not stored itself. */
  fpstore_matches_t* matches = NULL;
  int inserted = 9, late = 9;
  CHECK_OK(fpstore_check_and_insert_at(store, 4, 0, 0x10001, NULL, 0, "u", 1, 1040,
                                       FPSTORE_INSERT_IF_NO_MATCH, -1, -1, &matches, &inserted,
                                       &late, &errmsg));
  CHECK(fpstore_matches_count(matches) == 1 && fpstore_matches_id(matches, 0) == 1);
  CHECK(inserted == 0 && late == 0);
  fpstore_matches_destroy(matches);
  CHECK_OK(fpstore_get_time(store, 1, &time, &errmsg));
  CHECK(time == 1040);
  /* One that arrives late is stored and says so. */
  CHECK_OK(fpstore_check_and_insert_at(store, 5, 0, 0, "a late page", 11, NULL, 0, 10,
                                       FPSTORE_INSERT_ALWAYS, -1, -1, &matches, &inserted, &late,
                                       &errmsg));
  CHECK(inserted == 1 && late == 1);
  fpstore_matches_destroy(matches);
  CHECK_CODE(fpstore_check_and_insert_at(store, 6, 0, 7, "both", 4, NULL, 0, FPSTORE_NO_TIME,
                                         FPSTORE_INSERT_ALWAYS, -1, -1, &matches, &inserted, NULL,
                                         &errmsg),
             FPSTORE_INVALID_ARGUMENT, "not both");
  now = 1120; /* 1 would have passed the retention at 1050 without the refresh */
  CHECK_OK(fpstore_get_time(store, 1, &time, &errmsg));
  CHECK_CODE(fpstore_get_time(store, 3, &time, &errmsg), FPSTORE_NOT_FOUND, "retention");
  CHECK_OK(fpstore_close(store, &errmsg));
}

int main(void) {
  const char* tmp = getenv("TMPDIR");
  char dir[2048];
  snprintf(dir, sizeof dir, "%s/fpstore-c-api-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (mkdtemp(dir) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/store", dir);

  TestVersion();
  TestBadArguments(path);
  TestMissingStore(dir);
  TestReadWrite(path);
  TestReadOnly(path);
  TestConfirmation(dir);
  TestDamagedLog(dir);
  TestWholeStore(dir);
  TestBulkLoad(dir);
  TestFingerprinter();
  Test128BitStore(dir);
  TestRetention(dir);
  TestTimesPerWrite(dir);

  nftw(dir, RemoveEntry, 16, FTW_DEPTH | FTW_PHYS);
  if (failures != 0) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("c_api_test: all checks passed\n");
  return 0;
}
