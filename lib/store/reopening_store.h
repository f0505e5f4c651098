// A writable store's handle: the store (store_impl.h) behind a call gate, so that the handle can
// open it again in place. After a hard RocksDB error (a full disk, a failing device) the store
// stops writing (background_errors.h); the next write through this handle closes it and opens it
// again, so that writes go on once the cause is gone without the host reopening anything
// (docs/reliability.md, "A full disk").
//
// A reopen waits for the calls in flight to end and holds new ones back meanwhile. It does not
// wait, and the write returns the error at once, while a scan runs or a bulk loader lives on the
// handle (a scan's sink that writes is one such write), nor for a call that goes on for longer
// than 2 s. The reopen opens the store as it is: it creates none, drops no damaged log, and
// another process may take the writer's place in between (the handle then stays read-only).
// A reopen that fails leaves the store open read-only, so that reads go on. A reopen follows
// another only after an interval that doubles with each reopen that follows closely (a second,
// up to about a minute), so that a fault that lasts costs a reopen now and then, not one a write.
//
// Thread safety: thread-safe, as Store promises.

#ifndef FPSTORE_LIB_STORE_REOPENING_STORE_H_
#define FPSTORE_LIB_STORE_REOPENING_STORE_H_

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "fpstore/store.h"
#include "store/call_gate.h"
#include "store/store_impl.h"
#include "util/mutex.h"

namespace fpstore::internal {

class ReopeningStore final : public Store {
 public:
  // Opens the store at `path` for writing (REQUIRES: !options.read_only).
  static Result<std::unique_ptr<Store>> Open(const std::string& path, const StoreOptions& options);
  ~ReopeningStore() override;

  Status Close() override;
  const PermutationPlan& plan() const override { return plan_; }
  const Fingerprinter& fingerprinter() const override { return fingerprinter_; }
  using Store::CheckAndInsert;
  using Store::Query;
  using Store::QueryBatch;
  Status InsertBatch(std::span<const NewDocument> docs) override;
  Status Remove(DocumentId id) override;
  Result<Document> Get(DocumentId id) const override;
  Result<std::vector<Match>> Query(const Sketch& query, const QueryOptions& options) const override;
  Result<std::vector<std::vector<Match>>> QueryBatch(std::span<const Sketch> queries,
                                                     const QueryOptions& options) const override;
  Result<CheckResult> CheckAndInsert(const NewDocument& doc, InsertPolicy policy,
                                     const QueryOptions& options) override;
  Status FindAll(int k, const std::function<void(const NearPair&)>& sink,
                 const ScanOptions& scan) const override;
  Status Clusters(int k, const std::function<void(std::span<const DocumentId>)>& sink,
                  const ScanOptions& scan) const override;
  Status ForEachDocument(const std::function<void(const Document&)>& sink,
                         const ScanOptions& scan) const override;
  Result<std::unique_ptr<BulkLoader>> NewBulkLoader(const BulkLoadOptions& options) override;
  Status Flush() override;
  Status Compact(const ScanOptions& scan) override;
  Result<StoreStats> Stats() const override;
  Status Verify(const ScanOptions& scan) const override;
  Status Checkpoint(const std::string& dir) const override;

 private:
  ReopeningStore(std::string path, StoreOptions options, std::unique_ptr<StoreImpl> store,
                 std::shared_ptr<rocksdb::Logger> info_log);

  // Calls `call` on the store with a ticket of the gate held.
  template <typename Call>
  auto Through(Call&& call) const -> decltype(call(std::declval<StoreImpl&>()));
  // Through, counted among the calls that may go on for long.
  template <typename Call>
  auto ThroughLong(Call&& call) const -> decltype(call(std::declval<StoreImpl&>()));
  // Why writes are refused, or OK. REQUIRES: a ticket or reopen_mu_ held.
  Status Refusal() const;
  // A write's Through: when the store has stopped writing, reopens it first if it can now, or
  // returns why writes are refused.
  template <typename Call>
  auto WriteThrough(Call&& call) -> decltype(call(std::declval<StoreImpl&>()));
  // OK once the stopped store is open again and writes; otherwise why writes are refused.
  Status ReopenIfStopped() EXCLUDES(reopen_mu_);
  // Closes the store and opens it again; read-only if the writable open fails.
  // REQUIRES: the gate held, so that no call uses store_.
  void Reopen() REQUIRES(reopen_mu_);

  const std::string path_;
  const StoreOptions options_;
  const PermutationPlan plan_;
  const Fingerprinter fingerprinter_;
  // The store's LOG, kept across reopens, which would each rotate it.
  const std::shared_ptr<rocksdb::Logger> info_log_;

  mutable CallGate gate_;
  Mutex reopen_mu_;  // one reopen at a time, and none once closed

  // store_ and refused_ change only with reopen_mu_ held and the gate held, so that either a
  // ticket or reopen_mu_ lets a thread read them.
  std::unique_ptr<StoreImpl> store_;  // null if no open succeeded
  // Why writes are refused while store_ is a read-only stand-in or null; OK while it writes.
  Status refused_;
  Status stopped_by_ GUARDED_BY(reopen_mu_);  // the error that made the last reopen due
  std::atomic<bool> closed_{false};
  // Scans and live bulk loaders, which a reopen does not wait for.
  mutable std::atomic<int> long_calls_{0};

  // The last reopen, and how many reopens followed one another closely up to it.
  std::chrono::steady_clock::time_point last_reopen_ GUARDED_BY(reopen_mu_){};
  int close_reopens_ GUARDED_BY(reopen_mu_) = 0;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_STORE_REOPENING_STORE_H_
