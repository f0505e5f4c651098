// Transparent huge pages for large buffers that live long and are read in
// scattered order.

#ifndef FPSTORE_LIB_PLATFORM_HUGE_PAGES_H_
#define FPSTORE_LIB_PLATFORM_HUGE_PAGES_H_

#include <cstddef>
#include <utility>
#include <vector>

namespace fpstore::internal {

// Ranges smaller than this are left alone: malloc may carve them from a
// heap that outlives them, and the advice would stay on memory that other
// allocations reuse. glibc's threads' heaps are 64 MiB at most, so this
// much comes from a mapping of its own or from the main heap, and the
// main heap keeps that much free only when its trim threshold is raised
// (fpstore-load raises it, and its buffers are advised on purpose).
inline constexpr std::size_t kMinHugePageAdviceBytes = std::size_t{64} << 20;

// Asks the kernel to back the whole 2 MiB pages within [data, data + bytes)
// with huge pages as they are touched, where the system allows it
// (transparent_hugepage "madvise" or "always"): a hint, ignored elsewhere.
// Pages touched before the call keep their size.
void AdviseHugePages(const void* data, std::size_t bytes);

// The same for a vector's whole capacity.
template <typename T>
void AdviseHugePages(const std::vector<T>& v) {
  AdviseHugePages(v.data(), v.capacity() * sizeof(T));
}

// Zeroed memory in a mapping of its own, starting on a huge page and
// advised as above whatever its size: no heap shares it. Its pages are
// faulted in when it is made. For arrays of any size written in scattered
// order and dropped whole. Throws std::bad_alloc when the system has no
// room.
class ZeroedMapping {
 public:
  ZeroedMapping() = default;
  explicit ZeroedMapping(std::size_t bytes);
  ZeroedMapping(ZeroedMapping&& other) noexcept { *this = std::move(other); }
  ZeroedMapping& operator=(ZeroedMapping&& other) noexcept;
  ~ZeroedMapping();

  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_PLATFORM_HUGE_PAGES_H_
