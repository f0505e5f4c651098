// Reading RocksDB's write-ahead logs (its db/log_format.h): 32 KiB blocks of physical records, each
// a header (masked CRC-32C of what follows the length, 2-byte length, type; the recyclable types
// add a 4-byte log number) and a payload; a write batch too long for its block is cut into first,
// middle and last fragments, and a block's last few bytes, too short for a header, are zero.

#include "faults/rocks_log.h"

#include <boost/crc.hpp>
#include <cstring>
#include <iterator>

#include "util/big_endian.h"

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace fpstore::internal {

namespace {

constexpr std::size_t kBlockBytes = 32768;
constexpr std::size_t kHeaderBytes = 7;
constexpr std::size_t kRecyclableHeaderBytes = 11;
constexpr std::size_t kBatchHeaderBytes = 12;  // sequence (8 bytes) and count (4)

enum RecordType : unsigned char {
  kZero = 0,
  kFull = 1,
  kFirst = 2,
  kMiddle = 3,
  kLast = 4,
  kRecyclableFull = 5,
  kRecyclableLast = 8,
  kSetCompression = 9,
};

std::uint32_t Little32(const char* p) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

std::uint64_t Little64(const char* p) {
  return Little32(p) | (std::uint64_t{Little32(p + 4)} << 32);
}

#if defined(__x86_64__)
// SSE 4.2's CRC-32C instruction: a reader's open reads a busy writer's logs whole.
__attribute__((target("sse4.2"))) std::uint32_t Crc32cSse42(std::string_view bytes) {
  std::uint64_t crc = 0xFFFFFFFFu;
  const char* p = bytes.data();
  std::size_t n = bytes.size();
  for (; n >= 8; p += 8, n -= 8) {
    std::uint64_t word;
    std::memcpy(&word, p, 8);
    crc = _mm_crc32_u64(crc, word);
  }
  auto crc32 = static_cast<std::uint32_t>(crc);
  for (; n > 0; ++p, --n) crc32 = _mm_crc32_u8(crc32, static_cast<unsigned char>(*p));
  return ~crc32;
}
#endif

std::uint32_t Crc32c(std::string_view bytes) {
#if defined(__x86_64__)
  static const bool sse42 = __builtin_cpu_supports("sse4.2");
  if (sse42) return Crc32cSse42(bytes);
#endif
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
  crc.process_bytes(bytes.data(), bytes.size());
  return crc.checksum();
}

std::uint32_t Unmask(std::uint32_t masked) {
  const std::uint32_t rot = masked - 0xa282ead8u;
  return (rot >> 17) | (rot << 15);
}

// A physical record: its type with the recyclable types folded onto the others, and its payload.
struct Physical {
  unsigned char type = kZero;
  std::string_view payload;
  std::size_t bytes = 0;  // header and payload
};

// The physical record at `pos`, or none if there is no intact one there.
std::optional<Physical> ReadPhysical(std::string_view data, std::size_t pos) {
  const std::size_t left_in_block = kBlockBytes - pos % kBlockBytes;
  if (left_in_block < kHeaderBytes || data.size() - pos < kHeaderBytes) return std::nullopt;
  const char* header = data.data() + pos;
  const auto type = static_cast<unsigned char>(header[6]);
  const bool recyclable = type >= kRecyclableFull && type <= kRecyclableLast;
  const std::size_t header_bytes = recyclable ? kRecyclableHeaderBytes : kHeaderBytes;
  const std::size_t length = static_cast<unsigned char>(header[4]) |
                             (static_cast<std::size_t>(static_cast<unsigned char>(header[5])) << 8);
  if (header_bytes + length > left_in_block || header_bytes + length > data.size() - pos) {
    return std::nullopt;
  }
  // Zeros, as a preallocated log holds past its end, are no record and carry no checksum: RocksDB
  // skips the rest of the block.
  if (type == kZero && length == 0) return Physical{kZero, {}, header_bytes};
  // The checksum covers the type, the log number of a recyclable record, and the payload.
  if (Unmask(Little32(header)) != Crc32c(data.substr(pos + 6, header_bytes - 6 + length))) {
    return std::nullopt;
  }
  Physical record;
  record.type = recyclable ? static_cast<unsigned char>(type - (kRecyclableFull - kFull)) : type;
  record.payload = data.substr(pos + header_bytes, length);
  record.bytes = header_bytes + length;
  return record;
}

// Whether an intact record that starts a write batch is at `pos`: where reading resumes after
// damage. The cheap tests come first; most offsets fail them.
bool StartsBatch(std::string_view data, std::size_t pos) {
  if (kBlockBytes - pos % kBlockBytes < kHeaderBytes || data.size() - pos < kHeaderBytes) {
    return false;
  }
  const auto type = static_cast<unsigned char>(data[pos + 6]);
  if (type != kFull && type != kFirst && type != kRecyclableFull && type != kRecyclableFull + 1) {
    return false;
  }
  const std::optional<Physical> record = ReadPhysical(data, pos);
  if (!record) return false;
  return record->type == kFirst || record->payload.size() >= kBatchHeaderBytes;
}

// Whether some 512-byte sector's share of the bytes [begin, end) is all zeros: what a write cut
// short leaves where the sectors it did not get to were (a preallocated or newly grown file reads
// as zeros there).
bool HasZeroSector(std::string_view data, std::size_t begin, std::size_t end) {
  constexpr std::size_t kSectorBytes = 512;
  for (std::size_t pos = begin; pos < end;) {
    const std::size_t stop = std::min(end, (pos / kSectorBytes + 1) * kSectorBytes);
    if (std::all_of(data.begin() + pos, data.begin() + stop, [](char c) { return c == 0; })) {
      return true;
    }
    pos = stop;
  }
  return false;
}

// Whether the unreadable bytes from `begin` to the end of a log, which no intact batch follows, are
// one whole record that fails its checksum: damage, where a crash leaves the log ending inside its
// last record or zeros in it. A crash cuts a record's bytes short, never its header's: each record
// is one write of its header and payload together.
bool WholeButDamaged(std::string_view data, std::size_t begin) {
  const std::size_t left_in_block = kBlockBytes - begin % kBlockBytes;
  const std::size_t there = std::min(left_in_block, data.size() - begin);
  if (there < kHeaderBytes) return false;  // a header cut short
  const char* header = data.data() + begin;
  const auto type = static_cast<unsigned char>(header[6]);
  const bool recyclable = type >= kRecyclableFull && type <= kRecyclableLast;
  const std::size_t header_bytes = recyclable ? kRecyclableHeaderBytes : kHeaderBytes;
  if (there < header_bytes) return false;
  const std::size_t length = static_cast<unsigned char>(header[4]) |
                             (static_cast<std::size_t>(static_cast<unsigned char>(header[5])) << 8);
  // No writer counts more bytes than its block has left: the length is damaged.
  if (header_bytes + length > left_in_block) return true;
  const std::uint32_t expected = Unmask(Little32(header));
  if (header_bytes + length > there) {
    // Cut short, unless the checksum holds over the bytes the log has: a whole record whose
    // length is damaged (the checksum does not cover it).
    return expected == Crc32c(data.substr(begin + 6, there - 6));
  }
  if (type == kZero && length == 0) return false;
  if (expected == Crc32c(data.substr(begin + 6, header_bytes - 6 + length))) return false;
  return !HasZeroSector(data, begin, begin + header_bytes + length);
}

// The batches that the damaged bytes [begin, end) of log `log` read as, unverified: the physical
// records there by the lengths their headers give, whatever their checksums, the first continuing
// `batch` when that holds the intact start of a batch.
std::vector<LogRecord> ReadDamaged(std::string_view data, std::size_t begin, std::size_t end,
                                   std::string batch, std::uint64_t log) {
  std::vector<LogRecord> read;
  const auto finish = [&] {
    if (batch.size() >= kBatchHeaderBytes) {
      read.push_back({log, Little64(batch.data()), batch, /*intact=*/false});
    }
    batch.clear();
  };
  for (std::size_t pos = begin; pos < end;) {
    const std::size_t left_in_block = kBlockBytes - pos % kBlockBytes;
    if (left_in_block < kHeaderBytes) {
      pos += left_in_block;
      continue;
    }
    const std::size_t there = std::min(left_in_block, end - pos);
    if (there < kHeaderBytes) break;
    const char* header = data.data() + pos;
    const auto type = static_cast<unsigned char>(header[6]);
    const bool recyclable = type >= kRecyclableFull && type <= kRecyclableLast;
    const std::size_t header_bytes = recyclable ? kRecyclableHeaderBytes : kHeaderBytes;
    if (there < header_bytes) break;
    const std::size_t length =
        static_cast<unsigned char>(header[4]) |
        (static_cast<std::size_t>(static_cast<unsigned char>(header[5])) << 8);
    if (type == kZero && length == 0) {  // zeros: the rest of the block is empty
      pos += left_in_block;
      continue;
    }
    const auto folded =
        static_cast<unsigned char>(recyclable ? type - (kRecyclableFull - kFull) : type);
    if (folded == kFull || folded == kFirst) finish();
    const std::size_t taken = std::min(length, there - header_bytes);
    batch.append(data.substr(pos + header_bytes, taken));
    if (folded == kFull || folded == kLast || taken < length) finish();
    if (taken < length) break;
    pos += header_bytes + length;
  }
  finish();
  return read;
}

}  // namespace

LogScan ReadLog(std::string_view data, std::uint64_t log, bool keep_all,
                std::vector<LogRecord>& dropped) {
  LogScan scan;
  std::size_t pos = 0;
  std::string batch;
  bool in_batch = false;
  bool keeping = keep_all;
  // Unreadable bytes [begin, end), until an intact batch after them shows they are not a cut-short
  // tail, and the intact start of the batch they cut into.
  std::optional<std::pair<std::size_t, std::size_t>> damage;
  std::string cut_batch;
  const auto keep_damaged = [&] {
    std::vector<LogRecord> read = ReadDamaged(data, damage->first, damage->second, cut_batch, log);
    std::move(read.begin(), read.end(), std::back_inserter(dropped));
  };
  const auto emit = [&](std::string_view bytes) {
    if (bytes.size() < kBatchHeaderBytes) return false;
    if (damage) {  // an intact batch after damage: the damage was not a cut-short tail
      if (!scan.damaged && !keep_all) scan.damaged = *damage;
      keeping = true;
      keep_damaged();
      damage.reset();
    }
    if (keeping) dropped.push_back({log, Little64(bytes.data()), std::string(bytes)});
    return true;
  };
  while (pos < data.size()) {
    const std::size_t left_in_block = kBlockBytes - pos % kBlockBytes;
    if (left_in_block < kHeaderBytes) {
      pos += left_in_block;
      continue;
    }
    std::optional<Physical> record = ReadPhysical(data, pos);
    bool ok = record.has_value();
    if (ok) {
      switch (record->type) {
        case kZero:  // preallocated space: the rest of the block is empty
          pos += left_in_block;
          continue;
        case kFull:
          ok = !in_batch && emit(record->payload);
          break;
        case kFirst:
          ok = !in_batch;
          batch.assign(record->payload);
          in_batch = true;
          break;
        case kMiddle:
          ok = in_batch;
          batch.append(record->payload);
          break;
        case kLast:
          ok = in_batch;
          batch.append(record->payload);
          in_batch = false;
          ok = ok && emit(batch);
          break;
        case kSetCompression:
          break;
        default:
          ok = false;
      }
    }
    if (ok) {
      pos += record->bytes;
      continue;
    }
    // Damage: resume at the next intact start of a batch, if any.
    if (!damage) {
      damage.emplace(pos, pos);
      // The intact start of the batch that the unreadable record continues.
      cut_batch = in_batch && !record ? batch : std::string();
    }
    in_batch = false;
    ++pos;
    while (pos < data.size() && !StartsBatch(data, pos)) ++pos;
    damage->second = pos;
  }
  // Unreadable bytes at the end: a write cut short, unless they are a whole record.
  if (damage && WholeButDamaged(data, damage->first)) {
    if (!scan.damaged && !keep_all) {
      scan.damaged = *damage;
      scan.last_record = true;
    }
    keep_damaged();
  }
  return scan;
}

std::optional<std::uint64_t> BatchSequence(std::string_view batch) {
  if (batch.size() < kBatchHeaderBytes) return std::nullopt;
  return Little64(batch.data());
}

void CollectChanges(std::string_view batch, std::uint32_t family, std::vector<DocumentId>& written,
                    std::vector<DocumentId>& removed) {
  std::string_view in = batch.size() < kBatchHeaderBytes ? "" : batch.substr(kBatchHeaderBytes);
  const auto varint = [&](std::uint32_t& value) {
    value = 0;
    for (int shift = 0; shift <= 28 && !in.empty(); shift += 7) {
      const auto byte = static_cast<unsigned char>(in.front());
      in.remove_prefix(1);
      value |= static_cast<std::uint32_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;
  };
  const auto slice = [&](std::string_view& out) {
    std::uint32_t size = 0;
    if (!varint(size) || size > in.size()) return false;
    out = in.substr(0, size);
    in.remove_prefix(size);
    return true;
  };
  // RocksDB's tags (its db/dbformat.h): each is followed by a family id if it names one, then
  // length-prefixed slices.
  enum : unsigned char {
    kDeletion = 0x0,
    kValue = 0x1,
    kMerge = 0x2,
    kLogData = 0x3,
    kFamilyDeletion = 0x4,
    kFamilyValue = 0x5,
    kFamilyMerge = 0x6,
    kSingleDeletion = 0x7,
    kFamilySingleDeletion = 0x8,
    kNoop = 0xD,
    kFamilyRangeDeletion = 0xE,
    kRangeDeletion = 0xF,
  };
  while (!in.empty()) {
    const auto tag = static_cast<unsigned char>(in.front());
    in.remove_prefix(1);
    std::uint32_t id = 0;
    std::string_view key, value;
    bool read = true;
    switch (tag) {
      case kFamilyValue:
      case kFamilyMerge:
      case kFamilyRangeDeletion:
        read = varint(id) && slice(key) && slice(value);
        break;
      case kValue:
      case kMerge:
      case kRangeDeletion:
        read = slice(key) && slice(value);
        break;
      case kFamilyDeletion:
      case kFamilySingleDeletion:
        read = varint(id) && slice(key);
        break;
      case kDeletion:
      case kSingleDeletion:
      case kLogData:
        read = slice(key);
        break;
      case kNoop:
        continue;
      default:
        read = false;
    }
    if (!read) return;
    if (id != family || key.size() != 8) continue;
    if (tag == kValue || tag == kFamilyValue) written.push_back(GetBigEndian64(key.data()));
    if (tag == kDeletion || tag == kFamilyDeletion || tag == kSingleDeletion ||
        tag == kFamilySingleDeletion) {
      removed.push_back(GetBigEndian64(key.data()));
    }
  }
}

}  // namespace fpstore::internal
