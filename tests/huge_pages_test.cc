#include "platform/huge_pages.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fpstore::internal {
namespace {

constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20;

std::uintptr_t FirstWholeHugePage(std::uintptr_t address) {
  return (address + kHugePage - 1) & ~(kHugePage - 1);
}

// Whether the mapping that holds `address` carries madvise's MADV_HUGEPAGE
// ("hg" among its VmFlags in /proc/self/smaps).
bool AdvisedHuge(std::uintptr_t address) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    std::uintptr_t from = 0, to = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> from >> dash >> to && dash == '-') {
      inside = from <= address && address < to;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return (line + " ").find(" hg ") != std::string::npos;
    }
  }
  ADD_FAILURE() << "no mapping with VmFlags holds " << std::hex << address;
  return false;
}

// Whether any mapping holds `address` (/proc/self/smaps).
bool Mapped(std::uintptr_t address) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  while (std::getline(smaps, line)) {
    std::uintptr_t from = 0, to = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> from >> dash >> to && dash == '-' && from <= address && address < to) {
      return true;
    }
  }
  return false;
}

class MappedRegion {
 public:
  explicit MappedRegion(std::size_t bytes) : bytes_(bytes) {
    void* m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED) base_ = reinterpret_cast<std::uintptr_t>(m);
  }
  ~MappedRegion() {
    if (base_ != 0) ::munmap(reinterpret_cast<void*>(base_), bytes_);
  }
  std::uintptr_t base() const { return base_; }

 private:
  std::size_t bytes_;
  std::uintptr_t base_ = 0;
};

class HugePagesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Kernels without transparent huge pages refuse the advice.
    MappedRegion probe(2 * kHugePage);
    ASSERT_NE(probe.base(), 0u);
    if (::madvise(reinterpret_cast<void*>(FirstWholeHugePage(probe.base())), kHugePage,
                  MADV_HUGEPAGE) != 0) {
      GTEST_SKIP() << "this kernel takes no MADV_HUGEPAGE";
    }
  }
};

TEST_F(HugePagesTest, AdvisesOnlyTheWholeHugePagesInsideTheRange) {
  MappedRegion region(40 * kHugePage);
  ASSERT_NE(region.base(), 0u);
  const std::uintptr_t first_whole = FirstWholeHugePage(region.base());
  // From 1 byte past a huge page boundary to 1 byte before another: the
  // pages cut at either end stay as they were.
  const std::uintptr_t from = first_whole + 1;
  const std::uintptr_t to = first_whole + 34 * kHugePage - 1;
  ASSERT_GE(to - from, kMinHugePageAdviceBytes);
  AdviseHugePages(reinterpret_cast<const void*>(from), to - from);

  EXPECT_FALSE(AdvisedHuge(first_whole));
  EXPECT_TRUE(AdvisedHuge(first_whole + kHugePage));
  EXPECT_TRUE(AdvisedHuge(first_whole + 33 * kHugePage - 1));
  EXPECT_FALSE(AdvisedHuge(first_whole + 33 * kHugePage));
}

TEST_F(HugePagesTest, SmallRangesAreLeftAlone) {
  MappedRegion region(40 * kHugePage);
  ASSERT_NE(region.base(), 0u);
  const std::uintptr_t first_whole = FirstWholeHugePage(region.base());
  // Whole huge pages, but one byte short of the smallest range advised.
  AdviseHugePages(reinterpret_cast<const void*>(first_whole), kMinHugePageAdviceBytes - 1);
  EXPECT_FALSE(AdvisedHuge(first_whole));
  EXPECT_FALSE(AdvisedHuge(first_whole + kMinHugePageAdviceBytes / 2));
  AdviseHugePages(nullptr, 0);  // an empty vector's data and size
}

TEST_F(HugePagesTest, VectorIsAdvisedOverItsCapacity) {
  std::vector<std::uint64_t> v;
  v.reserve(kMinHugePageAdviceBytes / sizeof(std::uint64_t));
  AdviseHugePages(v);
  const std::uintptr_t first_whole = FirstWholeHugePage(reinterpret_cast<std::uintptr_t>(v.data()));
  EXPECT_TRUE(AdvisedHuge(first_whole));
  // Past the size (0) but within the capacity.
  EXPECT_TRUE(AdvisedHuge(first_whole + kMinHugePageAdviceBytes / 2));
}

// Smaller than the advice's threshold for heap memory, as a merge's
// staging index is: a mapping of its own is advised whatever its size.
TEST_F(HugePagesTest, ZeroedMappingStartsOnAdvisedHugePagesAndIsZero) {
  const std::size_t bytes = 3 * kHugePage + 100;
  ZeroedMapping mapping(bytes);
  const auto start = reinterpret_cast<std::uintptr_t>(mapping.data());
  ASSERT_NE(start, 0u);
  EXPECT_EQ(start % kHugePage, 0u);
  EXPECT_GE(mapping.bytes(), bytes);
  EXPECT_TRUE(AdvisedHuge(start));
  EXPECT_TRUE(AdvisedHuge(start + bytes - 1));  // one mapping to its end
  const auto* data = static_cast<const unsigned char*>(mapping.data());
  for (std::size_t i = 0; i < bytes; i += 4093) ASSERT_EQ(data[i], 0) << "at " << i;
  EXPECT_EQ(data[bytes - 1], 0);

  ZeroedMapping moved(std::move(mapping));
  EXPECT_EQ(moved.data(), reinterpret_cast<void*>(start));
  EXPECT_EQ(mapping.data(), nullptr);
  moved = ZeroedMapping();
  EXPECT_EQ(moved.data(), nullptr);
  EXPECT_FALSE(Mapped(start)) << "still mapped after its owner let go";
  EXPECT_EQ(ZeroedMapping(0).data(), nullptr);
}

}  // namespace
}  // namespace fpstore::internal
