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

// A member to add or remove by the head of its permuted fingerprint
// (format/groups.h), and the change it comes from (whose id table 0 stores,
// and where a 128-bit fingerprint's tail is read). 16 bytes: holding the id
// or the tail would make sorts move half as much again.
struct TableOp {
  std::uint64_t head;
  std::uint64_t change : 63;  // its number among the changes
  std::uint64_t put : 1;

  // Changes are numbered in id order: this is (head, id) order, a 64-bit
  // store's (permuted, id) order.
  bool operator<(const TableOp& o) const {
    return head != o.head ? head < o.head : change < o.change;
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

// Sorts buffers.ops by (head, change), using the other buffers as scratch.
void SortOps(SortBuffers& buffers);

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_INGEST_TABLE_OP_SORT_H_
