#include "faults/background_errors.h"

#include "util/rocks_status.h"

namespace fpstore::internal {

namespace {

bool IsHard(const rocksdb::Status& error) {
  return error.severity() >= rocksdb::Status::Severity::kHardError;
}

class StopOnHardErrors final : public rocksdb::EventListener {
 public:
  explicit StopOnHardErrors(std::shared_ptr<BackgroundErrors> errors)
      : errors_(std::move(errors)) {}

  void OnBackgroundError(rocksdb::BackgroundErrorReason, rocksdb::Status* error) override {
    errors_->Report(*error);
  }
  void OnErrorRecoveryBegin(rocksdb::BackgroundErrorReason, rocksdb::Status error,
                            bool* auto_recovery) override {
    if (IsHard(error)) *auto_recovery = false;
  }

 private:
  const std::shared_ptr<BackgroundErrors> errors_;
};

}  // namespace

Status BackgroundErrors::Stopped() const {
  if (!is_stopped_.load(std::memory_order_acquire)) return Status::OK();
  MutexLock lock(mu_);
  return stopped_;
}

void BackgroundErrors::Report(const rocksdb::Status& error) {
  ++reported_;
  if (!IsHard(error)) return;
  MutexLock lock(mu_);
  if (!stopped_.ok()) return;
  stopped_ = FromRocks(error,
                       "the store stopped writing after RocksDB's background error (a later write "
                       "opens it again)");
  is_stopped_.store(true, std::memory_order_release);
}

std::shared_ptr<rocksdb::EventListener> BackgroundErrors::MakeListener(
    std::shared_ptr<BackgroundErrors> errors) {
  return std::make_shared<StopOnHardErrors>(std::move(errors));
}

}  // namespace fpstore::internal
