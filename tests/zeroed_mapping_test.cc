#include "util/zeroed_mapping.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

namespace fpstore::internal {
namespace {

// Whether any mapping holds `address` (/proc/self/maps).
bool Mapped(std::uintptr_t address) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::uintptr_t from = 0, to = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> from >> dash >> to && dash == '-' && from <= address && address < to) {
      return true;
    }
  }
  return false;
}

TEST(ZeroedMappingTest, IsZeroWholePagesAndUnmappedWhenItsOwnerLetsGo) {
  const std::size_t bytes = 3 * 4096 + 100;
  ZeroedMapping mapping(bytes);
  const auto start = reinterpret_cast<std::uintptr_t>(mapping.data());
  ASSERT_NE(start, 0u);
  EXPECT_GE(mapping.bytes(), bytes);
  EXPECT_EQ(mapping.bytes() % 4096, 0u);
  EXPECT_TRUE(Mapped(start));
  const auto* data = static_cast<const unsigned char*>(mapping.data());
  for (std::size_t i = 0; i < bytes; i += 511) ASSERT_EQ(data[i], 0) << "at " << i;

  ZeroedMapping moved(std::move(mapping));
  EXPECT_EQ(moved.data(), reinterpret_cast<void*>(start));
  EXPECT_EQ(mapping.data(), nullptr);  // NOLINT(bugprone-use-after-move): moved from on purpose
  moved = ZeroedMapping();
  EXPECT_EQ(moved.data(), nullptr);
  EXPECT_FALSE(Mapped(start)) << "still mapped after its owner let go";
  EXPECT_EQ(ZeroedMapping(0).data(), nullptr);
}

}  // namespace
}  // namespace fpstore::internal
