// fpstore-redis-bench: the Redis Cluster backend beside the embedded store, on the same synthetic
// documents in the same run (docs/scale.md): the bytes of Redis memory a fingerprint takes in
// each table, inserts a second (batched, one at a time, check-and-insert) and queries a second
// (hits and misses, one at a time and batched), each with the embedded store's figure and the
// ratio. The cluster is the caller's: start one with scripts/redis-cluster.sh.
//
//   scripts/redis-cluster.sh start /tmp/rc 7500
//   build/release/bench/fpstore-redis-bench --seed 127.0.0.1:7500 --n 1000000 --dir /tmp/fpb
//
// With --model-documents N it measures instead what a table's members, the records and the times
// would take in a store laid out for N documents (the bucket bits N gets: docs/format.md, "Redis
// layout"), writing buckets of that layout's size directly, for as many members as --n says: the
// figure docs/scale.md's model rests on, without loading N documents.
//
// Not a test: nothing passes or fails on speed. It stops if the two stores disagree on an answer.

#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "brute_force.h"
#include "fpstore/store.h"
#include "redis/cluster_client.h"
#include "redis/layout.h"

namespace po = boost::program_options;

namespace fpstore::bench {
namespace {

using Clock = std::chrono::steady_clock;
using internal::IdFingerprint;
using testing::Random;

struct Config {
  std::string seed = "127.0.0.1:7500";
  std::string dir;
  std::uint64_t n = 1'000'000;
  std::size_t queries = 20'000;
  std::size_t singles = 5'000;
  std::uint64_t random_seed = 1;
  std::uint64_t model_documents = 0;
};

[[noreturn]] void Die(const std::string& message) {
  std::cerr << "fpstore-redis-bench: " << message << "\n";
  std::exit(1);
}

template <typename T>
T Must(Result<T> r, const std::string& what) {
  if (!r.ok()) Die(what + ": " + r.status().ToString());
  return std::move(r).value();
}

void Must(const Status& s, const std::string& what) {
  if (!s.ok()) Die(what + ": " + s.ToString());
}

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string Fixed(double v, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, v);
  return text;
}

// The sum of the masters' used_memory (INFO memory).
std::uint64_t UsedMemory(internal::redis::ClusterClient& client) {
  std::uint64_t total = 0;
  for (const std::string& master : client.Masters()) {
    internal::redis::Reply info = Must(client.RunOn(master, {"INFO", "memory"}), "INFO memory");
    const std::size_t at = info.str.find("used_memory:");
    if (at == std::string::npos) Die(master + " did not tell its used_memory");
    total += std::stoull(info.str.substr(at + 12));
  }
  return total;
}

class Table {
 public:
  // One row: a measure on both stores, and redis / embedded.
  void Add(const std::string& what, double embedded, double redis, int digits = 0) {
    const std::string row = "| " + what + " | " + Fixed(embedded, digits) + " | " +
                            Fixed(redis, digits) + " | " + Fixed(redis / embedded, 3) + " |";
    std::cerr << row << "\n";
    rows_.push_back(row);
  }
  void Print() const {
    std::cout << "| measure | embedded | Redis Cluster | Redis / embedded |\n|---|---|---|---|\n";
    for (const std::string& r : rows_) std::cout << r << "\n";
  }

 private:
  std::vector<std::string> rows_;
};

// Documents in batches of 1,000; documents a second.
double LoadBatches(Store& store, const std::vector<IdFingerprint>& docs) {
  const auto start = Clock::now();
  std::vector<NewDocument> batch;
  for (std::size_t i = 0; i < docs.size(); ++i) {
    batch.push_back({docs[i].id, docs[i].fingerprint, {}, {}, {}});
    if (batch.size() == 1000 || i + 1 == docs.size()) {
      Must(store.InsertBatch(batch), "inserting");
      batch.clear();
    }
  }
  return docs.size() / Seconds(start);
}

// Calls a second of `call(i)` for i < count.
template <typename Call>
double Rate(std::size_t count, Call&& call) {
  const auto start = Clock::now();
  for (std::size_t i = 0; i < count; ++i) call(i);
  return count / Seconds(start);
}

void Run(const Config& config) {
  Random rnd(config.random_seed);
  std::vector<IdFingerprint> docs;
  docs.reserve(config.n);
  for (std::uint64_t i = 0; i < config.n; ++i) docs.push_back({i + 1, rnd.Next()});
  // Queries: half near a stored document (hits), half random (misses).
  std::vector<std::uint64_t> hits, misses;
  for (std::size_t i = 0; i < config.queries; ++i) {
    hits.push_back(docs[rnd.Uniform(docs.size())].fingerprint.low() ^
                   (std::uint64_t{1} << rnd.Uniform(64)));
    misses.push_back(rnd.Next());
  }
  auto client = Must(internal::redis::ClusterClient::Connect(config.seed), "connecting");
  const std::string url = "redis://" + config.seed + "/bench-" + std::to_string(::getpid());
  std::filesystem::remove_all(config.dir);
  StoreOptions options;
  options.expected_documents = config.n;
  std::unique_ptr<Store> embedded = Must(Store::Open(config.dir, options), "opening " + config.dir);
  const std::uint64_t before = UsedMemory(*client);
  std::unique_ptr<Store> redis = Must(Store::Open(url, options), "opening " + url);
  const std::size_t tables = redis->plan().table_count();

  Table table;
  std::cerr << "loading " << config.n << " documents into each store\n";
  const double embedded_load = LoadBatches(*embedded, docs);
  Must(embedded->Flush(), "flushing");
  const double redis_load = LoadBatches(*redis, docs);
  table.Add("inserts, batches of 1,000, 1 thread, durable (/s)", embedded_load, redis_load);

  // Memory: what the whole store takes, per fingerprint per table.
  const double per = static_cast<double>(config.n) * tables;
  const StoreStats es = Must(embedded->Stats(), "stats");
  const StoreStats rs = Must(redis->Stats(), "stats");
  std::uint64_t redis_tables = 0, embedded_tables = 0;
  for (std::uint64_t b : rs.table_bytes) redis_tables += b;
  for (std::uint64_t b : es.table_bytes) embedded_tables += b;
  table.Add("tables, bytes per fingerprint per table (disk; Redis memory)", embedded_tables / per,
            redis_tables / per, 2);
  table.Add("whole store, bytes per fingerprint per table (disk; Redis used_memory)",
            es.bytes_on_disk / per, (UsedMemory(*client) - before) / per, 2);

  // Queries, one at a time and batched; the answers compared.
  for (auto* set : {&hits, &misses}) {
    const std::string kind = set == &hits ? "hits" : "misses";
    std::size_t found_e = 0, found_r = 0;
    const double e = Rate(set->size(), [&](std::size_t i) {
      found_e += Must(embedded->Query((*set)[i], 3), "query").size();
    });
    const double r = Rate(set->size(), [&](std::size_t i) {
      found_r += Must(redis->Query((*set)[i], 3), "query").size();
    });
    if (found_e != found_r)
      Die("the stores found " + std::to_string(found_e) + " and " + std::to_string(found_r) +
          " matches for the same " + kind);
    table.Add("queries, " + kind + ", one at a time, 1 thread (/s)", e, r);
    const std::vector<Fingerprint> all_fps(set->begin(), set->end());
    const std::span<const Fingerprint> all(all_fps);
    const double eb = Rate(all.size() / 1000, [&](std::size_t i) {
      Must(embedded->QueryBatch(all.subspan(i * 1000, 1000), 3), "batch");
    });
    const double rb = Rate(all.size() / 1000, [&](std::size_t i) {
      Must(redis->QueryBatch(all.subspan(i * 1000, 1000), 3), "batch");
    });
    table.Add("queries, " + kind + ", batches of 1,000, 1 thread (/s)", eb * 1000, rb * 1000);
  }

  // Writes one at a time: inserts, and check-and-inserts of new documents.
  std::vector<IdFingerprint> fresh;
  for (std::size_t i = 0; i < 2 * config.singles; ++i) {
    fresh.push_back({config.n + 1 + i, rnd.Next()});
  }
  auto singles = [&](Store& store, std::size_t offset, bool check) {
    return Rate(config.singles, [&](std::size_t i) {
      const IdFingerprint& d = fresh[offset + i];
      if (check) {
        Must(store.CheckAndInsert(d.id, d.fingerprint, {}, InsertPolicy::kIfNoMatch), "check");
      } else {
        Must(store.Insert(d.id, d.fingerprint), "insert");
      }
    });
  };
  table.Add("inserts, one per call, 1 thread, durable (/s)", singles(*embedded, 0, false),
            singles(*redis, 0, false));
  table.Add("check-and-inserts, one per call, 1 thread, durable (/s)",
            singles(*embedded, config.singles, true), singles(*redis, config.singles, true));

  std::cout << "fpstore-redis-bench --n " << config.n << " (" << tables << " tables; Redis at "
            << config.seed << ")\n\n";
  table.Print();
  Must(embedded->Close(), "closing");
  Must(redis->Close(), "closing");
  Must(DestroyStore(url), "destroying " + url);
  std::filesystem::remove_all(config.dir);
}

// Bytes of Redis memory a member of table 0 and of table 1, a document's record and its time take
// in the layout of a store of config.model_documents documents: buckets, shards and times sets of
// that layout's size, Poisson-filled, config.n members in each table.
void Model(const Config& config) {
  using internal::redis::Layout;
  auto client = Must(internal::redis::ClusterClient::Connect(config.seed), "connecting");
  const PermutationPlan plan = Must(PermutationPlan::Create(6, 3), "plan");
  StoreOptions defaults;
  internal::redis::LayoutParams params;
  params.recorded = Must(internal::RecordedOptionsFor(defaults), "options");
  params.listpack_entries = 0;
  for (const std::string& master : client->Masters()) {
    internal::redis::Reply r =
        Must(client->RunOn(master, {"CONFIG", "GET", "zset-max-listpack-entries"}), "CONFIG GET");
    const int v = std::stoi(r.elements.at(1).str);
    params.listpack_entries =
        params.listpack_entries == 0 ? v : std::min(params.listpack_entries, v);
  }
  params.bucket_bits =
      Layout::ChooseBucketBits(plan, config.model_documents, params.listpack_entries);
  params.shard_bits = Layout::ChooseShardBits(config.model_documents);
  params.time_bits = Layout::ChooseTimeBits(config.model_documents, params.listpack_entries);
  const Layout layout("model-" + std::to_string(::getpid()), plan, params);
  const int b = params.bucket_bits;
  const double mean = config.model_documents / std::ldexp(1.0, b);
  std::cout << "fpstore-redis-bench --model-documents " << config.model_documents << " --n "
            << config.n << ": bucket bits " << b << ", " << Fixed(mean, 1)
            << " members a bucket on average, zset-max-listpack-entries " << params.listpack_entries
            << "\n\n| table | members | bytes a member |\n|---|---|---|\n";
  Random rnd(config.random_seed);
  std::mt19937_64 engine(config.random_seed);
  std::poisson_distribution<int> members_of(mean);
  for (std::size_t t : {std::size_t{0}, std::size_t{1}}) {
    const std::uint64_t before = UsedMemory(*client);
    std::uint64_t written = 0;
    std::vector<internal::redis::Command> commands;
    for (std::uint64_t bucket = 0; written < config.n; ++bucket) {
      const int count = members_of(engine);
      if (count == 0) continue;
      const std::string key = layout.BucketKey(t, bucket);
      std::vector<std::string> args = {"ZADD", key};
      for (int i = 0; i < count; ++i) {
        const std::uint64_t permuted = (bucket << (64 - b)) | (rnd.Next() >> b);
        args.push_back("0");
        args.push_back(layout.Member(t, plan.table(t).Invert(permuted).low(), rnd.Next()));
      }
      written += count;
      commands.push_back({key, std::move(args)});
      if (commands.size() == 1000) {
        Must(client->Run(commands), "ZADD");
        commands.clear();
      }
    }
    Must(client->Run(commands), "ZADD");
    const double bytes = static_cast<double>(UsedMemory(*client) - before) / written;
    std::cout << "| " << t << " | " << written << " | " << Fixed(bytes, 2) << " |\n";
  }
  // Documents: records of 40 bytes of metadata, with a signature of the default size and without,
  // in shards of the layout's size.
  const double per_shard = config.model_documents / std::ldexp(1.0, params.shard_bits);
  std::poisson_distribution<int> records_of(per_shard);
  const std::string metadata(40, 'u');
  for (const int signature_bytes : {params.recorded.fingerprint.signature_bytes, 0}) {
    const Signature signature =
        Must(Signature::FromBytes(std::string(static_cast<std::size_t>(signature_bytes), 's')),
             "signature");
    const std::uint64_t before = UsedMemory(*client);
    std::uint64_t written = 0;
    std::vector<internal::redis::Command> commands;
    for (std::uint64_t shard = signature_bytes == 0 ? 1u << 30 : 0; written < config.n / 4;
         ++shard) {
      const int count = records_of(engine);
      if (count == 0) continue;
      const std::string key = layout.ShardKey(shard);
      std::vector<std::string> args = {"HSET", key};
      for (int i = 0; i < count; ++i) {
        args.push_back(Layout::IdField(rnd.Next()));
        args.push_back(layout.EncodeRecord({0, rnd.Next(), metadata, signature, {}}, 0));
      }
      written += count;
      commands.push_back({key, std::move(args)});
      if (commands.size() == 100) {
        Must(client->Run(commands), "HSET");
        commands.clear();
      }
    }
    Must(client->Run(commands), "HSET");
    const double bytes = static_cast<double>(UsedMemory(*client) - before) / written;
    std::cout << "| documents, " << signature_bytes << "-byte signature, 40 bytes of metadata | "
              << written << " | " << Fixed(bytes, 2) << " |\n";
  }
  // Times: sets of the layout's size (listpack), and, for comparison, sets of a shard's size.
  for (const double per_set :
       {config.model_documents / std::ldexp(1.0, params.time_bits), per_shard}) {
    std::poisson_distribution<int> times_of(per_set);
    const std::uint64_t before = UsedMemory(*client);
    std::uint64_t written = 0;
    std::vector<internal::redis::Command> commands;
    for (std::uint64_t set = per_set == per_shard ? 1u << 30 : 0; written < config.n / 4; ++set) {
      const int count = times_of(engine);
      if (count == 0) continue;
      const std::string key = layout.TimesKey(set);
      std::vector<std::string> args = {"ZADD", key};
      for (int i = 0; i < count; ++i) {
        args.push_back(std::to_string(1'700'000'000 + rnd.Uniform(100'000'000)));
        args.push_back(Layout::IdField(rnd.Next()));
      }
      written += count;
      commands.push_back({key, std::move(args)});
      if (commands.size() == 100) {
        Must(client->Run(commands), "ZADD");
        commands.clear();
      }
    }
    Must(client->Run(commands), "ZADD");
    const double bytes = static_cast<double>(UsedMemory(*client) - before) / written;
    std::cout << "| times, " << Fixed(per_set, 1) << " a set | " << written << " | "
              << Fixed(bytes, 2) << " |\n";
  }
  Must(client->ScanKeys(layout.KeyPattern(),
                        [&](std::vector<std::string>& keys) {
                          std::vector<internal::redis::Command> unlinks;
                          for (std::string& key : keys) unlinks.push_back({key, {"UNLINK", key}});
                          Result<std::vector<internal::redis::Reply>> done = client->Run(unlinks);
                          return done.ok() ? Status::OK() : done.status();
                        }),
       "cleaning up");
}

}  // namespace
}  // namespace fpstore::bench

int main(int argc, char** argv) {
  fpstore::bench::Config config;
  po::options_description desc("fpstore-redis-bench options");
  desc.add_options()("help", "this text")("seed", po::value(&config.seed),
                                          "a node of the Redis Cluster, HOST:PORT")(
      "dir", po::value(&config.dir), "a directory for the embedded store (removed)")(
      "n", po::value(&config.n), "documents in each store (default 1,000,000)")(
      "queries", po::value(&config.queries), "queries of each kind (default 20,000)")(
      "singles", po::value(&config.singles), "writes one at a time (default 5,000)")(
      "model-documents", po::value(&config.model_documents),
      "measure a member's bytes in the layout of a store of this many documents");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, desc), vm);
    if (vm.count("help") > 0) {
      std::cout << desc << "\n";
      return 0;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "fpstore-redis-bench: " << e.what() << "\n" << desc << "\n";
    return 2;
  }
  if (config.model_documents > 0) {
    fpstore::bench::Model(config);
  } else if (config.dir.empty()) {
    std::cerr << "fpstore-redis-bench: --dir is required (or --model-documents)\n";
    return 2;
  } else {
    fpstore::bench::Run(config);
  }
  return 0;
}
