#include "member_filters.h"

#include <algorithm>
#include <cstdint>
#include <optional>

#include "rocks_status.h"

namespace fpstore::internal {

namespace {

// splitmix64's finalizer, of x offset by the golden ratio so that prefix 0
// does not hash to 0.
std::uint64_t Mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

constexpr int kBitsPerPrefix = 10;
constexpr int kProbes = 6;
constexpr std::size_t kBlockBytes = 64;
// A chunk's header: its first and last group, and its filter's bytes.
constexpr std::size_t kChunkHeaderBytes = 8 + 8 + 4;

// The block, from the high half of one hash; the bits in it, from 9-bit
// slices of a second.
std::size_t BlockOf(std::uint64_t h, std::size_t blocks) {
  return static_cast<std::size_t>(((h >> 32) * blocks) >> 32);
}

Fingerprint PrefixMask(int prefix_bits) { return ~Fingerprint{0} << (64 - prefix_bits); }

// The property (docs/format.md): chunks of whole groups in ascending
// order, each its first and last group, its filter's size and the filter;
// empty if the file adds no member. A chunk closes once it holds
// kChunkPrefixes, so a file of any size costs the collector a bounded
// buffer, and a probe tests one chunk's filter a file.
class MemberFilterCollector final : public rocksdb::TablePropertiesCollector {
 public:
  explicit MemberFilterCollector(int prefix_bits)
      : layout_(prefix_bits), prefix_mask_(PrefixMask(prefix_bits)) {}

  rocksdb::Status AddUserKey(const rocksdb::Slice& key, const rocksdb::Slice& value,
                             rocksdb::EntryType type, rocksdb::SequenceNumber,
                             std::uint64_t) override {
    bool ok = true;
    if (type == rocksdb::kEntryPut) {
      ok = DecodeGroupValue(layout_, value.ToStringView(), change_.adds);
    } else if (type == rocksdb::kEntryMerge) {
      ok = DecodeGroupOperand(layout_, value.ToStringView(), change_);
    } else {
      return rocksdb::Status::OK();
    }
    Fingerprint group = 0;
    if (!ok || !layout_.DecodeKey(key.ToStringView(), &group)) {
      // The file is written all the same; a filter that passes everything
      // keeps probes exact, and Verify reports the entry.
      malformed_ = true;
      return rocksdb::Status::OK();
    }
    if (change_.adds.empty()) return rocksdb::Status::OK();
    // Chunks end between groups (a group's versions kept for snapshots
    // come one after another), so that their ranges do not overlap.
    if (!prefixes_.empty() && group != last_group_ && prefixes_.size() >= kChunkPrefixes) {
      CloseChunk();
    }
    if (prefixes_.empty()) first_group_ = group;
    last_group_ = group;
    for (Fingerprint member : change_.adds) {
      const Fingerprint prefix = (group | member) & prefix_mask_;
      if (prefixes_.empty() || prefixes_.back() != prefix) prefixes_.push_back(prefix);
    }
    return rocksdb::Status::OK();
  }

  // RocksDB calls this again for the builder's table properties: the
  // filters are built once.
  rocksdb::Status Finish(rocksdb::UserCollectedProperties* properties) override {
    if (malformed_) return rocksdb::Status::OK();  // no property: may hold anything
    if (!prefixes_.empty()) CloseChunk();
    (*properties)[kMemberFilterProperty] = chunks_;
    return rocksdb::Status::OK();
  }

  rocksdb::UserCollectedProperties GetReadableProperties() const override {
    return {{kMemberFilterProperty, std::to_string(chunks_.size()) + " bytes"}};
  }
  const char* Name() const override { return "fpstore.MemberFilterCollector"; }

 private:
  static constexpr std::size_t kChunkPrefixes = std::size_t{1} << 16;

  void CloseChunk() {
    const std::string bits = MemberFilter::Build(prefixes_);
    const std::size_t at = chunks_.size();
    chunks_.resize(at + kChunkHeaderBytes);
    PutBigEndian64(chunks_.data() + at, first_group_);
    PutBigEndian64(chunks_.data() + at + 8, last_group_);
    PutBigEndianBytes(chunks_.data() + at + 16, bits.size(), 4);
    chunks_ += bits;
    prefixes_.clear();
  }

  const GroupLayout layout_;
  const Fingerprint prefix_mask_;
  GroupChange change_;
  std::vector<Fingerprint> prefixes_;  // of the open chunk
  Fingerprint first_group_ = 0, last_group_ = 0;
  std::string chunks_;  // the closed ones, encoded
  bool malformed_ = false;
};

class MemberFilterCollectorFactory final : public rocksdb::TablePropertiesCollectorFactory {
 public:
  explicit MemberFilterCollectorFactory(int prefix_bits) : prefix_bits_(prefix_bits) {}
  rocksdb::TablePropertiesCollector* CreateTablePropertiesCollector(
      rocksdb::TablePropertiesCollectorFactory::Context) override {
    return new MemberFilterCollector(prefix_bits_);
  }
  const char* Name() const override { return "fpstore.MemberFilterCollectorFactory"; }

 private:
  const int prefix_bits_;
};

// The chunks of a property's value (MemberFilterCollector), or none if the
// value is malformed.
std::optional<std::vector<TableMemberFilter::Chunk>> ParseChunks(std::string_view value) {
  std::vector<TableMemberFilter::Chunk> chunks;
  while (!value.empty()) {
    if (value.size() < kChunkHeaderBytes) return std::nullopt;
    TableMemberFilter::Chunk c{GetBigEndian64(value.data()), GetBigEndian64(value.data() + 8), {}};
    const std::uint64_t bytes = GetBigEndianBytes(value.data() + 16, 4);
    value.remove_prefix(kChunkHeaderBytes);
    if (bytes == 0 || bytes % kBlockBytes != 0 || bytes > value.size() ||
        c.first_group > c.last_group ||
        (!chunks.empty() && chunks.back().last_group >= c.first_group)) {
      return std::nullopt;
    }
    c.bits = value.substr(0, bytes);
    value.remove_prefix(bytes);
    chunks.push_back(c);
  }
  return chunks;
}

class RefreshAfterCompactions final : public rocksdb::EventListener {
 public:
  explicit RefreshAfterCompactions(std::shared_ptr<MemberFilters> filters)
      : filters_(std::move(filters)) {}
  // RocksDB calls this without holding its own locks, so it may read the
  // family's table properties.
  void OnCompactionCompleted(rocksdb::DB*, const rocksdb::CompactionJobInfo& info) override {
    filters_->RefreshFamily(info.cf_id);
  }

 private:
  const std::shared_ptr<MemberFilters> filters_;
};

}  // namespace

std::string MemberFilter::Build(std::span<const Fingerprint> prefixes) {
  const std::size_t blocks = std::max<std::size_t>(
      1, (prefixes.size() * kBitsPerPrefix + 8 * kBlockBytes - 1) / (8 * kBlockBytes));
  std::string bits(blocks * kBlockBytes, '\0');
  for (Fingerprint prefix : prefixes) {
    const std::uint64_t h = Mix(prefix);
    char* block = bits.data() + kBlockBytes * BlockOf(h, blocks);
    const std::uint64_t h2 = Mix(h);
    for (int i = 0; i < kProbes; ++i) {
      const unsigned bit = (h2 >> (9 * i)) & 511;
      block[bit / 8] = static_cast<char>(block[bit / 8] | (1 << (bit % 8)));
    }
  }
  return bits;
}

bool MemberFilter::MayContain(std::string_view bits, Fingerprint prefix) {
  const std::uint64_t h = Mix(prefix);
  const char* block = bits.data() + kBlockBytes * BlockOf(h, bits.size() / kBlockBytes);
  const std::uint64_t h2 = Mix(h);
  for (int i = 0; i < kProbes; ++i) {
    const unsigned bit = (h2 >> (9 * i)) & 511;
    if ((block[bit / 8] & (1 << (bit % 8))) == 0) return false;
  }
  return true;
}

std::shared_ptr<rocksdb::TablePropertiesCollectorFactory> NewMemberFilterCollectorFactory(
    int prefix_bits) {
  return std::make_shared<MemberFilterCollectorFactory>(prefix_bits);
}

CacheCharge::CacheCharge(std::shared_ptr<rocksdb::Cache> cache, std::size_t bytes)
    : cache_(std::move(cache)) {
  if (cache_ == nullptr || bytes == 0) return;
  // A key of its own: this object's address, unique while it lives.
  const std::string key = "fpstore.member_filters." + std::to_string(reinterpret_cast<std::uintptr_t>(this));
  const rocksdb::Status s = cache_->Insert(
      key, nullptr, bytes, [](const rocksdb::Slice&, void*) {}, &handle_,
      rocksdb::Cache::Priority::HIGH);
  if (!s.ok()) handle_ = nullptr;  // a full strict cache: left uncharged
}

CacheCharge::~CacheCharge() {
  if (handle_ != nullptr) cache_->Release(handle_, /*erase_if_last_ref=*/true);
}

Result<std::shared_ptr<const TableMemberFilter>> TableMemberFilter::Read(
    rocksdb::DB& db, rocksdb::ColumnFamilyHandle* family, int prefix_bits,
    std::shared_ptr<rocksdb::Cache> cache) {
  auto filter = std::make_shared<TableMemberFilter>();
  filter->layout_ = GroupLayout(prefix_bits);
  filter->prefix_mask_ = PrefixMask(prefix_bits);
  if (Status s = FromRocks(db.GetPropertiesOfAllTables(family, &filter->properties_),
                           "reading the member filters of " + family->GetName());
      !s.ok()) {
    return s;
  }
  for (const auto& [file, properties] : filter->properties_) {
    const auto& user = properties->user_collected_properties;
    const auto found = user.find(kMemberFilterProperty);
    std::optional<std::vector<Chunk>> chunks;
    if (found != user.end()) chunks = ParseChunks(found->second);
    if (!chunks) {
      filter->files_.push_back({0, ~Fingerprint{0}, {}, /*unknown=*/true});
      continue;
    }
    if (chunks->empty()) continue;  // adds no member
    const Fingerprint first = chunks->front().first_group, last = chunks->back().last_group;
    filter->files_.push_back({first, last, *std::move(chunks), false});
  }
  std::size_t bytes = 0;
  for (const File& f : filter->files_) {
    for (const Chunk& c : f.chunks) bytes += c.bits.size();
  }
  filter->charge_ = std::make_unique<CacheCharge>(std::move(cache), bytes);
  return std::shared_ptr<const TableMemberFilter>(std::move(filter));
}

std::shared_ptr<const TableMemberFilter> TableMemberFilter::PassingAll() {
  auto filter = std::make_shared<TableMemberFilter>();
  filter->files_.push_back({0, ~Fingerprint{0}, {}, /*unknown=*/true});
  return filter;
}

bool TableMemberFilter::MayContain(Fingerprint permuted) const {
  const Fingerprint group = layout_.GroupOf(permuted);
  const Fingerprint prefix = permuted & prefix_mask_;
  for (const File& f : files_) {
    if (group < f.first_group || group > f.last_group) continue;
    if (f.unknown) return true;
    // The last chunk that begins at or before the group.
    auto c = std::upper_bound(f.chunks.begin(), f.chunks.end(), group,
                              [](Fingerprint g, const Chunk& chunk) { return g < chunk.first_group; });
    if (c == f.chunks.begin()) continue;
    --c;
    if (group <= c->last_group && MemberFilter::MayContain(c->bits, prefix)) return true;
  }
  return false;
}

MemberFilters::MemberFilters(const PermutationPlan& plan, std::vector<bool> packed,
                             std::shared_ptr<rocksdb::Cache> cache)
    : plan_(plan), packed_(std::move(packed)), cache_(std::move(cache)) {}

void MemberFilters::Attach(rocksdb::DB* db, std::span<rocksdb::ColumnFamilyHandle* const> tables) {
  std::lock_guard lock(mu_);
  db_ = db;
  tables_.assign(tables.begin(), tables.end());
  RefreshLocked(std::nullopt);
}

void MemberFilters::Detach() {
  std::lock_guard lock(mu_);
  db_ = nullptr;
  tables_.clear();
}

void MemberFilters::Refresh(std::span<rocksdb::ColumnFamilyHandle* const> families) {
  std::vector<std::uint32_t> ids;
  for (rocksdb::ColumnFamilyHandle* f : families) ids.push_back(f->GetID());
  std::lock_guard lock(mu_);
  RefreshLocked(std::move(ids));
}

void MemberFilters::RefreshFamily(std::uint32_t family_id) {
  std::lock_guard lock(mu_);
  RefreshLocked(std::vector<std::uint32_t>{family_id});
}

void MemberFilters::RefreshLocked(std::optional<std::vector<std::uint32_t>> ids) {
  if (db_ == nullptr) return;
  const View old = current_.load();
  auto next = old ? std::make_shared<std::vector<std::shared_ptr<const TableMemberFilter>>>(*old)
                  : std::make_shared<std::vector<std::shared_ptr<const TableMemberFilter>>>(
                        tables_.size());
  bool changed = false;
  for (std::size_t t = 0; t < tables_.size(); ++t) {
    if (!packed_[t]) continue;
    if (ids && std::find(ids->begin(), ids->end(), tables_[t]->GetID()) == ids->end()) continue;
    Result<std::shared_ptr<const TableMemberFilter>> read =
        TableMemberFilter::Read(*db_, tables_[t], plan_.table(t).prefix_bits(), cache_);
    // Files may have come that the old filters do not know: until a
    // refresh succeeds, every probe of the table reads its group.
    (*next)[t] = read.ok() ? *std::move(read) : TableMemberFilter::PassingAll();
    changed = true;
  }
  if (changed || !old) current_.store(std::move(next));
}

std::shared_ptr<rocksdb::EventListener> MemberFilters::MakeListener(
    std::shared_ptr<MemberFilters> filters) {
  return std::make_shared<RefreshAfterCompactions>(std::move(filters));
}

}  // namespace fpstore::internal
