// Zeroed memory in a mapping of its own, for arrays written scattered and
// dropped whole: no heap shares it, and its maker faults its pages in rather
// than its first writes, which may hold a lock.

#ifndef FPSTORE_LIB_UTIL_ZEROED_MAPPING_H_
#define FPSTORE_LIB_UTIL_ZEROED_MAPPING_H_

#include <cstddef>
#include <utility>

namespace fpstore::internal {

class ZeroedMapping {
 public:
  ZeroedMapping() = default;
  // Throws std::bad_alloc when the system has no room.
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

#endif  // FPSTORE_LIB_UTIL_ZEROED_MAPPING_H_
