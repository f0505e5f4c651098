/* The C API (include/fpstore/c.h) from a C11 program, as a C user or a
 * binding sees it: codes, messages, handles and who frees what. Under the
 * sanitizer build LeakSanitizer also checks that each handle and message
 * the API hands out is freed by its documented function. */

#define _XOPEN_SOURCE 700 /* mkdtemp, nftw */

#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

  nftw(dir, RemoveEntry, 16, FTW_DEPTH | FTW_PHYS);
  if (failures != 0) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("c_api_test: all checks passed\n");
  return 0;
}
