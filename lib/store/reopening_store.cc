#include "store/reopening_store.h"

#include <algorithm>
#include <utility>

#include "platform/info_log.h"
#include "store/test_hooks.h"

namespace fpstore::internal {

namespace {

// How long a reopen waits for the calls in flight to end.
constexpr std::chrono::milliseconds kWaitForCalls{2000};
// The longest interval between reopens, in first intervals (ReopenInterval); reopens that follow one
// another closer than that count as following closely.
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

Result<std::unique_ptr<Store>> ReopeningStore::Open(const std::string& path,
                                                    const StoreOptions& options) {
  std::shared_ptr<rocksdb::Logger> info_log = InfoLog::ForWriter(path);
  Result<std::unique_ptr<StoreImpl>> store = StoreImpl::Open(path, options, info_log);
  if (!store.ok()) return store.status();
  return std::unique_ptr<Store>(new ReopeningStore(path, options, *std::move(store), info_log));
}

ReopeningStore::ReopeningStore(std::string path, StoreOptions options,
                               std::unique_ptr<StoreImpl> store,
                               std::shared_ptr<rocksdb::Logger> info_log)
    : path_(std::move(path)),
      options_(std::move(options)),
      plan_(store->plan()),
      fingerprinter_(store->fingerprinter()),
      info_log_(std::move(info_log)),
      store_(std::move(store)) {}

ReopeningStore::~ReopeningStore() { (void)Close(); }

template <typename Call>
auto ReopeningStore::Through(Call&& call) const -> decltype(call(std::declval<StoreImpl&>())) {
  const CallGate::Ticket ticket = gate_.Enter();
  if (store_ == nullptr) return refused_;
  return call(*store_);
}

template <typename Call>
auto ReopeningStore::ThroughLong(Call&& call) const -> decltype(call(std::declval<StoreImpl&>())) {
  const LongCall long_call(long_calls_);
  return Through(std::forward<Call>(call));
}

Status ReopeningStore::Refusal() const {
  if (!refused_.ok()) return refused_;
  return store_->WritesStopped();
}

template <typename Call>
auto ReopeningStore::WriteThrough(Call&& call) -> decltype(call(std::declval<StoreImpl&>())) {
  {
    const CallGate::Ticket ticket = gate_.Enter();
    const Status why = Refusal();
    // The usual case; a closed store's call reports that itself.
    if (why.ok() || (closed_ && store_ != nullptr)) return call(*store_);
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
    return Refusal().WithContext("calls that went on for " +
                                 std::to_string(kWaitForCalls.count()) +
                                 " ms kept the store from being opened again");
  }
  return refused_;
}

void ReopeningStore::Reopen() {
  // The error that stopped the store, kept through reopens that fail.
  if (refused_.ok()) stopped_by_ = store_->WritesStopped();
  rocksdb::Log(rocksdb::InfoLogLevel::WARN_LEVEL, info_log_.get(),
               "opening the store again after: %s", Refusal().ToString().c_str());
  if (store_ != nullptr) {
    (void)store_->Close();  // reports the error it stopped on
    store_.reset();
  }
  // The store as it is: never made anew (its directory removed meanwhile), and never with what a
  // damaged log holds dropped unasked, however the first open was told.
  StoreOptions writable = options_;
  writable.create_if_missing = false;
  writable.error_if_exists = false;
  writable.drop_damaged_log = false;
  Result<std::unique_ptr<StoreImpl>> reopened = StoreImpl::Open(path_, writable, info_log_);
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
  Result<std::unique_ptr<StoreImpl>> reader = StoreImpl::Open(path_, read_only);
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
  if (store_ == nullptr) return refused_;
  const Status closed = store_->Close();
  // A read-only stand-in closes cleanly; what matters is that writes were refused.
  return refused_.ok() ? closed : refused_;
}

Status ReopeningStore::InsertBatch(std::span<const NewDocument> docs) {
  return WriteThrough([&](StoreImpl& store) { return store.InsertBatch(docs); });
}

Status ReopeningStore::Remove(DocumentId id) {
  return WriteThrough([&](StoreImpl& store) { return store.Remove(id); });
}

Result<CheckResult> ReopeningStore::CheckAndInsert(const NewDocument& doc, InsertPolicy policy,
                                                   const QueryOptions& options) {
  return WriteThrough([&](StoreImpl& store) { return store.CheckAndInsert(doc, policy, options); });
}

Result<std::unique_ptr<BulkLoader>> ReopeningStore::NewBulkLoader(const BulkLoadOptions& options) {
  if (Status s = ReopenIfStopped(); !s.ok()) return s;
  CallGate::LoaderTicket ticket = gate_.EnterForLoader();
  if (store_ == nullptr) return refused_;
  Result<std::unique_ptr<BulkLoader>> loader = store_->NewBulkLoader(options);
  if (!loader.ok()) return loader.status();
  return std::unique_ptr<BulkLoader>(
      std::make_unique<TicketedLoader>(std::move(ticket), long_calls_, *std::move(loader)));
}

Status ReopeningStore::Flush() {
  return WriteThrough([&](StoreImpl& store) { return store.Flush(); });
}

Status ReopeningStore::Compact(const ScanOptions& scan) {
  return WriteThrough([&](StoreImpl& store) {
    const LongCall long_call(long_calls_);
    return store.Compact(scan);
  });
}

Result<Document> ReopeningStore::Get(DocumentId id) const {
  return Through([&](StoreImpl& store) { return store.Get(id); });
}

Result<std::vector<Match>> ReopeningStore::Query(const Sketch& query,
                                                 const QueryOptions& options) const {
  return Through([&](StoreImpl& store) { return store.Query(query, options); });
}

Result<std::vector<std::vector<Match>>> ReopeningStore::QueryBatch(
    std::span<const Sketch> queries, const QueryOptions& options) const {
  return Through([&](StoreImpl& store) { return store.QueryBatch(queries, options); });
}

Status ReopeningStore::FindAll(int k, const std::function<void(const NearPair&)>& sink,
                               const ScanOptions& scan) const {
  return ThroughLong([&](StoreImpl& store) { return store.FindAll(k, sink, scan); });
}

Status ReopeningStore::Clusters(int k,
                                const std::function<void(std::span<const DocumentId>)>& sink,
                                const ScanOptions& scan) const {
  return ThroughLong([&](StoreImpl& store) { return store.Clusters(k, sink, scan); });
}

Status ReopeningStore::ForEachDocument(const std::function<void(const Document&)>& sink,
                                       const ScanOptions& scan) const {
  return ThroughLong([&](StoreImpl& store) { return store.ForEachDocument(sink, scan); });
}

Result<StoreStats> ReopeningStore::Stats() const {
  return Through([&](StoreImpl& store) { return store.Stats(); });
}

Status ReopeningStore::Verify(const ScanOptions& scan) const {
  return ThroughLong([&](StoreImpl& store) { return store.Verify(scan); });
}

Status ReopeningStore::Checkpoint(const std::string& dir) const {
  return Through([&](StoreImpl& store) { return store.Checkpoint(dir); });
}

}  // namespace fpstore::internal
