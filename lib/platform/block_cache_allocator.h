// Memory for the blocks RocksDB reads into its block cache.
//
// Each page of a block is written once from user space before RocksDB reads
// into it. On virtual machines with shadow paging, as this project's
// machines are, a page that the kernel faulted in during a read costs about
// 5 µs more at its first access from user space. The pinned filters and
// indexes are read when a store opens, so every query after it paid that
// for each page it was the first to touch: the first queries after an open
// took 1-6 ms each, and cold hits at 10M had a p99 of 2.2-2.8 ms instead of
// 1.3-2.0 (docs/performance.md). Touched here, a fresh page costs one ordinary
// fault; memory handed out again costs a write per page.
//
// Blocks of 1 MiB or more (the filters: about 12 MB a table at 10M
// documents) get a mapping of their own, returned to the system when the
// block is freed: from the heap, a store closed and reopened in one process
// held the pages of both copies.

#ifndef FPSTORE_LIB_PLATFORM_BLOCK_CACHE_ALLOCATOR_H_
#define FPSTORE_LIB_PLATFORM_BLOCK_CACHE_ALLOCATOR_H_

#include <rocksdb/memory_allocator.h>

#include <memory>

namespace fpstore::internal {

std::shared_ptr<rocksdb::MemoryAllocator> NewBlockCacheAllocator();

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_PLATFORM_BLOCK_CACHE_ALLOCATOR_H_
