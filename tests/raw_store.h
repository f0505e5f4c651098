// Edits a closed store with plain RocksDB, as another program (or another
// build of fpstore) might have written it: for tests of what a store's
// reader must make of such bytes.

#ifndef FPSTORE_TESTS_RAW_STORE_H_
#define FPSTORE_TESTS_RAW_STORE_H_

#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fpstore/permutation.h"
#include "format/families.h"
#include "format/groups.h"

namespace fpstore::testing {

// The metadata record `key` of the store at `path`, if it has one.
inline std::optional<std::string> RecordedValue(const std::string& path, const char* key) {
  internal::RocksConfig config =
      internal::MakeInspectionConfig({rocksdb::kDefaultColumnFamilyName});
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  if (!rocksdb::DB::OpenForReadOnly(config.db, path, config.families, &handles, &raw).ok()) {
    return std::nullopt;
  }
  std::unique_ptr<rocksdb::DB> db(raw);
  std::string value;
  const bool read = db->Get({}, handles[0], key, &value).ok();
  for (rocksdb::ColumnFamilyHandle* h : handles) db->DestroyColumnFamilyHandle(h);
  if (!read) return std::nullopt;
  return value;
}

// The plan the store at `path` records, if it records one that is valid.
inline std::optional<PermutationPlan> RecordedPlan(const std::string& path) {
  const std::optional<std::string> value = RecordedValue(path, "fpstore.plan");
  int blocks = 0, distance = 0;
  if (!value || std::sscanf(value->c_str(), "blocks=%d distance=%d", &blocks, &distance) != 2) {
    return std::nullopt;
  }
  Result<PermutationPlan> plan = PermutationPlan::Create(blocks, distance);
  if (!plan.ok()) return std::nullopt;
  return *std::move(plan);
}

// Where the store at `path` cuts its tables' groups, as it records. A
// record that is not a number of bits from 1 to 64 (tests write such)
// reads as 16: only merge operands need the layout, and a store refused on
// open has none to fold.
inline int RecordedGroupBits(const std::string& path) {
  const std::optional<std::string> value = RecordedValue(path, "fpstore.group_bits");
  int bits = 0;
  if (value) std::sscanf(value->c_str(), "%d", &bits);
  return bits >= 1 && bits <= 64 ? bits : 16;
}

// MakeInspectionConfig, with each table's group operator, which reading its
// operands needs.
inline internal::RocksConfig InspectionConfigWithTables(const std::vector<std::string>& names,
                                                        const PermutationPlan& plan,
                                                        int group_bits) {
  internal::RocksConfig config = internal::MakeInspectionConfig(names);
  for (rocksdb::ColumnFamilyDescriptor& family : config.families) {
    for (std::size_t t = 0; t < plan.table_count(); ++t) {
      if (family.name == internal::TableFamilyName(t)) {
        family.options.merge_operator = std::make_shared<internal::GroupMergeOperator>(
            internal::TableGroupLayout(plan, t, group_bits));
      }
    }
  }
  return config;
}

// Opens the closed store at `path`, calls edit(db, family) with a lookup of
// its column families by name, and closes it. The document count in the
// default family needs its merge operator, and a packed table its own,
// hence the inspection config, with the plan the store records.
inline void EditWithRocksDb(
    const std::string& path,
    const std::function<void(rocksdb::DB& db, const std::function<rocksdb::ColumnFamilyHandle*(
                                                  const std::string&)>& family)>& edit) {
  std::vector<std::string> names;
  ASSERT_TRUE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), path, &names).ok());
  const std::optional<PermutationPlan> plan = RecordedPlan(path);
  internal::RocksConfig config =
      plan ? InspectionConfigWithTables(names, *plan, RecordedGroupBits(path))
           : internal::MakeInspectionConfig(names);
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(config.db, path, config.families, &handles, &raw);
  ASSERT_TRUE(s.ok()) << s.ToString();
  std::unique_ptr<rocksdb::DB> db(raw);
  edit(*db, [&](const std::string& name) -> rocksdb::ColumnFamilyHandle* {
    for (rocksdb::ColumnFamilyHandle* h : handles) {
      if (h->GetName() == name) return h;
    }
    ADD_FAILURE() << "no column family " << name << " in " << path;
    return nullptr;
  });
  for (rocksdb::ColumnFamilyHandle* h : handles) ASSERT_TRUE(db->DestroyColumnFamilyHandle(h).ok());
  ASSERT_TRUE(db->Close().ok());
}

}  // namespace fpstore::testing

#endif  // FPSTORE_TESTS_RAW_STORE_H_
