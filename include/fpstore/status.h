// Status and Result<T>: how every fpstore call reports success or failure.
//
// No exception crosses the fpstore API. A call that can fail returns a Status
// (or a Result<T> that holds either a value or a non-OK Status). OK costs a
// null pointer; an error carries a code and a message meant for a human.
//
// Thread safety: Status and Result are values; distinct objects may be used
// from distinct threads without synchronisation.

#ifndef FPSTORE_STATUS_H_
#define FPSTORE_STATUS_H_

#include <cassert>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "fpstore/export.h"

namespace fpstore {

class [[nodiscard]] FPSTORE_EXPORT Status {
 public:
  // Codes may be shown to users and returned through the C API: never
  // renumber them.
  enum class Code : int {
    kOk = 0,
    kNotFound = 1,         // a normal answer, not a failure
    kCorruption = 2,       // stored data is damaged or inconsistent
    kInvalidArgument = 3,  // the caller passed something unusable
    kIOError = 4,          // the file system failed
    kBusy = 5,             // the store is in use by another process
    kNotSupported = 6,     // e.g. a newer on-disk format version
  };

  Status() noexcept = default;
  Status(const Status& other);
  Status& operator=(const Status& other);
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  static Status OK() { return Status(); }
  static Status NotFound(std::string_view msg) { return {Code::kNotFound, msg}; }
  static Status Corruption(std::string_view msg) { return {Code::kCorruption, msg}; }
  static Status InvalidArgument(std::string_view msg) { return {Code::kInvalidArgument, msg}; }
  static Status IOError(std::string_view msg) { return {Code::kIOError, msg}; }
  static Status Busy(std::string_view msg) { return {Code::kBusy, msg}; }
  static Status NotSupported(std::string_view msg) { return {Code::kNotSupported, msg}; }

  bool ok() const { return state_ == nullptr; }
  Code code() const { return state_ ? state_->code : Code::kOk; }
  bool IsNotFound() const { return code() == Code::kNotFound; }
  bool IsCorruption() const { return code() == Code::kCorruption; }
  bool IsInvalidArgument() const { return code() == Code::kInvalidArgument; }
  bool IsIOError() const { return code() == Code::kIOError; }
  bool IsBusy() const { return code() == Code::kBusy; }
  bool IsNotSupported() const { return code() == Code::kNotSupported; }

  // The message alone; empty for OK.
  const std::string& message() const;

  // "OK", or the code's name and the message, e.g.
  // "Invalid argument: blocks (3) must exceed distance (3)".
  std::string ToString() const;

  // Returns a copy whose message is "context: message"; OK stays OK.
  Status WithContext(std::string_view context) const;

 private:
  struct State {
    Code code;
    std::string message;
  };
  Status(Code code, std::string_view msg)
      : state_(std::make_unique<State>(State{code, std::string(msg)})) {}

  std::unique_ptr<State> state_;  // null means OK
};

// Either a value of type T or a non-OK Status explaining why there is none.
//
//   Result<PermutationPlan> plan = PermutationPlan::Create(6, 3);
//   if (!plan.ok()) return plan.status();
//   use(*plan);
template <typename T>
class [[nodiscard]] Result {
 public:
  // REQUIRES: !status.ok()
  Result(Status status) : status_(std::move(status)) {  // NOLINT: implicit
    assert(!status_.ok() && "a Result needs a value or an error");
  }
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }

  // REQUIRES: ok()
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return *std::move(value_); }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T&& operator*() && { return *std::move(value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace fpstore

#endif  // FPSTORE_STATUS_H_
