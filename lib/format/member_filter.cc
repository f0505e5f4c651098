#include "format/member_filter.h"

#include <rocksdb/sst_file_reader.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>

#include "plan/table_entry.h"
#include "util/rocks_status.h"

namespace fpstore::internal {

namespace {

// A blocked Bloom filter's math: all of a key's probes fall in one 512-bit block, one cache line.
// The files' filters hold it (docs/format.md), so it must not change.
namespace blocked_bloom {

inline constexpr std::size_t kBlockBytes = 64;
inline constexpr int kProbes = 6;

// Blocks for `keys` at `bits_per_key`, at least one.
inline std::size_t BlocksFor(std::size_t keys, std::size_t bits_per_key) {
  return std::max<std::size_t>(1, (keys * bits_per_key + 8 * kBlockBytes - 1) / (8 * kBlockBytes));
}

// The key's block, from the hash's high half.
inline std::size_t BlockOf(std::uint64_t hash, std::size_t blocks) {
  return static_cast<std::size_t>(((hash >> 32) * blocks) >> 32);
}

// The odd constants whose products with a key's hash give its probes: the
// second set marks a key in the same block as a member of a second set (the
// crowded prefixes), at no further cache miss.
inline constexpr std::uint64_t kKeyProbes = 0x9e3779b97f4a7c15ULL;
inline constexpr std::uint64_t kSecondSetProbes = 0xc2b2ae3d27d4eb4fULL;

// Calls probe(bit) for the key's bits in its block, 0 to 511, until it
// returns false; false if it did. The bits are 9-bit slices of the hash times
// an odd constant (`set`), cheaper than a second finalizer.
template <typename Probe>
bool ForEachProbe(std::uint64_t hash, Probe&& probe, std::uint64_t set = kKeyProbes) {
  const std::uint64_t slices = (hash * set) >> 10;
  for (int i = 0; i < kProbes; ++i) {
    if (!probe(static_cast<unsigned>((slices >> (9 * i)) & 511))) return false;
  }
  return true;
}

}  // namespace blocked_bloom

// splitmix64's finalizer of x plus the golden ratio, so that 0 does not hash to 0.
std::uint64_t Mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

constexpr int kBitsPerPrefix = 10;
using blocked_bloom::kBlockBytes;
// The property: a chunk count (4 bytes); per chunk its first and last group
// (8 bytes each) and where its filter ends (4); then the filters end to end.
constexpr std::size_t kCountBytes = 4;
constexpr std::size_t kIndexEntryBytes = 8 + 8 + 4;

// Builds the property from the file's entries in key order; closing chunks at
// kChunkPrefixes bounds the buffer. Removed members count like added ones: a
// read that passes a file by must not miss a removal. A prefix is crowded when
// the file's entries of its group, all versions and operands together, hold
// more than one distinct member with it.
class MemberFilterCollector final : public rocksdb::TablePropertiesCollector {
 public:
  MemberFilterCollector(const GroupLayout& layout, int prefix_bits)
      : layout_(layout), prefix_mask_(PrefixMask(prefix_bits)) {}

  rocksdb::Status AddUserKey(const rocksdb::Slice& key, const rocksdb::Slice& value,
                             rocksdb::EntryType type, rocksdb::SequenceNumber,
                             std::uint64_t) override {
    if (type != rocksdb::kEntryPut && type != rocksdb::kEntryMerge) return rocksdb::Status::OK();
    Word group_word = 0;
    if (!layout_.DecodeKey(key.ToStringView(), &group_word)) {
      // No property (passes everything) keeps probes exact; Verify reports it.
      malformed_ = true;
      return rocksdb::Status::OK();
    }
    // A group's versions kept for snapshots come one after another.
    const Head group = layout_.HeadOf(group_word);
    if (group != group_) AddGroup();
    group_ = group;
    // The members' order is Verify's to check: the filter needs their bits.
    if (!ForEachMemberOf(layout_, value.ToStringView(), type == rocksdb::kEntryMerge,
                         [&](Word member) { members_.push_back(member); })) {
      malformed_ = true;
    }
    return rocksdb::Status::OK();
  }

  // RocksDB may call this twice; the filters are built once.
  rocksdb::Status Finish(rocksdb::UserCollectedProperties* properties) override {
    if (malformed_) return rocksdb::Status::OK();  // no property: may hold anything
    AddGroup();
    if (!prefixes_.empty()) CloseChunk();
    std::string value(kCountBytes, '\0');
    PutBigEndianBytes(value.data(), index_.size() / kIndexEntryBytes, kCountBytes);
    value += index_;
    value += filters_;
    (*properties)[kMemberFilterProperty] = std::move(value);
    return rocksdb::Status::OK();
  }

  rocksdb::UserCollectedProperties GetReadableProperties() const override {
    return {{kMemberFilterProperty, std::to_string(index_.size() / kIndexEntryBytes) + " chunks, " +
                                        std::to_string(filters_.size()) + " bytes"}};
  }
  const char* Name() const override { return "fpstore.MemberFilterCollector"; }

 private:
  static constexpr std::size_t kChunkPrefixes = std::size_t{1} << 16;

  // Adds the prefixes of group_'s members gathered so far. Chunks end between groups, so that
  // their ranges do not overlap.
  void AddGroup() {
    if (members_.empty()) return;
    if (prefixes_.size() >= kChunkPrefixes) CloseChunk();
    // One entry's members are ascending; versions and operands of a group together may not be.
    if (!std::is_sorted(members_.begin(), members_.end())) {
      std::sort(members_.begin(), members_.end());
    }
    if (prefixes_.empty()) first_group_ = group_;
    last_group_ = group_;
    const std::size_t before = prefixes_.size();
    for (std::size_t i = 0; i < members_.size(); ++i) {
      if (i > 0 && members_[i] == members_[i - 1]) continue;
      // A 128-bit prefix longer than the head is filtered by the head's: distinct members that
      // share it count as crowded, which only costs a read.
      const Head prefix = (group_ | layout_.HeadOf(members_[i])) & prefix_mask_;
      if (prefixes_.size() > before && prefixes_.back().prefix == prefix) {
        prefixes_.back().crowded = true;
      } else {
        prefixes_.push_back({prefix, false});
      }
    }
    members_.clear();
  }

  void CloseChunk() {
    MemberFilter::Build(prefixes_, filters_);
    const std::size_t at = index_.size();
    index_.resize(at + kIndexEntryBytes);
    PutBigEndian64(index_.data() + at, first_group_);
    PutBigEndian64(index_.data() + at + 8, last_group_);
    PutBigEndianBytes(index_.data() + at + 16, filters_.size(), 4);
    prefixes_.clear();
  }

  const GroupLayout layout_;
  const Head prefix_mask_;
  Head group_ = 0;                              // of members_
  std::vector<Word> members_;                   // the member bits of group_'s entries so far
  std::vector<MemberFilter::Prefix> prefixes_;  // of the open chunk
  Head first_group_ = 0, last_group_ = 0;
  std::string index_, filters_;  // of the closed chunks
  bool malformed_ = false;
};

class MemberFilterCollectorFactory final : public rocksdb::TablePropertiesCollectorFactory {
 public:
  MemberFilterCollectorFactory(const GroupLayout& layout, int prefix_bits)
      : layout_(layout), prefix_bits_(prefix_bits) {}
  rocksdb::TablePropertiesCollector* CreateTablePropertiesCollector(
      rocksdb::TablePropertiesCollectorFactory::Context) override {
    return new MemberFilterCollector(layout_, prefix_bits_);
  }
  const char* Name() const override { return "fpstore.MemberFilterCollectorFactory"; }

 private:
  const GroupLayout layout_;
  const int prefix_bits_;
};

}  // namespace

const std::string* MemberFilterProperty(const rocksdb::TableProperties& file) {
  const auto found = file.user_collected_properties.find(kMemberFilterProperty);
  return found != file.user_collected_properties.end() ? &found->second : nullptr;
}

Head PrefixMask(int prefix_bits) {
  return prefix_bits >= 64 ? ~Head{0} : ~Head{0} << (64 - prefix_bits);
}

void MemberFilter::Build(std::span<const Prefix> prefixes, std::string& out) {
  // A crowded prefix sets twice the bits: sized for them, the filter passes as few falsely.
  std::size_t keys = prefixes.size();
  for (const Prefix& p : prefixes) keys += p.crowded;
  const std::size_t blocks = blocked_bloom::BlocksFor(keys, kBitsPerPrefix);
  const std::size_t at = out.size();
  out.resize(at + blocks * kBlockBytes);
  char* const bits = out.data() + at;
  for (const Prefix& p : prefixes) {
    const std::uint64_t h = Mix(p.prefix);
    char* block = bits + kBlockBytes * blocked_bloom::BlockOf(h, blocks);
    auto set = [&](unsigned bit) {
      block[bit / 8] = static_cast<char>(block[bit / 8] | (1 << (bit % 8)));
      return true;
    };
    blocked_bloom::ForEachProbe(h, set);
    if (p.crowded) blocked_bloom::ForEachProbe(h, set, blocked_bloom::kSecondSetProbes);
  }
}

std::uint64_t MemberFilter::Hash(Head prefix) { return Mix(prefix); }

const char* MemberFilter::BlockFor(std::string_view bits, std::uint64_t hash) {
  return bits.data() + kBlockBytes * blocked_bloom::BlockOf(hash, bits.size() / kBlockBytes);
}

bool MemberFilter::BlockPasses(const char* block, std::uint64_t hash) {
  return blocked_bloom::ForEachProbe(
      hash, [&](unsigned bit) { return (block[bit / 8] & (1 << (bit % 8))) != 0; });
}

bool MemberFilter::BlockSaysCrowded(const char* block, std::uint64_t hash) {
  return blocked_bloom::ForEachProbe(
      hash, [&](unsigned bit) { return (block[bit / 8] & (1 << (bit % 8))) != 0; },
      blocked_bloom::kSecondSetProbes);
}

std::optional<FileMemberFilter> FileMemberFilter::Parse(std::string_view value, bool thorough) {
  if (value.size() < kCountBytes) return std::nullopt;
  const std::size_t chunks = GetBigEndianBytes(value.data(), kCountBytes);
  value.remove_prefix(kCountBytes);
  if (value.size() / kIndexEntryBytes < chunks) return std::nullopt;
  const FileMemberFilter f(value.substr(0, chunks * kIndexEntryBytes),
                           value.substr(chunks * kIndexEntryBytes), chunks);
  if ((chunks > 0 ? f.FilterEnd(chunks - 1) : 0) != f.filters_.size()) return std::nullopt;
  for (std::size_t i = 0; thorough && i < chunks; ++i) {
    const std::size_t begin = i == 0 ? 0 : f.FilterEnd(i - 1);
    if (f.FilterEnd(i) <= begin || (f.FilterEnd(i) - begin) % kBlockBytes != 0 ||
        f.FirstGroup(i) > f.LastGroup(i) || (i > 0 && f.LastGroup(i - 1) >= f.FirstGroup(i))) {
      return std::nullopt;
    }
  }
  return f;
}

Head FileMemberFilter::FirstGroup(std::size_t i) const {
  return GetBigEndian64(index_.data() + i * kIndexEntryBytes);
}
Head FileMemberFilter::LastGroup(std::size_t i) const {
  return GetBigEndian64(index_.data() + i * kIndexEntryBytes + 8);
}
std::size_t FileMemberFilter::FilterEnd(std::size_t i) const {
  return GetBigEndianBytes(index_.data() + i * kIndexEntryBytes + 16, 4);
}

const char* const FileMemberFilter::kUnchecked = "";

bool FileMemberFilter::MayTouch(Head group, Head prefix) const {
  // The last chunk that begins at or before the group.
  std::size_t lo = 0, hi = chunks_;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (FirstGroup(mid) <= group) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo == 0) return false;
  const std::uint64_t hash = MemberFilter::Hash(prefix);
  const char* block = BlockIn(lo - 1, group, hash);
  if (block == nullptr) return false;
  return block == kUnchecked || MemberFilter::BlockPasses(block, hash);
}

std::vector<Head> FileMemberFilter::ChunkFirstGroups() const {
  std::vector<Head> groups(chunks_);
  for (std::size_t i = 0; i < chunks_; ++i) groups[i] = FirstGroup(i);
  return groups;
}

const char* FileMemberFilter::BlockIn(std::size_t chunk, Head group, std::uint64_t hash) const {
  if (group > LastGroup(chunk)) return nullptr;
  const std::size_t begin = chunk == 0 ? 0 : FilterEnd(chunk - 1), end = FilterEnd(chunk);
  // A chunk that a quick parse did not check, and is malformed: no answer.
  if (end <= begin || end > filters_.size() || (end - begin) % kBlockBytes != 0) {
    return kUnchecked;
  }
  return MemberFilter::BlockFor(filters_.substr(begin, end - begin), hash);
}

bool FileMayTouch(const rocksdb::TableProperties& file, const GroupLayout& layout, Head prefix_mask,
                  Word permuted) {
  const std::string* property = MemberFilterProperty(file);
  if (property == nullptr) return true;
  const std::optional<FileMemberFilter> filter =
      FileMemberFilter::Parse(*property, /*thorough=*/false);
  const Head head = layout.HeadOf(permuted);
  return !filter || filter->MayTouch(layout.GroupHead(head), head & prefix_mask);
}

std::shared_ptr<rocksdb::TablePropertiesCollectorFactory> NewMemberFilterCollectorFactory(
    const GroupLayout& layout, int prefix_bits) {
  return std::make_shared<MemberFilterCollectorFactory>(layout, prefix_bits);
}

}  // namespace fpstore::internal
