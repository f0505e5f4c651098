#include "platform/huge_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cassert>
#include <cstdint>
#include <new>

namespace fpstore::internal {

namespace {

// Fails only for a range this code got wrong.
void Unmap(void* data, std::size_t bytes) {
  [[maybe_unused]] const int unmapped = ::munmap(data, bytes);
  assert(unmapped == 0);
}

}  // namespace

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
  static const auto kPage = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  if (bytes > SIZE_MAX - kHugePage - kPage) throw std::bad_alloc();
  const std::size_t used = (bytes + kPage - 1) & ~(kPage - 1);
  // Mapped a huge page larger, then trimmed to start on one.
  const std::size_t padded = used + kHugePage;
  void* m = ::mmap(nullptr, padded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  const auto start = reinterpret_cast<std::uintptr_t>(m);
  const std::uintptr_t aligned = (start + kHugePage - 1) & ~std::uintptr_t{kHugePage - 1};
  if (aligned > start) Unmap(m, aligned - start);
  const std::size_t tail = padded - (aligned - start) - used;
  if (tail > 0) Unmap(reinterpret_cast<void*>(aligned + used), tail);
  // The whole mapping, so that it stays one: a huge page cut at its end
  // stays small pages.
  ::madvise(reinterpret_cast<void*>(aligned), used, MADV_HUGEPAGE);
  // Faulted in now, by whoever makes it, rather than by its first writes,
  // which may hold a lock.
  volatile char* page = reinterpret_cast<char*>(aligned);
  for (std::size_t at = 0; at < used; at += kPage) page[at] = 0;
  data_ = reinterpret_cast<void*>(aligned);
  bytes_ = used;
}

ZeroedMapping& ZeroedMapping::operator=(ZeroedMapping&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) Unmap(data_, bytes_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

ZeroedMapping::~ZeroedMapping() {
  if (data_ != nullptr) Unmap(data_, bytes_);
}

}  // namespace fpstore::internal
