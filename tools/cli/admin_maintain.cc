// fpstore-admin: compact, verify, repair and recover.

#include "cli/admin_common.h"

namespace fpstore::cli::admin {
namespace {

// Runs `scan_store` (Verify, Repair or Compact) with progress on standard
// error labelled `doing` ("verifying") and `threads` (0: one per core).
Status ScanWithProgress(bool quiet, std::FILE* err, const char* doing, int threads,
                        const std::function<Status(const ScanOptions&)>& scan_store) {
  WorkProgress progress(Progress::AutoStyle(quiet, err), kTool, doing, err);
  ScanOptions scan;
  scan.progress = progress.Callback();
  scan.threads = threads;
  return scan_store(scan);
}

// ---- compact ---------------------------------------------------------------------

class CompactCommand final : public Command {
 public:
  std::string_view Name() const override { return "compact"; }
  std::string_view Summary() const override {
    return "Compact every table fully, e.g. after many inserts or removals.";
  }
  std::vector<std::string> Synopsis() const override { return {"--db STORE [--quiet]"}; }
  std::vector<Example> Examples() const override {
    return {{"--db crawl.fps", "Compact, with progress on standard error."}};
  }

  void DefineOptions(OptionTable& table) override {
    store_.Define(table, WritableStore());
    DefineQuiet(table, &quiet_);
  }

  int Run() override {
    OpenedStore opened = store_.Open(StoreAccess::kWrite, nullptr);
    Store& store = *opened.store;
    const StoreStats before = ValueOrThrow(store.Stats());
    ThrowIfError(ScanWithProgress(quiet_, err(), "compacting", 0,
                                  [&](const ScanOptions& scan) { return store.Compact(scan); }));
    const StoreStats after = ValueOrThrow(store.Stats());
    CloseStore(store);
    std::fprintf(out(), "compacted %s: %s bytes %s before, %s after\n", store_.db().c_str(),
                 WithCommas(before.bytes_on_disk).c_str(),
                 store_.in_redis() ? "of Redis memory" : "on disk",
                 WithCommas(after.bytes_on_disk).c_str());
    return 0;
  }

 protected:
  void Check(const po::variables_map& vm) override { store_.Check(vm); }

 private:
  StoreFlags store_;
  bool quiet_ = false;
};

// ---- verify and repair ---------------------------------------------------------

// A command that checks the whole store, with --threads and --quiet: verify
// and repair.
class CheckCommand : public Command {
 public:
  std::vector<std::string> Synopsis() const final { return {"--db STORE [--threads N] [--quiet]"}; }

  void DefineOptions(OptionTable& table) final {
    store_.Define(table, StoreConfig());
    DefineScanThreads(table, &threads_);
    DefineQuiet(table, &quiet_);
  }

 protected:
  virtual StoreFlags::Config StoreConfig() const = 0;

  void Check(const po::variables_map& vm) final { store_.Check(vm); }

  // Runs `check` with progress labelled `doing`; throws for a problem, as
  // "NAME failed: ..." for Corruption.
  void RunCheck(const char* doing, const std::function<Status(const ScanOptions&)>& check) const {
    const Status status = ScanWithProgress(quiet_, err(), doing, threads_, check);
    if (status.IsCorruption()) {
      throw RuntimeError(std::string(Name()) + " failed: " + status.message());
    }
    ThrowIfError(status);
  }

  // "documents, tables, every entry consistent" of a checked store.
  std::string Consistent(const Store& store, const StoreStats& stats) const {
    return WithCommas(stats.documents) + " documents, " +
           std::to_string(store.plan().table_count()) + " tables, every entry consistent";
  }

  StoreFlags store_;

 private:
  int threads_ = 0;
  bool quiet_ = false;
};

class VerifyCommand final : public CheckCommand {
 public:
  std::string_view Name() const override { return "verify"; }
  std::string_view Summary() const override {
    return "Check block checksums and that every table agrees with the documents; exit 1 if "
           "not.";
  }
  std::vector<Example> Examples() const override {
    return {{"--db crawl.fps || echo damaged", "Verify; on a problem, list it and exit 1."}};
  }

  int Run() override {
    OpenedStore opened = store_.Open(StoreAccess::kReadOnly, nullptr);
    const Store& store = *opened.store;
    const StoreStats stats = ValueOrThrow(store.Stats());
    RunCheck("verifying", [&](const ScanOptions& scan) { return store.Verify(scan); });
    std::fprintf(out(), "ok: %s: %s\n", store_.db().c_str(), Consistent(store, stats).c_str());
    return 0;
  }

 protected:
  StoreFlags::Config StoreConfig() const override { return ReadOnlyStore(); }
};

class RepairCommand final : public CheckCommand {
 public:
  std::string_view Name() const override { return "repair"; }
  std::string_view Summary() const override {
    return "Mend what writes cut short left in a store in Redis, and check the rest as verify "
           "does; an embedded store, whose writes are atomic, is verified.";
  }
  std::vector<Example> Examples() const override {
    return {{"--db redis://fps@10.0.0.5:7000/crawl --redis-password-file ~/.fpstore-redis",
             "After a crawler crashed mid-write or a Redis node failed over: remove the entries "
             "of writes that never took effect and add those a failover lost, signed in as the "
             "ACL user fps with the password in the file."},
            {"--db crawl.fps", "An embedded store: the same as verify."}};
  }

  int Run() override {
    // An embedded store has nothing to mend, so it need not be taken from its writer.
    const bool redis = store_.in_redis();
    OpenedStore opened = store_.Open(redis ? StoreAccess::kWrite : StoreAccess::kReadOnly, nullptr);
    Store& store = *opened.store;
    RunCheck("repairing", [&](const ScanOptions& scan) { return store.Repair(scan); });
    const StoreStats stats = ValueOrThrow(store.Stats());
    CloseStore(store);
    std::fprintf(out(), "%s %s: %s%s\n", redis ? "repaired" : "ok:", store_.db().c_str(),
                 Consistent(store, stats).c_str(),
                 redis ? "" : " (its writes are atomic: nothing to mend)");
    return 0;
  }

 protected:
  StoreFlags::Config StoreConfig() const override {
    return {.db_help =
                "The store: in Redis, opened for writing, beside other writers; an "
                "embedded one read-only, as by verify."};
  }
};

// ---- recover ---------------------------------------------------------------------

class RecoverCommand final : public Command {
 public:
  std::string_view Name() const override { return "recover"; }
  std::string_view Summary() const override {
    return "Open a store whose write-ahead log is damaged, dropping the writes after the damage, "
           "and say what was dropped.";
  }
  std::vector<std::string> Synopsis() const override { return {"--db STORE"}; }
  std::vector<Example> Examples() const override {
    return {{"--db crawl.fps",
             "Drop what the damaged log cannot replay; the log is kept in crawl.fps/lost."}};
  }

  void DefineOptions(OptionTable& table) override { store_.Define(table, WritableStore()); }

  int Run() override {
    if (store_.in_redis()) {
      throw RuntimeError(store_.db() +
                         " lives in Redis, which keeps no write-ahead log of fpstore's to "
                         "recover; to mend what writes cut short left, use fpstore-admin repair");
    }
    StoreOptions options = store_.Options();
    options.create_if_missing = false;
    options.drop_damaged_log = true;
    std::unique_ptr<Store> store = ValueOrThrow(Store::Open(store_.path(), options));
    const std::string dropped = ValueOrThrow(store->Stats()).dropped_at_open;
    CloseStore(*store);
    if (dropped.empty()) {
      std::fprintf(out(), "%s: no damaged log; nothing dropped\n", store_.db().c_str());
    } else {
      std::fprintf(out(), "recovered %s: %s\n", store_.db().c_str(), dropped.c_str());
    }
    return 0;
  }

 protected:
  void Check(const po::variables_map& vm) override { store_.Check(vm); }

 private:
  StoreFlags store_;
};

}  // namespace

std::unique_ptr<Command> NewRecoverCommand() { return std::make_unique<RecoverCommand>(); }
std::unique_ptr<Command> NewCompactCommand() { return std::make_unique<CompactCommand>(); }
std::unique_ptr<Command> NewVerifyCommand() { return std::make_unique<VerifyCommand>(); }
std::unique_ptr<Command> NewRepairCommand() { return std::make_unique<RepairCommand>(); }

}  // namespace fpstore::cli::admin
