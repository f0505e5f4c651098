#include "platform/block_cache_allocator.h"

#include <sys/mman.h>

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>

namespace fpstore::internal {

namespace {

class BlockCacheAllocator final : public rocksdb::MemoryAllocator {
 public:
  const char* Name() const override { return "fpstore.BlockCacheAllocator"; }

  void* Allocate(std::size_t size) override {
    // A size from a corrupt block handle must not wrap around.
    if (size > SIZE_MAX - kHeaderBytes) throw std::bad_alloc();
    // Each block starts with a header: the length of its own mapping, or 0
    // for a block from the heap.
    std::size_t mapped = 0;
    char* base;
    if (size >= kMapBytes) {
      mapped = kHeaderBytes + size;
      void* m = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (m == MAP_FAILED) throw std::bad_alloc();
      base = static_cast<char*>(m);
    } else {
      base = static_cast<char*>(::operator new(kHeaderBytes + size));
    }
    std::memcpy(base, &mapped, sizeof mapped);
    volatile char* block = base + kHeaderBytes;
    for (std::size_t at = 0; at < size; at += kPageBytes) block[at] = 0;
    if (size > 0) block[size - 1] = 0;
    return base + kHeaderBytes;
  }

  void Deallocate(void* p) override {
    char* base = static_cast<char*>(p) - kHeaderBytes;
    std::size_t mapped;
    std::memcpy(&mapped, base, sizeof mapped);
    if (mapped > 0) {
      [[maybe_unused]] const int unmapped = ::munmap(base, mapped);
      assert(unmapped == 0);
    } else {
      ::operator delete(base);
    }
  }

 private:
  static constexpr std::size_t kPageBytes = 4096;
  static constexpr std::size_t kMapBytes = std::size_t{1} << 20;
  // Keeps blocks 16-byte aligned, as operator new does.
  static constexpr std::size_t kHeaderBytes = 16;
};

}  // namespace

std::shared_ptr<rocksdb::MemoryAllocator> NewBlockCacheAllocator() {
  return std::make_shared<BlockCacheAllocator>();
}

}  // namespace fpstore::internal
