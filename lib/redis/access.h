// How fpstore reaches a store in a Redis Cluster and who it is there: the address
// "redis://[USER[:PASSWORD]@]HOST:PORT/NAME" read with StoreOptions' credentials, the same address
// as it may be shown (its password as ***), and the check at Open that the user may run every
// command fpstore needs (docs/scale.md, "Passwords, ACL users and TLS").
//
// No message made here holds a password.

#ifndef FPSTORE_LIB_REDIS_ACCESS_H_
#define FPSTORE_LIB_REDIS_ACCESS_H_

#include <string>
#include <string_view>

#include "fpstore/options.h"
#include "fpstore/status.h"
#include "redis/cluster_client.h"

namespace fpstore::internal::redis {

// Whether `path` names a store in Redis ("redis://..." or "rediss://...").
bool IsRedisPath(std::string_view path);

// `url` with the password of its USER:PASSWORD@ part, if any, replaced by ***, for messages. Any
// string: a malformed URL's password is hidden too.
std::string HidePassword(std::string_view url);

// What a store's URL and options say.
struct StoreAddress {
  std::string seed;  // HOST:PORT
  std::string name;
  ClientOptions client;  // the credentials, and TLS for "rediss://"
  std::string shown;     // the URL with its password hidden
};

// Reads `url` and the credentials and TLS files of `options`. InvalidArgument for a malformed URL,
// a bad percent-encoding, credentials given both in the URL and in `options` that differ, TLS
// files with a "redis://" URL, or files that do not hold what they should.
Result<StoreAddress> ReadStoreAddress(const std::string& url, const StoreOptions& options);

// InvalidArgument naming the commands that the user `client` signed in as (address's) may not run
// on `key` (a key of the store), of those a store opened `for_writing` or not needs. OK if the
// cluster cannot tell (a Redis before 7.0): a forbidden command then fails when it runs, naming
// itself.
Status CheckPermissions(ClusterClient& client, const std::string& key, bool for_writing,
                        const StoreAddress& address);

}  // namespace fpstore::internal::redis

#endif  // FPSTORE_LIB_REDIS_ACCESS_H_
