#include "redis/layout.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>

#include "format/records.h"
#include "plan/table_entry.h"
#include "util/big_endian.h"
#include "util/parse_number.h"

namespace fpstore::internal::redis {

namespace {

constexpr int kMaxBits = 32;
constexpr std::uint64_t kShardMix = 0x9E3779B97F4A7C15ULL;

// The top `bits` of 128 set.
Word TopBits(int bits) { return bits <= 0 ? Word() : ~Word() << (128 - bits); }

int ShortestPrefix(const PermutationPlan& plan) {
  int shortest = 64;
  for (const TablePermutation& t : plan.tables()) shortest = std::min(shortest, t.prefix_bits());
  return shortest;
}

// ceil(log2(x)) for x >= 1.
int CeilLog2(std::uint64_t x) { return x <= 1 ? 0 : 64 - std::countl_zero(x - 1); }

}  // namespace

Layout::Layout(std::string name, PermutationPlan plan, LayoutParams params)
    : name_(std::move(name)), plan_(std::move(plan)), params_(params) {}

Status Layout::CheckName(std::string_view name) {
  const bool fits =
      !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '.' || c == '-';
      });
  if (fits) return Status::OK();
  return Status::InvalidArgument("\"" + std::string(name) +
                                 "\" cannot name a store in Redis: 1 to 64 of A-Z a-z 0-9 _ . -");
}

Status Layout::Check(const PermutationPlan& plan, const LayoutParams& params) {
  const int most = std::min(ShortestPrefix(plan), kMaxBits);
  if (params.bucket_bits < 1 || params.bucket_bits > most) {
    return Status::InvalidArgument("bucket bits " + std::to_string(params.bucket_bits) +
                                   " out of range (1 to " + std::to_string(most) + " for plan " +
                                   plan.ToString() + ")");
  }
  if (params.shard_bits < 1 || params.shard_bits > kMaxBits) {
    return Status::InvalidArgument("shard bits " + std::to_string(params.shard_bits) +
                                   " out of range (1 to " + std::to_string(kMaxBits) + ")");
  }
  if (params.time_bits < 1 || params.time_bits > kMaxBits) {
    return Status::InvalidArgument("time bits " + std::to_string(params.time_bits) +
                                   " out of range (1 to " + std::to_string(kMaxBits) + ")");
  }
  return Status::OK();
}

int Layout::ChooseBucketBits(const PermutationPlan& plan, std::uint64_t documents,
                             int listpack_entries) {
  const std::uint64_t per_bucket = std::max(1, listpack_entries / 2);
  const int bits = CeilLog2(std::max<std::uint64_t>(1, documents / per_bucket));
  return std::clamp(bits, 1, std::min(ShortestPrefix(plan), kMaxBits));
}

int Layout::ChooseShardBits(std::uint64_t documents) {
  return std::clamp(CeilLog2(std::max<std::uint64_t>(1, documents / 512)), 14, kMaxBits);
}

int Layout::ChooseTimeBits(std::uint64_t documents, int listpack_entries) {
  const std::uint64_t per_set = std::max(1, listpack_entries / 2);
  return std::clamp(CeilLog2(std::max<std::uint64_t>(1, documents / per_set)), 10, kMaxBits);
}

std::string Layout::LayoutKeyOf(std::string_view name) {
  return "fps:{" + std::string(name) + "}:layout";
}

std::vector<std::string> Layout::Fields(const PermutationPlan& plan, const LayoutParams& params) {
  return {"format",
          std::to_string(kLayoutVersion),
          "plan",
          plan.ToString(),
          "fingerprint",
          params.recorded.fingerprint.ToString(),
          "min_similarity",
          DoubleText(params.recorded.min_similarity),
          "retention",
          std::to_string(params.recorded.retention_seconds),
          "bucket_bits",
          std::to_string(params.bucket_bits),
          "shard_bits",
          std::to_string(params.shard_bits),
          "time_bits",
          std::to_string(params.time_bits),
          "listpack_entries",
          std::to_string(params.listpack_entries)};
}

Result<LayoutParams> Layout::Parse(const std::string& where,
                                   const std::map<std::string, std::string>& fields) {
  auto field = [&](const char* name) -> const std::string* {
    const auto it = fields.find(name);
    return it == fields.end() ? nullptr : &it->second;
  };
  auto bad = [&](const char* name) {
    const std::string* value = field(name);
    return Status::Corruption(where + ": " + (value ? "unreadable " : "missing ") + name +
                              " in the layout record" + (value ? " \"" + *value + "\"" : ""));
  };
  int version = 0;
  if (field("format") == nullptr || !ParseNumber(*field("format"), version)) {
    return Status::InvalidArgument(where +
                                   " is not an fpstore store (its layout record has no "
                                   "format)");
  }
  if (version != kLayoutVersion) {
    return Status::NotSupported(where + " has Redis layout version " + std::to_string(version) +
                                "; this build reads and writes version " +
                                std::to_string(kLayoutVersion) +
                                " only. Dump its documents with the fpstore-admin that wrote it "
                                "(fpstore-admin dump) and load them into a new store");
  }
  LayoutParams p;
  int plan_bits = 64;
  if (field("plan") == nullptr ||
      !ParsePlanRecord(*field("plan"), &p.recorded.blocks, &p.recorded.distance, &plan_bits)) {
    return bad("plan");
  }
  if (field("fingerprint") == nullptr) return bad("fingerprint");
  Result<FingerprintOptions> fp = FingerprintOptions::Parse(*field("fingerprint"));
  if (!fp.ok()) return fp.status().WithContext(where);
  if (Status width = CheckPlanWidth(where, plan_bits, *fp); !width.ok()) return width;
  p.recorded.fingerprint = *fp;
  if (field("min_similarity") == nullptr ||
      !ParseNumber(*field("min_similarity"), p.recorded.min_similarity) ||
      !CheckMinSimilarity(p.recorded.min_similarity).ok()) {
    return bad("min_similarity");
  }
  if (field("retention") == nullptr ||
      !ParseNumber(*field("retention"), p.recorded.retention_seconds) ||
      !CheckRetention(p.recorded.retention_seconds).ok()) {
    return bad("retention");
  }
  if (field("bucket_bits") == nullptr || !ParseNumber(*field("bucket_bits"), p.bucket_bits)) {
    return bad("bucket_bits");
  }
  if (field("shard_bits") == nullptr || !ParseNumber(*field("shard_bits"), p.shard_bits)) {
    return bad("shard_bits");
  }
  if (field("time_bits") == nullptr || !ParseNumber(*field("time_bits"), p.time_bits)) {
    return bad("time_bits");
  }
  if (field("listpack_entries") == nullptr ||
      !ParseNumber(*field("listpack_entries"), p.listpack_entries)) {
    return bad("listpack_entries");
  }
  return p;
}

std::uint64_t Layout::BucketOf(std::size_t t, Word fp) const {
  return HeadOf(Permute(plan_.table(t), fp), plan_.bits()) >> (64 - params_.bucket_bits);
}

Word Layout::Aligned(Word permuted) const {
  return plan_.bits() == 64 ? Word(permuted.low(), 0) : permuted;
}

std::string Layout::TopBytes(Word aligned) const {
  char bytes[16];
  PutBigEndian64(bytes, aligned.high());
  PutBigEndian64(bytes + 8, aligned.low());
  return std::string(bytes, static_cast<std::size_t>(rest_bytes()));
}

std::string Layout::BucketKey(std::size_t t, std::uint64_t bucket) const {
  return "fps:{" + name_ + ":" + std::to_string(t) + ":" + std::to_string(bucket) + "}";
}

std::string Layout::Rest(Word permuted) const {
  return TopBytes(Aligned(permuted) << params_.bucket_bits);
}

std::string Layout::Member(std::size_t t, Word fp, DocumentId id) const {
  std::string member = Rest(Permute(plan_.table(t), fp));
  if (t == 0) {
    char bytes[8];
    PutBigEndian64(bytes, id);
    member.append(bytes, 8);
  }
  return member;
}

bool Layout::DecodeMember(std::size_t t, std::uint64_t bucket, std::string_view member, Word* fp,
                          DocumentId* id) const {
  const std::size_t rest = static_cast<std::size_t>(rest_bytes());
  if (member.size() != rest + (t == 0 ? 8 : 0)) return false;
  char bytes[16] = {};
  std::memcpy(bytes, member.data(), rest);
  const Word rest_bits(GetBigEndian64(bytes), GetBigEndian64(bytes + 8));
  const int b = params_.bucket_bits;
  // Bits past the width would be lost to the fingerprint: a member with them is malformed.
  if ((rest_bits & ~TopBits(plan_.bits() - b)) != Word()) return false;
  const Word aligned = (Word(bucket) << (128 - b)) | (rest_bits >> b);
  const Word permuted = plan_.bits() == 64 ? Word(aligned.high()) : aligned;
  *fp = Unpermute(plan_.table(t), permuted);
  *id = t == 0 ? GetBigEndian64(member.data() + rest) : 0;
  return true;
}

Command Layout::Probe(std::size_t t, Word q) const {
  const TablePermutation& table = plan_.table(t);
  const Word permuted = Permute(table, q);
  const int b = params_.bucket_bits;
  // Within the bucket, the members that share the rest of the table's prefix.
  const Word rest_mask = TopBits(table.prefix_bits() - b);
  const Word low = (Aligned(permuted) << b) & rest_mask;
  const Word high = low | ~rest_mask;
  const std::string lo = TopBytes(low), hi = TopBytes(high);
  std::string key = BucketKey(t, HeadOf(permuted, plan_.bits()) >> (64 - b));
  return {key, {"ZRANGEBYLEX", key, "[" + lo, "[" + hi + std::string(8, '\xff')}};
}

Command Layout::IdsOf(Word fp) const {
  const std::string rest = Rest(Permute(plan_.table(0), fp));
  std::string key = BucketKeyOf(0, fp);
  return {key, {"ZRANGEBYLEX", key, "[" + rest, "[" + rest + std::string(8, '\xff')}};
}

std::uint64_t Layout::ShardOf(DocumentId id) const {
  return (id * kShardMix) >> (64 - params_.shard_bits);
}

std::string Layout::ShardKey(std::uint64_t shard) const {
  return "fps:{" + name_ + ":d:" + std::to_string(shard) + "}";
}

std::uint64_t Layout::TimesOf(DocumentId id) const {
  return (id * kShardMix) >> (64 - params_.time_bits);
}

std::string Layout::TimesKey(std::uint64_t times) const {
  return "fps:{" + name_ + ":t:" + std::to_string(times) + "}";
}

Layout::KeyKind Layout::Classify(std::string_view key) const {
  KeyKind kind;
  const std::string prefix = "fps:{" + name_ + ":";
  if (!key.starts_with(prefix) || !key.ends_with("}")) return kind;
  key.remove_prefix(prefix.size());
  key.remove_suffix(1);
  const std::size_t colon = key.find(':');
  if (colon == std::string_view::npos) return kind;
  const std::string_view head = key.substr(0, colon), tail = key.substr(colon + 1);
  std::uint64_t number = 0;
  if (!ParseNumber(tail, number)) return kind;
  if (head == "d") {
    if (number >> params_.shard_bits == 0) kind = {KeyKind::kShard, 0, number};
    return kind;
  }
  if (head == "t") {
    if (number >> params_.time_bits == 0) kind = {KeyKind::kTimes, 0, number};
    return kind;
  }
  std::uint64_t table = 0;
  if (ParseNumber(head, table) && table < plan_.table_count() &&
      number >> params_.bucket_bits == 0) {
    kind = {KeyKind::kBucket, static_cast<std::size_t>(table), number};
  }
  return kind;
}

std::string Layout::IdField(DocumentId id) {
  std::string field(8, '\0');
  PutBigEndian64(field.data(), id);
  return field;
}

bool Layout::DecodeIdField(std::string_view field, DocumentId* id) {
  if (field.size() != 8) return false;
  *id = GetBigEndian64(field.data());
  return true;
}

std::string Layout::EncodeRecord(const NewDocument& doc, DocumentTime time) const {
  return EncodeDocumentValue(
      doc.fingerprint,
      EncodeDocumentTail(doc.time.value_or(time), doc.signature.bytes(), doc.metadata),
      plan_.bits());
}

bool Layout::DecodeRecord(DocumentId id, std::string_view value, Document* doc) const {
  doc->id = id;
  return DecodeDocumentValue(value, plan_.bits(), &doc->fingerprint, &doc->time, &doc->signature,
                             &doc->metadata);
}

Command Layout::ReadRecord(DocumentId id) const {
  std::string shard = ShardKeyOf(id);
  std::vector<std::string> args{"HGET", shard, IdField(id)};
  return {std::move(shard), std::move(args)};
}

Result<std::optional<Document>> Layout::RecordOf(DocumentId id, const Reply& reply,
                                                 const std::string& url) const {
  if (reply.type == Reply::Type::kError) return ReplyError(reply, "reading a record");
  if (reply.type != Reply::Type::kString) return std::optional<Document>();
  Document doc;
  if (!DecodeRecord(id, reply.str, &doc)) {
    return Status::Corruption(url + ": the record of document " + std::to_string(id) + " in " +
                              ShardKeyOf(id) + " is malformed");
  }
  return std::optional<Document>(std::move(doc));
}

std::string Layout::IdLockKey(DocumentId id) const {
  return ShardKeyOf(id) + ":lock:" + std::to_string(id);
}

}  // namespace fpstore::internal::redis
