#include "redis/access.h"

#include <vector>

#include "redis/layout.h"

namespace fpstore::internal::redis {

namespace {

constexpr std::string_view kScheme = "redis://";
constexpr std::string_view kTlsScheme = "rediss://";

// The part of `url` after its scheme; npos if it has neither.
std::size_t AfterScheme(std::string_view url) {
  if (url.starts_with(kScheme)) return kScheme.size();
  if (url.starts_with(kTlsScheme)) return kTlsScheme.size();
  return std::string_view::npos;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// `encoded` with each %XX made the byte it encodes; false for a '%' not followed by two hex digits.
bool PercentDecode(std::string_view encoded, std::string& out) {
  out.clear();
  for (std::size_t i = 0; i < encoded.size(); ++i) {
    if (encoded[i] != '%') {
      out.push_back(encoded[i]);
      continue;
    }
    const int high = i + 2 < encoded.size() ? HexDigit(encoded[i + 1]) : -1;
    const int low = high < 0 ? -1 : HexDigit(encoded[i + 2]);
    if (low < 0) return false;
    out.push_back(static_cast<char>(high * 16 + low));
    i += 2;
  }
  return true;
}

// One credential from the URL and the same from the options: the one given, or InvalidArgument
// if both are and differ.
Status Merge(const std::string& from_url, const std::string& from_options, const char* option,
             const std::string& shown, std::string& out) {
  if (!from_url.empty() && !from_options.empty() && from_url != from_options) {
    return Status::InvalidArgument(shown + ": the URL and StoreOptions::" + option + " differ");
  }
  out = from_url.empty() ? from_options : from_url;
  return Status::OK();
}

}  // namespace

bool IsRedisPath(std::string_view path) { return AfterScheme(path) != std::string_view::npos; }

std::string HidePassword(std::string_view url) {
  const std::size_t begin = AfterScheme(url);
  // A store's name has no '@': the last one ends USER:PASSWORD, whatever the password holds.
  const std::size_t at = url.rfind('@');
  if (begin == std::string_view::npos || at == std::string_view::npos || at < begin) {
    return std::string(url);
  }
  const std::size_t colon = url.find(':', begin);
  if (colon > at) return std::string(url);
  return std::string(url.substr(0, colon + 1)) + "***" + std::string(url.substr(at));
}

Result<StoreAddress> ReadStoreAddress(const std::string& url, const StoreOptions& options) {
  StoreAddress address;
  address.shown = HidePassword(url);
  const std::size_t begin = AfterScheme(url);
  const std::size_t at = url.rfind('@');
  const std::size_t host = at == std::string::npos || at < begin ? begin : at + 1;
  const std::size_t slash = begin == std::string::npos ? begin : url.find('/', host);
  if (slash == std::string::npos || slash == host) {
    return Status::InvalidArgument(
        "\"" + address.shown +
        "\" is not a Redis store's address (redis://[USER[:PASSWORD]@]HOST:PORT/NAME, e.g. "
        "redis://127.0.0.1:7000/crawl)");
  }
  address.seed = url.substr(host, slash - host);
  address.name = url.substr(slash + 1);
  if (Status s = Layout::CheckName(address.name); !s.ok()) return s.WithContext(address.shown);
  Credentials from_url;
  if (host != begin) {
    const std::string_view info = std::string_view(url).substr(begin, at - begin);
    const std::size_t colon = info.find(':');
    if (!PercentDecode(info.substr(0, colon), from_url.user) ||
        (colon != std::string_view::npos &&
         !PercentDecode(info.substr(colon + 1), from_url.password))) {
      return Status::InvalidArgument(address.shown +
                                     ": a '%' in the user or password must start %XX, two hex "
                                     "digits (a '%' itself is %25)");
    }
  }
  Credentials& credentials = address.client.credentials;
  if (Status s =
          Merge(from_url.user, options.redis_user, "redis_user", address.shown, credentials.user);
      !s.ok()) {
    return s;
  }
  if (Status s = Merge(from_url.password, options.redis_password, "redis_password", address.shown,
                       credentials.password);
      !s.ok()) {
    return s;
  }
  const TlsFiles files{options.redis_tls_ca_file, options.redis_tls_cert_file,
                       options.redis_tls_key_file};
  if (!url.starts_with(kTlsScheme)) {
    if (files.ca_file.empty() && files.cert_file.empty() && files.key_file.empty()) {
      return address;
    }
    return Status::InvalidArgument(address.shown +
                                   ": redis_tls_* options are for TLS, a rediss:// URL; this "
                                   "one speaks plain TCP");
  }
  Result<std::shared_ptr<TlsContext>> tls = TlsContext::Create(files);
  if (!tls.ok()) return tls.status().WithContext(address.shown);
  address.client.tls = *std::move(tls);
  return address;
}

namespace {

// Returns the commands of ARGV (each "name arg...", KEYS[1] put in for "K") that the current user
// may not run; -1 where redis.acl_check_cmd is missing (before Redis 7.0).
constexpr const char* kPermissionsScript =
    "if redis.acl_check_cmd == nil then return -1 end "
    "local denied = {} "
    "for _, spec in ipairs(ARGV) do "
    "  local args = {} "
    "  for word in string.gmatch(spec, '%S+') do "
    "    if word == 'K' then word = KEYS[1] end "
    "    table.insert(args, word) "
    "  end "
    "  if not redis.acl_check_cmd(unpack(args)) then table.insert(denied, args[1]) end "
    "end "
    "return denied";

// What fpstore runs on a store's keys (and WAIT, SCAN), by how the store is opened.
const std::vector<std::string> kReads = {"hget K f",   "hgetall K",         "hkeys K",
                                         "hlen K",     "zrangebylex K - +", "zrange K 0 -1",
                                         "zscore K m", "zcount K 0 1",      "scan 0"};
const std::vector<std::string> kWrites = {"zadd K 0 m",      "zrem K m", "hset K f v", "hdel K f",
                                          "set K v NX PX 1", "get K",    "del K",      "exists K",
                                          "wait 0 0",        "unlink K"};

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  return s;
}

}  // namespace

Status CheckPermissions(ClusterClient& client, const std::string& key, bool for_writing,
                        const StoreAddress& address) {
  std::vector<std::string> args = {"EVAL", kPermissionsScript, "1", key};
  args.insert(args.end(), kReads.begin(), kReads.end());
  if (for_writing) args.insert(args.end(), kWrites.begin(), kWrites.end());
  Result<Reply> reply = client.Run(Command{key, std::move(args)});
  if (!reply.ok()) return reply.status().WithContext("opening " + address.shown);
  std::string denied;
  if (reply->type == Reply::Type::kError) {
    // A user who may not run scripts can still read; a writer needs EVAL for its locks.
    if (!reply->str.starts_with("NOPERM") || !for_writing) return Status::OK();
    denied = "EVAL";
  }
  for (const Reply& name : reply->elements) {
    denied += (denied.empty() ? "" : ", ") + Upper(name.str);
  }
  if (denied.empty()) return Status::OK();
  return Status::InvalidArgument(
      address.shown + ": the Redis user '" +
      (address.client.credentials.user.empty() ? "default" : address.client.credentials.user) +
      "' may not run " + denied + ", which fpstore needs to " + (for_writing ? "write" : "read") +
      " a store (NOPERM; grant them on the store's keys fps:*, docs/scale.md)");
}

}  // namespace fpstore::internal::redis
