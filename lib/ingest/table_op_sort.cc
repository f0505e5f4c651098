#include "ingest/table_op_sort.h"

#include <algorithm>
#include <bit>

namespace fpstore::internal {

namespace {

// Runs up to this long are insertion-sorted, cheaper than std::sort's setup.
constexpr std::size_t kInsertionSortMax = 24;

// A stable counting pass: copies in[0, n) to out grouped by the `bits` bits
// of `head` below its top `skip` bits; starts[d] is where digit d's ops
// begin, starts[2^bits] is n. REQUIRES: 0 < bits, skip + bits <= 64.
void ScatterByDigit(const TableOp* in, std::size_t n, int skip, int bits, TableOp* out,
                    std::vector<std::size_t>& starts, std::vector<std::size_t>& next) {
  const std::size_t digits = std::size_t{1} << bits;
  auto digit = [=](const TableOp& op) { return (op.head << skip) >> (64 - bits); };
  starts.assign(digits + 1, 0);
  for (std::size_t i = 0; i < n; ++i) ++starts[digit(in[i]) + 1];
  for (std::size_t d = 1; d <= digits; ++d) starts[d] += starts[d - 1];
  next.assign(starts.begin(), starts.end() - 1);
  for (std::size_t i = 0; i < n; ++i) out[next[digit(in[i])]++] = in[i];
}

void SortOpRun(TableOp* first, TableOp* last) {
  if (last - first < 2) return;  // also keeps first + 1 within the run
  if (static_cast<std::size_t>(last - first) > kInsertionSortMax) {
    std::sort(first, last);
    return;
  }
  for (TableOp* i = first + 1; i < last; ++i) {
    const TableOp op = *i;
    TableOp* j = i;
    for (; j > first && op < *(j - 1); --j) *j = *(j - 1);
    *j = op;
  }
}

}  // namespace

// A counting pass on the top 12 bits into scratch; in each bucket, one on as
// many more bits as leave about one op per digit (permuted fingerprints are
// near uniform), back into ops; then the short runs those leave.
void SortOps(SortBuffers& buffers) {
  constexpr int kOuterBits = 12;
  std::vector<TableOp>& ops = buffers.ops;
  std::vector<TableOp>& scratch = buffers.scratch;
  scratch.resize(ops.size());
  ScatterByDigit(ops.data(), ops.size(), 0, kOuterBits, scratch.data(), buffers.outer,
                 buffers.next);
  for (std::size_t b = 0; b + 1 < buffers.outer.size(); ++b) {
    TableOp* in = scratch.data() + buffers.outer[b];
    TableOp* out = ops.data() + buffers.outer[b];
    const std::size_t n = buffers.outer[b + 1] - buffers.outer[b];
    if (n <= kInsertionSortMax) {
      std::copy(in, in + n, out);
      SortOpRun(out, out + n);
      continue;
    }
    const int bits = std::min(kOuterBits, static_cast<int>(std::bit_width(n)));
    ScatterByDigit(in, n, kOuterBits, bits, out, buffers.inner, buffers.next);
    for (std::size_t d = 0; d + 1 < buffers.inner.size(); ++d) {
      SortOpRun(out + buffers.inner[d], out + buffers.inner[d + 1]);
    }
  }
}

}  // namespace fpstore::internal
