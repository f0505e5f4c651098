// Returning freed heap pages to the system: process-wide, so only where
// StoreOptions::release_memory_on_close asks for it.

#ifndef FPSTORE_LIB_PLATFORM_FREED_MEMORY_H_
#define FPSTORE_LIB_PLATFORM_FREED_MEMORY_H_

namespace fpstore::internal {

// A store's cached blocks and member filters are freed into the heaps of the
// threads that used them; glibc keeps those pages, and a store opened next
// reuses only part. As an object's first member this is destroyed last, and
// then, if `enabled`, calls malloc_trim (which walks every heap).
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
