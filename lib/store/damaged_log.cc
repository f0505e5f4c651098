// Reading RocksDB's write-ahead logs (its db/log_format.h): 32 KiB blocks of physical records, each
// a header (masked CRC-32C of what follows the length, 2-byte length, type; the recyclable types
// add a 4-byte log number) and a payload; a write batch too long for its block is cut into first,
// middle and last fragments, and a block's last few bytes, too short for a header, are zero.

#include "store/damaged_log.h"

#include <rocksdb/wal_filter.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <boost/crc.hpp>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <system_error>
#include <unordered_set>
#include <utility>

#include "util/big_endian.h"
#include "util/record_file.h"

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace fpstore::internal {

namespace {

namespace fs = std::filesystem;

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

// Reads one log. `damaged` is set to the bytes [begin, end) of its first damage that intact
// records follow, if any; the write batches after it, and all of them once `keep_all`, are added to
// `dropped`.
void ReadLog(std::string_view data, std::uint64_t log, bool keep_all,
             std::optional<std::pair<std::uint64_t, std::uint64_t>>& damaged,
             std::vector<LogRecord>& dropped) {
  std::size_t pos = 0;
  std::string batch;
  bool in_batch = false;
  bool keeping = keep_all;
  // Unreadable bytes [begin, end), until an intact batch after them shows they are not a cut-short
  // tail.
  std::optional<std::pair<std::size_t, std::size_t>> damage;
  const auto emit = [&](std::string_view bytes) {
    if (bytes.size() < kBatchHeaderBytes) return false;
    if (damage) {  // an intact batch after damage: the damage was not a cut-short tail
      if (!damaged && !keep_all) damaged = *damage;
      keeping = true;
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
    if (!damage) damage.emplace(pos, pos);
    in_batch = false;
    ++pos;
    while (pos < data.size() && !StartsBatch(data, pos)) ++pos;
    damage->second = pos;
  }
}

}  // namespace

std::optional<std::uint64_t> LogNumberOf(std::string_view file_name) {
  std::uint64_t number = 0;
  const char* const last = file_name.data() + file_name.size();
  const auto [end, parsed] = std::from_chars(file_name.data(), last, number);
  if (parsed != std::errc() || end == file_name.data() ||
      std::string_view(end, last - end) != ".log") {
    return std::nullopt;
  }
  return number;
}

Result<std::optional<LogDamage>> FindLogDamage(const std::string& dir) {
  std::vector<std::pair<std::uint64_t, std::string>> logs;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    const std::optional<std::uint64_t> number = LogNumberOf(entry.path().filename().string());
    if (number) logs.emplace_back(*number, entry.path().string());
  }
  if (ec) return Status::IOError(dir + ": " + ec.message());
  std::sort(logs.begin(), logs.end());

  std::optional<LogDamage> damage;
  for (const auto& [number, path] : logs) {
    const MappedFile file(path);
    if (const Status& s = file.status(); !s.ok()) {
      // Deleted since the listing by a writer (a reader beside it): it held nothing to replay.
      std::error_code exists_ec;
      if (!fs::exists(path, exists_ec) && !exists_ec) continue;
      return s;
    }
    std::optional<std::pair<std::uint64_t, std::uint64_t>> damaged;
    std::vector<LogRecord> dropped;
    ReadLog(file.bytes(), number, damage.has_value(), damaged, dropped);
    if (damaged && !damage) damage = LogDamage{path, damaged->first, damaged->second, {}, {}};
    if (damage) {
      damage->logs.push_back(path);
      std::move(dropped.begin(), dropped.end(), std::back_inserter(damage->dropped));
    }
  }
  return damage;
}

std::unique_ptr<rocksdb::WalFilter> NewReplayRecorder(ReplayedRecords& replayed) {
  class Recorder final : public rocksdb::WalFilter {
   public:
    explicit Recorder(ReplayedRecords& replayed) : replayed_(replayed) {}
    WalProcessingOption LogRecordFound(unsigned long long log_number, const std::string&,
                                       const rocksdb::WriteBatch& batch, rocksdb::WriteBatch*,
                                       bool*) override {
      const std::string& rep = batch.Data();
      if (rep.size() >= kBatchHeaderBytes) replayed_.emplace(log_number, Little64(rep.data()));
      return WalProcessingOption::kContinueProcessing;
    }
    const char* Name() const override { return "fpstore.ReplayRecorder"; }

   private:
    ReplayedRecords& replayed_;
  };
  return std::make_unique<Recorder>(replayed);
}

DroppedWrites DroppedAfter(const LogDamage& damage, const ReplayedRecords& replayed,
                           std::uint64_t latest, std::uint32_t documents_family) {
  // Collects the documents family's puts and deletes; every other change is part of one of them.
  class Collector final : public rocksdb::WriteBatch::Handler {
   public:
    Collector(std::uint32_t family, DroppedWrites& out) : family_(family), out_(out) {}
    rocksdb::Status PutCF(std::uint32_t family, const rocksdb::Slice& key,
                          const rocksdb::Slice&) override {
      Note(family, key, out_.written);
      return rocksdb::Status::OK();
    }
    rocksdb::Status DeleteCF(std::uint32_t family, const rocksdb::Slice& key) override {
      Note(family, key, out_.removed);
      return rocksdb::Status::OK();
    }
    rocksdb::Status SingleDeleteCF(std::uint32_t family, const rocksdb::Slice& key) override {
      Note(family, key, out_.removed);
      return rocksdb::Status::OK();
    }
    rocksdb::Status DeleteRangeCF(std::uint32_t, const rocksdb::Slice&,
                                  const rocksdb::Slice&) override {
      return rocksdb::Status::OK();
    }
    rocksdb::Status MergeCF(std::uint32_t, const rocksdb::Slice&, const rocksdb::Slice&) override {
      return rocksdb::Status::OK();
    }

   private:
    void Note(std::uint32_t family, const rocksdb::Slice& key, std::vector<DocumentId>& ids) {
      if (family == family_ && key.size() == 8) ids.push_back(GetBigEndian64(key.data()));
    }
    std::uint32_t family_;
    DroppedWrites& out_;
  };

  DroppedWrites dropped;
  Collector collector(documents_family, dropped);
  const std::optional<std::uint64_t> first_log =
      replayed.empty() ? std::nullopt : std::optional<std::uint64_t>(replayed.begin()->first);
  for (const LogRecord& record : damage.dropped) {
    if (first_log) {
      if (record.log < *first_log || replayed.count({record.log, record.sequence}) > 0) continue;
    } else if (record.sequence <= latest) {
      continue;
    }
    ++dropped.records;
    rocksdb::WriteBatch batch(record.batch);
    batch.Iterate(&collector).PermitUncheckedError();  // a batch it cannot parse still counts
  }
  // Each document once, where it first appears: a document written twice is one lost write.
  for (std::vector<DocumentId>* ids : {&dropped.written, &dropped.removed}) {
    std::unordered_set<DocumentId> seen;
    std::erase_if(*ids, [&](DocumentId id) { return !seen.insert(id).second; });
  }
  return dropped;
}

std::string Describe(const LogDamage& damage, const DroppedWrites& dropped) {
  const auto ids = [](const std::vector<DocumentId>& list) {
    constexpr std::size_t kNamed = 8;
    std::string text;
    for (std::size_t i = 0; i < list.size() && i < kNamed; ++i) {
      text += (i == 0 ? "" : ", ") + std::to_string(list[i]);
    }
    if (list.size() > kNamed) text += " and " + std::to_string(list.size() - kNamed) + " more";
    return text;
  };
  std::string text = damage.file + " is damaged at bytes " + std::to_string(damage.begin) + " to " +
                     std::to_string(damage.end) + ": they and the " +
                     std::to_string(dropped.records) + " intact log record" +
                     (dropped.records == 1 ? "" : "s") +
                     " after them cannot be replayed, with the acknowledged writes they hold (";
  text += dropped.written.empty() ? "no inserts"
                                  : "inserts or replacements of documents " + ids(dropped.written);
  text +=
      dropped.removed.empty() ? "; no removals)" : "; removals of " + ids(dropped.removed) + ")";
  return text;
}

}  // namespace fpstore::internal
