// Opening a store in Redis, its writes and its small calls (docs/design.md, "The Redis backend").

#include "redis/redis_store.h"

#include <algorithm>
#include <charconv>
#include <map>
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
                        Layout::ChooseShardBits(expected), *listpack};
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
  if (options.retention_seconds.value_or(0) != 0) {
    return Status::NotSupported("a store in Redis has no retention: " + HidePassword(given_url));
  }
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
      pool_(address.seed, address.client) {
  pool_.GiveBack(std::move(first));
}

Status RedisStore::Close() {
  closed_ = true;
  return Status::OK();
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

namespace {

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

}  // namespace

Status RedisStore::WriteHeld(ClusterClient& client, std::span<const NewDocument> docs,
                             std::span<const std::optional<Word>> old, LockSet& locks,
                             DocumentTime now) {
  // Entries first, one ZADD a bucket.
  Grouped entries("ZADD");
  for (const NewDocument& d : docs) {
    for (std::size_t t = 0; t < plan().table_count(); ++t) {
      entries.Add(layout_.BucketKeyOf(t, d.fingerprint),
                  {"0", layout_.Member(t, d.fingerprint, d.id)});
    }
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

Status RedisStore::InsertBatch(std::span<const NewDocument> docs) { return Write(docs, nullptr); }

Status RedisStore::Write(std::span<const NewDocument> docs, std::uint64_t* replaced) {
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
    if (replaced != nullptr) {
      *replaced += std::count_if(old->begin(), old->end(), [](auto& f) { return f.has_value(); });
    }
  }
  return Status::OK();
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
  // The record goes first: from then on no reader counts the entry, which goes last, confirmed
  // before the id lock is given back.
  if (s.ok()) {
    s = (*client)->RunAll(Command{read.key, {"HDEL", read.key, Layout::IdField(id)}},
                          "removing a record");
  }
  if (s.ok()) s = Settle(**client);
  if (s.ok()) {
    const std::string key = layout_.BucketKeyOf(0, *(*old)[0]);
    s = (*client)->RunAll(Command{key, {"ZREM", key, layout_.Member(0, *(*old)[0], id)}},
                          "removing an entry");
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
  if (policy == InsertPolicy::kIfNoMatch && !result.matches.empty()) {
    if (Status s = locks.Release(**client); !s.ok()) return s;
    return result;
  }
  if (Status s = WriteHeld(**client, std::span(&doc, 1), *old, locks, *now); !s.ok()) return s;
  result.inserted = true;
  return result;
}

Result<std::uint64_t> RedisStore::Expire(DocumentTime) {
  if (Status s = CheckWritable(); !s.ok()) return s;
  return Status::NotSupported("a store in Redis has no expiry: " + url_);
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
