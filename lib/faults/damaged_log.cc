#include "faults/damaged_log.h"

#include <fcntl.h>
#include <rocksdb/wal_filter.h>
#include <rocksdb/write_batch.h>
#include <unistd.h>

#include <algorithm>
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

#include "util/record_file.h"

namespace fpstore::internal {

namespace {

namespace fs = std::filesystem;

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
      if (const std::optional<std::uint64_t> sequence = BatchSequence(batch.Data())) {
        replayed_.records.emplace(log_number, *sequence);
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
