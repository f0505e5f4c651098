// How a store lies in a Redis Cluster (docs/format.md, "Redis layout"): the names of its keys, the
// members of its tables' sorted sets, its document records, and the layout record that says how
// the rest was cut. It builds commands and reads replies; it sends nothing.
//
// Each permutation table is cut into 2^bucket_bits sorted sets ("buckets") by the leading
// bucket_bits of the permuted fingerprint. Every bucket key carries its own hash tag, so the
// buckets spread over every slot and a bucket lives on one node; each holds about as many members
// as Redis keeps in its compact listpack encoding. A member is the permuted fingerprint's
// remaining bits (of its 64 or 128), big-endian, at score 0, so a bucket's lexicographic order is
// the table's order and a prefix range is one ZRANGEBYLEX. Table 0's members also carry the
// document's id; the other tables hold each fingerprint once, whatever documents share it.
//
// Documents live in 2^shard_bits hashes ("shards"), by a mix of their id: field the id, value
// the embedded store's document value (format/records.h): fingerprint, time, signature, metadata.
// The documents' times, for expiry, are in 2^time_bits sorted sets ("times") by the same mix of
// the id: member the id, score the time; as many as keep each within the listpack encoding, like
// the buckets.
//
// Thread safety: immutable.

#ifndef FPSTORE_LIB_REDIS_LAYOUT_H_
#define FPSTORE_LIB_REDIS_LAYOUT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "format/recorded_options.h"
#include "fpstore/document.h"
#include "fpstore/permutation.h"
#include "fpstore/status.h"
#include "plan/table_entry.h"
#include "redis/cluster_client.h"

namespace fpstore::internal::redis {

// The layout this build reads and writes.
inline constexpr int kLayoutVersion = 3;

struct LayoutParams {
  RecordedOptions recorded;
  int bucket_bits = 0;
  int shard_bits = 0;
  int time_bits = 0;
  // The cluster's zset-max-listpack-entries when the store was made, which bucket_bits was chosen
  // for.
  int listpack_entries = 0;
};

class Layout {
 public:
  // REQUIRES: `params` passed Check for `plan`.
  Layout(std::string name, PermutationPlan plan, LayoutParams params);

  // InvalidArgument unless `name` may name a store: 1 to 64 of A-Z a-z 0-9 _ . -
  static Status CheckName(std::string_view name);
  // InvalidArgument unless the bucket and shard bits suit `plan` (docs/format.md).
  static Status Check(const PermutationPlan& plan, const LayoutParams& params);
  // The bucket bits that put about listpack_entries / 2 of `documents` in each bucket, the
  // shard bits for about 512 documents a shard (at least 2^14 shards, one for each slot), and
  // the time bits for about listpack_entries / 2 documents a times set (at least 2^10).
  static int ChooseBucketBits(const PermutationPlan& plan, std::uint64_t documents,
                              int listpack_entries);
  static int ChooseShardBits(std::uint64_t documents);
  static int ChooseTimeBits(std::uint64_t documents, int listpack_entries);

  // The layout record: its key, its fields, and the parameters read back from them
  // (Corruption or NotSupported naming `where`).
  static std::string LayoutKeyOf(std::string_view name);
  static std::vector<std::string> Fields(const PermutationPlan& plan, const LayoutParams& params);
  static Result<LayoutParams> Parse(const std::string& where,
                                    const std::map<std::string, std::string>& fields);

  const std::string& name() const { return name_; }
  const PermutationPlan& plan() const { return plan_; }
  const LayoutParams& params() const { return params_; }

  // ---- Tables ----
  std::uint64_t BucketOf(std::size_t t, Word fp) const;
  std::string BucketKey(std::size_t t, std::uint64_t bucket) const;
  std::string BucketKeyOf(std::size_t t, Word fp) const { return BucketKey(t, BucketOf(t, fp)); }
  // fp's member in table t.
  std::string Member(std::size_t t, Word fp, DocumentId id) const;
  // A member of table t's bucket `bucket`: false if malformed.
  bool DecodeMember(std::size_t t, std::uint64_t bucket, std::string_view member, Word* fp,
                    DocumentId* id) const;
  // ZRANGEBYLEX of the members of table t that share q's prefix in it.
  Command Probe(std::size_t t, Word q) const;
  // ZRANGEBYLEX of table 0's members of fingerprint fp, one per document.
  Command IdsOf(Word fp) const;

  // The SCAN pattern of every key of the store but its layout record (its locks included), and
  // what one of them is: a bucket (table, bucket), a shard (number), or neither.
  std::string KeyPattern() const { return "fps:{" + name_ + ":*"; }
  struct KeyKind {
    enum { kOther, kBucket, kShard, kTimes } kind = kOther;
    std::size_t table = 0;
    std::uint64_t number = 0;  // the bucket's, the shard's or the times'
  };
  KeyKind Classify(std::string_view key) const;

  // ---- Documents ----
  std::uint64_t ShardOf(DocumentId id) const;
  std::string ShardKey(std::uint64_t shard) const;
  std::string ShardKeyOf(DocumentId id) const { return ShardKey(ShardOf(id)); }
  // The sorted sets of the documents' times: member the id field, score the time.
  std::uint64_t times_count() const { return std::uint64_t{1} << params_.time_bits; }
  std::uint64_t TimesOf(DocumentId id) const;
  std::string TimesKey(std::uint64_t times) const;
  std::string TimesKeyOf(DocumentId id) const { return TimesKey(TimesOf(id)); }
  static std::string IdField(DocumentId id);
  // False unless 8 bytes.
  static bool DecodeIdField(std::string_view field, DocumentId* id);
  // `doc`'s record; without a time of its own, it takes `time`.
  std::string EncodeRecord(const NewDocument& doc, DocumentTime time) const;
  // The document of `id` from its record; false if malformed.
  bool DecodeRecord(DocumentId id, std::string_view value, Document* doc) const;
  // HGET of document `id`'s record, and what its reply holds: none if no record, IOError for an
  // error reply, Corruption naming `url` (the store's) for a malformed record.
  Command ReadRecord(DocumentId id) const;
  Result<std::optional<Document>> RecordOf(DocumentId id, const Reply& reply,
                                           const std::string& url) const;

  // ---- Locks ----
  // The lock of a bucket or shard key: the same slot.
  static std::string BucketLockKey(const std::string& bucket_key) { return bucket_key + ":lock"; }
  std::string IdLockKey(DocumentId id) const;

 private:
  int rest_bytes() const { return (plan_.bits() - params_.bucket_bits + 7) / 8; }
  // The permuted fingerprint's bits after the bucket's, as rest_bytes() big-endian bytes.
  std::string Rest(Word permuted) const;
  // A permuted fingerprint moved to the top of 128 bits, and the top rest_bytes() bytes of such.
  Word Aligned(Word permuted) const;
  std::string TopBytes(Word aligned) const;

  const std::string name_;
  const PermutationPlan plan_;
  const LayoutParams params_;
};

}  // namespace fpstore::internal::redis

#endif  // FPSTORE_LIB_REDIS_LAYOUT_H_
