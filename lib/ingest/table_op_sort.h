// Sorting a table's ops into key order for its SST file, for bulk loads and
// merges: a load sorts about as many ops per table as it has documents.

#ifndef FPSTORE_LIB_INGEST_TABLE_OP_SORT_H_
#define FPSTORE_LIB_INGEST_TABLE_OP_SORT_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "fpstore/document.h"
#include "plan/table_entry.h"

namespace fpstore::internal {

// A member to add or remove, and the change it comes from (whose id table 0
// stores). 16 bytes: holding the id would make sorts move half as much again.
struct TableOp {
  Word permuted;
  std::uint64_t change : 63;  // its number among the changes
  std::uint64_t put : 1;

  // Changes are numbered in id order: this is (permuted, id) order.
  bool operator<(const TableOp& o) const {
    return permuted != o.permuted ? permuted < o.permuted : change < o.change;
  }
};
static_assert(sizeof(TableOp) == 16);

// A worker's buffers, kept across tables so that their pages fault in once.
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
