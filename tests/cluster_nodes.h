// What the tests that start Redis Clusters of their own share: reading a node's INFO replies,
// and waiting for a cluster to settle.

#ifndef FPSTORE_TESTS_CLUSTER_NODES_H_
#define FPSTORE_TESTS_CLUSTER_NODES_H_

#include <chrono>
#include <string>
#include <thread>

namespace fpstore::testing {

// The value of `field` in an INFO reply ("field:value" lines); empty if absent.
inline std::string InfoField(const std::string& info, const std::string& field) {
  const std::size_t at = info.find(field + ":");
  if (at == std::string::npos || (at > 0 && info[at - 1] != '\n')) return "";
  const std::size_t begin = at + field.size() + 1;
  return info.substr(begin, info.find_first_of("\r\n", begin) - begin);
}

// Polls `done` every 50 ms for up to `limit`; whether it came true.
template <typename Predicate>
bool WaitUntil(std::chrono::steady_clock::duration limit, Predicate done) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

}  // namespace fpstore::testing

#endif  // FPSTORE_TESTS_CLUSTER_NODES_H_
