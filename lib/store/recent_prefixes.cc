#include "store/recent_prefixes.h"

#include <algorithm>
#include <new>

#include "format/blocked_bloom.h"
#include "util/zeroed_mapping.h"

namespace fpstore::internal {

namespace {

// A blocked Bloom filter (format/blocked_bloom.h).
constexpr std::uint64_t kBitsPerKey = 12;
constexpr std::uint64_t kFirstSegmentFingerprints = 8192;

std::uint64_t Mix(std::uint64_t x) {
  x ^= x >> 31;
  x *= 0x7fb5d329728ea185ULL;
  x ^= x >> 27;
  x *= 0x81dadef4bc2dd44dULL;
  x ^= x >> 33;
  return x;
}

}  // namespace

// Cache-line blocks in a mapping of their own; each key sets bits in one block, chosen by hash.
struct RecentPrefixes::Segment {
  explicit Segment(std::uint64_t keys)
      : blocks(blocked_bloom::BlocksFor(keys, kBitsPerKey)),
        memory(blocks * blocked_bloom::kBlockBytes),
        words(static_cast<std::atomic<std::uint64_t>*>(memory.data())) {
    for (std::uint64_t i = 0; i < blocks * 8; ++i) new (&words[i]) std::atomic<std::uint64_t>(0);
  }

  // The block's first word.
  std::atomic<std::uint64_t>* Block(std::uint64_t hash) const {
    return &words[blocked_bloom::BlockOf(hash, blocks) * 8];
  }
  // One writer at a time: a plain load and store per probe, since atomic read-modify-writes would
  // cost more than the cache miss.
  void Add(std::uint64_t hash) {
    std::atomic<std::uint64_t>* block = Block(hash);
    blocked_bloom::ForEachProbe(hash, [&](unsigned bit) {
      std::atomic<std::uint64_t>& word = block[bit / 64];
      word.store(word.load(std::memory_order_relaxed) | std::uint64_t{1} << (bit % 64),
                 std::memory_order_relaxed);
      return true;
    });
  }
  bool MayHold(std::uint64_t hash) const {
    const std::atomic<std::uint64_t>* block = Block(hash);
    return blocked_bloom::ForEachProbe(hash, [&](unsigned bit) {
      return (block[bit / 64].load(std::memory_order_relaxed) >> (bit % 64) & 1) != 0;
    });
  }

  const std::uint64_t blocks;
  const ZeroedMapping memory;
  std::atomic<std::uint64_t>* const words;
};

namespace {

// Segments for two sides of the seal that each reach `limit`.
std::size_t MaxSegments(std::uint64_t limit) {
  std::size_t side = 1;
  for (std::uint64_t held = kFirstSegmentFingerprints; held < limit && side < 24; ++side) {
    held += kFirstSegmentFingerprints << side;
  }
  return 2 * side;
}

}  // namespace

RecentPrefixes::RecentPrefixes(const PermutationPlan& plan, std::uint64_t limit)
    : plan_(plan),
      tables_(std::min(plan.table_count(), kMaxLoneBitTables)),
      limit_(limit),
      max_segments_(MaxSegments(limit)) {
  for (std::size_t t = 0; t < tables_; ++t) salts_[t] = Mix(t + 0x9e3779b97f4a7c15ULL);
}

std::uint64_t RecentPrefixes::KeyHash(std::size_t t, Fingerprint prefix) const {
  return Mix(prefix ^ salts_[t]);
}

RecentPrefixes::~RecentPrefixes() { Clear(); }

void RecentPrefixes::Clear() {
  Seal();
  DropSealed();
}

void RecentPrefixes::Seal() {
  // The sealed side is full before this side stops being: a reader never sees neither.
  if (full_.load(std::memory_order_relaxed)) sealed_full_.store(true, std::memory_order_release);
  full_.store(false, std::memory_order_release);
  sealed_.fetch_add(added_.exchange(0, std::memory_order_relaxed), std::memory_order_relaxed);
  first_unsealed_ = segment_count_.load(std::memory_order_relaxed);
  room_ = 0;
}

void RecentPrefixes::DropSealed() {
  const std::size_t n = segment_count_.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < first_unsealed_; ++i) delete segments_[i].exchange(nullptr);
  for (std::size_t i = first_unsealed_; i < n; ++i) {
    segments_[i - first_unsealed_].store(segments_[i].exchange(nullptr));
  }
  segment_count_.store(n - first_unsealed_);
  first_unsealed_ = 0;
  sealed_ = 0;
  sealed_full_ = false;
}

RecentPrefixes::Segment& RecentPrefixes::Reserve() {
  if (room_ == 0) {
    const std::size_t n = segment_count_.load(std::memory_order_relaxed);
    const std::uint64_t fingerprints = kFirstSegmentFingerprints << (n - first_unsealed_);
    segments_[n].store(new Segment(fingerprints * tables_), std::memory_order_release);
    segment_count_.store(n + 1, std::memory_order_release);
    room_ = fingerprints;
  }
  --room_;
  added_.fetch_add(1, std::memory_order_relaxed);
  return *segments_[segment_count_.load(std::memory_order_relaxed) - 1].load(
      std::memory_order_relaxed);
}

bool RecentPrefixes::HasRoomFor(std::uint64_t fingerprints) const {
  std::uint64_t room = room_;
  for (std::size_t n = segment_count_.load(std::memory_order_relaxed); room < fingerprints; ++n) {
    if (n == max_segments_) return false;
    room += kFirstSegmentFingerprints << (n - first_unsealed_);
  }
  return true;
}

void RecentPrefixes::Add(std::span<const Fingerprint> fingerprints) {
  if (full_.load(std::memory_order_relaxed) ||
      added_.load(std::memory_order_relaxed) + fingerprints.size() > limit_ ||
      !HasRoomFor(fingerprints.size())) {
    // Before the tables hold them, like the prefixes it stands for.
    full_.store(true, std::memory_order_release);
    added_.fetch_add(fingerprints.size(), std::memory_order_relaxed);
    return;
  }
  // Each fingerprint's blocks are prefetched while the previous one's bits are set: every block is
  // a cache miss.
  std::array<std::uint64_t, kMaxLoneBitTables> pending{};
  Segment* pending_segment = nullptr;
  for (Fingerprint fp : fingerprints) {
    Segment& segment = Reserve();
    std::array<std::uint64_t, kMaxLoneBitTables> hashes;
    for (std::size_t t = 0; t < tables_; ++t) {
      const TablePermutation& perm = plan_.table(t);
      hashes[t] = KeyHash(t, perm.Apply(fp) & perm.prefix_mask());
      __builtin_prefetch(segment.Block(hashes[t]), 1);
    }
    if (pending_segment != nullptr) {
      for (std::size_t t = 0; t < tables_; ++t) pending_segment->Add(pending[t]);
    }
    pending = hashes;
    pending_segment = &segment;
  }
  if (pending_segment != nullptr) {
    for (std::size_t t = 0; t < tables_; ++t) pending_segment->Add(pending[t]);
  }
}

bool RecentPrefixes::MayHold(std::size_t t, Fingerprint prefix) const {
  if (t >= tables_ || full()) return true;
  const std::uint64_t hash = KeyHash(t, prefix);
  const std::size_t n = segment_count_.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < n; ++i) {
    if (segments_[i].load(std::memory_order_acquire)->MayHold(hash)) return true;
  }
  return false;
}

}  // namespace fpstore::internal
