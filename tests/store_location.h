// Where the suites that run against both backends keep their stores. A test file built twice
// (tests/CMakeLists.txt, fpstore_both_backends) runs once on the embedded store, with its stores
// in a temporary directory, and once with FPSTORE_TEST_REDIS set, on the test Redis Cluster
// (FPSTORE_REDIS_SEED), each store under a name of its own.

#ifndef FPSTORE_TESTS_STORE_LOCATION_H_
#define FPSTORE_TESTS_STORE_LOCATION_H_

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "temp_dir.h"

#ifndef FPSTORE_TEST_REDIS
#define FPSTORE_TEST_REDIS 0
#endif

#if FPSTORE_TEST_REDIS
#include <gtest/gtest.h>

#include "redis/cluster_client.h"
#endif

namespace fpstore::testing {

inline constexpr bool kRedisBackend = FPSTORE_TEST_REDIS != 0;

// The seed node of the test cluster.
inline std::string RedisSeed() {
  const char* seed = std::getenv("FPSTORE_REDIS_SEED");
  return seed != nullptr ? seed : "127.0.0.1:7400";
}

// The store `name` of `dir`: the same path each time, so that a test may reopen it; absent until
// a test creates it.
inline std::string StoreAt(const TempDir& dir, const std::string& name) {
  if (!kRedisBackend) return dir.Sub(name);
  // The directory's name is unique on this machine (mkdtemp), and so is the store's.
  return "redis://" + RedisSeed() + "/" +
         std::filesystem::path(dir.path()).filename().string() + "-" + name;
}

#if FPSTORE_TEST_REDIS
// Each test program starts on an empty cluster: the stores of earlier programs would only make its
// scans longer. The cluster's tests run one program at a time (RESOURCE_LOCK in CMakeLists.txt).
class EmptyCluster : public ::testing::Environment {
 public:
  void SetUp() override {
    // No cluster is a failure, not a reason to skip: gtest would report the suite skipped.
    auto fail = [](const Status& s) {
      std::fprintf(stderr, "the test Redis Cluster at %s: %s\n", RedisSeed().c_str(),
                   s.ToString().c_str());
      std::exit(1);
    };
    Result<std::unique_ptr<internal::redis::ClusterClient>> client =
        internal::redis::ClusterClient::Connect(RedisSeed());
    if (!client.ok()) fail(client.status());
    for (const std::string& master : (*client)->Masters()) {
      Result<internal::redis::Reply> flushed = (*client)->RunOn(master, {"FLUSHALL"});
      if (!flushed.ok()) fail(flushed.status());
    }
  }
};
inline ::testing::Environment* const kEmptyCluster =
    ::testing::AddGlobalTestEnvironment(new EmptyCluster);
#endif

}  // namespace fpstore::testing

#endif  // FPSTORE_TESTS_STORE_LOCATION_H_
