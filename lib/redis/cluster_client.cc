#include "redis/cluster_client.h"

#include <algorithm>
#include <numeric>
#include <thread>
#include <utility>

#include "util/parse_number.h"

namespace fpstore::internal::redis {

namespace {

// CRC16 of Redis Cluster's key hashing: the XModem polynomial 0x1021, initial value 0.
constexpr std::array<std::uint16_t, 256> kCrc16Table = [] {
  std::array<std::uint16_t, 256> table{};
  for (int byte = 0; byte < 256; ++byte) {
    std::uint16_t crc = static_cast<std::uint16_t>(byte << 8);
    for (int bit = 0; bit < 8; ++bit) {
      crc = static_cast<std::uint16_t>((crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1);
    }
    table[byte] = crc;
  }
  return table;
}();

std::uint16_t Crc16(std::string_view bytes) {
  std::uint16_t crc = 0;
  for (const char c : bytes) {
    crc = static_cast<std::uint16_t>(
        (crc << 8) ^ kCrc16Table[((crc >> 8) ^ static_cast<unsigned char>(c)) & 0xff]);
  }
  return crc;
}

// "host:port", split; false if malformed.
bool SplitAddress(const std::string& address, std::string& host, int& port) {
  const std::size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  host = address.substr(0, colon);
  return ParseNumber(std::string_view(address).substr(colon + 1), port) && port > 0 && port < 65536;
}

// A redirection's slot and address, from "MOVED 3999 127.0.0.1:7002" or "ASK ...".
bool ParseRedirection(std::string_view error, int& slot, std::string& address) {
  const std::size_t first = error.find(' ');
  const std::size_t second = error.find(' ', first + 1);
  if (first == std::string_view::npos || second == std::string_view::npos) return false;
  const std::string_view number = error.substr(first + 1, second - first - 1);
  if (!ParseNumber(number, slot) || slot < 0 || slot >= kSlots) return false;
  address = std::string(error.substr(second + 1));
  return !address.empty();
}

// What a reply says of its command: its answer (a value, or Redis's own error), a redirection
// (MOVED or ASK, with the slot and the address), or to try it again a little later (the cluster is
// failing over, or the node is loading).
enum class Verdict { kAnswer, kMoved, kAsk, kRetry };
Verdict Classify(const Reply& reply, int& slot, std::string& address) {
  if (reply.type != Reply::Type::kError) return Verdict::kAnswer;
  const std::string& e = reply.str;
  if (e.starts_with("MOVED ") && ParseRedirection(e, slot, address)) return Verdict::kMoved;
  if (e.starts_with("ASK ") && ParseRedirection(e, slot, address)) return Verdict::kAsk;
  if (e.starts_with("TRYAGAIN") || e.starts_with("CLUSTERDOWN") || e.starts_with("LOADING") ||
      e.starts_with("MASTERDOWN")) {
    return Verdict::kRetry;
  }
  return Verdict::kAnswer;
}

// Non-OK if the error reply `error` of the node at `address` says that it will not serve a client
// with the credentials `who`: they are wrong, missing, or may not run the command. Redis does not
// tell a wrong password from an unknown or disabled user, so neither can this.
Status Refusal(const std::string& address, std::string_view error, const Credentials& who) {
  const std::string user = who.user.empty() ? "default" : who.user;
  const std::string at = "the Redis at " + address;
  if (error.starts_with("NOAUTH")) {
    return Status::InvalidArgument(
        at +
        " asks for a password (NOAUTH): give one in the URL "
        "(redis://USER:PASSWORD@HOST:PORT/NAME) or in StoreOptions::redis_password; the "
        "tools read it from FPSTORE_REDIS_PASSWORD or --redis-password-file");
  }
  if (error.starts_with("WRONGPASS") || error.starts_with("ERR invalid password")) {
    if (who.user.empty()) {
      return Status::InvalidArgument(at + " refused the password (WRONGPASS): wrong password");
    }
    return Status::InvalidArgument(at + " refused user '" + user +
                                   "' (WRONGPASS): wrong password, or an unknown or disabled user");
  }
  if (error.starts_with("ERR AUTH") && error.find("without any password") != std::string::npos) {
    return Status::InvalidArgument(at + " has no password for user '" + user +
                                   "', but one was given");
  }
  if (error.starts_with("NOPERM")) {
    return Status::InvalidArgument(at + " does not let user '" + user +
                                   "' in: " + std::string(error));
  }
  return Status::OK();
}

}  // namespace

std::uint16_t KeySlot(std::string_view key) {
  const std::size_t open = key.find('{');
  if (open != std::string_view::npos) {
    const std::size_t close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) {
      key = key.substr(open + 1, close - open - 1);
    }
  }
  return Crc16(key) & (kSlots - 1);
}

ClusterClient::ClusterClient(std::vector<std::string> seeds, ClientOptions options)
    : seeds_(std::move(seeds)), options_(options) {}

ClusterClient::~ClusterClient() = default;

Result<std::unique_ptr<ClusterClient>> ClusterClient::Connect(const std::string& seed,
                                                              const ClientOptions& options) {
  return Connect(std::vector<std::string>{seed}, options);
}

Result<std::unique_ptr<ClusterClient>> ClusterClient::Connect(const std::vector<std::string>& seeds,
                                                              const ClientOptions& options) {
  if (seeds.empty()) return Status::InvalidArgument("no Redis address to connect to");
  for (const std::string& seed : seeds) {
    std::string host;
    int port = 0;
    if (!SplitAddress(seed, host, port)) {
      return Status::InvalidArgument("\"" + seed + "\" is not a Redis address (host:port)");
    }
  }
  std::unique_ptr<ClusterClient> client(new ClusterClient(seeds, options));
  if (Status s = client->ReadSlotMap(); !s.ok()) return s;
  return client;
}

Connection* ClusterClient::ConnectionTo(const std::string& address) {
  if (auto it = connections_.find(address); it != connections_.end()) return it->second.get();
  std::string host;
  int port = 0;
  if (!SplitAddress(address, host, port)) return nullptr;
  Result<std::unique_ptr<Connection>> c =
      Connection::Open(host, port, options_.io_timeout, options_.tls.get());
  if (!c.ok()) {
    // A node that is down may come back; a certificate that fails will fail again.
    if (c.status().IsInvalidArgument()) refused_ = c.status();
    return nullptr;
  }
  if (!SignIn(**c, address)) return nullptr;
  return connections_.emplace(address, *std::move(c)).first->second.get();
}

bool ClusterClient::SignIn(Connection& c, const std::string& address) {
  const Credentials& who = options_.credentials;
  if (who.empty()) return true;
  std::vector<std::string> auth = {"AUTH"};
  if (!who.user.empty()) auth.push_back(who.user);
  auth.push_back(who.password);
  Reply reply;
  c.Append(auth);
  if (!c.Read(reply)) return false;
  if (reply.type != Reply::Type::kError) return true;
  refused_ = Refusal(address, reply.str, who);
  if (refused_.ok()) refused_ = Status::IOError("the Redis at " + address + " refused AUTH");
  return false;
}

void ClusterClient::Drop(const std::string& address) {
  // Commands it ran that no replica has acknowledged can no longer be waited for.
  if (unwaited_.erase(address) != 0) lost_.insert(address);
  connections_.erase(address);
}

Status ClusterClient::ReadSlotMap() {
  std::string last_error = "no node to ask";
  // Every node seen so far may answer; the masters first, as they are the likeliest to be up.
  std::vector<std::string> candidates = Masters();
  for (const std::string& s : seeds_) {
    if (std::find(candidates.begin(), candidates.end(), s) == candidates.end()) {
      candidates.push_back(s);
    }
  }
  for (const std::string& address : candidates) {
    Result<Reply> got = RunOn(address, {"CLUSTER", "SLOTS"});
    if (!refused_.ok()) return refused_;
    if (!got.ok()) {
      last_error = address + " did not answer";
      continue;
    }
    const Reply& reply = *got;
    if (reply.type == Reply::Type::kError) {
      last_error = address + ": " + reply.str;
      if (Status s = Refusal(address, reply.str, options_.credentials); !s.ok()) return s;
      if (reply.str.find("cluster support disabled") != std::string::npos) {
        return Status::InvalidArgument("the Redis at " + address + " is not in cluster mode");
      }
      continue;
    }
    if (reply.type != Reply::Type::kArray || reply.elements.empty()) {
      last_error = address + " knows no slots yet";
      continue;
    }
    std::string host;
    int port = 0;
    SplitAddress(address, host, port);
    std::array<std::string, kSlots> map;
    for (const Reply& range : reply.elements) {
      if (range.elements.size() < 3) continue;
      const long long first = range.elements[0].integer, last = range.elements[1].integer;
      for (std::size_t n = 2; n < range.elements.size(); ++n) {
        const Reply& node = range.elements[n];
        if (node.elements.size() < 2) continue;
        const std::string ip = node.elements[0].str.empty() ? host : node.elements[0].str;
        const std::string at = ip + ":" + std::to_string(node.elements[1].integer);
        if (std::find(seeds_.begin(), seeds_.end(), at) == seeds_.end()) seeds_.push_back(at);
        if (n == 2) {
          for (long long slot = std::max(0LL, first); slot <= std::min<long long>(last, kSlots - 1);
               ++slot) {
            map[static_cast<std::size_t>(slot)] = at;
          }
        }
      }
    }
    slot_master_ = std::move(map);
    return Status::OK();
  }
  return Status::IOError("no node of the Redis Cluster answered CLUSTER SLOTS (" + last_error +
                         ")");
}

std::vector<std::string> ClusterClient::Masters() const {
  std::vector<std::string> masters;
  for (const std::string& m : slot_master_) {
    if (!m.empty() && std::find(masters.begin(), masters.end(), m) == masters.end()) {
      masters.push_back(m);
    }
  }
  return masters;
}

Result<Reply> ClusterClient::Run(const Command& command) {
  Result<std::vector<Reply>> replies = Run(std::span(&command, 1));
  if (!replies.ok()) return replies.status();
  return std::move((*replies)[0]);
}

Status ClusterClient::RunAll(std::span<const Command> commands, const std::string& what) {
  if (commands.empty()) return Status::OK();
  Result<std::vector<Reply>> replies = Run(commands);
  if (!replies.ok()) return replies.status().WithContext(what);
  for (std::size_t i = 0; i < replies->size(); ++i) {
    if ((*replies)[i].type == Reply::Type::kError) {
      return Status::IOError("Redis, " + what + " (" + commands[i].key + "): " + (*replies)[i].str);
    }
  }
  return Status::OK();
}

Result<std::vector<Reply>> ClusterClient::Run(std::span<const Command> commands) {
  Attempt a;
  a.commands = commands;
  a.replies.resize(commands.size());
  std::vector<std::size_t> pending(commands.size());
  std::iota(pending.begin(), pending.end(), std::size_t{0});
  const auto deadline = std::chrono::steady_clock::now() + options_.deadline;
  for (int round = 0;; ++round) {
    if (a.reread) {
      if (Status s = ReadSlotMap(); !s.ok()) a.last_error = s.message();
      a.reread = false;
    }
    RunRound(pending, a);
    if (!refused_.ok()) return refused_;
    if (a.next.empty()) return std::move(a.replies);
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status::IOError("the Redis Cluster did not answer " + std::to_string(a.next.size()) +
                             " of " + std::to_string(commands.size()) + " commands within " +
                             std::to_string(options_.deadline.count()) + " ms (" + a.last_error +
                             ")");
    }
    pending = std::exchange(a.next, {});
    // A redirection is followed at once; a node that is down or a cluster that is failing over
    // is waited for, a little longer each time.
    if (round > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(20 * round, 250)));
  }
}

void ClusterClient::RunRound(const std::vector<std::size_t>& pending, Attempt& a) {
  std::map<std::string, std::vector<std::size_t>> by_node;
  for (const std::size_t i : pending) {
    const auto ask = a.asked.find(i);
    const std::string& node =
        ask != a.asked.end() ? ask->second : slot_master_[KeySlot(a.commands[i].key)];
    if (node.empty()) {
      a.next.push_back(i);
      a.reread = true;
      a.last_error = "no master serves slot " + std::to_string(KeySlot(a.commands[i].key));
    } else {
      by_node[node].push_back(i);
    }
  }
  // Every node's commands first, then every node's replies.
  std::map<std::string, Connection*> sent_to;  // null: the send failed
  // Whether each node was waited for before: a node is, once it may have run a command.
  std::map<std::string, bool> ran_before;
  for (const auto& [node, indexes] : by_node) {
    ran_before[node] = unwaited_.count(node) != 0;
    Connection* c = ConnectionTo(node);
    if (c != nullptr) {
      unwaited_.insert(node);
      for (const std::size_t i : indexes) {
        if (a.asked.count(i) != 0) c->Append({"ASKING"});
        c->Append(a.commands[i].args);
      }
    }
    sent_to[node] = c != nullptr && c->Flush() ? c : nullptr;
  }
  for (const auto& [node, indexes] : by_node) {
    ReadReplies(node, sent_to[node], indexes, ran_before[node], a);
  }
}

void ClusterClient::ReadReplies(const std::string& node, Connection* c,
                                const std::vector<std::size_t>& indexes, bool ran_before,
                                Attempt& a) {
  // The node is waited for if it ran a command: not if it only redirected or refused them
  // (a stale map's old master, now a replica or loading), but if the connection broke.
  bool ran = false;
  std::size_t k = 0;
  for (; c != nullptr && k < indexes.size(); ++k) {
    const std::size_t i = indexes[k];
    Reply reply;
    if (a.asked.count(i) != 0 && !c->Read(reply)) break;  // ASKING's +OK
    if (!c->Read(reply)) break;
    a.asked.erase(i);
    int slot = 0;
    std::string address;
    switch (Classify(reply, slot, address)) {
      case Verdict::kAnswer:
        a.replies[i] = std::move(reply);
        ran = true;
        continue;
      case Verdict::kMoved:
        slot_master_[static_cast<std::size_t>(slot)] = address;
        a.reread = true;  // a failover or reshard moves more than one slot
        ++redirections_;
        break;
      case Verdict::kAsk:
        a.asked[i] = address;
        ++redirections_;
        break;
      case Verdict::kRetry:
        a.last_error = node + ": " + reply.str;
        a.reread = a.reread || reply.str.starts_with("CLUSTERDOWN");
    }
    a.next.push_back(i);
  }
  if (c != nullptr && k == indexes.size() && !ran && !ran_before) unwaited_.erase(node);
  if (k < indexes.size()) {  // the connection broke: what was not read is tried again
    a.last_error = node + (c == nullptr ? " did not take the commands" : " stopped answering");
    Drop(node);
    a.reread = true;
    a.next.insert(a.next.end(), indexes.begin() + static_cast<std::ptrdiff_t>(k), indexes.end());
  }
}

Status ClusterClient::WaitForReplicas(int replicas, std::chrono::milliseconds timeout) {
  std::set<std::string> nodes, lost;
  nodes.swap(unwaited_);
  lost.swap(lost_);
  Status result;
  if (!lost.empty()) {
    result = Status::IOError("the connection to the Redis at " + *lost.begin() +
                             " broke before a replica acknowledged the commands it ran");
  }
  std::vector<std::pair<std::string, Connection*>> asked;
  const std::vector<std::string> args = {"WAIT", std::to_string(replicas),
                                         std::to_string(timeout.count())};
  for (const std::string& node : nodes) {
    Connection* c = ConnectionTo(node);
    if (c != nullptr) c->Append(args);
    if (c == nullptr || !c->Flush()) {
      Drop(node);
      if (result.ok()) result = Status::IOError("the Redis at " + node + " did not answer WAIT");
      continue;
    }
    asked.emplace_back(node, c);
  }
  // Each node waits on its own; replies are read only after every WAIT is sent.
  for (const auto& [node, c] : asked) {
    Reply reply;
    // WAIT may take its whole timeout, beyond the connection's reply timeout.
    c->SetTimeout(timeout + options_.io_timeout);
    const bool read = c->Read(reply);
    c->SetTimeout(options_.io_timeout);
    if (!read) {
      Drop(node);
      if (result.ok()) result = Status::IOError("the Redis at " + node + " did not answer WAIT");
    } else if (reply.type != Reply::Type::kInteger || reply.integer < replicas) {
      if (result.ok()) {
        result = Status::IOError(
            "the Redis at " + node + " had " +
            (reply.type == Reply::Type::kInteger ? std::to_string(reply.integer) : reply.str) +
            " of " + std::to_string(replicas) + " replicas acknowledge its writes within " +
            std::to_string(timeout.count()) + " ms");
      }
    }
  }
  return result;
}

void ClusterClient::ForgetSent() {
  unwaited_.clear();
  lost_.clear();
}

Status ClusterClient::ScanKeys(const std::string& pattern,
                               const std::function<Status(std::vector<std::string>&)>& batch) {
  if (Status s = ReadSlotMap(); !s.ok()) return s;
  for (const std::string& master : Masters()) {
    std::string cursor = "0";
    do {
      Result<Reply> reply = RunOn(master, {"SCAN", cursor, "MATCH", pattern, "COUNT", "10000"});
      if (!reply.ok()) return reply.status();
      if (reply->type != Reply::Type::kArray || reply->elements.size() != 2) {
        return Status::IOError("the Redis at " + master + " answered SCAN with " +
                               (reply->type == Reply::Type::kError ? reply->str : "no cursor"));
      }
      cursor = reply->elements[0].str;
      std::vector<std::string> keys;
      keys.reserve(reply->elements[1].elements.size());
      for (Reply& key : reply->elements[1].elements) keys.push_back(std::move(key.str));
      if (!keys.empty()) {
        if (Status s = batch(keys); !s.ok()) return s;
      }
    } while (cursor != "0");
  }
  return Status::OK();
}

Result<Reply> ClusterClient::RunOn(const std::string& address,
                                   const std::vector<std::string>& args) {
  Connection* c = ConnectionTo(address);
  Reply reply;
  if (c != nullptr) c->Append(args);
  if (c == nullptr || !c->Read(reply)) {
    Drop(address);
    if (!refused_.ok()) return refused_;
    return Status::IOError("the Redis at " + address + " did not answer");
  }
  return reply;
}

}  // namespace fpstore::internal::redis
