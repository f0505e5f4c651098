#include "redis/tables.h"

#include <algorithm>

#include "fpstore/simhash.h"

namespace fpstore::internal::redis {

namespace {

constexpr int kMaxBucketBits = 24;

// The top `bits` bits set.
Fingerprint TopBits(int bits) { return bits == 0 ? 0 : ~Fingerprint{0} << (64 - bits); }

// The top `bytes` bytes of `value`, big-endian.
std::string TopBytes(Fingerprint value, int bytes) {
  std::string out(static_cast<std::size_t>(bytes), '\0');
  for (int i = 0; i < bytes; ++i) out[i] = static_cast<char>(value >> (56 - 8 * i));
  return out;
}

Fingerprint FromTopBytes(std::string_view bytes) {
  Fingerprint value = 0;
  for (std::size_t i = 0; i < bytes.size() && i < 8; ++i) {
    value |= Fingerprint{static_cast<unsigned char>(bytes[i])} << (56 - 8 * i);
  }
  return value;
}

}  // namespace

Tables::Tables(ClusterClient& client, std::string name, const PermutationPlan& plan,
               int bucket_bits)
    : client_(client), name_(std::move(name)), plan_(plan), bucket_bits_(bucket_bits) {}

Status Tables::Check(const PermutationPlan& plan, int bucket_bits) {
  int shortest = 64;
  for (const TablePermutation& t : plan.tables()) shortest = std::min(shortest, t.prefix_bits());
  const int most = std::min(shortest, kMaxBucketBits);
  if (bucket_bits < 1 || bucket_bits > most) {
    return Status::InvalidArgument("bucket bits " + std::to_string(bucket_bits) +
                                   " out of range (1 to " + std::to_string(most) + " for plan " +
                                   plan.ToString() + ")");
  }
  return Status::OK();
}

std::string Tables::BucketKey(std::size_t t, Fingerprint permuted) const {
  const Fingerprint bucket = permuted >> (64 - bucket_bits_);
  return "fps:{" + name_ + ":" + std::to_string(t) + ":" + std::to_string(bucket) + "}";
}

std::string Tables::Member(Fingerprint permuted, DocumentId id) const {
  const int rest_bytes = (64 - bucket_bits_ + 7) / 8;
  return TopBytes(permuted << bucket_bits_, rest_bytes) + TopBytes(id, 8);
}

Status Tables::Write(bool add, std::span<const IdFingerprint> docs) {
  std::vector<Command> commands;
  commands.reserve(docs.size() * plan_.table_count());
  for (const IdFingerprint& d : docs) {
    for (std::size_t t = 0; t < plan_.table_count(); ++t) {
      const Fingerprint permuted = plan_.table(t).Apply(d.fingerprint);
      std::string key = BucketKey(t, permuted);
      std::vector<std::string> args = {add ? "ZADD" : "ZREM", key};
      if (add) args.push_back("0");
      args.push_back(Member(permuted, d.id));
      commands.push_back({std::move(key), std::move(args)});
    }
  }
  Result<std::vector<Reply>> replies = client_.Run(commands);
  if (!replies.ok()) return replies.status();
  for (const Reply& r : *replies) {
    if (r.type == Reply::Type::kError) return Status::IOError("Redis: " + r.str);
  }
  return Status::OK();
}

Status Tables::Add(std::span<const IdFingerprint> docs) { return Write(true, docs); }

Status Tables::Remove(std::span<const IdFingerprint> docs) { return Write(false, docs); }

Result<std::vector<std::vector<IdFingerprint>>> Tables::Within(
    std::span<const Fingerprint> queries, int k) {
  const int rest_bytes = (64 - bucket_bits_ + 7) / 8;
  std::vector<Command> commands;
  commands.reserve(queries.size() * plan_.table_count());
  for (const Fingerprint q : queries) {
    for (std::size_t t = 0; t < plan_.table_count(); ++t) {
      const TablePermutation& table = plan_.table(t);
      const Fingerprint permuted = table.Apply(q);
      // Within the bucket, the members that share the rest of the table's prefix.
      const Fingerprint rest_mask = TopBits(table.prefix_bits() - bucket_bits_);
      const Fingerprint low = (permuted << bucket_bits_) & rest_mask;
      const Fingerprint high = low | ~rest_mask;
      std::string key = BucketKey(t, permuted);
      std::vector<std::string> args = {"ZRANGEBYLEX", key, "[" + TopBytes(low, rest_bytes),
                                       "[" + TopBytes(high, rest_bytes) + std::string(8, '\xff')};
      commands.push_back({std::move(key), std::move(args)});
    }
  }
  Result<std::vector<Reply>> replies = client_.Run(commands);
  if (!replies.ok()) return replies.status();
  std::vector<std::vector<IdFingerprint>> found(queries.size());
  for (std::size_t qi = 0; qi < queries.size(); ++qi) {
    const Fingerprint q = queries[qi];
    for (std::size_t t = 0; t < plan_.table_count(); ++t) {
      const Reply& r = (*replies)[qi * plan_.table_count() + t];
      if (r.type == Reply::Type::kError) return Status::IOError("Redis: " + r.str);
      const TablePermutation& table = plan_.table(t);
      const Fingerprint bucket = table.Apply(q) & TopBits(bucket_bits_);
      for (const Reply& member : r.elements) {
        const std::string_view m = member.str;
        if (m.size() != static_cast<std::size_t>(rest_bytes) + 8) {
          return Status::Corruption("Redis set " + commands[qi * plan_.table_count() + t].key +
                                    " holds a member of " + std::to_string(m.size()) +
                                    " bytes, not " + std::to_string(rest_bytes + 8));
        }
        const Fingerprint permuted = bucket | (FromTopBytes(m.substr(0, rest_bytes)) >> bucket_bits_);
        const Fingerprint fp = table.Invert(permuted);
        // Each document is found in every table it shares a prefix with; it counts in the first.
        if (!WithinDistance(fp, q, k) || plan_.FirstSharedTable(q, fp) != static_cast<int>(t)) {
          continue;
        }
        found[qi].push_back({FromTopBytes(m.substr(rest_bytes)), fp});
      }
    }
  }
  return found;
}

}  // namespace fpstore::internal::redis
