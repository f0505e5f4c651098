// Filters that let a probe of a packed table (table_groups.h) skip it when
// no member has the probe's prefix. Once groups hold several members,
// nearly every group exists, so RocksDB's filters, which see keys only,
// cannot tell a miss; without these a miss read its group in every table,
// five times a probe's cost (docs/performance.md, "Packed tables").
//
// Every file of a packed table carries, in its properties, Bloom filters
// of the p-bit prefixes of the members it adds, one for each run of groups
// of up to 64Ki prefixes, with the range of groups each covers. A table
// properties collector builds them for every file RocksDB writes, whether
// a bulk load's, a merge's, a flush's or a compaction's, so a file and its
// filters are never apart.

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

namespace fpstore::internal {

inline constexpr char kMemberFilterProperty[] = "fpstore.members";

// A blocked Bloom filter of prefixes: about 10 bits a prefix, six of them
// set in one 64-byte block.
class MemberFilter {
 public:
  // Appends the filter of `prefixes` to `out`.
  static void Build(std::span<const Fingerprint> prefixes, std::string& out);
  static bool MayContain(std::string_view bits, Fingerprint prefix) {
    const std::uint64_t hash = Hash(prefix);
    return BlockPasses(BlockFor(bits, hash), hash);
  }
  // MayContain in steps, for a caller that probes many filters for one
  // prefix and fetches their blocks before it tests any: the prefix's
  // hash, once; the block of `bits` it maps to; whether that passes.
  static std::uint64_t Hash(Fingerprint prefix);
  static const char* BlockFor(std::string_view bits, std::uint64_t hash);
  static bool BlockPasses(const char* block, std::uint64_t hash);
};

// One file's filters: the value of its property (docs/format.md), chunks
// of whole groups, each with a filter of the prefixes of the members it
// adds, removes or holds. A view of the value, which must outlive it.
class FileMemberFilter {
 public:
  // None if `value` is malformed. Thorough: every chunk checked (once, for
  // a filter that is kept); else only the index's size, and a lookup
  // checks the chunk it reads (for a filter read once).
  static std::optional<FileMemberFilter> Parse(std::string_view value, bool thorough);

  bool empty() const { return chunks_ == 0; }
  // False only if no entry of the file adds, removes or holds a member of
  // `group` with p-bit prefix `prefix`.
  bool MayTouch(Fingerprint group, Fingerprint prefix) const;

  // MayTouch in steps, for a filter kept and probed often. The group each
  // chunk begins with, ascending: a probe's chunk is the last that begins
  // at or before its group.
  std::vector<Fingerprint> ChunkFirstGroups() const;
  // With the prefix's MemberFilter::Hash: null if chunk `chunk` ends before
  // `group` (false), kUnchecked if it is malformed (true), else the block
  // to test with BlockPasses.
  const char* BlockIn(std::size_t chunk, Fingerprint group, std::uint64_t hash) const;
  static const char* const kUnchecked;

 private:
  FileMemberFilter(std::string_view index, std::string_view filters, std::size_t chunks)
      : index_(index), filters_(filters), chunks_(chunks) {}
  Fingerprint FirstGroup(std::size_t i) const;
  Fingerprint LastGroup(std::size_t i) const;
  std::size_t FilterEnd(std::size_t i) const;

  std::string_view index_;    // 20 bytes a chunk
  std::string_view filters_;  // the chunks' filters, end to end
  std::size_t chunks_;
};

// A file's filter property, or null if it has none.
const std::string* MemberFilterProperty(const rocksdb::TableProperties& file);

// The mask of a p-bit prefix.
Fingerprint PrefixMask(int prefix_bits);

// For ReadOptions::table_filter: false only if the file, whose probes look
// up `layout`'s groups and prefixes `prefix_mask`, neither adds, removes
// nor holds a member with `permuted`'s prefix, so that a read of its
// group may pass the file by.
bool FileMayTouch(const rocksdb::TableProperties& file, const GroupLayout& layout,
                  Fingerprint prefix_mask, Fingerprint permuted);

// Makes the collector for each file of a packed table of `layout`'s groups
// whose probes look up `prefix_bits`.
std::shared_ptr<rocksdb::TablePropertiesCollectorFactory> NewMemberFilterCollectorFactory(
    const GroupLayout& layout, int prefix_bits);

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_FORMAT_MEMBER_FILTER_H_
