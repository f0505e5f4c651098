// Opening a store in Redis, its writes and its small calls (docs/design.md, "The Redis backend").

#include "redis/redis_store.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <random>
#include <unordered_map>

#include "plan/table_entry.h"

namespace fpstore::internal::redis {

namespace {

// How long a durable write waits for a replica to acknowledge it.
constexpr std::chrono::milliseconds kReplicaWait{5000};

// Creates the layout record unless one exists: 1 if it made it.
constexpr const char* kCreateScript =
    "if redis.call('exists', KEYS[1]) == 1 then return 0 end "
    "redis.call('hset', KEYS[1], unpack(ARGV)) return 1";

// The least zset-max-listpack-entries of the cluster's masters.
Result<int> ListpackEntries(ClusterClient& client) {
  int least = 0;
  for (const std::string& master : client.Masters()) {
    Result<Reply> r = client.RunOn(master, {"CONFIG", "GET", "zset-max-listpack-entries"});
    if (!r.ok()) return r.status();
    int value = 0;
    if (r->type != Reply::Type::kArray || r->elements.size() != 2 ||
        !ParseNumber(r->elements[1].str, value) || value < 1) {
      continue;  // CONFIG renamed or disabled: Redis's default is assumed below
    }
    least = least == 0 ? value : std::min(least, value);
  }
  return least == 0 ? 128 : least;
}

// The layout of the store `name`, made if it is missing and options allow.
Result<LayoutParams> LayoutFor(ClusterClient& client, const std::string& url,
                               const std::string& name, const StoreOptions& options) {
  const std::string key = Layout::LayoutKeyOf(name);
  for (int attempt = 0; attempt < 2; ++attempt) {
    Result<Reply> got = client.Run(Command{key, {"HGETALL", key}});
    if (!got.ok()) return got.status();
    if (got->type == Reply::Type::kError) return ReplyError(*got, "reading " + key);
    if (!got->elements.empty()) {
      if (options.error_if_exists) {
        return Status::InvalidArgument(url + " already holds a store (error_if_exists is set)");
      }
      std::map<std::string, std::string> fields;
      for (std::size_t i = 0; i + 1 < got->elements.size(); i += 2) {
        fields[got->elements[i].str] = got->elements[i + 1].str;
      }
      Result<LayoutParams> params = Layout::Parse(url, fields);
      if (!params.ok()) return params.status();
      if (Status s = CheckAgainstRecorded(url, options, params->recorded); !s.ok()) return s;
      return params;
    }
    if (!options.create_if_missing || options.read_only) {
      return Status::NotFound("no store at " + url);
    }
    Result<RecordedOptions> recorded = RecordedOptionsFor(options);
    if (!recorded.ok()) return recorded.status();
    Result<PermutationPlan> plan =
        PermutationPlan::Create(recorded->blocks, recorded->distance, recorded->fingerprint.bits);
    if (!plan.ok()) return plan.status();
    Result<int> listpack = ListpackEntries(client);
    if (!listpack.ok()) return listpack.status();
    const std::uint64_t expected =
        options.expected_documents.value_or(StoreOptions::kDefaultExpectedDocuments);
    LayoutParams params{*recorded, Layout::ChooseBucketBits(*plan, expected, *listpack),
                        Layout::ChooseShardBits(expected),
                        Layout::ChooseTimeBits(expected, *listpack), *listpack};
    std::vector<std::string> args = {"EVAL", kCreateScript, "1", key};
    for (std::string& f : Layout::Fields(*plan, params)) args.push_back(std::move(f));
    Result<Reply> made = client.Run(Command{key, args});
    if (!made.ok()) return made.status();
    if (made->type == Reply::Type::kError) return ReplyError(*made, "creating " + key);
    if (made->integer == 1) return params;
    // Another process made it first: read what it made.
  }
  return Status::Busy(url + ": the store's layout record changed while it was read");
}

}  // namespace

namespace {

// A store's address, and a client of its cluster, signed in.
struct Reached {
  StoreAddress address;
  std::unique_ptr<ClusterClient> client;
};

// The cluster `url` and `options` name, reached; errors name `doing` the URL.
Result<Reached> Reach(const std::string& url, const StoreOptions& options,
                      const std::string& doing) {
  Result<StoreAddress> address = ReadStoreAddress(url, options);
  if (!address.ok()) return address.status();
  Result<std::unique_ptr<ClusterClient>> client =
      ClusterClient::Connect(address->seed, address->client);
  if (!client.ok()) return client.status().WithContext(doing + " " + address->shown);
  return Reached{*std::move(address), *std::move(client)};
}

}  // namespace

Result<std::unique_ptr<Store>> OpenStore(const std::string& given_url,
                                         const StoreOptions& options) {
  Result<Reached> reached = Reach(given_url, options, "opening");
  if (!reached.ok()) return reached.status();
  const StoreAddress& address = reached->address;
  std::unique_ptr<ClusterClient>& client = reached->client;
  const std::string& url = address.shown;
  const std::string& name = address.name;
  if (Status s = CheckPermissions(*client, Layout::LayoutKeyOf(name), !options.read_only, address);
      !s.ok()) {
    return s;
  }
  Result<LayoutParams> params = LayoutFor(*client, url, name, options);
  if (!params.ok()) return params.status();
  Result<PermutationPlan> plan = PermutationPlan::Create(
      params->recorded.blocks, params->recorded.distance, params->recorded.fingerprint.bits);
  if (!plan.ok()) return plan.status().WithContext(url);
  if (Status s = Layout::Check(*plan, *params); !s.ok()) return s.WithContext(url);
  Result<Fingerprinter> fingerprinter = Fingerprinter::Create(params->recorded.fingerprint);
  if (!fingerprinter.ok()) return fingerprinter.status().WithContext(url);
  return std::unique_ptr<Store>(new RedisStore(address, options,
                                               Layout(name, *std::move(plan), *params),
                                               *std::move(fingerprinter), std::move(client)));
}

Status DestroyStore(const std::string& given_url, const StoreOptions& options) {
  Result<Reached> reached = Reach(given_url, options, "destroying");
  if (!reached.ok()) return reached.status();
  const std::string& url = reached->address.shown;
  const std::string& name = reached->address.name;
  std::unique_ptr<ClusterClient>& client = reached->client;
  const std::string layout_key = Layout::LayoutKeyOf(name);
  Result<Reply> exists = client->Run(Command{layout_key, {"EXISTS", layout_key}});
  if (!exists.ok()) return exists.status();
  if (exists->type == Reply::Type::kError) return ReplyError(*exists, "EXISTS " + layout_key);
  if (exists->integer != 1) return Status::NotFound("no store at " + url);
  Status s = client->ScanKeys("fps:{" + name + ":*", [&](std::vector<std::string>& keys) {
    std::vector<Command> unlinks;
    for (std::string& key : keys) unlinks.push_back({key, {"UNLINK", key}});
    return client->RunAll(unlinks, "removing keys");
  });
  if (!s.ok()) return s;
  return client->RunAll(Command{layout_key, {"UNLINK", layout_key}}, "removing the layout");
}

namespace {

StoreOptions WithoutCredentials(StoreOptions options) {
  options.redis_user.clear();
  options.redis_password.clear();
  return options;
}

}  // namespace

// ---- ClientPool ----

Result<ClientPool::Lease> ClientPool::Take() {
  std::vector<std::string> nodes;
  {
    MutexLock lock(mu_);
    if (!idle_.empty()) {
      std::unique_ptr<ClusterClient> client = std::move(idle_.back());
      idle_.pop_back();
      client->ForgetSent();
      return Lease(*this, std::move(client));
    }
    nodes = nodes_;
  }
  Result<std::unique_ptr<ClusterClient>> client = ClusterClient::Connect(nodes, options_);
  if (!client.ok()) return client.status();
  return Lease(*this, *std::move(client));
}

void ClientPool::GiveBack(std::unique_ptr<ClusterClient> client) {
  MutexLock lock(mu_);
  for (const std::string& node : client->nodes()) {
    if (std::find(nodes_.begin(), nodes_.end(), node) == nodes_.end()) nodes_.push_back(node);
  }
  idle_.push_back(std::move(client));
}

std::uint64_t ClientPool::Redirections() const {
  MutexLock lock(mu_);
  std::uint64_t redirections = 0;
  for (const std::unique_ptr<ClusterClient>& client : idle_) redirections += client->redirections();
  return redirections;
}

// ---- The store ----

RedisStore::RedisStore(const StoreAddress& address, const StoreOptions& options, Layout layout,
                       Fingerprinter fingerprinter, std::unique_ptr<ClusterClient> first)
    : url_(address.shown),
      options_(WithoutCredentials(options)),
      layout_(std::move(layout)),
      fingerprinter_(std::move(fingerprinter)),
      pool_(address.seed, address.client),
      // Processes that share the store start their sweeps at shards of their own.
      sweep_next_(std::random_device()() % layout_.times_count()),
      sweeper_([this](const std::atomic<bool>& stopping) { return SweepSome(stopping); },
               kSweepPeriod) {
  pool_.GiveBack(std::move(first));
  if (layout_.params().recorded.retention_seconds != 0 && !options_.read_only) sweeper_.Start();
}

RedisStore::~RedisStore() { sweeper_.Stop(); }

Status RedisStore::Close() {
  sweeper_.Stop();
  closed_ = true;
  return Status::OK();
}

Result<DocumentTime> RedisStore::ExpiredBefore() const {
  return RetentionCutoffNow(options_.clock, layout_.params().recorded.retention_seconds);
}

Status RedisStore::CheckOpen() const {
  return closed_ ? Status::InvalidArgument("the store " + url_ + " is closed") : Status::OK();
}

Status RedisStore::CheckWritable() const {
  if (Status s = CheckOpen(); !s.ok()) return s;
  if (options_.read_only) return Status::NotSupported("the store " + url_ + " is open read-only");
  return Status::OK();
}

Result<Matching> RedisStore::MatchingFor(std::optional<int> distance,
                                         std::optional<double> min_similarity) const {
  if (Status s = CheckOpen(); !s.ok()) return s;
  return internal::MatchingFor(distance, min_similarity, plan().distance(),
                               layout_.params().recorded.min_similarity);
}

Result<ClientPool::Lease> RedisStore::Client() const {
  if (Status s = CheckOpen(); !s.ok()) return s;
  return pool_.Take();
}

Status RedisStore::Settle(ClusterClient& client) const {
  if (options_.durability == Durability::kNoSync) return Status::OK();
  return client.WaitForReplicas(1, kReplicaWait);
}

Result<std::vector<std::optional<Word>>> RedisStore::OldFingerprints(
    std::span<const NewDocument> docs, std::span<const Reply> replies) const {
  std::vector<std::optional<Word>> old(docs.size());
  for (std::size_t i = 0; i < docs.size(); ++i) {
    Result<std::optional<Document>> doc = layout_.RecordOf(docs[i].id, replies[i], url_);
    if (!doc.ok()) return doc.status();
    if (*doc) old[i] = (*doc)->fingerprint;
  }
  return old;
}

Status RedisStore::WriteHeld(ClusterClient& client, std::span<const NewDocument> docs,
                             std::span<const std::optional<Word>> old, LockSet& locks,
                             DocumentTime now) {
  // Entries and times first, one ZADD a key.
  Grouped entries("ZADD");
  for (const NewDocument& d : docs) {
    for (std::size_t t = 0; t < plan().table_count(); ++t) {
      entries.Add(layout_.BucketKeyOf(t, d.fingerprint),
                  {"0", layout_.Member(t, d.fingerprint, d.id)});
    }
    entries.Add(layout_.TimesKeyOf(d.id),
                {std::to_string(d.time.value_or(now)), Layout::IdField(d.id)});
  }
  Status s = client.RunAll(std::move(entries).Commands(), "adding table entries");
  // Then the records, where the documents take effect, unless the locks may have lapsed.
  if (s.ok()) s = locks.Check();
  if (s.ok()) {
    Grouped records("HSET");
    for (const NewDocument& d : docs) {
      records.Add(layout_.ShardKeyOf(d.id), {Layout::IdField(d.id), layout_.EncodeRecord(d, now)});
    }
    s = client.RunAll(std::move(records).Commands(), "writing records");
  }
  // Once the records are as durable as asked, the entries of the versions replaced, confirmed
  // before the locks that keep another writer of the same documents away are given back.
  if (s.ok()) s = Settle(client);
  if (s.ok()) {
    Grouped removals("ZREM");
    for (std::size_t i = 0; i < docs.size(); ++i) {
      if (old[i] && *old[i] != docs[i].fingerprint) {
        removals.Add(layout_.BucketKeyOf(0, *old[i]), {layout_.Member(0, *old[i], docs[i].id)});
      }
    }
    s = client.RunAll(std::move(removals).Commands(), "removing replaced entries");
  }
  // Locks not given back lapse after their time to live.
  (void)locks.Release(client);
  return s;
}

Result<InsertStats> RedisStore::InsertBatch(std::span<const NewDocument> docs) {
  if (Status s = CheckWritable(); !s.ok()) return s;
  for (const NewDocument& d : docs) {
    if (Status s = CheckDocument(d); !s.ok()) return s;
  }
  Result<DocumentTime> now = Now(options_.clock);
  if (!now.ok()) return now.status();
  // A repeated id: the last one wins.
  std::unordered_map<DocumentId, std::size_t> last;
  for (std::size_t i = 0; i < docs.size(); ++i) last[docs[i].id] = i;
  std::vector<NewDocument> unique;
  unique.reserve(last.size());
  for (std::size_t i = 0; i < docs.size(); ++i) {
    if (last[docs[i].id] == i) unique.push_back(docs[i]);
  }
  Result<ClientPool::Lease> client = Client();
  if (!client.ok()) return client.status();
  InsertStats stats;
  const DocumentTime cutoff = RetentionCutoff(*now, layout_.params().recorded.retention_seconds);
  for (const NewDocument& d : unique) stats.past_retention += d.time.value_or(*now) < cutoff;
  for (std::size_t begin = 0; begin < unique.size(); begin += kWriteChunk) {
    const std::span<const NewDocument> chunk =
        std::span(unique).subspan(begin, std::min(kWriteChunk, unique.size() - begin));
    std::vector<std::string> keys;
    std::vector<Command> reads;
    for (const NewDocument& d : chunk) {
      keys.push_back(layout_.IdLockKey(d.id));
      keys.push_back(Layout::BucketLockKey(layout_.BucketKeyOf(0, d.fingerprint)));
      reads.push_back(layout_.ReadRecord(d.id));
    }
    LockSet locks;
    std::vector<Reply> replies;
    if (Status s = locks.Acquire(**client, std::move(keys), reads, &replies); !s.ok()) return s;
    Result<std::vector<std::optional<Word>>> old = OldFingerprints(chunk, replies);
    if (!old.ok()) {
      (void)locks.Release(**client);
      return old.status();
    }
    if (Status s = WriteHeld(**client, chunk, *old, locks, *now); !s.ok()) return s;
    for (const std::optional<Word>& f : *old) ++(f ? stats.replaced : stats.added);
  }
  return stats;
}

Status RedisStore::Remove(DocumentId id) {
  if (Status s = CheckWritable(); !s.ok()) return s;
  Result<ClientPool::Lease> client = Client();
  if (!client.ok()) return client.status();
  const Command read = layout_.ReadRecord(id);
  LockSet locks;
  std::vector<Reply> replies;
  if (Status s = locks.Acquire(**client, {layout_.IdLockKey(id)}, std::span(&read, 1), &replies);
      !s.ok()) {
    return s;
  }
  const NewDocument probe{id, 0, {}, {}, {}};
  Result<std::vector<std::optional<Word>>> old = OldFingerprints(std::span(&probe, 1), replies);
  Status s = old.ok() ? Status::OK() : old.status();
  if (s.ok() && !(*old)[0]) s = Status::NotFound("document " + std::to_string(id));
  // The record goes first: from then on no reader counts the entry and the time, which go last,
  // confirmed before the id lock is given back.
  if (s.ok()) {
    s = (*client)->RunAll(Command{read.key, {"HDEL", read.key, Layout::IdField(id)}},
                          "removing a record");
  }
  if (s.ok()) s = Settle(**client);
  // Only while the id lock surely holds: a late removal could take a newer write's time out. If
  // it may have lapsed, what is left behind is counted by no reader and mended by Repair.
  if (s.ok() && locks.Check().ok()) {
    const std::string key = layout_.BucketKeyOf(0, *(*old)[0]);
    const std::string times = layout_.TimesKeyOf(id);
    const std::vector<Command> removals = {{key, {"ZREM", key, layout_.Member(0, *(*old)[0], id)}},
                                           {times, {"ZREM", times, Layout::IdField(id)}}};
    s = (*client)->RunAll(removals, "removing an entry and a time");
  }
  (void)locks.Release(**client);
  return s;
}

Result<Document> RedisStore::Get(DocumentId id) const {
  Result<ClientPool::Lease> client = Client();
  if (!client.ok()) return client.status();
  Result<Reply> got = (*client)->Run(layout_.ReadRecord(id));
  if (!got.ok()) return got.status();
  Result<std::optional<Document>> doc = layout_.RecordOf(id, *got, url_);
  if (!doc.ok()) return doc.status();
  if (!*doc) return Status::NotFound("document " + std::to_string(id));
  Result<DocumentTime> expired_before = ExpiredBefore();
  if (!expired_before.ok()) return expired_before.status();
  if ((*doc)->time < *expired_before) {
    return Status::NotFound("document " + std::to_string(id) + " (past the store's retention)");
  }
  return **std::move(doc);
}

Result<CheckResult> RedisStore::CheckAndInsert(const NewDocument& doc, InsertPolicy policy,
                                               const QueryOptions& options) {
  if (Status s = CheckWritable(); !s.ok()) return s;
  if (Status s = CheckDocument(doc); !s.ok()) return s;
  Result<Matching> matching = MatchingFor(options.distance, options.min_similarity);
  if (!matching.ok()) return matching.status();
  Result<DocumentTime> now = Now(options_.clock);
  if (!now.ok()) return now.status();
  Result<ClientPool::Lease> client = Client();
  if (!client.ok()) return client.status();
  // Two near-duplicates share a prefix, so a bucket, in some table: holding every bucket lock of
  // its fingerprint, a check-and-insert runs alone among those of its near-duplicates.
  std::vector<std::string> keys = {layout_.IdLockKey(doc.id)};
  for (std::size_t t = 0; t < plan().table_count(); ++t) {
    keys.push_back(Layout::BucketLockKey(layout_.BucketKeyOf(t, doc.fingerprint)));
  }
  const Command read = layout_.ReadRecord(doc.id);
  LockSet locks;
  std::vector<Reply> replies;
  if (Status s = locks.Acquire(**client, std::move(keys), std::span(&read, 1), &replies); !s.ok()) {
    return s;
  }
  Result<std::vector<std::optional<Word>>> old = OldFingerprints(std::span(&doc, 1), replies);
  const Sketch query{doc.fingerprint, doc.signature};
  Result<std::vector<std::vector<Match>>> found =
      old.ok() ? Run(**client, std::span(&query, 1), *matching) : old.status();
  if (!found.ok()) {
    (void)locks.Release(**client);
    return found.status();
  }
  CheckResult result;
  for (Match& m : (*found)[0]) {
    if (m.id != doc.id) result.matches.push_back(std::move(m));
  }
  const DocumentTime time = doc.time.value_or(*now);
  if (policy == InsertPolicy::kIfNoMatch && !result.matches.empty()) {
    if (Status s = locks.Release(**client); !s.ok()) return s;
  } else {
    if (Status s = WriteHeld(**client, std::span(&doc, 1), *old, locks, *now); !s.ok()) return s;
    result.inserted = true;
    result.past_retention =
        time < RetentionCutoff(*now, layout_.params().recorded.retention_seconds);
  }
  if (options_.refresh_matches && !result.matches.empty()) {
    std::size_t kept = 0;
    if (Status s = Refresh(**client, result.matches, time, &kept); !s.ok()) return s;
    // Every match went (past the retention, swept) between the check and the refresh: the page
    // would be lost. Checked again, it finds them gone.
    if (kept == 0 && !result.inserted) return CheckAndInsert(doc, policy, options);
  }
  return result;
}

Status RedisStore::Refresh(ClusterClient& client, std::span<const Match> matches, DocumentTime time,
                           std::size_t* kept) {
  std::vector<const Match*> older;
  for (const Match& m : matches) {
    if (m.time < time) older.push_back(&m);
  }
  *kept = matches.size() - older.size();
  if (older.empty()) return Status::OK();
  std::vector<std::string> keys;
  std::vector<Command> reads;
  for (const Match* m : older) {
    keys.push_back(layout_.IdLockKey(m->id));
    reads.push_back(layout_.ReadRecord(m->id));
  }
  LockSet locks;
  std::vector<Reply> replies;
  if (Status s = locks.Acquire(client, std::move(keys), reads, &replies); !s.ok()) return s;
  // Read under the locks: a document written or removed since the match is left as it is.
  Grouped times("ZADD"), records("HSET");
  Status s;
  for (std::size_t i = 0; i < older.size() && s.ok(); ++i) {
    Result<std::optional<Document>> stored = layout_.RecordOf(older[i]->id, replies[i], url_);
    if (!stored.ok()) s = stored.status();
    if (!s.ok() || !*stored || (*stored)->fingerprint != older[i]->fingerprint) continue;
    ++*kept;
    if ((*stored)->time >= time) continue;
    const Document& d = **stored;
    times.Add(layout_.TimesKeyOf(d.id), {std::to_string(time), Layout::IdField(d.id)});
    records.Add(layout_.ShardKeyOf(d.id),
                {Layout::IdField(d.id),
                 layout_.EncodeRecord({d.id, d.fingerprint, d.metadata, d.signature, time}, time)});
  }
  // The time first, as a write's.
  if (s.ok()) s = client.RunAll(std::move(times).Commands(), "refreshing times");
  if (s.ok()) s = locks.Check();
  if (s.ok()) s = client.RunAll(std::move(records).Commands(), "refreshing records");
  if (s.ok()) s = Settle(client);
  (void)locks.Release(client);
  return s;
}

Status RedisStore::Flush() {
  // Nothing is staged: every write is in the tables when it returns.
  return CheckWritable();
}

Status RedisStore::Checkpoint(const std::string&) const {
  if (Status s = CheckOpen(); !s.ok()) return s;
  return Status::NotSupported(url_ +
                              " lives in Redis, which keeps its own copies: use its "
                              "persistence (BGSAVE, append-only files) and replicas");
}

}  // namespace fpstore::internal::redis
