// Edits a closed store with plain RocksDB, as another program (or another
// build of fpstore) might have written it: for tests of what a store's
// reader must make of such bytes.

#ifndef FPSTORE_TESTS_RAW_STORE_H_
#define FPSTORE_TESTS_RAW_STORE_H_

#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rocks_config.h"

namespace fpstore::testing {

// Opens the closed store at `path`, calls edit(db, family) with a lookup of
// its column families by name, and closes it. The document count in the
// default family needs its merge operator, hence the inspection config.
inline void EditWithRocksDb(
    const std::string& path,
    const std::function<void(rocksdb::DB& db,
                             const std::function<rocksdb::ColumnFamilyHandle*(const std::string&)>&
                                 family)>& edit) {
  std::vector<std::string> names;
  ASSERT_TRUE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), path, &names).ok());
  internal::RocksConfig config = internal::MakeInspectionConfig(names);
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
