// A Store whose tables and documents live in a Redis Cluster (docs/design.md, "The Redis backend";
// the layout in docs/format.md and redis/layout.h): many processes on many hosts may read and
// write it at once. Store::Open gives one for a path "redis://HOST:PORT/NAME".
//
// A document's record, in its shard, is the point at which a write takes effect: entries (and its
// time in its shard's times) are added before the record is written and taken out after, so a
// table entry whose record is missing or holds another fingerprint is one no reader counts, and
// a record's own time decides whether it is past the retention. What a write cut short leaves
// behind is therefore never seen; Repair clears it, and adds entries a failover lost.
//
// Thread safety: thread-safe; each call takes a connection of its own from a pool.

#ifndef FPSTORE_LIB_REDIS_REDIS_STORE_H_
#define FPSTORE_LIB_REDIS_REDIS_STORE_H_

#include <atomic>
#include <chrono>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "format/recorded_options.h"
#include "format/records.h"
#include "fpstore/store.h"
#include "plan/run_signatures.h"
#include "plan/table_entry.h"
#include "redis/access.h"
#include "redis/cluster_client.h"
#include "redis/layout.h"
#include "redis/locks.h"
#include "util/mutex.h"
#include "util/sweeper.h"

namespace fpstore::internal::redis {

// Documents written per pipelined round: bounds a call's memory and its locks.
inline constexpr std::size_t kWriteChunk = 1000;
// How often a store with a retention sweeps part of its times (redis_expiry.cc).
inline constexpr std::chrono::milliseconds kSweepPeriod{1000};

// Commands of one verb that gather, per key, the arguments added for it: one command a key.
class Grouped {
 public:
  explicit Grouped(std::string verb) : verb_(std::move(verb)) {}
  void Add(const std::string& key, std::initializer_list<std::string> args) {
    std::vector<std::string>& to = args_[key];
    to.insert(to.end(), args.begin(), args.end());
  }
  std::vector<Command> Commands() && {
    std::vector<Command> commands;
    commands.reserve(args_.size());
    for (auto& [key, args] : args_) {
      args.insert(args.begin(), {verb_, key});
      commands.push_back({key, std::move(args)});
    }
    return commands;
  }

 private:
  const std::string verb_;
  std::unordered_map<std::string, std::vector<std::string>> args_;
};

// Opens or creates the store `url` names, as `options` say (StoreOptions' performance fields other
// than durability do not apply).
Result<std::unique_ptr<Store>> OpenStore(const std::string& url, const StoreOptions& options);

// Removes every key of the store `url` names, its layout record last. NotFound if there is none.
Status DestroyStore(const std::string& url, const StoreOptions& options);

// Connections to one cluster, one per caller at a time. Each call takes one with nothing sent
// (ClusterClient::ForgetSent), so that its WaitForReplicas waits for its own commands only.
class ClientPool {
 public:
  ClientPool(std::string seed, ClientOptions options)
      : options_(std::move(options)), nodes_{std::move(seed)} {}

  // A connection, given back to the pool when destroyed.
  class Lease {
   public:
    Lease(ClientPool& pool, std::unique_ptr<ClusterClient> client)
        : pool_(pool), client_(std::move(client)) {}
    Lease(Lease&&) = default;
    ~Lease() {
      if (client_ != nullptr) pool_.GiveBack(std::move(client_));
    }
    ClusterClient& operator*() const { return *client_; }
    ClusterClient* operator->() const { return client_.get(); }

   private:
    ClientPool& pool_;
    std::unique_ptr<ClusterClient> client_;
  };

  Result<Lease> Take() EXCLUDES(mu_);
  void GiveBack(std::unique_ptr<ClusterClient> client) EXCLUDES(mu_);
  // The redirections the idle connections have followed (ClusterClient::redirections).
  std::uint64_t Redirections() const EXCLUDES(mu_);

 private:
  const ClientOptions options_;
  mutable Mutex mu_;
  std::vector<std::unique_ptr<ClusterClient>> idle_ GUARDED_BY(mu_);
  // The seed, then every node the connections given back have heard of: a new connection is made
  // through the first that answers, so that the pool outlives its seed node.
  std::vector<std::string> nodes_ GUARDED_BY(mu_);
};

// Calls each(key, reply) for the command `command` with each of `keys` inserted at `key_at`, in
// pipelined rounds; stops at an error reply or each's first error.
Status ForEachReply(ClusterClient& client, const std::vector<std::string>& keys,
                    const std::vector<std::string>& command,
                    const std::function<Status(const std::string&, Reply&)>& each,
                    std::size_t key_at = 1);

// Calls each(id, document) for every record of the shards `shards` of the store at `url` (for
// messages), laid out as `layout` says, read whole (HGETALL) in pipelined rounds; Corruption for a
// malformed one.
Status ForEachRecord(ClusterClient& client, const Layout& layout, const std::string& url,
                     const std::vector<std::string>& shards,
                     const std::function<void(DocumentId, Document&)>& each);

class RedisStore final : public Store {
 public:
  // `address`: the store's, as ReadStoreAddress read it; `first`, a client signed in to it.
  RedisStore(const StoreAddress& address, const StoreOptions& options, Layout layout,
             Fingerprinter fingerprinter, std::unique_ptr<ClusterClient> first);
  ~RedisStore() override;

  Status Close() override;
  const PermutationPlan& plan() const override { return layout_.plan(); }
  const Fingerprinter& fingerprinter() const override { return fingerprinter_; }
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
  Status Repair(const ScanOptions& scan) override;
  Status Checkpoint(const std::string& dir) const override;

  // For the bulk loader: the check of a signature's size.
  Status CheckDocument(const NewDocument& doc) const {
    return internal::CheckDocument(doc, plan().bits(), fingerprinter_.options().signature_bytes);
  }

  // For tests: the MOVED and ASK redirections the store's idle connections have followed.
  std::uint64_t TEST_Redirections() const { return pool_.Redirections(); }

 private:
  Status CheckOpen() const;
  Status CheckWritable() const;
  Result<Matching> MatchingFor(std::optional<int> distance,
                               std::optional<double> min_similarity) const;
  Result<ClientPool::Lease> Client() const;
  // The time before which a document is past the store's retention, by its clock now: 0 (none)
  // without a retention.
  Result<DocumentTime> ExpiredBefore() const;

  // Writes `docs` (distinct ids) whose stored fingerprints are `old`, holding `locks` (their id
  // locks and the table 0 bucket locks of their new fingerprints): entries, then records (the
  // commit), then the old entries out and the locks given back. A document without a time takes
  // `now`.
  Status WriteHeld(ClusterClient& client, std::span<const NewDocument> docs,
                   std::span<const std::optional<Word>> old, LockSet& locks, DocumentTime now);
  // The stored fingerprints of the records in `replies` (HGETs), Corruption if one is malformed.
  Result<std::vector<std::optional<Word>>> OldFingerprints(std::span<const NewDocument> docs,
                                                           std::span<const Reply> replies) const;
  // Gives each of `matches` still stored as matched `time` if it is later (refresh_matches);
  // sets *kept to how many are still stored as matched.
  Status Refresh(ClusterClient& client, std::span<const Match> matches, DocumentTime time,
                 std::size_t* kept);
  // Removes the documents of the times sets `sets` whose time is earlier than `before`, and the
  // times of documents no longer stored; returns how many documents it removed. Stops early once
  // `stopping` is set.
  Result<std::uint64_t> ExpireSets(ClusterClient& client, DocumentTime before,
                                   std::vector<std::uint64_t> sets,
                                   const std::atomic<bool>& stopping);
  // Every times set's number, for an expiry of the whole store.
  std::vector<std::uint64_t> AllTimesSets() const;
  // Of `ids` (members of the times `times_key` before `before`), removes the documents whose
  // record's time is before it, and the times of those not stored, under their id locks.
  Result<std::uint64_t> ExpireIds(ClusterClient& client, const std::string& times_key,
                                  std::span<const DocumentId> ids, DocumentTime before);
  // The sweeper's work: the documents past the retention in the next times sets.
  Status SweepSome(const std::atomic<bool>& stopping);
  // Waits for replicas when the durability asks for them.
  Status Settle(ClusterClient& client) const;

  // Each query's matches, reading through `client`.
  Result<std::vector<std::vector<Match>>> Run(ClusterClient& client,
                                              std::span<const Sketch> queries,
                                              const Matching& matching) const;
  // The matches of each query among the documents `found` for it (by id), by their `records`;
  // documents whose time is before `expired_before` are past the retention, and left out.
  std::vector<std::vector<Match>> Confirm(
      std::span<const Sketch> queries,
      const std::vector<std::unordered_map<DocumentId, Word>>& found,
      const std::unordered_map<DocumentId, Document>& records, const Matching& matching,
      DocumentTime expired_before) const;

  // The keys of the store's shards, and of each table's buckets, by number, from one SCAN of the
  // cluster.
  struct StoreKeys {
    std::vector<std::string> shards;
    std::vector<std::string> times;                   // the times sets
    std::vector<std::vector<std::uint64_t>> buckets;  // per table
  };
  Result<StoreKeys> ListKeys(ClusterClient& client) const;
  // Stats' times: the oldest and newest of `times` (the shards' times keys) and how many are past
  // the retention.
  Status TimesStats(ClusterClient& client, const std::vector<std::string>& times,
                    StoreStats& stats) const;
  // Every stored document's id and fingerprint not past the retention, read from the records, and
  // whether any is signed.
  Status ReadAll(ClusterClient& client, std::vector<IdFingerprint>& docs, bool* any_signed) const;
  // The signatures of `ids`, read in one pipelined call.
  Result<RunSignatures> SignaturesOf(ClusterClient& client, std::vector<DocumentId> ids) const;
  // Calls visit(t, runs) with batches of table t's runs whose entries link within k, the
  // signatures of their documents read when any document is signed.
  using RunBatchVisitor = std::function<void(
      std::size_t t, const std::vector<std::vector<TableEntry>>&, const RunSignatures&)>;
  Status ScanLinkedRuns(int k, const RunBatchVisitor& visit) const;
  // Verify (fix false) or Repair and Compact (fix true): docs/design.md, "The Redis backend".
  Status Tidy(bool fix, const ScanOptions& scan) const;

  const std::string url_;       // the URL with its password hidden, for messages
  const StoreOptions options_;  // without the credentials, which only pool_ keeps
  const Layout layout_;
  const Fingerprinter fingerprinter_;
  mutable ClientPool pool_;
  std::atomic<bool> closed_{false};
  std::uint64_t sweep_next_ = 0;  // the times set the sweep takes next; the sweeper's own
  // Last, so that it stops first.
  Sweeper sweeper_;
};

}  // namespace fpstore::internal::redis

#endif  // FPSTORE_LIB_REDIS_REDIS_STORE_H_
