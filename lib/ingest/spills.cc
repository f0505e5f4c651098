#include "ingest/spills.h"

#include <algorithm>

#include "plan/table_entry.h"

namespace fpstore::internal {

bool SpillCursor::Next(DocumentId& id, std::uint64_t& seq, Word& fp, std::string& tail) {
  if (reader_) {
    std::uint64_t high, low, length;
    if (!reader_->GetU64(id) || !reader_->GetU64(seq) || !reader_->GetU64(high) ||
        !reader_->GetU64(low) || !reader_->GetU64(length)) {
      return false;
    }
    fp = Word(high, low);
    tail.resize(length);
    return reader_->GetBytes(tail.data(), length);
  }
  if (next_ == records_.size()) return false;
  const BufferedRecord& r = records_[next_++];
  id = r.id;
  seq = r.seq;
  fp = r.fingerprint;
  tail.assign(tails_.substr(r.tail_offset, r.tail_size));
  return true;
}

void SortSpill(std::vector<BufferedRecord>& records) {
  const auto before = [](const BufferedRecord& a, const BufferedRecord& b) {
    return a.id != b.id ? a.id < b.id : a.seq < b.seq;
  };
  // Input often comes in id order (a crawl, a dump): then there is no sort.
  if (std::is_sorted(records.begin(), records.end(), before)) return;
  std::sort(records.begin(), records.end(), before);
}

Status WriteSpill(const std::string& path, std::span<const BufferedRecord> records,
                  std::string_view tails) {
  RecordWriter out(path);
  for (const BufferedRecord& r : records) {
    out.PutU64(r.id);
    out.PutU64(r.seq);
    out.PutU64(r.fingerprint.high());
    out.PutU64(r.fingerprint.low());
    out.PutU64(r.tail_size);
    out.PutBytes(tails.substr(r.tail_offset, r.tail_size));
  }
  return out.Close();
}

}  // namespace fpstore::internal
