#include "platform/block_cache_allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace fpstore::internal {
namespace {

std::size_t ResidentBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  ADD_FAILURE() << "no VmRSS in /proc/self/status";
  return 0;
}

TEST(BlockCacheAllocatorTest, BlocksOfEverySizeAreAlignedAndWritable) {
  const std::shared_ptr<rocksdb::MemoryAllocator> allocator = NewBlockCacheAllocator();
  // Around a page and around the size from which blocks get their own mapping.
  for (std::size_t size :
       {std::size_t{0}, std::size_t{1}, std::size_t{15}, std::size_t{4095}, std::size_t{4096},
        std::size_t{4097}, std::size_t{100000}, (std::size_t{1} << 20) - 17, std::size_t{1} << 20,
        (std::size_t{1} << 20) + 1, std::size_t{3} << 20}) {
    SCOPED_TRACE(size);
    auto* block = static_cast<unsigned char*>(allocator->Allocate(size));
    ASSERT_NE(block, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(block) % 16, 0u);
    std::memset(block, 0xA5, size);
    if (size > 0) {
      EXPECT_EQ(block[0], 0xA5);
      EXPECT_EQ(block[size - 1], 0xA5);
    }
    allocator->Deallocate(block);
  }
}

TEST(BlockCacheAllocatorTest, LargeBlocksAreTouchedAndGoBackToTheSystemWhenFreed) {
  const std::shared_ptr<rocksdb::MemoryAllocator> allocator = NewBlockCacheAllocator();
  // Filter-sized blocks, as a store closed and reopened frees and takes them.
  constexpr std::size_t kBlockBytes = std::size_t{12} << 20;
  constexpr int kBlocks = 8;
  // Freeing one first raises glibc's mmap threshold above the block size,
  // as a store's first close does: from then on a heap would keep them.
  allocator->Deallocate(allocator->Allocate(kBlockBytes));
  const std::size_t before = ResidentBytes();
  std::vector<void*> blocks;
  for (int i = 0; i < kBlocks; ++i) blocks.push_back(allocator->Allocate(kBlockBytes));
  const std::size_t held = ResidentBytes();
  // Every page was touched on allocation: the blocks are resident already.
  EXPECT_GE(held - std::min(held, before), kBlocks * kBlockBytes * 9 / 10);
  // All but the last, so that a heap could not give them back by trimming
  // its top.
  for (int i = 0; i + 1 < kBlocks; ++i) allocator->Deallocate(blocks[i]);
  const std::size_t freed = held - std::min(held, ResidentBytes());
  EXPECT_GE(freed, (kBlocks - 1) * kBlockBytes * 9 / 10);
  allocator->Deallocate(blocks.back());
}

}  // namespace
}  // namespace fpstore::internal
