#include "redis/connection.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace fpstore::internal::redis {

namespace {

// Bytes moved per read from the socket, and per TLS write.
constexpr std::size_t kChunk = 16 * 1024;

Reply Copy(const redisReply& r) {
  Reply reply;
  switch (r.type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
      reply.type = r.type == REDIS_REPLY_STRING   ? Reply::Type::kString
                   : r.type == REDIS_REPLY_STATUS ? Reply::Type::kStatus
                                                  : Reply::Type::kError;
      reply.str.assign(r.str, r.len);
      break;
    case REDIS_REPLY_INTEGER:
      reply.type = Reply::Type::kInteger;
      reply.integer = r.integer;
      break;
    case REDIS_REPLY_ARRAY:
      reply.type = Reply::Type::kArray;
      reply.elements.reserve(r.elements);
      for (std::size_t i = 0; i < r.elements; ++i) reply.elements.push_back(Copy(*r.element[i]));
      break;
    default:
      reply.type = Reply::Type::kNil;
  }
  return reply;
}

// Sends all of `data`; false if the connection broke or timed out.
bool SendAll(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// Receives some bytes: how many, 0 if the connection broke or timed out.
std::size_t ReceiveSome(int fd, char* buffer, std::size_t size) {
  for (;;) {
    const ssize_t n = recv(fd, buffer, size, 0);
    if (n < 0 && errno == EINTR) continue;
    return n > 0 ? static_cast<std::size_t>(n) : 0;
  }
}

// OpenSSL's reasons for the last failure, oldest first, and its queue emptied.
std::string OpenSslErrors() {
  std::string reasons;
  while (const unsigned long e = ERR_get_error()) {
    char text[256];
    ERR_error_string_n(e, text, sizeof(text));
    reasons += (reasons.empty() ? "" : "; ") + std::string(text);
  }
  return reasons.empty() ? "no reason given" : reasons;
}

bool SetBlocking(int fd, bool blocking) {
  const int flags = fcntl(fd, F_GETFL, 0);
  return flags >= 0 && fcntl(fd, F_SETFL, blocking ? flags & ~O_NONBLOCK : flags | O_NONBLOCK) == 0;
}

// A connected socket to `ai`, or -1; `error` says why not.
int ConnectSocket(const addrinfo& ai, std::chrono::milliseconds timeout, std::string& error) {
  const int fd = socket(ai.ai_family, ai.ai_socktype | SOCK_CLOEXEC, ai.ai_protocol);
  if (fd < 0) {
    error = std::strerror(errno);
    return -1;
  }
  bool connected = SetBlocking(fd, false);
  if (connected && connect(fd, ai.ai_addr, ai.ai_addrlen) != 0) {
    connected = false;
    if (errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int ready = 0;
      do {
        ready = poll(&p, 1, static_cast<int>(timeout.count()));
      } while (ready < 0 && errno == EINTR);
      int so_error = 0;
      socklen_t length = sizeof(so_error);
      if (ready == 0) {
        errno = ETIMEDOUT;
      } else if (ready > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &length) == 0) {
        connected = so_error == 0;
        errno = so_error;
      }
    }
  }
  const int one = 1;
  if (connected) {
    connected =
        SetBlocking(fd, true) && setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) == 0;
  }
  if (!connected) {
    error = std::strerror(errno);
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

// ---- TlsContext ----

Result<std::shared_ptr<TlsContext>> TlsContext::Create(const TlsFiles& files) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) return Status::IOError("TLS: " + OpenSslErrors());
  std::shared_ptr<TlsContext> context(new TlsContext(ctx));
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  const bool trusted = files.ca_file.empty() ? SSL_CTX_set_default_verify_paths(ctx) == 1
                                             : SSL_CTX_load_verify_locations(
                                                   ctx, files.ca_file.c_str(), nullptr) == 1;
  if (!trusted) {
    return Status::InvalidArgument(
        "redis_tls_ca_file: no CA certificate read from " +
        (files.ca_file.empty() ? std::string("the system's") : "\"" + files.ca_file + "\"") + " (" +
        OpenSslErrors() + ")");
  }
  if (files.cert_file.empty() != files.key_file.empty()) {
    return Status::InvalidArgument(
        "redis_tls_cert_file and redis_tls_key_file: give both or neither");
  }
  if (!files.cert_file.empty() &&
      SSL_CTX_use_certificate_chain_file(ctx, files.cert_file.c_str()) != 1) {
    return Status::InvalidArgument("redis_tls_cert_file: no certificate read from \"" +
                                   files.cert_file + "\" (" + OpenSslErrors() + ")");
  }
  if (!files.key_file.empty() &&
      (SSL_CTX_use_PrivateKey_file(ctx, files.key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
       SSL_CTX_check_private_key(ctx) != 1)) {
    return Status::InvalidArgument(
        "redis_tls_key_file: no private key of the certificate read "
        "from \"" +
        files.key_file + "\" (" + OpenSslErrors() + ")");
  }
  return context;
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

// ---- Connection ----

Result<std::unique_ptr<Connection>> Connection::Open(const std::string& host, int port,
                                                     std::chrono::milliseconds timeout,
                                                     const TlsContext* tls) {
  const std::string where = host + ":" + std::to_string(port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int e = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
      e != 0) {
    return Status::IOError(where + ": " + gai_strerror(e));
  }
  std::string error = "no address";
  int fd = -1;
  for (const addrinfo* ai = found; ai != nullptr && fd < 0; ai = ai->ai_next) {
    fd = ConnectSocket(*ai, timeout, error);
  }
  freeaddrinfo(found);
  if (fd < 0) return Status::IOError(where + ": " + error);
  redisReader* reader = redisReaderCreate();
  if (reader == nullptr) {
    close(fd);
    return Status::IOError(where + ": out of memory");
  }
  std::unique_ptr<Connection> c(new Connection(fd, reader));
  if (!c->SetTimeout(timeout)) return Status::IOError(where + ": " + std::strerror(errno));
  if (tls != nullptr) {
    if (Status s = c->StartTls(*tls, host); !s.ok()) return s.WithContext(where);
  }
  return c;
}

Connection::~Connection() {
  if (ssl_ != nullptr) SSL_free(ssl_);  // and its BIOs
  redisReaderFree(reader_);
  close(fd_);
}

template <typename Step>
int Connection::Drive(Step step) {
  for (;;) {
    ERR_clear_error();  // SSL_get_error reads the queue: only this step's errors may be in it
    const int result = step();
    // Whatever OpenSSL wrote goes out first: a handshake message, a record, an alert.
    if (!SendEncrypted()) return -1;
    if (result > 0) return result;
    const int error = SSL_get_error(ssl_, result);
    if (error == SSL_ERROR_WANT_READ) {
      if (!ReceiveEncrypted()) return -1;
    } else if (error != SSL_ERROR_WANT_WRITE) {
      return result;
    }
  }
}

Status Connection::StartTls(const TlsContext& tls, const std::string& host) {
  ssl_ = SSL_new(tls.get());
  in_ = BIO_new(BIO_s_mem());
  out_ = BIO_new(BIO_s_mem());
  if (ssl_ == nullptr || in_ == nullptr || out_ == nullptr) {
    BIO_free(in_);
    BIO_free(out_);
    in_ = out_ = nullptr;
    return Status::IOError("TLS: " + OpenSslErrors());
  }
  SSL_set_bio(ssl_, in_, out_);
  SSL_set_connect_state(ssl_);
  // The certificate must name the node as it was reached: by its IP address or by its name.
  in6_addr ip;
  const bool is_ip =
      inet_pton(AF_INET, host.c_str(), &ip) == 1 || inet_pton(AF_INET6, host.c_str(), &ip) == 1;
  const bool named = is_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), host.c_str()) == 1
                           : SSL_set1_host(ssl_, host.c_str()) == 1 &&
                                 SSL_set_tlsext_host_name(ssl_, host.c_str()) == 1;
  if (!named) return Status::IOError("TLS: " + OpenSslErrors());
  if (Drive([this] { return SSL_connect(ssl_); }) == 1) return Status::OK();
  if (const long verified = SSL_get_verify_result(ssl_); verified != X509_V_OK) {
    ERR_clear_error();
    return Status::InvalidArgument(std::string("TLS: the node's certificate was not verified: ") +
                                   X509_verify_cert_error_string(verified));
  }
  if (ERR_peek_error() != 0) {
    return Status::InvalidArgument("TLS: the handshake failed (" + OpenSslErrors() + ")");
  }
  return Status::IOError("TLS: the connection broke during the handshake");
}

bool Connection::SetTimeout(std::chrono::milliseconds timeout) {
  const timeval tv{static_cast<time_t>(timeout.count() / 1000),
                   static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
  return setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0 &&
         setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) == 0;
}

void Connection::Append(const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  argv.reserve(args.size());
  lengths.reserve(args.size());
  for (const std::string& a : args) {
    argv.push_back(a.data());
    lengths.push_back(a.size());
  }
  char* command = nullptr;
  const int length =
      redisFormatCommandArgv(&command, static_cast<int>(args.size()), argv.data(), lengths.data());
  if (length > 0) queued_.append(command, static_cast<std::size_t>(length));
  redisFreeCommand(command);
}

bool Connection::Flush() {
  const bool sent = queued_.empty() || Send(queued_.data(), queued_.size());
  queued_.clear();
  return sent;
}

bool Connection::Read(Reply& out) {
  if (!Flush()) return false;
  for (;;) {
    void* raw = nullptr;
    if (redisReaderGetReply(reader_, &raw) != REDIS_OK) return false;
    if (raw != nullptr) {
      out = Copy(*static_cast<redisReply*>(raw));
      freeReplyObject(raw);
      return true;
    }
    char buffer[kChunk];
    const std::size_t n = Receive(buffer, sizeof(buffer));
    if (n == 0 || redisReaderFeed(reader_, buffer, n) != REDIS_OK) return false;
  }
}

bool Connection::Send(const char* data, std::size_t size) {
  if (ssl_ != nullptr) {
    for (std::size_t done = 0; done < size;) {
      const int part = static_cast<int>(std::min(kChunk, size - done));
      if (Drive([&] { return SSL_write(ssl_, data + done, part); }) != part) return false;
      done += static_cast<std::size_t>(part);
    }
    return true;
  }
  return SendAll(fd_, data, size);
}

std::size_t Connection::Receive(char* buffer, std::size_t size) {
  if (ssl_ != nullptr) {
    const int n = Drive([&] { return SSL_read(ssl_, buffer, static_cast<int>(size)); });
    return n > 0 ? static_cast<std::size_t>(n) : 0;
  }
  return ReceiveSome(fd_, buffer, size);
}

bool Connection::SendEncrypted() {
  char buffer[kChunk];
  int n = 0;
  while ((n = BIO_read(out_, buffer, sizeof(buffer))) > 0) {
    if (!SendAll(fd_, buffer, static_cast<std::size_t>(n))) return false;
  }
  return true;
}

bool Connection::ReceiveEncrypted() {
  char buffer[kChunk];
  const std::size_t n = ReceiveSome(fd_, buffer, sizeof(buffer));
  return n > 0 && BIO_write(in_, buffer, static_cast<int>(n)) == static_cast<int>(n);
}

}  // namespace fpstore::internal::redis
