// Options for opening a Store. Every field has a default that suits a
// crawler's dedup database of up to ~100 million documents on one machine.
//
// Thread safety: plain values; copy freely.

#ifndef FPSTORE_OPTIONS_H_
#define FPSTORE_OPTIONS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "fpstore/document.h"
#include "fpstore/fingerprinter.h"

namespace fpstore {

// What an acknowledged write survives. Recorded nowhere on disk: each
// process chooses. Never renumber (the C API passes the value).
enum class Durability : int {
  // Every write is on stable storage before the call returns, fsync'd on
  // its own. Survives power loss.
  kSync = 0,
  // Every write is on stable storage before the call returns, but writers
  // that arrive while an fsync is running wait for the next one and share
  // it, so concurrent inserts cost about one fsync per group. Survives
  // power loss.
  kGroupCommit = 1,
  // Written to the operating system before the call returns, not fsync'd.
  // Survives a crash of the process, not of the machine.
  kNoSync = 2,
};

struct StoreOptions {
  // ---- Behaviour ----

  // Create the store if `path` does not hold one. The directory must then be
  // absent or empty. Default: true.
  bool create_if_missing = true;

  // Fail with InvalidArgument if the store already exists. Default: false.
  bool error_if_exists = false;

  // Open for reading only; writes return NotSupported. Several read-only
  // handles may be open in several processes beside one writer. Default: false.
  bool read_only = false;

  // The width of the store's fingerprints: 64 or 128 bits. Recorded at
  // creation as the fingerprint options' `bits` (which, if set, it must
  // agree with); same rules as the plan on open. Every call of the store
  // takes fingerprints of that width: a 64-bit store refuses one with high
  // bits set. Default at creation: the fingerprint options' bits, else 64.
  std::optional<int> bits;

  // The permutation plan: `blocks` m and `distance` k (see permutation.h).
  // Used when creating a store; an existing store keeps the plan it was
  // created with, and opening it with a different value set here fails with
  // InvalidArgument. Defaults at creation: 6 and 3 (20 tables) for 64 bits;
  // 8 and 6 (28 tables) for 128, whose k = 6 finds about what 64 bits' 3
  // does (docs/quality.md).
  std::optional<int> blocks;
  std::optional<int> distance;

  // How text becomes fingerprints (see fingerprinter.h). Same rules as the
  // plan: recorded at creation, checked when set on open.
  // Default at creation: FingerprintOptions{}.
  std::optional<FingerprintOptions> fingerprint;

  // The least estimated similarity (signature.h) of a match, recorded at
  // creation as the store's default; QueryOptions and ScanOptions override
  // it per call. Same rules as the plan: checked when set on open. From 0
  // to 1. Default at creation: kDefaultMinSimilarity, chosen on
  // docs/quality.md's corpus.
  std::optional<double> min_similarity;
  static constexpr double kDefaultMinSimilarity = 0.9;

  // How long a document counts, in seconds: a document whose time
  // (NewDocument::time) is earlier than the store's clock minus this is past
  // the retention, and from that moment no query, CheckAndInsert, Get or scan
  // returns it, whatever is still on disk; a background sweep then removes it
  // (Store::Expire). 0: documents never expire. Same rules as the plan:
  // recorded at creation, checked when set on open. From 0 to
  // kMaxDocumentTime. Default at creation: 0. A store in Redis sweeps a
  // slice of its times each second from every process that has it open to
  // write, and Repair sweeps it whole (docs/design.md); each process goes
  // by its own clock, so keep the hosts' clocks in step, and give a clock
  // that replays a crawl only to a process that alone writes the store.
  std::optional<std::int64_t> retention_seconds;

  // CheckAndInsert gives each document it matched the checked document's
  // time when that is later: a page whose near-copies keep being fetched
  // stays within the retention, as if it had been fetched again. It costs a
  // write per match refreshed. Off, a document's time is when its own page
  // was last fetched, and a check that inserts nothing writes nothing
  // (docs/design.md, "Retention and expiry"). Not recorded: each handle
  // chooses. Default: false.
  bool refresh_matches = false;

  // About how many documents the store will hold. Used when creating a
  // store, to size its tables' layout (docs/design.md, "Packed tables"). A
  // store may grow past it: at 16 times the count, a query that finds a
  // document reads about 24 KB in each table it finds one in. Far fewer
  // documents than expected cost loads, merges and compactions more work
  // (docs/performance.md). Ignored when opening an existing store.
  // Default at creation: kDefaultExpectedDocuments.
  std::optional<std::uint64_t> expected_documents;
  static constexpr std::uint64_t kDefaultExpectedDocuments = 100'000'000;

  Durability durability = Durability::kGroupCommit;

  // The store's clock, in seconds since the Unix epoch: the time a document
  // inserted without one takes (NewDocument::time), read once per write. For
  // programs that replay a crawl faster than it ran, and for tests. Empty:
  // the system's clock. Default: empty.
  std::function<DocumentTime()> clock;

  // A write-ahead log damaged in its middle (a bad disk, not a crash: a
  // crash only cuts its last record short) holds acknowledged writes after
  // the damage that cannot be replayed. By default Open refuses such a store
  // with Corruption, naming the log, the byte and the documents those writes
  // held, and changes nothing. Set, Open drops them and opens the store as
  // it was just before the damage; a writable open first copies the damaged
  // logs into `lost/` in the store's directory, and says what it dropped in
  // the LOG and in StoreStats::dropped_at_open. Default: false.
  bool drop_damaged_log = false;

  // ---- A store in Redis ----
  // Who fpstore signs in as on every connection it opens to the cluster
  // (AUTH): a user of Redis's ACLs and its password. An empty user is Redis's
  // "default" user, the one `requirepass` sets the password of; nothing is
  // sent when both are empty. The URL may carry them instead
  // (redis://USER:PASSWORD@HOST:PORT/NAME); given both ways, they must be
  // the same, or Open fails with InvalidArgument. No message, log line or
  // stat of fpstore holds the password. Ignored by an embedded store.
  // Default: empty.
  std::string redis_user;
  std::string redis_password;

  // A "rediss://" URL speaks TLS to every node; its certificate must chain
  // to a CA certificate of redis_tls_ca_file (PEM; empty: the system's) and
  // name the node as the cluster announces it (a host name or an IP
  // address). There is no switch to skip that check. redis_tls_cert_file
  // and redis_tls_key_file (PEM): the client's certificate and key, for a
  // cluster that asks for one (tls-auth-clients). Set with a "redis://" URL,
  // any of them makes Open fail with InvalidArgument. Default: empty.
  std::string redis_tls_ca_file;
  std::string redis_tls_cert_file;
  std::string redis_tls_key_file;

  // ---- Performance ----

  // Bytes of block cache shared by every table. Default: 512 MiB.
  std::size_t block_cache_bytes = std::size_t{512} << 20;

  // Bytes of memtables across all tables together; each table's memtable is
  // charged to one write-buffer manager, so 20 tables do not take 20 times
  // this. Default: 256 MiB.
  std::size_t write_buffer_bytes = std::size_t{256} << 20;

  // Inserted documents wait in a staging family and an in-memory index, which
  // queries probe too, until this many have gathered; a background merge then
  // moves them into the tables as sorted files, the bulk loader's way,
  // instead of writing every table's memtable per insert. An insert waits
  // while its batch would take more than twice this many staged (a batch that
  // cannot fit waits until fewer than this many are). A store opened to write
  // keeps room in the index for twice this many (up to 2 Mi; 64 MiB at the
  // default and distance 3), so that it need not rehash under its lock, plus
  // 16 bytes a staged document. From 1 to kMaxStagedDocuments; Open refuses
  // others. Default: 512 Ki.
  static constexpr std::size_t kMaxStagedDocuments = std::size_t{1} << 30;
  std::size_t staged_documents = std::size_t{1} << 19;
  // When the store is destroyed, give the memory it freed back to the
  // system (glibc's malloc_trim): for a process that closes a large store
  // and opens another, where glibc's heaps would keep the first one's
  // cached blocks. It walks every heap of the process, not only the
  // store's. Default: false.
  bool release_memory_on_close = false;

  // Background threads for compactions when they fall behind, at least 2;
  // flushes have one more of their own (up to 6; beyond, RocksDB gives
  // flushes a quarter of them all). Default: 2.
  int background_threads = 2;
};

}  // namespace fpstore

#endif  // FPSTORE_OPTIONS_H_
