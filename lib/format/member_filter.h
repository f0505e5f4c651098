// Filters that let a probe of a packed table (format/groups.h) pass a file by
// when none of its members has the probe's prefix: nearly every group exists,
// so RocksDB's key filters cannot tell a miss (docs/performance.md, "Packed tables").
//
// A file's properties hold Bloom filters of the p-bit prefixes its entries add,
// remove or hold, per chunk of groups, built by a collector for every file
// RocksDB writes, so a file and its filters are never apart. The same filters
// mark the prefixes that more than one distinct member of the file has
// ("crowded"): where one file alone holds a prefix and it is not crowded there,
// a probe that has already found a fingerprint with that prefix has nothing
// left to find (docs/design.md, "Hits that skip tables").

#ifndef FPSTORE_LIB_FORMAT_MEMBER_FILTER_H_
#define FPSTORE_LIB_FORMAT_MEMBER_FILTER_H_

#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/listener.h>
#include <rocksdb/table_properties.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "format/groups.h"
#include "fpstore/permutation.h"
#include "fpstore/status.h"
#include "plan/table_entry.h"

namespace fpstore::internal {

inline constexpr char kMemberFilterProperty[] = "fpstore.members";

// A blocked Bloom filter of prefixes: about 10 bits a prefix, six of them
// set in one 64-byte block; six more in the same block for a crowded one.
class MemberFilter {
 public:
  struct Prefix {
    Head prefix;
    bool crowded;  // more than one distinct member has it
  };
  // Appends the filter of `prefixes` to `out`.
  static void Build(std::span<const Prefix> prefixes, std::string& out);
  // A probe for `prefix` is BlockPasses(BlockFor(bits, Hash(prefix)), hash), in
  // steps, for callers that fetch many filters' blocks for one prefix before
  // testing any.
  static std::uint64_t Hash(Head prefix);
  static const char* BlockFor(std::string_view bits, std::uint64_t hash);
  static bool BlockPasses(const char* block, std::uint64_t hash);
  // For a block that passes: false only if no two distinct members have the prefix.
  static bool BlockSaysCrowded(const char* block, std::uint64_t hash);
};

// A view of one file's filter property (docs/format.md, "Member filters"):
// chunks of whole groups, each with its filter. The value must outlive it.
class FileMemberFilter {
 public:
  // None if `value` is malformed. `thorough` checks every chunk (for a filter
  // kept); else a lookup checks the chunk it reads (for one read once).
  static std::optional<FileMemberFilter> Parse(std::string_view value, bool thorough);

  bool empty() const { return chunks_ == 0; }
  // False only if no entry of the file adds, removes or holds a member of
  // `group` with p-bit prefix `prefix`.
  bool MayTouch(Head group, Head prefix) const;

  // MayTouch in steps, for a filter kept and probed often. Each chunk's first
  // group, ascending: a probe's chunk is the last that begins at or before it.
  std::vector<Head> ChunkFirstGroups() const;
  // Given MemberFilter::Hash(prefix): null if `chunk` ends before `group`
  // (false), kUnchecked if malformed (true), else the block for BlockPasses.
  const char* BlockIn(std::size_t chunk, Head group, std::uint64_t hash) const;
  static const char* const kUnchecked;

 private:
  FileMemberFilter(std::string_view index, std::string_view filters, std::size_t chunks)
      : index_(index), filters_(filters), chunks_(chunks) {}
  Head FirstGroup(std::size_t i) const;
  Head LastGroup(std::size_t i) const;
  std::size_t FilterEnd(std::size_t i) const;

  std::string_view index_;    // 20 bytes a chunk
  std::string_view filters_;  // the chunks' filters, end to end
  std::size_t chunks_;
};

// A file's filter property, or null if it has none.
const std::string* MemberFilterProperty(const rocksdb::TableProperties& file);

// The mask of a head's first p bits (all of them if p >= 64): where a
// 128-bit store's prefix is longer than its head, the filters hold the head.
Head PrefixMask(int prefix_bits);

// For ReadOptions::table_filter: false only if the file neither adds, removes
// nor holds a member with `permuted`'s prefix (its head's, under `prefix_mask`).
bool FileMayTouch(const rocksdb::TableProperties& file, const GroupLayout& layout, Head prefix_mask,
                  Word permuted);

// The filters' collector for a packed table of `layout` and `prefix_bits`.
std::shared_ptr<rocksdb::TablePropertiesCollectorFactory> NewMemberFilterCollectorFactory(
    const GroupLayout& layout, int prefix_bits);

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_FORMAT_MEMBER_FILTER_H_
