// A writable store's handle that opens the store again in place after a hard RocksDB error.
//
// RocksDB behaviour covered: RocksDB 7.8 can resume a handle by itself once the cause of a hard
// background error is gone, but the resumed handle still counts itself stopped: its flushes return
// before they are done, and an ingestion takes table file number 0 (an assertion in Debian's build,
// a table file written over in one without; RocksDbBehaviour.FlushOfADbResumedAfterAHard... and
// RocksDbBehaviourDeathTest.IngestionIntoADbResumedAfterAHard... pin both). fpstore
// turns that resumption off (background_errors.h), so a store that met a hard error (a full disk,
// a failing device) stops writing for good; this handle closes it and opens it again at the next
// write, so that writes go on once the cause is gone without the host reopening anything
// (docs/reliability.md, "A full disk"). Retire when: a RocksDB whose resumed handle flushes and
// ingests like a fresh one (the pinning tests fail), with its own recovery turned back on.
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

#ifndef FPSTORE_LIB_FAULTS_REOPENING_STORE_H_
#define FPSTORE_LIB_FAULTS_REOPENING_STORE_H_

#include <rocksdb/env.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "fpstore/store.h"
#include "util/mutex.h"

namespace fpstore::internal {

// Counts the calls in flight on one store handle, so that what the calls use can be replaced while
// none runs (reopening_store.h). Entering costs two atomic operations in the usual case, when the
// gate is not held.
//
// A call made from inside another call on the same gate by the same thread (a scan's sink that
// inserts) enters at once even while the gate is held: its outer call keeps the count above zero,
// so nothing is replaced under it, and waiting would deadlock.
//
// Thread safety: thread-safe.
class CallGate {
 public:
  // One call's place inside the gate, on the thread that took it, given back on destruction.
  // Neither copied nor moved: a thread's tickets, of any gates, form a stack on that thread's
  // stack, innermost first, so that a thread finds the gates it is inside without any
  // thread-local state that thread or process exit destroys (a store destroyed by a static or
  // thread-local destructor still enters its gate to close).
  class Ticket {
   public:
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    ~Ticket();
    // Whether this thread was inside the gate already when it took the ticket.
    bool nested() const { return nested_; }

   private:
    friend class CallGate;
    Ticket(CallGate& gate, bool nested);
    CallGate& gate_;
    const bool nested_;
    Ticket* const outer_;  // the thread's innermost ticket before this one; null if none
  };
  // A bulk loader's place, which lives beyond the call that takes it and may end on any thread.
  class LoaderTicket {
   public:
    LoaderTicket(LoaderTicket&& other) noexcept : gate_(other.gate_) { other.gate_ = nullptr; }
    LoaderTicket& operator=(LoaderTicket&&) = delete;
    ~LoaderTicket() {
      if (gate_ != nullptr) gate_->Leave();
    }

   private:
    friend class CallGate;
    explicit LoaderTicket(CallGate* gate) : gate_(gate) {}
    CallGate* gate_;
  };

  // A call's ticket: waits while the gate is held, unless this thread is inside already.
  Ticket Enter();
  LoaderTicket EnterForLoader();

  // Holds back new calls and waits up to `timeout` for those in flight to leave. True if none is
  // left: the caller then has the gate to itself until Release. False: the gate is released
  // again. REQUIRES: the caller holds no ticket of this gate.
  bool Hold(std::chrono::milliseconds timeout) EXCLUDES(mu_);
  void Release() EXCLUDES(mu_);

 private:
  // Waits while the gate is held, then counts a call in. REQUIRES: the thread is not inside.
  void WaitAndEnter() EXCLUDES(mu_);
  void Leave() EXCLUDES(mu_);

  std::atomic<int> in_flight_{0};
  std::atomic<bool> held_{false};
  Mutex mu_;
  CondVar changed_;  // in_flight_ or held_ changed while someone waits
};

// What a ReopeningStore opens: a store, and how to ask it why it stopped writing.
struct ReopenableStore {
  std::unique_ptr<Store> store;
  // OK, or why `store` writes nothing more (a hard RocksDB error, a failed merge).
  std::function<Status()> writes_stopped;
};
// Opens the store with `options`, writing its LOG through `info_log` (null: a log of its own).
using StoreOpener = std::function<Result<ReopenableStore>(
    const StoreOptions& options, std::shared_ptr<rocksdb::Logger> info_log)>;

class ReopeningStore final : public Store {
 public:
  // Opens the store at `path` for writing through `open` (REQUIRES: !options.read_only).
  static Result<std::unique_ptr<Store>> Open(const std::string& path, const StoreOptions& options,
                                             StoreOpener open);
  ~ReopeningStore() override;

  Status Close() override;
  const PermutationPlan& plan() const override { return plan_; }
  const Fingerprinter& fingerprinter() const override { return fingerprinter_; }
  using Store::CheckAndInsert;
  using Store::Query;
  using Store::QueryBatch;
  Result<InsertStats> InsertBatch(std::span<const NewDocument> docs) override;
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
  Result<std::uint64_t> Expire(DocumentTime before) override;
  Status Compact(const ScanOptions& scan) override;
  Result<StoreStats> Stats() const override;
  Status Verify(const ScanOptions& scan) const override;
  Status Checkpoint(const std::string& dir) const override;

 private:
  ReopeningStore(std::string path, StoreOptions options, StoreOpener open, ReopenableStore store,
                 std::shared_ptr<rocksdb::Logger> info_log);

  // Calls `call` on the store with a ticket of the gate held.
  template <typename Call>
  auto Through(Call&& call) const -> decltype(call(std::declval<Store&>()));
  // Through, counted among the calls that may go on for long.
  template <typename Call>
  auto ThroughLong(Call&& call) const -> decltype(call(std::declval<Store&>()));
  // Why writes are refused, or OK. REQUIRES: a ticket or reopen_mu_ held.
  Status Refusal() const;
  // A write's Through: when the store has stopped writing, reopens it first if it can now, or
  // returns why writes are refused.
  template <typename Call>
  auto WriteThrough(Call&& call) -> decltype(call(std::declval<Store&>()));
  // OK once the stopped store is open again and writes; otherwise why writes are refused.
  Status ReopenIfStopped() EXCLUDES(reopen_mu_);
  // Closes the store and opens it again; read-only if the writable open fails.
  // REQUIRES: the gate held, so that no call uses store_.
  void Reopen() REQUIRES(reopen_mu_);

  const std::string path_;
  const StoreOptions options_;
  const StoreOpener open_;
  const PermutationPlan plan_;
  const Fingerprinter fingerprinter_;
  // The store's LOG, kept across reopens, which would each rotate it.
  const std::shared_ptr<rocksdb::Logger> info_log_;

  mutable CallGate gate_;
  Mutex reopen_mu_;  // one reopen at a time, and none once closed

  // store_ and refused_ change only with reopen_mu_ held and the gate held, so that either a
  // ticket or reopen_mu_ lets a thread read them.
  ReopenableStore store_;  // store_.store null if no open succeeded
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

#endif  // FPSTORE_LIB_FAULTS_REOPENING_STORE_H_
