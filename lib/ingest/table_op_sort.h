// Sorting a table's ops for the bulk loader and merges: each table's
// entries go into its SST file in key order, and with 20 tables a load sorts
// twenty times as many ops as it has documents.

#ifndef FPSTORE_LIB_INGEST_TABLE_OP_SORT_H_
#define FPSTORE_LIB_INGEST_TABLE_OP_SORT_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "fpstore/document.h"

namespace fpstore::internal {

// A member with what to do with it: add the new one or remove a replaced
// document's old one; and the change it comes from, whose id table 0 puts
// in the member. 16 bytes: the id itself in it would make the sorts move
// half as many bytes again.
struct TableOp {
  Fingerprint permuted;
  std::uint64_t change : 63;  // its number among the changes
  std::uint64_t put : 1;

  // Changes are numbered in id order: this is (permuted, id) order.
  bool operator<(const TableOp& o) const {
    return permuted != o.permuted ? permuted < o.permuted : change < o.change;
  }
};
static_assert(sizeof(TableOp) == 16);

// A worker's buffers, kept from one table to the next: allocated afresh for
// each table, their pages would be faulted in again every time.
struct SortBuffers {
  std::vector<TableOp> ops;
  std::vector<TableOp> scratch;
  // Where each digit's ops start, for the outer and the inner pass.
  std::vector<std::size_t> outer;
  std::vector<std::size_t> inner;
  std::vector<std::size_t> next;
  // The most ops the buffers have held: their pages touched.
  std::size_t touched_ops = 0;
};

// Sorts buffers.ops by (permuted, change), using the other buffers as scratch.
void SortOps(SortBuffers& buffers);

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_INGEST_TABLE_OP_SORT_H_
