#include "format/member_filter.h"

#include <rocksdb/sst_file_reader.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>

#include "format/blocked_bloom.h"
#include "util/rocks_status.h"

namespace fpstore::internal {

namespace {

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
// read that passes a file by must not miss a removal.
class MemberFilterCollector final : public rocksdb::TablePropertiesCollector {
 public:
  MemberFilterCollector(const GroupLayout& layout, int prefix_bits)
      : layout_(layout), prefix_mask_(PrefixMask(prefix_bits)) {}

  rocksdb::Status AddUserKey(const rocksdb::Slice& key, const rocksdb::Slice& value,
                             rocksdb::EntryType type, rocksdb::SequenceNumber,
                             std::uint64_t) override {
    if (type != rocksdb::kEntryPut && type != rocksdb::kEntryMerge) return rocksdb::Status::OK();
    Fingerprint group = 0;
    if (!layout_.DecodeKey(key.ToStringView(), &group)) {
      // No property (passes everything) keeps probes exact; Verify reports it.
      malformed_ = true;
      return rocksdb::Status::OK();
    }
    // Chunks end between groups (a group's versions kept for snapshots
    // come one after another), so that their ranges do not overlap.
    if (!prefixes_.empty() && group != last_group_ && prefixes_.size() >= kChunkPrefixes) {
      CloseChunk();
    }
    const std::size_t before = prefixes_.size();
    // The members' order is Verify's to check: the filter needs their bits.
    if (!ForEachMemberOf(layout_, value.ToStringView(), type == rocksdb::kEntryMerge,
                         [&](Fingerprint member) {
                           const Fingerprint prefix = (group | member) & prefix_mask_;
                           if (prefixes_.size() == before || prefixes_.back() != prefix) {
                             prefixes_.push_back(prefix);
                           }
                         })) {
      malformed_ = true;
      return rocksdb::Status::OK();
    }
    if (prefixes_.size() == before) return rocksdb::Status::OK();
    if (before == 0) first_group_ = group;
    last_group_ = group;
    return rocksdb::Status::OK();
  }

  // RocksDB may call this twice; the filters are built once.
  rocksdb::Status Finish(rocksdb::UserCollectedProperties* properties) override {
    if (malformed_) return rocksdb::Status::OK();  // no property: may hold anything
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
  const Fingerprint prefix_mask_;
  std::vector<Fingerprint> prefixes_;  // of the open chunk
  Fingerprint first_group_ = 0, last_group_ = 0;
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

Fingerprint PrefixMask(int prefix_bits) { return ~Fingerprint{0} << (64 - prefix_bits); }

void MemberFilter::Build(std::span<const Fingerprint> prefixes, std::string& out) {
  const std::size_t blocks = blocked_bloom::BlocksFor(prefixes.size(), kBitsPerPrefix);
  const std::size_t at = out.size();
  out.resize(at + blocks * kBlockBytes);
  char* const bits = out.data() + at;
  for (Fingerprint prefix : prefixes) {
    const std::uint64_t h = Mix(prefix);
    char* block = bits + kBlockBytes * blocked_bloom::BlockOf(h, blocks);
    blocked_bloom::ForEachProbe(h, [&](unsigned bit) {
      block[bit / 8] = static_cast<char>(block[bit / 8] | (1 << (bit % 8)));
      return true;
    });
  }
}

std::uint64_t MemberFilter::Hash(Fingerprint prefix) { return Mix(prefix); }

const char* MemberFilter::BlockFor(std::string_view bits, std::uint64_t hash) {
  return bits.data() + kBlockBytes * blocked_bloom::BlockOf(hash, bits.size() / kBlockBytes);
}

bool MemberFilter::BlockPasses(const char* block, std::uint64_t hash) {
  return blocked_bloom::ForEachProbe(
      hash, [&](unsigned bit) { return (block[bit / 8] & (1 << (bit % 8))) != 0; });
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

Fingerprint FileMemberFilter::FirstGroup(std::size_t i) const {
  return GetBigEndian64(index_.data() + i * kIndexEntryBytes);
}
Fingerprint FileMemberFilter::LastGroup(std::size_t i) const {
  return GetBigEndian64(index_.data() + i * kIndexEntryBytes + 8);
}
std::size_t FileMemberFilter::FilterEnd(std::size_t i) const {
  return GetBigEndianBytes(index_.data() + i * kIndexEntryBytes + 16, 4);
}

const char* const FileMemberFilter::kUnchecked = "";

bool FileMemberFilter::MayTouch(Fingerprint group, Fingerprint prefix) const {
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

std::vector<Fingerprint> FileMemberFilter::ChunkFirstGroups() const {
  std::vector<Fingerprint> groups(chunks_);
  for (std::size_t i = 0; i < chunks_; ++i) groups[i] = FirstGroup(i);
  return groups;
}

const char* FileMemberFilter::BlockIn(std::size_t chunk, Fingerprint group,
                                      std::uint64_t hash) const {
  if (group > LastGroup(chunk)) return nullptr;
  const std::size_t begin = chunk == 0 ? 0 : FilterEnd(chunk - 1), end = FilterEnd(chunk);
  // A chunk that a quick parse did not check, and is malformed: no answer.
  if (end <= begin || end > filters_.size() || (end - begin) % kBlockBytes != 0) {
    return kUnchecked;
  }
  return MemberFilter::BlockFor(filters_.substr(begin, end - begin), hash);
}

bool FileMayTouch(const rocksdb::TableProperties& file, const GroupLayout& layout,
                  Fingerprint prefix_mask, Fingerprint permuted) {
  const std::string* property = MemberFilterProperty(file);
  if (property == nullptr) return true;
  const std::optional<FileMemberFilter> filter =
      FileMemberFilter::Parse(*property, /*thorough=*/false);
  return !filter || filter->MayTouch(layout.GroupOf(permuted), permuted & prefix_mask);
}

std::shared_ptr<rocksdb::TablePropertiesCollectorFactory> NewMemberFilterCollectorFactory(
    const GroupLayout& layout, int prefix_bits) {
  return std::make_shared<MemberFilterCollectorFactory>(layout, prefix_bits);
}

}  // namespace fpstore::internal
