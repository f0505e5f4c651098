// Bulk loads into a store in Redis (docs/design.md, "The Redis backend").

#include <unordered_map>

#include "plan/table_entry.h"
#include "redis/redis_store.h"

namespace fpstore::internal::redis {

namespace {

// A bulk load into Redis: documents gathered in memory, written by Finish in rounds of the
// store's writes. Unlike the embedded store's, it is not all or nothing: a Finish that fails
// leaves the documents of the rounds it finished, each whole.
class RedisBulkLoader final : public BulkLoader {
 public:
  // `began`: the store's clock at the start, a timeless document's time.
  RedisBulkLoader(RedisStore& store, const BulkLoadOptions& options, DocumentTime began)
      : store_(store), options_(options), began_(began) {}

  Status Add(const NewDocument& doc) override {
    if (done_) return Status::InvalidArgument("the bulk load has finished");
    if (Status s = store_.CheckDocument(doc); !s.ok()) return s;
    ++added_;
    const auto [it, fresh] = index_.try_emplace(doc.id, docs_.size());
    Stored stored{doc.id, doc.fingerprint, std::string(doc.metadata), doc.signature,
                  doc.time.value_or(began_)};
    if (fresh) {
      docs_.push_back(std::move(stored));
    } else {
      docs_[it->second] = std::move(stored);
      ++stats_.superseded;
    }
    return Status::OK();
  }

  Result<BulkLoadStats> Finish() override {
    if (done_) return Status::InvalidArgument("the bulk load has finished");
    done_ = true;
    std::vector<NewDocument> batch;
    for (std::size_t begin = 0; begin < docs_.size(); begin += kWriteChunk) {
      batch.clear();
      const std::size_t end = std::min(docs_.size(), begin + kWriteChunk);
      for (std::size_t i = begin; i < end; ++i) {
        const Stored& d = docs_[i];
        batch.push_back({d.id, d.fingerprint, d.metadata, d.signature, d.time});
      }
      Result<InsertStats> wrote = store_.InsertBatch(batch);
      if (!wrote.ok()) return wrote.status();
      stats_.added += wrote->added;
      stats_.replaced += wrote->replaced;
      stats_.past_retention += wrote->past_retention;
      if (options_.progress) options_.progress(end, docs_.size());
    }
    return stats_;
  }

  std::uint64_t added() const override { return added_; }

 private:
  struct Stored {
    DocumentId id;
    Word fingerprint;
    std::string metadata;
    Signature signature;
    DocumentTime time;
  };
  RedisStore& store_;
  const BulkLoadOptions options_;
  const DocumentTime began_;
  std::vector<Stored> docs_;
  std::unordered_map<DocumentId, std::size_t> index_;
  BulkLoadStats stats_;
  std::uint64_t added_ = 0;
  bool done_ = false;
};

}  // namespace

Result<std::unique_ptr<BulkLoader>> RedisStore::NewBulkLoader(const BulkLoadOptions& options) {
  if (Status s = CheckWritable(); !s.ok()) return s;
  Result<DocumentTime> now = Now(options_.clock);
  if (!now.ok()) return now.status();
  return std::unique_ptr<BulkLoader>(new RedisBulkLoader(*this, options, *now));
}

}  // namespace fpstore::internal::redis
