// Giving the pages that freed memory leaves in the process's heaps back to
// the system: an effect on the whole process, so only where
// StoreOptions::release_memory_on_close asks for it.

#ifndef FPSTORE_LIB_PLATFORM_FREED_MEMORY_H_
#define FPSTORE_LIB_PLATFORM_FREED_MEMORY_H_

namespace fpstore::internal {

// A store's cached blocks and member filters are freed into the heaps of
// the threads that used them, and glibc keeps those pages: a store opened
// next in the process, its threads allocating from other heaps, reuses
// only part of them. An object's first member of this type is destroyed
// last, once every other member has let go, and then, if `enabled`, gives
// the freed pages back (glibc's malloc_trim, which walks every heap of the
// process).
class FreedMemoryReturn {
 public:
  explicit FreedMemoryReturn(bool enabled) : enabled_(enabled) {}
  FreedMemoryReturn(const FreedMemoryReturn&) = delete;
  FreedMemoryReturn& operator=(const FreedMemoryReturn&) = delete;
  ~FreedMemoryReturn();

 private:
  const bool enabled_;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_PLATFORM_FREED_MEMORY_H_
