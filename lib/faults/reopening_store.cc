#include "faults/reopening_store.h"

#include <algorithm>
#include <utility>

#include "faults/info_log.h"
#include "util/test_hooks.h"

namespace fpstore::internal {

namespace {

// The calling thread's innermost ticket, of any gate; the others through Ticket::outer_. A plain
// pointer: nothing to destroy when the thread or the process exits.
thread_local CallGate::Ticket* t_innermost = nullptr;

// How long a reopen waits for the calls in flight to end.
constexpr std::chrono::milliseconds kWaitForCalls{2000};
// The longest interval between reopens, in first intervals (ReopenInterval); reopens that follow
// one another closer than that count as following closely.
constexpr int kLongestInterval = 64;

// The interval before a reopen may follow the last, after `close_reopens` that followed one
// another closely.
std::chrono::milliseconds IntervalAfter(int close_reopens) {
  if (close_reopens == 0) return std::chrono::milliseconds(0);
  return ReopenInterval() * std::min(1 << std::min(close_reopens - 1, 30), kLongestInterval);
}

// Counts a call that may go on for long (a scan, a live bulk loader) while it lives: a reopen
// then does not wait for the calls in flight, but refuses the write at once.
class LongCall {
 public:
  explicit LongCall(std::atomic<int>& count) : count_(count) { count_.fetch_add(1); }
  ~LongCall() { count_.fetch_sub(1); }
  LongCall(const LongCall&) = delete;
  LongCall& operator=(const LongCall&) = delete;

 private:
  std::atomic<int>& count_;
};

// A loader that keeps its ticket, so that the store it writes to is not reopened under it.
class TicketedLoader final : public BulkLoader {
 public:
  TicketedLoader(CallGate::LoaderTicket ticket, std::atomic<int>& long_calls,
                 std::unique_ptr<BulkLoader> loader)
      : ticket_(std::move(ticket)), long_call_(long_calls), loader_(std::move(loader)) {}
  using BulkLoader::Add;
  Status Add(const NewDocument& doc) override { return loader_->Add(doc); }
  std::uint64_t added() const override { return loader_->added(); }
  Result<BulkLoadStats> Finish() override { return loader_->Finish(); }

 private:
  const CallGate::LoaderTicket ticket_;  // given back after loader_ is destroyed
  const LongCall long_call_;
  const std::unique_ptr<BulkLoader> loader_;
};

}  // namespace

CallGate::Ticket::Ticket(CallGate& gate, bool nested)
    : gate_(gate), nested_(nested), outer_(t_innermost) {
  t_innermost = this;
}

CallGate::Ticket::~Ticket() {
  t_innermost = outer_;  // tickets are locals of nested calls: the last taken goes first
  gate_.Leave();
}

CallGate::Ticket CallGate::Enter() {
  for (const Ticket* t = t_innermost; t != nullptr; t = t->outer_) {
    if (&t->gate_ == this) {
      // Inside already: the outer call holds the count above zero, so Hold cannot have succeeded.
      in_flight_.fetch_add(1);
      return Ticket(*this, /*nested=*/true);
    }
  }
  WaitAndEnter();
  return Ticket(*this, /*nested=*/false);
}

CallGate::LoaderTicket CallGate::EnterForLoader() {
  WaitAndEnter();
  return LoaderTicket(this);
}

void CallGate::WaitAndEnter() {
  while (true) {
    // Sequentially consistent, as Hold's store of held_ then load of in_flight_: one of the two
    // sides sees the other.
    in_flight_.fetch_add(1);
    if (!held_.load()) return;
    Leave();
    MutexLock lock(mu_);
    while (held_.load()) changed_.Wait(mu_);
  }
}

void CallGate::Leave() {
  if (in_flight_.fetch_sub(1) == 1 && held_.load()) {
    MutexLock lock(mu_);
    changed_.NotifyAll();
  }
}

bool CallGate::Hold(std::chrono::milliseconds timeout) {
  held_.store(true);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  MutexLock lock(mu_);
  while (in_flight_.load() != 0) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) break;
    changed_.WaitFor(mu_, deadline - now);
  }
  if (in_flight_.load() == 0) return true;
  held_.store(false);
  changed_.NotifyAll();
  return false;
}

void CallGate::Release() {
  held_.store(false);
  MutexLock lock(mu_);
  changed_.NotifyAll();
}

Result<std::unique_ptr<Store>> ReopeningStore::Open(const std::string& path,
                                                    const StoreOptions& options, StoreOpener open) {
  std::shared_ptr<rocksdb::Logger> info_log = InfoLog::ForWriter(path);
  Result<ReopenableStore> store = open(options, info_log);
  if (!store.ok()) return store.status();
  return std::unique_ptr<Store>(
      new ReopeningStore(path, options, std::move(open), *std::move(store), info_log));
}

ReopeningStore::ReopeningStore(std::string path, StoreOptions options, StoreOpener open,
                               ReopenableStore store, std::shared_ptr<rocksdb::Logger> info_log)
    : path_(std::move(path)),
      options_(std::move(options)),
      open_(std::move(open)),
      plan_(store.store->plan()),
      fingerprinter_(store.store->fingerprinter()),
      info_log_(std::move(info_log)),
      store_(std::move(store)) {}

ReopeningStore::~ReopeningStore() { (void)Close(); }

template <typename Call>
auto ReopeningStore::Through(Call&& call) const -> decltype(call(std::declval<Store&>())) {
  const CallGate::Ticket ticket = gate_.Enter();
  if (store_.store == nullptr) return refused_;
  return call(*store_.store);
}

template <typename Call>
auto ReopeningStore::ThroughLong(Call&& call) const -> decltype(call(std::declval<Store&>())) {
  const LongCall long_call(long_calls_);
  return Through(std::forward<Call>(call));
}

Status ReopeningStore::Refusal() const {
  if (!refused_.ok()) return refused_;
  return store_.writes_stopped();
}

template <typename Call>
auto ReopeningStore::WriteThrough(Call&& call) -> decltype(call(std::declval<Store&>())) {
  {
    const CallGate::Ticket ticket = gate_.Enter();
    const Status why = Refusal();
    // The usual case; a closed store's call reports that itself.
    if (why.ok() || (closed_ && store_.store != nullptr)) return call(*store_.store);
    // Inside another call on this handle (a scan's sink): a reopen would wait for it forever.
    if (closed_ || ticket.nested()) return why;
  }
  if (Status s = ReopenIfStopped(); !s.ok()) return s;
  return Through(std::forward<Call>(call));
}

Status ReopeningStore::ReopenIfStopped() {
  MutexLock lock(reopen_mu_);
  if (closed_ || Refusal().ok()) return Status::OK();
  if (std::chrono::steady_clock::now() < last_reopen_ + IntervalAfter(close_reopens_)) {
    return Refusal();
  }
  // A scan or a live bulk loader would keep the gate held, and every call waiting, for long.
  if (long_calls_.load() > 0) {
    return Refusal().WithContext(
        "a scan or bulk loader still running on this handle keeps the store from being opened "
        "again");
  }
  const bool held = gate_.Hold(kWaitForCalls);
  if (held && Refusal().ok()) {  // another thread's reopen came first
    gate_.Release();
    return Status::OK();
  }
  if (held) {
    Reopen();
    gate_.Release();
  }
  // A hold that timed out counts as a try too, so that the next waits its interval.
  const auto now = std::chrono::steady_clock::now();
  const bool close = close_reopens_ > 0 && now - last_reopen_ < kLongestInterval * ReopenInterval();
  close_reopens_ = close ? close_reopens_ + 1 : 1;
  last_reopen_ = now;
  if (!held) {
    return Refusal().WithContext("calls that went on for " + std::to_string(kWaitForCalls.count()) +
                                 " ms kept the store from being opened again");
  }
  return refused_;
}

void ReopeningStore::Reopen() {
  // The error that stopped the store, kept through reopens that fail.
  if (refused_.ok()) stopped_by_ = store_.writes_stopped();
  rocksdb::Log(rocksdb::InfoLogLevel::WARN_LEVEL, info_log_.get(),
               "opening the store again after: %s", Refusal().ToString().c_str());
  if (store_.store != nullptr) {
    (void)store_.store->Close();  // reports the error it stopped on
    store_ = {};
  }
  // The store as it is: never made anew (its directory removed meanwhile), and never with what a
  // damaged log holds dropped unasked, however the first open was told.
  StoreOptions writable = options_;
  writable.create_if_missing = false;
  writable.error_if_exists = false;
  writable.drop_damaged_log = false;
  Result<ReopenableStore> reopened = open_(writable, info_log_);
  if (reopened.ok()) {
    store_ = *std::move(reopened);
    refused_ = Status::OK();
    rocksdb::Log(rocksdb::InfoLogLevel::WARN_LEVEL, info_log_.get(),
                 "the store is open again and takes writes");
    return;
  }
  refused_ = reopened.status().WithContext("could not open the store again after it stopped on \"" +
                                           stopped_by_.message() + "\"");
  rocksdb::Log(rocksdb::InfoLogLevel::WARN_LEVEL, info_log_.get(), "%s; open read-only",
               refused_.ToString().c_str());
  StoreOptions read_only = writable;
  read_only.read_only = true;
  Result<ReopenableStore> reader = open_(read_only, nullptr);
  if (reader.ok()) {
    store_ = *std::move(reader);
  } else {
    refused_ = refused_.WithContext("nor read-only (" + reader.status().ToString() + ")");
  }
}

Status ReopeningStore::Close() {
  MutexLock lock(reopen_mu_);
  const CallGate::Ticket ticket = gate_.Enter();
  if (closed_.exchange(true)) return Status::OK();
  if (store_.store == nullptr) return refused_;
  const Status closed = store_.store->Close();
  // A read-only stand-in closes cleanly; what matters is that writes were refused.
  return refused_.ok() ? closed : refused_;
}

Result<InsertStats> ReopeningStore::InsertBatch(std::span<const NewDocument> docs) {
  return WriteThrough([&](Store& store) { return store.InsertBatch(docs); });
}

Status ReopeningStore::Remove(DocumentId id) {
  return WriteThrough([&](Store& store) { return store.Remove(id); });
}

Result<CheckResult> ReopeningStore::CheckAndInsert(const NewDocument& doc, InsertPolicy policy,
                                                   const QueryOptions& options) {
  return WriteThrough([&](Store& store) { return store.CheckAndInsert(doc, policy, options); });
}

Result<std::unique_ptr<BulkLoader>> ReopeningStore::NewBulkLoader(const BulkLoadOptions& options) {
  if (Status s = ReopenIfStopped(); !s.ok()) return s;
  CallGate::LoaderTicket ticket = gate_.EnterForLoader();
  if (store_.store == nullptr) return refused_;
  Result<std::unique_ptr<BulkLoader>> loader = store_.store->NewBulkLoader(options);
  if (!loader.ok()) return loader.status();
  return std::unique_ptr<BulkLoader>(
      std::make_unique<TicketedLoader>(std::move(ticket), long_calls_, *std::move(loader)));
}

Result<std::uint64_t> ReopeningStore::Expire(DocumentTime before) {
  return WriteThrough([&](Store& store) { return store.Expire(before); });
}

Status ReopeningStore::Flush() {
  return WriteThrough([&](Store& store) { return store.Flush(); });
}

Status ReopeningStore::Compact(const ScanOptions& scan) {
  return WriteThrough([&](Store& store) {
    const LongCall long_call(long_calls_);
    return store.Compact(scan);
  });
}

Result<Document> ReopeningStore::Get(DocumentId id) const {
  return Through([&](Store& store) { return store.Get(id); });
}

Result<std::vector<Match>> ReopeningStore::Query(const Sketch& query,
                                                 const QueryOptions& options) const {
  return Through([&](Store& store) { return store.Query(query, options); });
}

Result<std::vector<std::vector<Match>>> ReopeningStore::QueryBatch(
    std::span<const Sketch> queries, const QueryOptions& options) const {
  return Through([&](Store& store) { return store.QueryBatch(queries, options); });
}

Status ReopeningStore::FindAll(int k, const std::function<void(const NearPair&)>& sink,
                               const ScanOptions& scan) const {
  return ThroughLong([&](Store& store) { return store.FindAll(k, sink, scan); });
}

Status ReopeningStore::Clusters(int k, const std::function<void(std::span<const DocumentId>)>& sink,
                                const ScanOptions& scan) const {
  return ThroughLong([&](Store& store) { return store.Clusters(k, sink, scan); });
}

Status ReopeningStore::ForEachDocument(const std::function<void(const Document&)>& sink,
                                       const ScanOptions& scan) const {
  return ThroughLong([&](Store& store) { return store.ForEachDocument(sink, scan); });
}

Result<StoreStats> ReopeningStore::Stats() const {
  return Through([&](Store& store) { return store.Stats(); });
}

Status ReopeningStore::Verify(const ScanOptions& scan) const {
  return ThroughLong([&](Store& store) { return store.Verify(scan); });
}

Status ReopeningStore::Checkpoint(const std::string& dir) const {
  return Through([&](Store& store) { return store.Checkpoint(dir); });
}

}  // namespace fpstore::internal
