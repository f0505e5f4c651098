// fpstore._fpstore: the Python binding of the C++ API (include/fpstore/), with pybind11.
//
// The Python package (python/fpstore/__init__.py) re-exports it; the type stubs are in
// python/fpstore/_fpstore.pyi. Every call that reads or writes the store releases the GIL. Errors
// become the exceptions of fpstore.errors, one per Status code, carrying the Status message.

#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "fpstore/bulk_loader.h"
#include "fpstore/fingerprinter.h"
#include "fpstore/signature.h"
#include "fpstore/simhash.h"
#include "fpstore/store.h"
#include "fpstore/version.h"

namespace py = pybind11;

// A Fingerprint is a Python int from 0 to 2**128 - 1 (a 64-bit one below 2**64).
template <>
struct pybind11::detail::type_caster<fpstore::Fingerprint> {
  PYBIND11_TYPE_CASTER(fpstore::Fingerprint, const_name("int"));

  bool load(handle src, bool convert) {
    if (PyBool_Check(src.ptr())) return false;
    if (!PyLong_Check(src.ptr())) {
      // With conversions allowed, what has __index__ (a numpy integer) is one.
      if (!convert || !PyIndex_Check(src.ptr())) return false;
      const object index = reinterpret_steal<object>(PyNumber_Index(src.ptr()));
      if (!index) {
        PyErr_Clear();
        return false;
      }
      return load(index, false);
    }
    const int negative = PyObject_RichCompareBool(src.ptr(), int_(0).ptr(), Py_LT);
    if (negative != 0) {
      PyErr_Clear();
      return false;
    }
    const object high = reinterpret_steal<object>(PyNumber_Rshift(src.ptr(), int_(64).ptr()));
    const object rest =
        high ? reinterpret_steal<object>(PyNumber_Rshift(high.ptr(), int_(64).ptr())) : object();
    if (!rest || PyObject_IsTrue(rest.ptr()) != 0) {
      PyErr_Clear();
      return false;
    }
    const unsigned long long h = PyLong_AsUnsignedLongLong(high.ptr());
    const unsigned long long l = PyLong_AsUnsignedLongLongMask(src.ptr());
    if (PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
    value = fpstore::Fingerprint(h, l);
    return true;
  }

  static handle cast(fpstore::Fingerprint fp, return_value_policy, handle) {
    if (fp.fits_64()) return PyLong_FromUnsignedLongLong(fp.low());
    const object high = reinterpret_steal<object>(PyLong_FromUnsignedLongLong(fp.high()));
    const object shifted = reinterpret_steal<object>(PyNumber_Lshift(high.ptr(), int_(64).ptr()));
    const object low = reinterpret_steal<object>(PyLong_FromUnsignedLongLong(fp.low()));
    return PyNumber_Or(shifted.ptr(), low.ptr());
  }
};

namespace fpstore::python {
namespace {

// ---- Errors ------------------------------------------------------------------------

[[noreturn]] void Raise(const Status& status) {
  const char* name = "Error";
  switch (status.code()) {
    case Status::Code::kNotFound:
      name = "NotFoundError";
      break;
    case Status::Code::kCorruption:
      name = "CorruptionError";
      break;
    case Status::Code::kInvalidArgument:
      name = "InvalidArgumentError";
      break;
    case Status::Code::kIOError:
      name = "IOError";
      break;
    case Status::Code::kBusy:
      name = "BusyError";
      break;
    case Status::Code::kNotSupported:
      name = "NotSupportedError";
      break;
    case Status::Code::kOk:
      break;
  }
  // Called with or without the GIL: take it to build the exception.
  py::gil_scoped_acquire gil;
  const py::object type = py::module_::import("fpstore.errors").attr(name);
  PyErr_SetString(type.ptr(), status.message().c_str());
  throw py::error_already_set();
}

void Check(const Status& status) {
  if (!status.ok()) Raise(status);
}

template <typename T>
T Value(Result<T>&& result) {
  if (!result.ok()) Raise(result.status());
  return *std::move(result);
}

[[noreturn]] void RaiseInvalid(const std::string& message) {
  Raise(Status::InvalidArgument(message));
}

// ---- Values ------------------------------------------------------------------------

py::bytes Bytes(std::string_view bytes) { return py::bytes(bytes.data(), bytes.size()); }

FeatureWeighting WeightingFrom(const std::string& name) {
  if (name == "tf") return FeatureWeighting::kTermFrequency;
  if (name == "presence") return FeatureWeighting::kPresence;
  RaiseInvalid("weighting must be \"tf\" or \"presence\", not \"" + name + "\"");
}

std::string WeightingName(FeatureWeighting w) {
  return w == FeatureWeighting::kPresence ? "presence" : "tf";
}

Signature SignatureFrom(const std::optional<py::bytes>& bytes) {
  if (!bytes) return {};
  return Value(Signature::FromBytes(std::string(*bytes)));
}

// What a document or query is given as: a text (fingerprinted and signed with the store's
// options), a bare fingerprint, or a Sketch.
struct Content {
  std::optional<std::string> text;
  Sketch sketch;
};

Content ContentFrom(const py::handle& value, const char* what) {
  Content content;
  if (py::isinstance<py::str>(value)) {
    content.text = value.cast<std::string>();
  } else if (py::isinstance<Sketch>(value)) {
    content.sketch = value.cast<Sketch>();
  } else if (py::isinstance<py::int_>(value) && !py::isinstance<py::bool_>(value)) {
    try {
      content.sketch.fingerprint = value.cast<Fingerprint>();
    } catch (const py::cast_error&) {
      RaiseInvalid(std::string(what) + ": a fingerprint is an int from 0 to 2**128 - 1");
    }
  } else {
    throw py::type_error(std::string(what) +
                         " must be a str (a text), an int (a fingerprint) "
                         "or a Sketch, not " +
                         std::string(py::str(value.get_type().attr("__name__"))));
  }
  return content;
}

std::string MetadataFrom(const py::handle& value) {
  if (value.is_none()) return {};
  if (py::isinstance<py::bytes>(value)) return value.cast<std::string>();
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();  // stored as UTF-8
  throw py::type_error("metadata must be bytes or str");
}

// A document's time from Python: None, or an int of seconds since the Unix epoch.
std::optional<DocumentTime> TimeFrom(const py::handle& time) {
  if (time.is_none()) return std::nullopt;
  if (!py::isinstance<py::int_>(time) || py::isinstance<py::bool_>(time)) {
    throw py::type_error("a time is an int of seconds since the Unix epoch, or None");
  }
  try {
    return time.cast<DocumentTime>();
  } catch (const py::cast_error&) {
    throw py::value_error("a time is from 0 to " + std::to_string(kMaxDocumentTime) +
                          " seconds since the Unix epoch");
  }
}

// Calls fn(id, content, metadata, time) for each (id, content[, metadata[, time]]) of `documents`.
template <typename Fn>
void ForEachNewDocument(const py::iterable& documents, Fn fn) {
  for (const py::handle item : documents) {
    if (!py::isinstance<py::sequence>(item) || py::isinstance<py::str>(item) ||
        py::isinstance<py::bytes>(item) || py::len(item) < 2 || py::len(item) > 4) {
      throw py::type_error(
          "a document is (id, content), (id, content, metadata) or (id, content, metadata, time)");
    }
    const py::sequence doc = py::reinterpret_borrow<py::sequence>(item);
    DocumentId id = 0;
    try {
      id = doc[0].cast<DocumentId>();
    } catch (const py::cast_error&) {
      throw py::type_error("a document's id is an int from 0 to 2**64 - 1");
    }
    fn(id, py::object(doc[1]), doc.size() >= 3 ? py::object(doc[2]) : py::none(),
       doc.size() == 4 ? TimeFrom(doc[3]) : std::nullopt);
  }
}

QueryOptions QueryOptionsFrom(std::optional<int> distance, std::optional<double> min_similarity) {
  return QueryOptions{distance, min_similarity};
}

// ---- The store ---------------------------------------------------------------------

// A Store shared by the Python object and its bulk loaders. Calls hold `mu` shared, close holds it
// exclusively, so a close waits for the calls under way and later calls fail cleanly.
//
// `mu` is never waited for with the GIL held (every call releases the GIL first), and no error is
// raised, which takes the GIL, while `mu` is held exclusively: so a thread holding the GIL never
// waits for one that waits for the GIL.
struct StoreState {
  std::shared_mutex mu;
  std::unique_ptr<Store> store;      // null once closed; guarded by mu
  std::atomic<bool> closing{false};  // close() began: calls that start now fail
  // Bulk loaders not yet finished or dropped: counted up under a shared hold of `mu` only, so
  // that close(), holding it exclusively, sees them all.
  std::atomic<int> loaders{0};
  std::string path;
  std::optional<PermutationPlan> plan;  // the store's, for reads that need no lock
  FingerprintOptions fingerprint_options;
};

[[noreturn]] void RaiseClosed(const StoreState& state) {
  Raise(Status::InvalidArgument("the store at " + state.path + " is closed"));
}

// A shared hold on an open store. REQUIRES: the GIL is released.
class Held {
 public:
  explicit Held(StoreState& state) {
    if (state.closing) RaiseClosed(state);
    lock_ = std::shared_lock(state.mu);
    if (!state.store) {
      lock_.unlock();
      RaiseClosed(state);
    }
    store_ = state.store.get();
  }
  Store& operator*() const { return *store_; }
  Store* operator->() const { return store_; }

 private:
  std::shared_lock<std::shared_mutex> lock_;
  Store* store_ = nullptr;
};

class PyBulkLoader;

// StoreOptions with a store in Redis's credentials and TLS files.
StoreOptions RedisAccess(const std::string& user, const std::string& password,
                         const std::string& ca_file, const std::string& cert_file,
                         const std::string& key_file) {
  StoreOptions options;
  options.redis_user = user;
  options.redis_password = password;
  options.redis_tls_ca_file = ca_file;
  options.redis_tls_cert_file = cert_file;
  options.redis_tls_key_file = key_file;
  return options;
}

class PyStore {
 public:
  explicit PyStore(std::shared_ptr<StoreState> state) : state_(std::move(state)) {}

  static std::unique_ptr<PyStore> Open(
      const std::string& path, bool create, bool read_only, std::optional<int> bits,
      std::optional<int> blocks, std::optional<int> distance, std::optional<int> window,
      std::optional<std::string> weighting, std::optional<int> signature_bytes,
      std::optional<int> signature_window, std::optional<double> min_similarity,
      std::optional<std::int64_t> retention_seconds, bool refresh_matches,
      std::optional<std::uint64_t> expected_documents, const std::string& durability,
      bool drop_damaged_log, std::optional<std::size_t> block_cache_bytes,
      std::optional<std::size_t> write_buffer_bytes, std::optional<int> background_threads,
      const std::string& redis_user, const std::string& redis_password,
      const std::string& redis_tls_ca_file, const std::string& redis_tls_cert_file,
      const std::string& redis_tls_key_file) {
    StoreOptions options = RedisAccess(redis_user, redis_password, redis_tls_ca_file,
                                       redis_tls_cert_file, redis_tls_key_file);
    options.create_if_missing = create;
    options.read_only = read_only;
    options.bits = bits;
    options.blocks = blocks;
    options.distance = distance;
    if (window || weighting || signature_bytes || signature_window) {
      // What is not given is the existing store's, as the tools do, so that giving one option
      // checks that one.
      FingerprintOptions fp;
      {
        StoreOptions probe = RedisAccess(redis_user, redis_password, redis_tls_ca_file,
                                         redis_tls_cert_file, redis_tls_key_file);
        probe.create_if_missing = false;
        probe.read_only = true;
        py::gil_scoped_release nogil;
        if (Result<std::unique_ptr<Store>> existing = Store::Open(path, probe); existing.ok()) {
          fp = (*existing)->fingerprinter().options();
          (void)(*existing)->Close();
        }
      }
      if (window) fp.window = *window;
      if (weighting) fp.weighting = WeightingFrom(*weighting);
      if (signature_bytes) fp.signature_bytes = *signature_bytes;
      if (signature_window) fp.signature_window = *signature_window;
      options.fingerprint = fp;
    }
    options.min_similarity = min_similarity;
    options.retention_seconds = retention_seconds;
    options.refresh_matches = refresh_matches;
    options.expected_documents = expected_documents;
    if (durability == "sync") {
      options.durability = Durability::kSync;
    } else if (durability == "group") {
      options.durability = Durability::kGroupCommit;
    } else if (durability == "none") {
      options.durability = Durability::kNoSync;
    } else {
      RaiseInvalid("durability must be \"sync\", \"group\" or \"none\", not \"" + durability +
                   "\"");
    }
    options.drop_damaged_log = drop_damaged_log;
    if (block_cache_bytes) options.block_cache_bytes = *block_cache_bytes;
    if (write_buffer_bytes) options.write_buffer_bytes = *write_buffer_bytes;
    if (background_threads) options.background_threads = *background_threads;
    auto state = std::make_shared<StoreState>();
    state->path = HidePassword(path);
    {
      py::gil_scoped_release nogil;
      state->store = Value(Store::Open(path, options));
    }
    state->plan = state->store->plan();
    state->fingerprint_options = state->store->fingerprinter().options();
    return std::make_unique<PyStore>(std::move(state));
  }

  void Close() {
    Status result;
    state_->closing = true;  // calls that start now fail, so the close is not kept waiting
    {
      py::gil_scoped_release nogil;
      std::unique_lock lock(state_->mu);
      if (!state_->store) return;
      if (state_->loaders > 0) {
        state_->closing = false;
        result = Status::InvalidArgument("the store at " + state_->path +
                                         " has a bulk loader open: finish it or let it go first");
      } else {
        result = state_->store->Close();
        state_->store.reset();
      }
    }
    Check(result);
  }

  bool closed() const { return state_->closing; }
  const std::string& path() const { return state_->path; }

  const PermutationPlan& plan() const { return *state_->plan; }
  const FingerprintOptions& fingerprint_options() const { return state_->fingerprint_options; }

  // The sketches of `contents`, texts sketched with the store's options.
  std::vector<Sketch> Sketches(std::vector<Content> contents) const {
    py::gil_scoped_release nogil;
    Held store(*state_);
    std::vector<Sketch> sketches;
    sketches.reserve(contents.size());
    for (Content& c : contents) {
      sketches.push_back(c.text ? Value(store->fingerprinter().SketchText(*c.text))
                                : std::move(c.sketch));
    }
    return sketches;
  }

  // The sketch of one document or query (`what` names it in errors).
  Sketch SketchOne(const py::handle& content, const char* what) const {
    std::vector<Content> contents;
    contents.push_back(ContentFrom(content, what));
    return std::move(Sketches(std::move(contents))[0]);
  }

  InsertStats Insert(DocumentId id, const py::handle& content, const py::handle& metadata,
                     const py::handle& time) {
    std::vector<Content> contents;
    contents.push_back(ContentFrom(content, "content"));
    return InsertBatch({id}, std::move(contents), {MetadataFrom(metadata)}, {TimeFrom(time)});
  }

  InsertStats InsertMany(const py::iterable& documents) {
    std::vector<DocumentId> ids;
    std::vector<Content> contents;
    std::vector<std::string> metadata;
    std::vector<std::optional<DocumentTime>> times;
    ForEachNewDocument(documents, [&](DocumentId id, const py::object& content,
                                      const py::object& meta, std::optional<DocumentTime> time) {
      ids.push_back(id);
      contents.push_back(ContentFrom(content, "content"));
      metadata.push_back(MetadataFrom(meta));
      times.push_back(time);
    });
    return InsertBatch(std::move(ids), std::move(contents), std::move(metadata), std::move(times));
  }

  InsertStats InsertBatch(std::vector<DocumentId> ids, std::vector<Content> contents,
                          std::vector<std::string> metadata,
                          std::vector<std::optional<DocumentTime>> times) {
    std::vector<Sketch> sketches = Sketches(std::move(contents));
    std::vector<NewDocument> batch;
    batch.reserve(ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i) {
      batch.push_back(
          {ids[i], sketches[i].fingerprint, metadata[i], sketches[i].signature, times[i]});
    }
    std::optional<Result<InsertStats>> stats;
    {
      py::gil_scoped_release nogil;
      stats.emplace(Held(*state_)->InsertBatch(batch));
    }
    Check(stats->status());
    return **stats;
  }

  CheckResult CheckAndInsert(DocumentId id, const py::handle& content, const py::handle& metadata,
                             bool if_no_match, std::optional<int> distance,
                             std::optional<double> min_similarity, const py::handle& time) {
    const std::string meta = MetadataFrom(metadata);
    const std::optional<DocumentTime> when = TimeFrom(time);
    Sketch sketch = SketchOne(content, "content");
    py::gil_scoped_release nogil;
    return Value(Held(*state_)->CheckAndInsert(
        NewDocument{id, sketch.fingerprint, meta, sketch.signature, when},
        if_no_match ? InsertPolicy::kIfNoMatch : InsertPolicy::kAlways,
        QueryOptionsFrom(distance, min_similarity)));
  }

  std::uint64_t Expire(DocumentTime before) {
    py::gil_scoped_release nogil;
    return Value(Held(*state_)->Expire(before));
  }

  bool Remove(DocumentId id) {
    py::gil_scoped_release nogil;
    const Status s = Held(*state_)->Remove(id);
    if (s.IsNotFound()) return false;
    Check(s);
    return true;
  }

  std::optional<Document> Get(DocumentId id) const {
    py::gil_scoped_release nogil;
    Result<Document> doc = Held(*state_)->Get(id);
    if (doc.status().IsNotFound()) return std::nullopt;
    return Value(std::move(doc));
  }

  std::vector<Match> Query(const py::handle& content, std::optional<int> distance,
                           std::optional<double> min_similarity) const {
    Sketch sketch = SketchOne(content, "query");
    py::gil_scoped_release nogil;
    return Value(Held(*state_)->Query(sketch, QueryOptionsFrom(distance, min_similarity)));
  }

  std::vector<std::vector<Match>> QueryMany(const py::iterable& queries,
                                            std::optional<int> distance,
                                            std::optional<double> min_similarity) const {
    std::vector<Content> contents;
    for (const py::handle q : queries) contents.push_back(ContentFrom(q, "query"));
    const std::vector<Sketch> sketches = Sketches(std::move(contents));
    py::gil_scoped_release nogil;
    return Value(Held(*state_)->QueryBatch(sketches, QueryOptionsFrom(distance, min_similarity)));
  }

  static ScanOptions ScanFrom(std::optional<double> min_similarity, int threads,
                              std::optional<std::size_t> memory_bytes) {
    ScanOptions scan;
    scan.min_similarity = min_similarity;
    scan.threads = threads;
    if (memory_bytes) scan.memory_bytes = *memory_bytes;
    return scan;
  }

  std::vector<NearPair> FindAll(std::optional<int> distance, std::optional<double> min_similarity,
                                int threads, std::optional<std::size_t> memory_bytes) const {
    std::vector<NearPair> pairs;
    py::gil_scoped_release nogil;
    Held store(*state_);
    Check(store->FindAll(
        distance.value_or(store->plan().distance()), [&](const NearPair& p) { pairs.push_back(p); },
        ScanFrom(min_similarity, threads, memory_bytes)));
    return pairs;
  }

  std::vector<std::vector<DocumentId>> Clusters(std::optional<int> distance,
                                                std::optional<double> min_similarity, int threads,
                                                std::optional<std::size_t> memory_bytes) const {
    std::vector<std::vector<DocumentId>> clusters;
    py::gil_scoped_release nogil;
    Held store(*state_);
    Check(store->Clusters(
        distance.value_or(store->plan().distance()),
        [&](std::span<const DocumentId> ids) { clusters.emplace_back(ids.begin(), ids.end()); },
        ScanFrom(min_similarity, threads, memory_bytes)));
    return clusters;
  }

  std::vector<Document> Documents() const {
    std::vector<Document> docs;
    py::gil_scoped_release nogil;
    Check(Held(*state_)->ForEachDocument([&](const Document& d) { docs.push_back(d); }));
    return docs;
  }

  StoreStats Stats() const {
    py::gil_scoped_release nogil;
    return Value(Held(*state_)->Stats());
  }

  void Verify(int threads) const {
    py::gil_scoped_release nogil;
    ScanOptions scan;
    scan.threads = threads;
    Check(Held(*state_)->Verify(scan));
  }

  void Repair(int threads) {
    py::gil_scoped_release nogil;
    ScanOptions scan;
    scan.threads = threads;
    Check(Held(*state_)->Repair(scan));
  }

  void Checkpoint(const std::string& dir) const {
    py::gil_scoped_release nogil;
    Check(Held(*state_)->Checkpoint(dir));
  }

  void Flush() {
    py::gil_scoped_release nogil;
    Check(Held(*state_)->Flush());
  }

  void Compact() {
    py::gil_scoped_release nogil;
    Check(Held(*state_)->Compact());
  }

  std::unique_ptr<PyBulkLoader> NewBulkLoader(std::optional<std::size_t> memory_bytes, int threads,
                                              const std::string& temp_dir);

  const std::shared_ptr<StoreState>& state() const { return state_; }

 private:
  std::shared_ptr<StoreState> state_;
};

// A bulk load into an empty or a populated store (bulk_loader.h). Its documents are in the store
// once finish() returns; dropped unfinished, it changes nothing.
class PyBulkLoader {
 public:
  // REQUIRES: the caller holds `state` shared (Held), so that close() sees this loader.
  PyBulkLoader(std::shared_ptr<StoreState> state, std::unique_ptr<BulkLoader> loader)
      : state_(std::move(state)), loader_(std::move(loader)) {
    ++state_->loaders;
  }
  ~PyBulkLoader() { Release(); }
  PyBulkLoader(const PyBulkLoader&) = delete;
  PyBulkLoader& operator=(const PyBulkLoader&) = delete;

  void Add(DocumentId id, const py::handle& content, const py::handle& metadata,
           std::optional<DocumentTime> time) {
    const std::string meta = MetadataFrom(metadata);
    Sketch sketch = PyStore(state_).SketchOne(content, "content");
    Status s;
    {
      py::gil_scoped_release nogil;
      std::lock_guard lock(mu_);
      s = loader_ ? loader_->Add(NewDocument{id, sketch.fingerprint, meta, sketch.signature, time})
                  : Gone();
    }
    Check(s);
  }

  void AddMany(const py::iterable& documents) {
    ForEachNewDocument(documents,
                       [&](DocumentId id, const py::object& content, const py::object& meta,
                           std::optional<DocumentTime> time) { Add(id, content, meta, time); });
  }

  std::uint64_t added() {
    py::gil_scoped_release nogil;
    std::lock_guard lock(mu_);
    return loader_ ? loader_->added() : added_;
  }

  BulkLoadStats Finish() {
    std::optional<Result<BulkLoadStats>> stats;
    {
      py::gil_scoped_release nogil;
      std::lock_guard lock(mu_);
      if (!loader_) {
        stats.emplace(Gone());
      } else {
        stats.emplace(loader_->Finish());
        ReleaseLocked();
      }
    }
    return Value(std::move(*stats));
  }

  // Drops the load unless it finished: the store is left as it was.
  void Release() {
    py::gil_scoped_release nogil;
    std::lock_guard lock(mu_);
    ReleaseLocked();
  }

  // Finishes the load unless it ended already (__exit__ without an exception).
  void FinishIfActive() {
    bool active;
    {
      py::gil_scoped_release nogil;
      std::lock_guard lock(mu_);
      active = loader_ != nullptr;
    }
    if (active) (void)Finish();
  }

 private:
  static Status Gone() {
    return Status::InvalidArgument("this bulk loader has finished, failed or was abandoned");
  }

  void ReleaseLocked() {
    if (!loader_) return;
    added_ = loader_->added();
    loader_.reset();
    --state_->loaders;
  }

  std::shared_ptr<StoreState> state_;
  std::mutex mu_;                       // one call at a time; waited for with the GIL released
  std::unique_ptr<BulkLoader> loader_;  // guarded by mu_; null once finished or abandoned
  std::uint64_t added_ = 0;             // guarded by mu_: what the loader had when it ended
};

std::unique_ptr<PyBulkLoader> PyStore::NewBulkLoader(std::optional<std::size_t> memory_bytes,
                                                     int threads, const std::string& temp_dir) {
  BulkLoadOptions options;
  if (memory_bytes) options.memory_bytes = memory_bytes.value();
  options.threads = threads;
  options.temp_dir = temp_dir;
  std::unique_ptr<PyBulkLoader> made;
  Status s;
  {
    py::gil_scoped_release nogil;
    Held store(*state_);
    Result<std::unique_ptr<BulkLoader>> loader = store->NewBulkLoader(options);
    // Counted while the store is held, so that a close() waiting meanwhile sees it.
    if (loader.ok()) {
      made = std::make_unique<PyBulkLoader>(state_, *std::move(loader));
    } else {
      s = loader.status();
    }
  }
  Check(s);
  return made;
}

std::string OptionalText(const std::optional<double>& v) { return v ? std::to_string(*v) : "None"; }

}  // namespace
}  // namespace fpstore::python

PYBIND11_MODULE(_fpstore, m) {
  using namespace fpstore;          // NOLINT(google-build-using-namespace)
  using namespace fpstore::python;  // NOLINT(google-build-using-namespace)
  m.doc() = "The C++ core of fpstore; use the fpstore package.";
  m.attr("__version__") = FPSTORE_VERSION_STRING;

  py::class_<Sketch>(m, "Sketch")
      .def(py::init([](Fingerprint fingerprint, const std::optional<py::bytes>& signature) {
             return Sketch{fingerprint, SignatureFrom(signature)};
           }),
           py::arg("fingerprint"), py::arg("signature") = py::none())
      .def_readonly("fingerprint", &Sketch::fingerprint)
      .def_property_readonly("signature",
                             [](const Sketch& s) { return Bytes(s.signature.bytes()); })
      .def("__eq__",
           [](const Sketch& a, const py::object& other) {
             if (!py::isinstance<Sketch>(other)) return false;
             const Sketch& b = other.cast<const Sketch&>();
             return a.fingerprint == b.fingerprint && a.signature == b.signature;
           })
      .def("__repr__", [](const Sketch& s) {
        return "Sketch(fingerprint=" + py::repr(py::cast(s.fingerprint)).cast<std::string>() +
               ", signature=<" + std::to_string(s.signature.size()) + " bytes>)";
      });

  py::class_<FingerprintOptions>(m, "FingerprintOptions")
      .def_readonly("version", &FingerprintOptions::version)
      .def_readonly("window", &FingerprintOptions::window)
      .def_property_readonly("weighting",
                             [](const FingerprintOptions& o) { return WeightingName(o.weighting); })
      .def_readonly("signature_bytes", &FingerprintOptions::signature_bytes)
      .def_readonly("signature_window", &FingerprintOptions::signature_window)
      .def_readonly("bits", &FingerprintOptions::bits)
      .def("__str__", &FingerprintOptions::ToString)
      .def("__repr__", [](const FingerprintOptions& o) {
        return "FingerprintOptions(\"" + o.ToString() + "\")";
      });

  py::class_<Fingerprinter>(m, "Fingerprinter")
      .def(py::init([](int window, const std::string& weighting, int signature_bytes,
                       int signature_window, int bits) {
             FingerprintOptions options;
             options.window = window;
             options.weighting = WeightingFrom(weighting);
             options.signature_bytes = signature_bytes;
             options.signature_window = signature_window;
             options.bits = bits;
             return Value(Fingerprinter::Create(options));
           }),
           py::kw_only(), py::arg("window") = 1, py::arg("weighting") = "tf",
           py::arg("signature_bytes") = 64, py::arg("signature_window") = 5, py::arg("bits") = 64)
      .def_property_readonly("options", &Fingerprinter::options)
      .def(
          "fingerprint",
          [](const Fingerprinter& f, const std::string& text) {
            py::gil_scoped_release nogil;
            return Value(f.FromText(text));
          },
          py::arg("text"))
      .def(
          "sketch",
          [](const Fingerprinter& f, const std::string& text) {
            py::gil_scoped_release nogil;
            return Value(f.SketchText(text));
          },
          py::arg("text"))
      .def(
          "tokens",
          [](const Fingerprinter& f, const std::string& text) { return Value(f.Tokens(text)); },
          py::arg("text"));

  m.def(
      "estimate_similarity",
      [](const py::bytes& a, const py::bytes& b) {
        return EstimateSimilarity(SignatureFrom(a), SignatureFrom(b));
      },
      py::arg("a"), py::arg("b"));
  m.def("hamming_distance", &HammingDistance, py::arg("a"), py::arg("b"));
  m.def(
      "destroy_store",
      [](const std::string& path, const std::string& redis_user, const std::string& redis_password,
         const std::string& redis_tls_ca_file, const std::string& redis_tls_cert_file,
         const std::string& redis_tls_key_file) {
        const StoreOptions options = RedisAccess(redis_user, redis_password, redis_tls_ca_file,
                                                 redis_tls_cert_file, redis_tls_key_file);
        py::gil_scoped_release nogil;
        Check(DestroyStore(path, options));
      },
      py::arg("path"), py::kw_only(), py::arg("redis_user") = "", py::arg("redis_password") = "",
      py::arg("redis_tls_ca_file") = "", py::arg("redis_tls_cert_file") = "",
      py::arg("redis_tls_key_file") = "");

  py::class_<Document>(m, "Document")
      .def_readonly("id", &Document::id)
      .def_readonly("fingerprint", &Document::fingerprint)
      .def_property_readonly("metadata", [](const Document& d) { return Bytes(d.metadata); })
      .def_property_readonly("signature",
                             [](const Document& d) { return Bytes(d.signature.bytes()); })
      .def_readonly("time", &Document::time)
      .def("__repr__", [](const Document& d) {
        return "Document(id=" + std::to_string(d.id) +
               ", fingerprint=" + py::repr(py::cast(d.fingerprint)).cast<std::string>() + ")";
      });

  py::class_<Match>(m, "Match")
      .def_readonly("id", &Match::id)
      .def_readonly("fingerprint", &Match::fingerprint)
      .def_readonly("distance", &Match::distance)
      .def_property_readonly("metadata", [](const Match& x) { return Bytes(x.metadata); })
      .def_readonly("similarity", &Match::similarity)
      .def_readonly("time", &Match::time)
      .def("__repr__", [](const Match& x) {
        return "Match(id=" + std::to_string(x.id) + ", distance=" + std::to_string(x.distance) +
               ", similarity=" + OptionalText(x.similarity) + ")";
      });

  py::class_<NearPair>(m, "NearPair")
      .def_readonly("first", &NearPair::first)
      .def_readonly("second", &NearPair::second)
      .def_readonly("distance", &NearPair::distance)
      .def_readonly("similarity", &NearPair::similarity)
      .def("__eq__",
           [](const NearPair& a, const py::object& other) {
             return py::isinstance<NearPair>(other) && a == other.cast<const NearPair&>();
           })
      .def("__hash__",
           [](const NearPair& p) { return py::hash(py::make_tuple(p.first, p.second)); })
      .def("__repr__", [](const NearPair& p) {
        return "NearPair(first=" + std::to_string(p.first) +
               ", second=" + std::to_string(p.second) + ", distance=" + std::to_string(p.distance) +
               ", similarity=" + OptionalText(p.similarity) + ")";
      });

  py::class_<CheckResult>(m, "CheckResult")
      .def_readonly("matches", &CheckResult::matches)
      .def_readonly("inserted", &CheckResult::inserted)
      .def_readonly("past_retention", &CheckResult::past_retention)
      .def("__repr__", [](const CheckResult& r) {
        return "CheckResult(inserted=" + std::string(r.inserted ? "True" : "False") +
               ", matches=<" + std::to_string(r.matches.size()) + ">)";
      });

  py::class_<PermutationPlan>(m, "Plan")
      .def_property_readonly("bits", &PermutationPlan::bits)
      .def_property_readonly("blocks", &PermutationPlan::blocks)
      .def_property_readonly("distance", &PermutationPlan::distance)
      .def_property_readonly("tables", &PermutationPlan::table_count);

  py::class_<StoreStats>(m, "Stats")
      .def_readonly("blocks", &StoreStats::blocks)
      .def_readonly("distance", &StoreStats::distance)
      .def_readonly("fingerprint", &StoreStats::fingerprint)
      .def_readonly("min_similarity", &StoreStats::min_similarity)
      .def_readonly("documents", &StoreStats::documents)
      .def_readonly("retention_seconds", &StoreStats::retention_seconds)
      .def_readonly("expired_documents", &StoreStats::expired_documents)
      .def_readonly("oldest_time", &StoreStats::oldest_time)
      .def_readonly("newest_time", &StoreStats::newest_time)
      .def_readonly("staged_documents", &StoreStats::staged_documents)
      .def_readonly("table_bytes", &StoreStats::table_bytes)
      .def_readonly("bytes_on_disk", &StoreStats::bytes_on_disk)
      .def_readonly("dropped_at_open", &StoreStats::dropped_at_open)
      .def_property_readonly("format_version",
                             [](const StoreStats& s) { return s.internals.format_version; })
      .def("__repr__", [](const StoreStats& s) {
        return "Stats(documents=" + std::to_string(s.documents) +
               ", bytes_on_disk=" + std::to_string(s.bytes_on_disk) + ")";
      });

  py::class_<BulkLoadStats>(m, "BulkLoadStats")
      .def_readonly("added", &BulkLoadStats::added)
      .def_readonly("replaced", &BulkLoadStats::replaced)
      .def_readonly("superseded", &BulkLoadStats::superseded)
      .def_readonly("past_retention", &BulkLoadStats::past_retention)
      .def("__repr__", [](const BulkLoadStats& s) {
        return "BulkLoadStats(added=" + std::to_string(s.added) +
               ", replaced=" + std::to_string(s.replaced) +
               ", superseded=" + std::to_string(s.superseded) +
               ", past_retention=" + std::to_string(s.past_retention) + ")";
      });

  py::class_<InsertStats>(m, "InsertStats")
      .def_readonly("added", &InsertStats::added)
      .def_readonly("replaced", &InsertStats::replaced)
      .def_readonly("past_retention", &InsertStats::past_retention)
      .def("__repr__", [](const InsertStats& s) {
        return "InsertStats(added=" + std::to_string(s.added) +
               ", replaced=" + std::to_string(s.replaced) +
               ", past_retention=" + std::to_string(s.past_retention) + ")";
      });

  py::class_<PyBulkLoader>(m, "BulkLoader")
      .def(
          "add",
          [](PyBulkLoader& l, DocumentId id, const py::handle& content, const py::handle& metadata,
             const py::handle& time) { l.Add(id, content, metadata, TimeFrom(time)); },
          py::arg("id"), py::arg("content"), py::arg("metadata") = py::none(), py::kw_only(),
          py::arg("time") = py::none())
      .def("add_many", &PyBulkLoader::AddMany, py::arg("documents"))
      .def_property_readonly("added", &PyBulkLoader::added)
      .def("finish", &PyBulkLoader::Finish)
      .def("abandon", &PyBulkLoader::Release)
      .def(
          "__enter__", [](PyBulkLoader& l) -> PyBulkLoader& { return l; },
          py::return_value_policy::reference)
      .def("__exit__",
           [](PyBulkLoader& l, const py::object& type, const py::object&, const py::object&) {
             if (type.is_none()) {
               l.FinishIfActive();
             } else {
               l.Release();
             }
           });

  py::class_<PyStore>(m, "Store")
      .def_static("open", &PyStore::Open, py::arg("path"), py::kw_only(), py::arg("create") = true,
                  py::arg("read_only") = false, py::arg("bits") = py::none(),
                  py::arg("blocks") = py::none(), py::arg("distance") = py::none(),
                  py::arg("window") = py::none(), py::arg("weighting") = py::none(),
                  py::arg("signature_bytes") = py::none(), py::arg("signature_window") = py::none(),
                  py::arg("min_similarity") = py::none(), py::arg("retention_seconds") = py::none(),
                  py::arg("refresh_matches") = false, py::arg("expected_documents") = py::none(),
                  py::arg("durability") = "group", py::arg("drop_damaged_log") = false,
                  py::arg("block_cache_bytes") = py::none(),
                  py::arg("write_buffer_bytes") = py::none(),
                  py::arg("background_threads") = py::none(), py::arg("redis_user") = "",
                  py::arg("redis_password") = "", py::arg("redis_tls_ca_file") = "",
                  py::arg("redis_tls_cert_file") = "", py::arg("redis_tls_key_file") = "")
      .def("close", &PyStore::Close)
      .def_property_readonly("closed", &PyStore::closed)
      .def_property_readonly("path", &PyStore::path)
      .def_property_readonly("plan", &PyStore::plan)
      .def_property_readonly("fingerprint_options", &PyStore::fingerprint_options)
      .def(
          "sketch",
          [](const PyStore& s, const std::string& text) {
            std::vector<Content> contents(1);
            contents[0].text = text;
            return std::move(s.Sketches(std::move(contents))[0]);
          },
          py::arg("text"))
      .def("insert", &PyStore::Insert, py::arg("id"), py::arg("content"),
           py::arg("metadata") = py::none(), py::kw_only(), py::arg("time") = py::none())
      .def("insert_many", &PyStore::InsertMany, py::arg("documents"))
      .def("check_and_insert", &PyStore::CheckAndInsert, py::arg("id"), py::arg("content"),
           py::arg("metadata") = py::none(), py::kw_only(), py::arg("if_no_match") = false,
           py::arg("distance") = py::none(), py::arg("min_similarity") = py::none(),
           py::arg("time") = py::none())
      .def("remove", &PyStore::Remove, py::arg("id"))
      .def("expire", &PyStore::Expire, py::arg("before"))
      .def("get", &PyStore::Get, py::arg("id"))
      .def("query", &PyStore::Query, py::arg("content"), py::kw_only(),
           py::arg("distance") = py::none(), py::arg("min_similarity") = py::none())
      .def("query_many", &PyStore::QueryMany, py::arg("queries"), py::kw_only(),
           py::arg("distance") = py::none(), py::arg("min_similarity") = py::none())
      .def(
          "find_all",
          [](const PyStore& s, std::optional<int> distance, std::optional<double> min_similarity,
             int threads, std::optional<std::size_t> memory_bytes) {
            return py::iter(py::cast(s.FindAll(distance, min_similarity, threads, memory_bytes)));
          },
          py::kw_only(), py::arg("distance") = py::none(), py::arg("min_similarity") = py::none(),
          py::arg("threads") = 0, py::arg("memory_bytes") = py::none())
      .def(
          "clusters",
          [](const PyStore& s, std::optional<int> distance, std::optional<double> min_similarity,
             int threads, std::optional<std::size_t> memory_bytes) {
            return py::iter(py::cast(s.Clusters(distance, min_similarity, threads, memory_bytes)));
          },
          py::kw_only(), py::arg("distance") = py::none(), py::arg("min_similarity") = py::none(),
          py::arg("threads") = 0, py::arg("memory_bytes") = py::none())
      .def("documents", [](const PyStore& s) { return py::iter(py::cast(s.Documents())); })
      .def(
          "__enter__", [](PyStore& s) -> PyStore& { return s; }, py::return_value_policy::reference)
      .def("__exit__",
           [](PyStore& s, const py::object& type, const py::object&, const py::object&) {
             if (type.is_none()) {
               s.Close();
               return;
             }
             try {  // the exception under way matters more than one from closing
               s.Close();
             } catch (const py::error_already_set&) {
             }
           })
      .def("stats", &PyStore::Stats)
      .def("verify", &PyStore::Verify, py::kw_only(), py::arg("threads") = 0)
      .def("repair", &PyStore::Repair, py::kw_only(), py::arg("threads") = 0)
      .def("checkpoint", &PyStore::Checkpoint, py::arg("dir"))
      .def("flush", &PyStore::Flush)
      .def("compact", &PyStore::Compact)
      .def("bulk_loader", &PyStore::NewBulkLoader, py::kw_only(),
           py::arg("memory_bytes") = py::none(), py::arg("threads") = 0, py::arg("temp_dir") = "");
}
