#include "huge_pages.h"

#include <sys/mman.h>

#include <cstdint>
#include <new>

namespace fpstore::internal {

void AdviseHugePages(const void* data, std::size_t bytes) {
  if (bytes < kMinHugePageAdviceBytes) return;
  constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20;
  const auto start = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t begin = (start + kHugePage - 1) & ~(kHugePage - 1);
  const std::uintptr_t end = (start + bytes) & ~(kHugePage - 1);
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

ZeroedMapping::ZeroedMapping(std::size_t bytes) {
  if (bytes == 0) return;
  constexpr std::size_t kHugePage = std::size_t{2} << 20;
  constexpr std::size_t kPage = 4096;
  if (bytes > SIZE_MAX - kHugePage - kPage) throw std::bad_alloc();
  const std::size_t used = (bytes + kPage - 1) & ~(kPage - 1);
  // Mapped a huge page larger, then trimmed to start on one.
  const std::size_t padded = used + kHugePage;
  void* m = ::mmap(nullptr, padded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  const auto start = reinterpret_cast<std::uintptr_t>(m);
  const std::uintptr_t aligned = (start + kHugePage - 1) & ~std::uintptr_t{kHugePage - 1};
  if (aligned > start) ::munmap(m, aligned - start);
  const std::size_t tail = padded - (aligned - start) - used;
  if (tail > 0) ::munmap(reinterpret_cast<void*>(aligned + used), tail);
  if (used >= kHugePage) {
    ::madvise(reinterpret_cast<void*>(aligned), used & ~(kHugePage - 1), MADV_HUGEPAGE);
  }
  data_ = reinterpret_cast<void*>(aligned);
  bytes_ = used;
}

ZeroedMapping& ZeroedMapping::operator=(ZeroedMapping&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) ::munmap(data_, bytes_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

ZeroedMapping::~ZeroedMapping() {
  if (data_ != nullptr) ::munmap(data_, bytes_);
}

}  // namespace fpstore::internal
