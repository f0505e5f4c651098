// Reading RocksDB's write-ahead logs (its db/log_format.h): 32 KiB blocks of physical records, each
// a header (masked CRC-32C of what follows the length, 2-byte length, type; the recyclable types
// add a 4-byte log number) and a payload; a write batch too long for its block is cut into first,
// middle and last fragments, and a block's last few bytes, too short for a header, are zero.

#include "faults/damaged_log.h"

#include <fcntl.h>
#include <rocksdb/wal_filter.h>
#include <rocksdb/write_batch.h>
#include <unistd.h>

#include <algorithm>
#include <boost/crc.hpp>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <string_view>
#include <system_error>
#include <tuple>
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

// What reading one log found.
struct LogScan {
  // The bytes [begin, end) of its first damage, if any: unreadable bytes that an intact batch
  // follows, or its last record whole but failing its checksum (last_record).
  std::optional<std::pair<std::uint64_t, std::uint64_t>> damaged;
  bool last_record = false;
};

// Reads one log. The write batches from its first damage on, and all of them once `keep_all`,
// are added to `dropped`, with what the damaged bytes read as.
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

// The changes to the documents family, whose id is `family`, of a write batch's bytes, as far as
// they read (rocksdb::WriteBatch's representation; a batch read from damaged bytes may end in
// nonsense): puts in `written`, deletions in `removed`.
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

// Each document once, where it first appears: a document written twice is one lost write.
void KeepFirst(std::vector<DocumentId>& ids) {
  std::unordered_set<DocumentId> seen;
  std::erase_if(ids, [&](DocumentId id) { return !seen.insert(id).second; });
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
    std::vector<LogRecord> dropped;
    const LogScan scan = ReadLog(file.bytes(), number, damage.has_value(), dropped);
    if (scan.damaged && !damage) {
      damage.emplace();
      damage->file = path;
      damage->log = number;
      std::tie(damage->begin, damage->end) = *scan.damaged;
      damage->last_record = scan.last_record;
    }
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
    void ColumnFamilyLogNumberMap(const std::map<std::uint32_t, std::uint64_t>& family_logs,
                                  const std::map<std::string, std::uint32_t>&) override {
      replayed_.family_logs = family_logs;
    }
    WalProcessingOption LogRecordFound(unsigned long long log_number, const std::string&,
                                       const rocksdb::WriteBatch& batch, rocksdb::WriteBatch*,
                                       bool*) override {
      const std::string& rep = batch.Data();
      if (rep.size() >= kBatchHeaderBytes) {
        replayed_.records.emplace(log_number, Little64(rep.data()));
      }
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
  const auto family_log = replayed.family_logs.find(documents_family);
  const std::optional<std::uint64_t> first_log =
      replayed.records.empty() ? std::nullopt
                               : std::optional<std::uint64_t>(replayed.records.begin()->first);
  // Whether the replay would put a record's writes into the documents family.
  const auto replays = [&](std::uint64_t log, std::uint64_t sequence) {
    if (family_log != replayed.family_logs.end()) return log >= family_log->second;
    if (first_log) return log >= *first_log;
    return sequence > latest;
  };
  DroppedWrites dropped;
  bool read_past = false;  // the replay read a record after the damage
  std::optional<std::uint64_t> damaged_sequence;
  for (const LogRecord& record : damage.dropped) {
    if (!record.intact && !damaged_sequence) damaged_sequence = record.sequence;
    if (record.intact && replayed.records.count({record.log, record.sequence}) > 0) {
      read_past = true;
      continue;
    }
    if (!replays(record.log, record.sequence)) continue;
    if (record.intact) {
      ++dropped.records;
      CollectChanges(record.batch, documents_family, dropped.written, dropped.removed);
    } else {
      CollectChanges(record.batch, documents_family, dropped.damaged_written,
                     dropped.damaged_removed);
    }
  }
  dropped.damaged = !read_past && replays(damage.log, damaged_sequence.value_or(latest + 1));
  if (!dropped.damaged) {
    dropped.damaged_written.clear();
    dropped.damaged_removed.clear();
  }
  for (std::vector<DocumentId>* ids :
       {&dropped.written, &dropped.removed, &dropped.damaged_written, &dropped.damaged_removed}) {
    KeepFirst(*ids);
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
  const auto changes = [&](const std::vector<DocumentId>& written,
                           const std::vector<DocumentId>& removed) {
    std::string text = written.empty() ? "no inserts"
                                       : std::string("inserts or replacements of document") +
                                             (written.size() == 1 ? " " : "s ") + ids(written);
    text += removed.empty() ? "; no removals" : "; removals of " + ids(removed);
    return text;
  };
  std::string text = damage.file + " is damaged at bytes " + std::to_string(damage.begin) + " to " +
                     std::to_string(damage.end);
  if (damage.last_record) {
    text +=
        ", its last log record, whole but failing its checksum (a crash leaves a last record "
        "cut short or zeroed, not whole)";
  }
  text += ": they ";
  if (dropped.records > 0) {
    text += "and the " + std::to_string(dropped.records) + " intact log record" +
            (dropped.records == 1 ? "" : "s") +
            " after them cannot be replayed, with the acknowledged writes they hold (" +
            changes(dropped.written, dropped.removed) + ")";
  } else {
    text += "cannot be replayed";
  }
  if (dropped.damaged) {
    if (dropped.damaged_written.empty() && dropped.damaged_removed.empty()) {
      text += "; what the damaged bytes held cannot be read";
    } else {
      text += "; what the damaged bytes read as, unverified: " +
              changes(dropped.damaged_written, dropped.damaged_removed);
    }
  }
  return text;
}

Result<std::string> KeepDropped(const std::string& lost, const LogDamage& damage,
                                const DroppedWrites& dropped) {
  const auto failed = [&](const std::string& what, const std::string& why) {
    return Status::IOError("keeping what the open drops in " + lost + ": " + what + ": " + why);
  };
  // Durable before the open drops the writes.
  const auto sync = [&](const std::string& path, int flags) -> Status {
    const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
    if (fd < 0) return failed(path, std::strerror(errno));
    const int synced = ::fsync(fd);
    const int error = errno;
    ::close(fd);
    if (synced != 0) return failed(path, std::strerror(error));
    return Status::OK();
  };
  std::error_code ec;
  fs::create_directories(lost, ec);
  if (ec) return failed(lost, ec.message());
  for (const std::string& log : damage.logs) {
    const fs::path copy = fs::path(lost) / fs::path(log).filename();
    fs::copy_file(log, copy, fs::copy_options::overwrite_existing, ec);
    if (ec) return failed("copying " + log, ec.message());
    if (Status s = sync(copy.string(), O_RDONLY); !s.ok()) return s;
  }

  std::string text = "document\tchange\tread_from\n";
  const auto add = [&](const std::vector<DocumentId>& ids, const char* change, const char* from) {
    for (const DocumentId id : ids) text += std::to_string(id) + "\t" + change + "\t" + from + "\n";
  };
  add(dropped.damaged_written, "write", "damaged");
  add(dropped.damaged_removed, "remove", "damaged");
  add(dropped.written, "write", "intact");
  add(dropped.removed, "remove", "intact");

  char number[32];
  std::snprintf(number, sizeof number, "%06llu", static_cast<unsigned long long>(damage.log));
  std::string list;
  int fd = -1;
  for (int k = 1; fd < 0; ++k) {
    list = (fs::path(lost) /
            ("dropped-" + std::string(number) + (k == 1 ? "" : "-" + std::to_string(k)) + ".tsv"))
               .string();
    fd = ::open(list.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST) return failed(list, std::strerror(errno));
  }
  std::string_view rest = text;
  int error = 0;
  while (!rest.empty() && error == 0) {
    const ssize_t n = ::write(fd, rest.data(), rest.size());
    if (n < 0 && errno != EINTR) error = errno;
    if (n > 0) rest.remove_prefix(static_cast<std::size_t>(n));
  }
  if (error == 0 && ::fsync(fd) != 0) error = errno;
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error != 0) {
    fs::remove(list, ec);
    return failed(list, std::strerror(error));
  }
  if (Status s = sync(lost, O_RDONLY | O_DIRECTORY); !s.ok()) return s;
  return list;
}

}  // namespace fpstore::internal
