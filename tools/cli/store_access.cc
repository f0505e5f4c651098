#include "cli/store_access.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "cli/line_reader.h"
#include "cli/parse.h"
#include "fpstore/permutation.h"

namespace fpstore::cli {
namespace po = boost::program_options;
namespace fs = std::filesystem;

// ---- Status -> exceptions ------------------------------------------------------

std::string ErrorMessage(const Status& status, std::string_view context) {
  std::string message = status.message();
  if (message.empty()) message = status.ToString();
  if (status.IsBusy() && message.find("in use by") == std::string::npos) {
    message += ": the store is in use by another process";
  }
  if (!context.empty()) message = std::string(context) + ": " + message;
  return message;
}

void ThrowIfError(const Status& status, std::string_view context) {
  if (!status.ok()) throw RuntimeError(ErrorMessage(status, context));
}

// ---- Opening a store -------------------------------------------------------------

namespace {

// The first line of the file `path`, without its line end. Throws UsageError.
std::string ReadPasswordFile(const std::string& path) {
  std::string content;
  try {
    content = ReadWholeFile(path);
  } catch (const RuntimeError& e) {
    throw UsageError(std::string("--redis-password-file: ") + e.what());
  }
  content.resize(std::min(content.size(), content.find('\n')));
  if (!content.empty() && content.back() == '\r') content.pop_back();
  if (content.empty()) {
    throw UsageError("--redis-password-file: " + QuoteForMessage(path) +
                     " holds no password (its first line is empty)");
  }
  return content;
}

}  // namespace

void DiscardCreatedStore(OpenedStore* opened) {
  if (!opened->created) return;
  if (opened->store != nullptr) (void)opened->store->Close();
  opened->store.reset();
  opened->created = false;
  if (InRedis(opened->path)) {
    // Only the library knows a Redis store's keys.
    (void)DestroyStore(opened->path, opened->options);
    return;
  }
  std::error_code ec;
  if (opened->was_empty_dir) {
    for (const fs::directory_entry& entry : fs::directory_iterator(opened->path, ec)) {
      fs::remove_all(entry.path(), ec);
    }
  } else {
    fs::remove_all(opened->path, ec);
  }
}

bool InRedis(std::string_view db) {
  return db.starts_with("redis://") || db.starts_with("rediss://");
}

void StoreFlags::Define(OptionTable& table, Config config) {
  config_ = std::move(config);
  std::string db_help = config_.db_help.empty() ? "The store." : config_.db_help;
  db_help +=
      " STORE is a directory, or redis://[USER@]HOST:PORT/NAME for the store NAME in the Redis "
      "Cluster that the node at HOST:PORT belongs to, signed in as the ACL user USER with the "
      "password in --redis-password-file or $" +
      std::string(kPasswordEnv) +
      " (not on the command line, where ps shows it). e.g. --db crawl.fps, --db "
      "redis://10.0.0.5:7000/crawl, --db redis://fps@10.0.0.5:7000/crawl";
  table.Add(config_.db_group, "db", po::value(&db_)->value_name("STORE"), std::move(db_help));
  table.Add(config_.db_group, "redis-password-file", po::value(&password_file_)->value_name("FILE"),
            "For a store in Redis: the password to sign in with, the first line of FILE (e.g. a "
            "file only its owner may read). Default: $" +
                std::string(kPasswordEnv) +
                ", if set. e.g. --redis-password-file ~/.fpstore-redis");
  table.Add(config_.db_group, "redis-tls-ca-file", po::value(&tls_.ca_file)->value_name("FILE"),
            "For a rediss:// store (TLS): the CA certificates (PEM) that every node's certificate "
            "must chain to; it must also name the node. Default: the system's. e.g. "
            "--redis-tls-ca-file /etc/redis/ca.crt");
  table.Add(config_.db_group, "redis-tls-cert-file", po::value(&tls_.cert_file)->value_name("FILE"),
            "For a rediss:// store whose cluster asks clients for a certificate: this client's "
            "(PEM), with --redis-tls-key-file. e.g. --redis-tls-cert-file client.crt");
  table.Add(config_.db_group, "redis-tls-key-file", po::value(&tls_.key_file)->value_name("FILE"),
            "The private key (PEM) of --redis-tls-cert-file. e.g. --redis-tls-key-file "
            "client.key");
  if (config_.plan) {
    table.Add(kStoreGroup, "blocks", WholeNumber("blocks", &blocks_value_, 1, 64)->value_name("M"),
              "Blocks each fingerprint is cut into, for a new store (more blocks: more tables, "
              "faster queries, more disk and memory). Checked against an existing store's when "
              "given. Default: 6; with --expected-documents, the fastest plan within "
              "--disk-budget and --memory-budget at that size. e.g. --blocks 8");
    table.Add(kStoreGroup, "distance",
              WholeNumber("distance", &distance_value_, 0, 63)->value_name("K"),
              "The largest Hamming distance the new store answers exactly: its planned "
              "distance, below --blocks. Checked against an existing store's when given. "
              "Default: 3. e.g. --distance 4");
    table.Add(kStoreGroup, "expected-documents",
              Number("expected-documents", &expected_value_)->value_name("N"),
              "About how many documents a new store will hold: its tables keep a key per "
              "group of fingerprints (in Redis, a sorted set per bucket), cut for N "
              "(docs/format.md); without --blocks, also the plan chosen for it. Default: 100 "
              "million. e.g. --expected-documents 1e8");
    table.Add(kStoreGroup, "disk-budget", Number("disk-budget", &disk_budget_gb_)->value_name("GB"),
              "With --expected-documents and without --blocks: choose a new store's plan among "
              "those whose estimated size fits in GB gigabytes (of an embedded store). Default: "
              "none. e.g. --disk-budget 200");
    table.Add(kStoreGroup, "memory-budget",
              Number("memory-budget", &memory_budget_gb_)->value_name("GB"),
              "With --expected-documents and without --blocks: choose a new store's plan among "
              "those whose estimated memory while querying (pinned filters and indexes, and the "
              "block cache) fits in GB gigabytes. Default: 16. e.g. --memory-budget 32");
    table.Add(kStoreGroup, "min-similarity",
              Fraction("min-similarity", &min_similarity_)->value_name("S"),
              "The new store's threshold, 0 to 1: the least estimated similarity of a match "
              "that both sides have a signature for, unless a query sets its own. Checked "
              "against an existing store's when given. Default: " +
                  FractionText(StoreOptions::kDefaultMinSimilarity) +
                  ". e.g. --min-similarity 0.85");
    table.Add(kStoreGroup, "retention", po::value(&retention_text_)->value_name("AGE"),
              "The new store's retention: a document whose time is older than AGE (a number "
              "and s, h or d) is never returned again and is removed in the background. "
              "Checked against an existing store's when given. Default: none, documents never "
              "expire. e.g. --retention 90d");
  }
  if (config_.durability) {
    table.Add(kStoreGroup, "durability", po::value(&durability_)->value_name("MODE"),
              "What a finished write survives: sync (power loss, one fsync per write), group "
              "(power loss, concurrent writers share fsyncs) or none (a crash of the process, "
              "not of the machine). In Redis, sync and group wait until a replica has the "
              "write, none does not. Default: group. e.g. --durability sync");
  }
}

void StoreFlags::Check(const po::variables_map& vm) {
  if (vm.count("db") > 0 && db_.empty()) {
    throw UsageError("--db: empty (a directory, or redis://HOST:PORT/NAME)");
  }
  if (config_.db_required && db_.empty()) {
    throw UsageError("--db STORE is required (a directory, or redis://HOST:PORT/NAME)");
  }
  shown_db_ = HidePassword(db_);
  CheckPassword(vm);
  if (config_.plan) {
    if (vm.count("blocks") > 0) blocks_ = blocks_value_;
    if (vm.count("distance") > 0) distance_ = distance_value_;
    if (vm.count("expected-documents") > 0) {
      // Below 2^64, so that the conversion for StoreOptions is defined.
      if (!(expected_value_ >= 0 && expected_value_ < 0x1p64)) {
        throw UsageError("--expected-documents: must be a number of documents, 0 or more");
      }
      expected_documents_ = expected_value_;
    }
    for (const auto& [name, gb] : {std::pair{"disk-budget", disk_budget_gb_},
                                   std::pair{"memory-budget", memory_budget_gb_}}) {
      if (vm.count(name) == 0) continue;
      if (!(gb > 0 && std::isfinite(gb))) {
        throw UsageError(std::string("--") + name + ": must be a number of gigabytes above 0");
      }
      if (!expected_documents_) {
        throw UsageError(std::string("--") + name + " needs --expected-documents");
      }
      if (in_redis()) {
        throw UsageError(std::string("--") + name +
                         ": the estimates are of an embedded store; a store in Redis takes the "
                         "cluster's memory instead");
      }
    }
    if (vm.count("retention") > 0) {
      Result<std::int64_t> seconds = ParseDuration(retention_text_);
      if (!seconds.ok()) throw UsageError("--retention: " + seconds.status().message());
      retention_ = *seconds;
    }
    if (blocks_ && distance_) {
      if (Result<PermutationPlan> plan = PermutationPlan::Create(*blocks_, *distance_);
          !plan.ok()) {
        throw UsageError("--blocks " + std::to_string(*blocks_) + " --distance " +
                         std::to_string(*distance_) + ": " + plan.status().message());
      }
    }
  }
  if (config_.durability) {
    if (durability_ == "sync") {
      durability_value_ = Durability::kSync;
    } else if (durability_ == "group") {
      durability_value_ = Durability::kGroupCommit;
    } else if (durability_ == "none") {
      durability_value_ = Durability::kNoSync;
    } else {
      throw UsageError("--durability: unknown mode " + QuoteForMessage(durability_) +
                       " (expected sync, group or none)");
    }
  }
}

PlanBudgets StoreFlags::budgets() const {
  return {.disk_bytes = disk_budget_gb_ * 1e9, .memory_bytes = memory_budget_gb_ * 1e9};
}

std::optional<PlanComparison> StoreFlags::PlanChoice(int signature_bytes, int bits) const {
  if (blocks_ || !expected_documents_ || in_redis()) return std::nullopt;
  return ComparePlans(distance_.value_or(DefaultDistance(bits)), *expected_documents_,
                      signature_bytes, budgets(), bits);
}

StoreOptions StoreFlags::Options() const {
  StoreOptions options;
  options.blocks = blocks_;
  options.distance = distance_;
  if (expected_documents_) {
    options.expected_documents = static_cast<std::uint64_t>(*expected_documents_);
  }
  options.durability = durability_value_;
  options.min_similarity = min_similarity_;
  options.retention_seconds = retention_;
  options.redis_password = password_;
  options.redis_tls_ca_file = tls_.ca_file;
  options.redis_tls_cert_file = tls_.cert_file;
  options.redis_tls_key_file = tls_.key_file;
  return options;
}

void StoreFlags::CheckPassword(const po::variables_map& vm) {
  const bool in_url = shown_db_ != db_;
  if (vm.count("redis-password-file") > 0) {
    if (!in_redis()) {
      throw UsageError("--redis-password-file: --db " + QuoteForMessage(shown_db_) +
                       " is not a store in Redis");
    }
    if (in_url) {
      throw UsageError("--redis-password-file: --db holds a password too; give it once");
    }
    password_ = ReadPasswordFile(password_file_);
    return;
  }
  // The URL's password, when given, wins over the environment's, as redis-cli's -a does.
  const char* env = std::getenv(kPasswordEnv);
  if (in_redis() && !in_url && env != nullptr) password_ = env;
}

OpenedStore StoreFlags::Open(StoreAccess access, const FingerprintFlags* fingerprint,
                             std::optional<int> plan_signature_bytes) const {
  StoreOptions options = Options();
  options.create_if_missing = false;
  const bool fingerprint_given = fingerprint != nullptr && fingerprint->given();
  OpenedStore opened;
  opened.path = db_;
  opened.options = options;

  if (access == StoreAccess::kReadOnly) {
    options.read_only = true;
    opened.store = ValueOrThrow(Store::Open(db_, options));
    if (fingerprint_given) {
      const FingerprintOptions& recorded = opened.store->fingerprinter().options();
      const FingerprintOptions asked = fingerprint->Apply(recorded);
      if (!(asked == recorded)) {
        throw RuntimeError(shown_db_ + " was created with fingerprint options \"" +
                           recorded.ToString() + "\", not \"" + asked.ToString() +
                           "\" (leave out the fingerprint options --window, --weighting and "
                           "--signature-* to use the store's)");
      }
    }
    return opened;
  }

  // An existing store is checked against the options given before it is
  // opened for writing: its recorded fingerprint options are the base that
  // --window and --weighting change.
  if (fingerprint_given) {
    StoreOptions probe = options;
    probe.read_only = true;
    FingerprintOptions base;
    Result<std::unique_ptr<Store>> existing = Store::Open(db_, probe);
    if (existing.ok()) {
      base = (*existing)->fingerprinter().options();
      (void)(*existing)->Close();
    } else if (!existing.status().IsNotFound()) {
      ThrowIfError(existing.status());
    }
    options.fingerprint = fingerprint->Apply(base);
  }

  Result<std::unique_ptr<Store>> store = Store::Open(db_, options);
  if (store.ok()) {
    opened.store = *std::move(store);
    return opened;
  }
  if (access != StoreAccess::kCreate || !store.status().IsNotFound()) {
    ThrowIfError(store.status());
  }
  std::error_code ec;
  opened.was_empty_dir = !InRedis(db_) && fs::is_directory(db_, ec);
  options.create_if_missing = true;
  const FingerprintOptions made = options.fingerprint.value_or(FingerprintOptions{});
  const int signature_bytes = plan_signature_bytes.value_or(made.signature_bytes);
  if (const std::optional<PlanComparison> choice = PlanChoice(signature_bytes, made.bits)) {
    if (!choice->chosen) throw UsageError("--expected-documents: " + NoPlanFits(*choice));
    options.blocks = choice->chosen->blocks();
    options.distance = choice->chosen->distance();
  }
  opened.store = ValueOrThrow(Store::Open(db_, options));
  opened.created = true;
  return opened;
}

int SearchDistance(const Store& store, const std::string& db, std::optional<int> asked) {
  const int planned = store.plan().distance();
  if (!asked) return planned;
  if (*asked > planned) {
    throw UsageError("--distance " + std::to_string(*asked) +
                     " is above the store's planned distance " + std::to_string(planned) + " (" +
                     db + " was created with --distance " + std::to_string(planned) +
                     "; it finds every near-duplicate within that many bits, not beyond)");
  }
  return *asked;
}

}  // namespace fpstore::cli
