// What the tools that touch a store share: opening it from --db STORE (a
// directory, or redis://HOST:PORT/NAME for a store in a Redis Cluster) and the
// store options, and turning fpstore::Status into the CLI's exceptions.
// fpstore-load, fpstore-query and fpstore-admin all go through here; the
// documents they read go through document_pipeline.h.
//
//   StoreFlags store;        // DefineOptions: store.Define(table, {.plan = true});
//   FingerprintFlags fp;     // Check:         store.Check(vm); fp.Check(vm);
//   ...
//   OpenedStore opened = store.Open(StoreAccess::kCreate, &fp);      // Run
//
// Thread safety: none of these objects is shared between threads.

#ifndef FPSTORE_TOOLS_CLI_STORE_ACCESS_H_
#define FPSTORE_TOOLS_CLI_STORE_ACCESS_H_

#include <boost/program_options/variables_map.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "cli/command.h"
#include "cli/options.h"
#include "cli/plan_choice.h"
#include "cli/progress.h"
#include "cli/record_reader.h"
#include "fpstore/store.h"

namespace fpstore::cli {

// ---- Status -> exceptions ------------------------------------------------------

// The status's message as the tools print it: "context: message" when
// `context` is given; a Busy status always says that the store is in use by
// another process.
std::string ErrorMessage(const Status& status, std::string_view context = {});

// Throws RuntimeError with ErrorMessage. Does nothing for OK.
void ThrowIfError(const Status& status, std::string_view context = {});

template <typename T>
T ValueOrThrow(Result<T> result, std::string_view context = {}) {
  ThrowIfError(result.status(), context);
  return *std::move(result);
}

// ---- Opening a store -------------------------------------------------------------

// How a command uses its store.
enum class StoreAccess {
  // Queries and scans: never creates or changes anything, and works beside
  // a process that has the store open for writing.
  kReadOnly,
  // Writes to an existing store; "no store at STORE" if there is none.
  kWrite,
  // Writes, creating the store with the plan (--blocks, --distance) and
  // fingerprint options (--window, --weighting) given if it does not exist.
  kCreate,
};

struct OpenedStore {
  std::unique_ptr<Store> store;

  // The store did not exist before Open: DiscardCreatedStore may undo it.
  bool created = false;

  // For DiscardCreatedStore: whether --db was an existing empty directory;
  // --db as given, and the options (credentials) to reach it with.
  bool was_empty_dir = false;
  std::string path;
  StoreOptions options;
};

// Closes a store that StoreFlags::Open created and removes it again (its
// directory, or only its content if the directory existed before; in Redis,
// its every key, through DestroyStore), so that a command that failed leaves
// things as it found them. Does nothing unless opened->created. Never
// throws.
void DiscardCreatedStore(OpenedStore* opened);

// Whether --db `db` names a store in a Redis Cluster, redis://HOST:PORT/NAME,
// which Store::Open and DestroyStore tell from a directory by the same prefix.
bool InRedis(std::string_view db);

// The environment variable a store in Redis's password is read from, as
// redis-cli reads REDISCLI_AUTH: a password on the command line shows in ps
// to every user of the machine.
inline constexpr const char* kPasswordEnv = "FPSTORE_REDIS_PASSWORD";

// The --help group of the store options.
inline constexpr std::string_view kStoreGroup = "Store";

// --db STORE and, as the command asks, the store options:
//   --blocks M, --distance K   the plan of a new store; checked against an
//                              existing store's when given
//   --expected-documents N     a new store's size; without --blocks, the plan
//   --disk-budget GB           is the fastest within the budgets at N
//   --memory-budget GB         (plan_choice.h)
//   --durability MODE          sync, group (default) or none (options.h)
//   --redis-password-file FILE a store in Redis's password, read from FILE;
//                              else from the URL, else from the environment
//                              variable FPSTORE_REDIS_PASSWORD (kPasswordEnv)
//   --redis-tls-ca-file FILE   a rediss:// store's TLS files (options.h),
//   --redis-tls-cert-file FILE with the -key-file
//   --redis-tls-key-file FILE
// A password is never printed: db() shows --db with it as ***.
// --window and --weighting stay in FingerprintFlags; Open uses them.
//
// Tools whose --distance means something else (a query's distance) leave
// `plan` off and define their own.
class StoreFlags {
 public:
  struct Config {
    bool plan = false;        // define --blocks, --distance and --expected-documents
    bool durability = false;  // define --durability
    bool db_required = true;  // Check fails without --db
    // How the command uses --db, without an example: --db's description
    // goes on with what STORE may be and an example.
    std::string db_help;
    std::string_view db_group = kStoreGroup;
  };

  void Define(OptionTable& table, Config config);

  // Throws UsageError: no --db (when required), an empty --db, an unknown
  // --durability, --blocks or --distance out of range, or both together
  // making no plan (PermutationPlan::Create's reason), a negative
  // --expected-documents, --redis-password-file with a --db that is no
  // Redis URL or holds a password, or a file that cannot be read or is empty.
  void Check(const boost::program_options::variables_map& vm);

  bool given() const { return !db_.empty(); }
  // --db as it may be printed (a password as ***), and as given, to open.
  const std::string& db() const { return shown_db_; }
  const std::string& path() const { return db_; }
  bool in_redis() const { return InRedis(db_); }

  // The explicit plan options (unset when not given).
  std::optional<int> blocks() const { return blocks_; }
  std::optional<int> distance() const { return distance_; }
  std::optional<double> expected_documents() const { return expected_documents_; }
  // --disk-budget and --memory-budget (the default memory budget when not given).
  PlanBudgets budgets() const;
  // The plans compared for a new store when --expected-documents is given
  // without --blocks (of an embedded store); `signature_bytes` and `bits`:
  // the new store's signatures' and fingerprints'. Open creates a store with the plan chosen, and
  // fails with NoPlanFits's message when none fits the budgets.
  std::optional<PlanComparison> PlanChoice(int signature_bytes, int bits) const;

  // StoreOptions with what the user gave: durability, the plan, the
  // documents expected and the threshold when given, and the password of a
  // store in Redis from --redis-password-file or the environment.
  StoreOptions Options() const;

  // Opens db() as `access` says. `fingerprint` (may be null): --window and
  // --weighting, used to create a store and, when given, checked against
  // an existing store's recorded options. Throws RuntimeError with the
  // library's message: "no store at STORE", "STORE was created with blocks 6,
  // not 8", "opening STORE: the store is in use by another process (pid 42)",
  // file system and Redis errors. A failed Open changes nothing.
  // `plan_signature_bytes`: of the documents a new store's plan is costed
  // for (PlanChoice); unset, the new store's own.
  OpenedStore Open(StoreAccess access, const FingerprintFlags* fingerprint,
                   std::optional<int> plan_signature_bytes = std::nullopt) const;

 private:
  // Reads the password of --redis-password-file or the environment.
  void CheckPassword(const boost::program_options::variables_map& vm);

  Config config_;
  std::string db_;
  std::string shown_db_;
  std::string password_file_;
  std::string password_;  // from the file or the environment
  struct {
    std::string ca_file, cert_file, key_file;
  } tls_;
  int blocks_value_ = 0;
  int distance_value_ = 0;
  std::optional<int> blocks_;
  std::optional<int> distance_;
  double expected_value_ = 0;
  std::optional<double> expected_documents_;
  double disk_budget_gb_ = 0;
  double memory_budget_gb_ = PlanBudgets::kDefaultMemoryGb;
  std::optional<double> min_similarity_;
  std::string retention_text_;
  std::optional<std::int64_t> retention_;
  std::string durability_ = "group";
  Durability durability_value_ = Durability::kGroupCommit;
};

// The distance to search at: `asked` (--distance), or the store's planned
// distance when unset. Throws UsageError when `asked` is above the planned
// distance, which the store cannot answer exactly: "--distance 5 is above
// the store's planned distance 3 (STORE was created with --distance 3)".
int SearchDistance(const Store& store, const std::string& db, std::optional<int> asked);

}  // namespace fpstore::cli

#endif  // FPSTORE_TOOLS_CLI_STORE_ACCESS_H_
