// One connection to one Redis node: a TCP socket of its own, or TLS over it (OpenSSL), which
// hiredis 0.14 cannot do. hiredis only formats the commands and parses the replies (its
// redisReader); every byte goes through the socket here, with the connection's timeout on each
// read and write.
//
// Thread safety: a connection is used by one thread at a time; a TlsContext is shared by any.

#ifndef FPSTORE_LIB_REDIS_CONNECTION_H_
#define FPSTORE_LIB_REDIS_CONNECTION_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "fpstore/status.h"

struct ssl_ctx_st;
struct ssl_st;
struct bio_st;
struct redisReader;

namespace fpstore::internal::redis {

// A reply, copied out of hiredis's.
struct Reply {
  enum class Type { kString, kStatus, kInteger, kNil, kArray, kError };
  Type type = Type::kNil;
  std::string str;  // kString, kStatus, kError
  long long integer = 0;
  std::vector<Reply> elements;  // kArray
};

// What TLS connections trust and show: the CA certificates a node's certificate must chain to,
// and the client's own certificate, for a cluster that asks for one.
struct TlsFiles {
  std::string ca_file;    // PEM; empty: the system's CA certificates
  std::string cert_file;  // PEM; empty: none (then key_file is empty too)
  std::string key_file;
};

class TlsContext {
 public:
  // InvalidArgument naming the file that cannot be read or does not hold what it should.
  static Result<std::shared_ptr<TlsContext>> Create(const TlsFiles& files);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;
  ssl_ctx_st* get() const { return ctx_; }

 private:
  explicit TlsContext(ssl_ctx_st* ctx) : ctx_(ctx) {}
  ssl_ctx_st* const ctx_;
};

class Connection {
 public:
  // Connects to `host`:`port`, waiting up to `timeout` for each step, then through TLS when `tls`
  // is not null: the node's certificate must chain to its CA certificates and name `host` (a name
  // or an IP address). IOError when the node cannot be reached or the connection broke;
  // InvalidArgument when the TLS handshake failed for good (a certificate not verified, a node
  // that does not speak TLS), saying why.
  static Result<std::unique_ptr<Connection>> Open(const std::string& host, int port,
                                                  std::chrono::milliseconds timeout,
                                                  const TlsContext* tls);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Queues a command, sent by the next Flush or Read.
  void Append(const std::vector<std::string>& args);
  // Sends what is queued; false if the connection broke or timed out.
  bool Flush();
  // The next reply, after sending what is queued; false if the connection broke or timed out.
  bool Read(Reply& out);
  // How long each read and write may wait from now on.
  bool SetTimeout(std::chrono::milliseconds timeout);

 private:
  Connection(int fd, redisReader* reader) : fd_(fd), reader_(reader) {}
  Status StartTls(const TlsContext& tls, const std::string& host);
  // Sends `size` bytes, through TLS if it is on.
  bool Send(const char* data, std::size_t size);
  // Receives some bytes into `buffer`: how many, or 0 if the connection broke or timed out.
  std::size_t Receive(char* buffer, std::size_t size);
  // Calls `step` (an OpenSSL call on ssl_) until it is done, carrying its bytes between the
  // memory BIOs and the socket; its result, <= 0 if it failed.
  template <typename Step>
  int Drive(Step step);
  // What OpenSSL wrote, sent; a read from the socket, given to OpenSSL.
  bool SendEncrypted();
  bool ReceiveEncrypted();

  const int fd_;
  redisReader* const reader_;
  ssl_st* ssl_ = nullptr;  // null: plain TCP
  bio_st* in_ = nullptr;   // bytes from the socket, for OpenSSL (owned by ssl_)
  bio_st* out_ = nullptr;  // bytes OpenSSL wrote, for the socket (owned by ssl_)
  std::string queued_;     // formatted commands not sent yet
};

}  // namespace fpstore::internal::redis

#endif  // FPSTORE_LIB_REDIS_CONNECTION_H_
