// The store's size and memory models (fpstore/store.h): what a store of a
// plan and size takes on disk and pins in memory, from the tables' layout
// (format/groups.h) and constants fitted to fpstore-bench's stores.

#include <algorithm>
#include <cmath>

#include "format/groups.h"
#include "fpstore/store.h"

namespace fpstore {

namespace {

// The model's constants, fitted to fpstore-bench's stores (docs/performance.md, "Choosing a
// plan"): a document's record (LZ4), a group's key and index entry, and a data block's entry
// in its file's index.
constexpr double kRecordBytes = 17, kBytesPerGroup = 12.9, kIndexBytesPerBlock = 24;
constexpr double kBlockBytes = 4096;

// A table's member filters (format/member_filter.h) once its `n` members are in one level:
// about 10 bits for each distinct prefix, and 10 more for each crowded one. Past 2^prefix_bits
// members every prefix is there, so they stop growing.
double FilterBytes(double n, int prefix_bits) {
  const double prefixes = std::ldexp(1.0, prefix_bits);
  const double per_prefix = n / prefixes;
  const double distinct = prefixes * -std::expm1(-per_prefix);
  const double crowded = std::max(0.0, distinct - n * std::exp(-per_prefix));
  return (distinct + crowded) * 10 / 8;
}

struct TableBytes {
  double data = 0;     // groups on disk
  double filters = 0;  // member filters, on disk and in memory
};

// Table t of `plan` holding `n` random fingerprints, cut at `group_bits`.
TableBytes EstimateTable(const PermutationPlan& plan, std::size_t t, double n, int group_bits) {
  const internal::GroupLayout layout = internal::TableGroupLayout(plan, t, group_bits);
  const double groups = std::ldexp(1.0, layout.group_bits());
  const double held = groups * -std::expm1(-n / groups);  // groups with a member
  // Elias-Fano: a member's low bits, about 2 bits of unary high part, its tail at 128 bits, and
  // its id in table 0. The filters hold the head's prefix.
  const double per_group = n / held;
  const double low = std::max(0.0, std::floor(layout.member_bits() - std::log2(per_group)));
  const double member_bytes =
      (low + 2) / 8 + (layout.keeps_tails() ? 8 : 0) + (layout.keeps_ids() ? 8 : 0);
  return {n * member_bytes + held * kBytesPerGroup,
          FilterBytes(n, std::min(plan.tables()[t].prefix_bits(), 64))};
}

// A 128-bit fingerprint takes 8 bytes more.
double RecordBytes(double n, int signature_bytes, int bits) {
  return n * (kRecordBytes + (bits - 64) / 8 + (signature_bytes > 0 ? signature_bytes + 2 : 0));
}

}  // namespace

double EstimateStoreBytes(const PermutationPlan& plan, std::uint64_t documents,
                          int signature_bytes) {
  const double n = static_cast<double>(documents);
  const int group_bits = internal::GroupBitsFor(documents);
  double bytes = RecordBytes(n, signature_bytes, plan.bits());
  for (std::size_t t = 0; t < plan.table_count(); ++t) {
    const TableBytes table = EstimateTable(plan, t, n, group_bits);
    bytes += table.data + table.filters;
  }
  return bytes;
}

double EstimateStoreMemory(const PermutationPlan& plan, std::uint64_t documents,
                           int signature_bytes, std::size_t block_cache_bytes) {
  const double n = static_cast<double>(documents);
  const int group_bits = internal::GroupBitsFor(documents);
  // The records' key filter (10 bits a document) and index.
  const double records = RecordBytes(n, signature_bytes, plan.bits());
  double bytes = n * 10 / 8 + records / kBlockBytes * kIndexBytesPerBlock;
  for (std::size_t t = 0; t < plan.table_count(); ++t) {
    const TableBytes table = EstimateTable(plan, t, n, group_bits);
    bytes += table.filters + table.data / kBlockBytes * kIndexBytesPerBlock;
  }
  // The pinned blocks and filters are charged to the block cache, and data blocks fill what
  // room they leave.
  return std::max(bytes, static_cast<double>(block_cache_bytes));
}

}  // namespace fpstore
