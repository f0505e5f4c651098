// Point lookups of many 8-byte big-endian keys in one batched read.

#ifndef FPSTORE_LIB_UTIL_MULTI_GET_H_
#define FPSTORE_LIB_UTIL_MULTI_GET_H_

#include <rocksdb/db.h>

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fpstore/status.h"
#include "util/big_endian.h"
#include "util/rocks_status.h"

namespace fpstore::internal {

// Looks up `keys` (ascending) in `family` at `snapshot` (null: the latest
// state), so that RocksDB reads each block once for all its keys; calls
// found(i, value) for each key present, in order, until it fails.
inline Status MultiGet(rocksdb::DB& db, rocksdb::ColumnFamilyHandle* family,
                       const rocksdb::Snapshot* snapshot, std::span<const std::uint64_t> keys,
                       const std::function<Status(std::size_t, std::string_view)>& found) {
  std::vector<std::array<char, 8>> bytes(keys.size());
  std::vector<rocksdb::Slice> slices;
  slices.reserve(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    PutBigEndian64(bytes[i].data(), keys[i]);
    slices.emplace_back(bytes[i].data(), 8);
  }
  std::vector<rocksdb::PinnableSlice> values(keys.size());
  std::vector<rocksdb::Status> statuses(keys.size());
  rocksdb::ReadOptions ro;
  ro.snapshot = snapshot;
  db.MultiGet(ro, family, slices.size(), slices.data(), values.data(), statuses.data(),
              /*sorted_input=*/true);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (statuses[i].IsNotFound()) continue;
    if (!statuses[i].ok()) {
      return FromRocks(statuses[i],
                       "reading " + family->GetName() + " key " + std::to_string(keys[i]));
    }
    if (Status s = found(i, values[i].ToStringView()); !s.ok()) return s;
  }
  return Status::OK();
}

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_UTIL_MULTI_GET_H_
