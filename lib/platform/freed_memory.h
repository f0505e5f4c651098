// Giving the pages that freed memory leaves in the heaps back to the system.

#ifndef FPSTORE_LIB_PLATFORM_FREED_MEMORY_H_
#define FPSTORE_LIB_PLATFORM_FREED_MEMORY_H_

namespace fpstore::internal {

// A store's cached blocks and member filters (about 450 MB at 10M) are
// freed into the heaps of the threads that used them, and glibc keeps
// those pages: a store opened next in the process, its threads allocating
// from other heaps, reused only part of them (the benchmark's query rows
// reopen the store: 158-160 MB stayed resident after one reopen, and warm
// queries peaked at 601-710 MB, 560-564 MB with this). An object's first
// member of this type is destroyed last, once every other member has let
// go, and then gives the freed pages back.
class FreedMemoryReturn {
 public:
  FreedMemoryReturn() = default;
  FreedMemoryReturn(const FreedMemoryReturn&) = delete;
  FreedMemoryReturn& operator=(const FreedMemoryReturn&) = delete;
  ~FreedMemoryReturn();
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_PLATFORM_FREED_MEMORY_H_
