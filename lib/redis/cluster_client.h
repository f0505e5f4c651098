// A Redis Cluster client over connections of its own (redis/connection.h: TCP or TLS, hiredis to
// format and parse), as hiredis has no cluster support: it learns which
// node serves each of the 16,384 hash slots (CLUSTER SLOTS), sends each command to the master of
// its key's slot, pipelines the commands of one call per node, and follows the cluster's
// redirections (MOVED after a slot moved for good, ASK while one is moving) and its failovers (a
// node that stops answering: the slot map is read again from another node, and the commands
// retried until a deadline).
//
// A command may thus reach the cluster more than once when a connection breaks after it was sent:
// every command given to Run must be idempotent (SET, ZADD, ZREM, DEL, reads), or its caller must
// expect a repeat (a lock's SET NX, refused by the lock it took itself: redis/locks.h).
//
// Thread safety: a client is used by one thread at a time.

#ifndef FPSTORE_LIB_REDIS_CLUSTER_CLIENT_H_
#define FPSTORE_LIB_REDIS_CLUSTER_CLIENT_H_

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fpstore/status.h"
#include "redis/connection.h"

namespace fpstore::internal::redis {

constexpr int kSlots = 16384;

// The hash slot of `key`: CRC16 (XModem) of its hash tag (the bytes between the first '{' and the
// next '}', if that is not empty) or of the whole key, mod 16384, as Redis Cluster computes it.
std::uint16_t KeySlot(std::string_view key);

// IOError for an error reply `r` to what the caller was doing.
inline Status ReplyError(const Reply& r, const std::string& what) {
  return Status::IOError("Redis, " + what + ": " + r.str);
}

// One command: its arguments, and the key whose slot routes it.
struct Command {
  std::string key;
  std::vector<std::string> args;
};

// Who the client signs in as on every connection it opens (AUTH): an ACL user (empty: Redis's
// "default", the user of requirepass) and its password (nothing is sent when both are empty).
struct Credentials {
  std::string user;
  std::string password;
  bool empty() const { return user.empty() && password.empty(); }
};

struct ClientOptions {
  Credentials credentials;
  // TLS to every node, checked against this (shared by the clients of one store); null: plain TCP.
  std::shared_ptr<const TlsContext> tls;
  // How long one call may take in all, retries included, before it fails with IOError.
  std::chrono::milliseconds deadline{15000};
  // Connecting to a node and waiting for one of its replies.
  std::chrono::milliseconds io_timeout{2000};
};

class ClusterClient {
 public:
  // Connects to the node at `seed` ("host:port") and reads the slot map. IOError if no node
  // answers, InvalidArgument if the address is malformed, the node is not in cluster mode, or it
  // refuses the credentials (or asks for some): the message says which, never the password.
  static Result<std::unique_ptr<ClusterClient>> Connect(const std::string& seed,
                                                        const ClientOptions& options = {});
  // The same from the first of `seeds` (not empty) that answers, so that a cluster whose seed
  // node is down is still reached through the others.
  static Result<std::unique_ptr<ClusterClient>> Connect(const std::vector<std::string>& seeds,
                                                        const ClientOptions& options = {});
  ~ClusterClient();
  ClusterClient(const ClusterClient&) = delete;
  ClusterClient& operator=(const ClusterClient&) = delete;

  // Runs `commands` on the masters of their keys' slots, pipelined per node; the replies in the
  // commands' order. An error reply of Redis's own (a wrong type, a script's error) is a reply;
  // IOError when the cluster did not answer every command by the deadline.
  Result<std::vector<Reply>> Run(std::span<const Command> commands);
  Result<Reply> Run(const Command& command);
  // Run for commands whose replies matter only as errors: an error reply is an IOError naming
  // `what` and the command's key.
  Status RunAll(std::span<const Command> commands, const std::string& what);
  Status RunAll(const Command& command, const std::string& what) {
    return RunAll(std::span(&command, 1), what);
  }

  // Runs `args` on the node at `address` (a master's, from Masters), with no routing.
  Result<Reply> RunOn(const std::string& address, const std::vector<std::string>& args);

  // The masters' addresses as the slot map knows them, each once, in slot order.
  std::vector<std::string> Masters() const;

  // Waits until `replicas` replicas of every node that has run commands of this client since the
  // last call (or ForgetSent) have acknowledged them (Redis's WAIT), for up to `timeout`. IOError
  // naming the node that fell short, or whose connection broke meanwhile: WAIT counts only what
  // its own connection sent, so a new connection cannot vouch for what the old one sent.
  Status WaitForReplicas(int replicas, std::chrono::milliseconds timeout);
  // Forgets what was sent so far: the next WaitForReplicas waits for what is sent from now on, so
  // that a write never waits for, or fails on, what an earlier call sent.
  void ForgetSent();

  // Calls batch(keys) with every key of every master that matches the glob `pattern` (SCAN), a
  // batch at a time; stops at batch's first error. The masters are those of a slot map read
  // first, so that a failover since the last call is seen. A key that moves between masters
  // meanwhile may be missed or seen twice.
  Status ScanKeys(const std::string& pattern,
                  const std::function<Status(std::vector<std::string>&)>& batch);

  // Every node this client has heard of, masters and replicas, from its seeds and slot maps.
  const std::vector<std::string>& nodes() const { return seeds_; }

  // Redirections followed since the client connected (for tests).
  std::uint64_t redirections() const { return redirections_; }

 private:
  ClusterClient(std::vector<std::string> seeds, ClientOptions options);

  // What one Run keeps from round to round.
  struct Attempt {
    std::span<const Command> commands;
    std::vector<Reply> replies;
    std::map<std::size_t, std::string> asked;  // a command's node for one try, after ASK
    std::vector<std::size_t> next;             // the commands to try again next round
    std::string last_error;
    bool reread = false;  // the slot map is to be read again before the next round
  };
  // Sends the `pending` commands to their nodes, pipelined, then reads every node's replies.
  void RunRound(const std::vector<std::size_t>& pending, Attempt& a);
  // Reads the replies of the commands `indexes` from `node`, sent over `c` (null: the send
  // failed); what was redirected, refused or not read goes to a.next.
  void ReadReplies(const std::string& node, Connection* c, const std::vector<std::size_t>& indexes,
                   bool ran_before, Attempt& a);
  // Reads the slot map from the first node that answers, among those known.
  Status ReadSlotMap();
  // A connection to `address`, made and signed in if needed; null if it cannot be made, and
  // refused_ set if it never can (refused credentials, a certificate not verified).
  Connection* ConnectionTo(const std::string& address);
  // Signs in on the new connection `c` to `address`; false if the node refused (refused_ says why).
  bool SignIn(Connection& c, const std::string& address);
  void Drop(const std::string& address);

  std::vector<std::string> seeds_;  // every node ever seen, to read the slot map from
  const ClientOptions options_;
  std::array<std::string, kSlots> slot_master_;  // empty: no master known
  std::map<std::string, std::unique_ptr<Connection>> connections_;
  // Nodes that ran commands of this client, over their current connections, since the last
  // WaitForReplicas; and those whose connection broke after running some.
  std::set<std::string> unwaited_;
  std::set<std::string> lost_;
  std::uint64_t redirections_ = 0;
  // Why a node refused this client's credentials (or asked for some), or TLS to it failed for
  // good: no retry can mend it, so every call fails with it from then on.
  Status refused_;
};

}  // namespace fpstore::internal::redis

#endif  // FPSTORE_LIB_REDIS_CLUSTER_CLIENT_H_
