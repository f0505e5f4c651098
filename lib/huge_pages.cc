#include "huge_pages.h"

#include <sys/mman.h>

#include <cstdint>

namespace fpstore::internal {

void AdviseHugePages(const void* data, std::size_t bytes) {
  if (bytes < kMinHugePageAdviceBytes) return;
  constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20;
  const auto start = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t begin = (start + kHugePage - 1) & ~(kHugePage - 1);
  const std::uintptr_t end = (start + bytes) & ~(kHugePage - 1);
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

}  // namespace fpstore::internal
