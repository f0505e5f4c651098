// The choice of backend: a directory opens the embedded store (lib/open/), a redis:// address the
// Redis Cluster one (lib/redis/); a writable embedded store comes in the handle that opens it again
// after a hard RocksDB error (lib/faults/reopening_store.h).

#include "fpstore/store.h"

#include <filesystem>
#include <system_error>
#include <utility>

#include "faults/reopening_store.h"
#include "open/store_impl.h"
#include "redis/redis_store.h"

namespace fpstore {

Result<std::unique_ptr<Store>> Store::Open(const std::string& path, const StoreOptions& options) {
  if (internal::redis::IsRedisPath(path)) return internal::redis::OpenStore(path, options);
  if (options.read_only) {
    Result<std::unique_ptr<internal::StoreImpl>> store = internal::StoreImpl::Open(path, options);
    if (!store.ok()) return store.status();
    return std::unique_ptr<Store>(*std::move(store));
  }
  return internal::ReopeningStore::Open(
      path, options,
      [path](const StoreOptions& opened_with,
             std::shared_ptr<rocksdb::Logger> info_log) -> Result<internal::ReopenableStore> {
        Result<std::unique_ptr<internal::StoreImpl>> store =
            internal::StoreImpl::Open(path, opened_with, std::move(info_log));
        if (!store.ok()) return store.status();
        const internal::StoreImpl* impl = store->get();
        return internal::ReopenableStore{*std::move(store),
                                         [impl] { return impl->WritesStopped(); }};
      });
}

std::string HidePassword(const std::string& path) { return internal::redis::HidePassword(path); }

Status DestroyStore(const std::string& path) { return DestroyStore(path, StoreOptions{}); }

Status DestroyStore(const std::string& path, const StoreOptions& options) {
  if (internal::redis::IsRedisPath(path)) return internal::redis::DestroyStore(path, options);
  // Opening it to write tells a store from anything else, and takes it from every other writer.
  StoreOptions writer;
  writer.create_if_missing = false;
  Result<std::unique_ptr<Store>> store = Store::Open(path, writer);
  if (!store.ok()) return store.status();
  if (Status s = (*store)->Close(); !s.ok()) return s;
  store->reset();
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec) return Status::IOError("removing " + path + ": " + ec.message());
  return Status::OK();
}

Result<std::vector<std::vector<Match>>> Store::QueryBatch(std::span<const Fingerprint> fingerprints,
                                                          int k) const {
  std::vector<Sketch> queries;
  queries.reserve(fingerprints.size());
  for (const Fingerprint fp : fingerprints) queries.push_back({fp, {}});
  return QueryBatch(queries, QueryOptions{k, std::nullopt});
}

}  // namespace fpstore
