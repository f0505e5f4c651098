#include "util/zeroed_mapping.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cassert>
#include <cstdint>
#include <new>

namespace fpstore::internal {

ZeroedMapping::ZeroedMapping(std::size_t bytes) {
  if (bytes == 0) return;
  static const auto kPage = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  if (bytes > SIZE_MAX - kPage) throw std::bad_alloc();
  const std::size_t used = (bytes + kPage - 1) & ~(kPage - 1);
  void* m = ::mmap(nullptr, used, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  volatile char* page = static_cast<char*>(m);
  for (std::size_t at = 0; at < used; at += kPage) page[at] = 0;
  data_ = m;
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
