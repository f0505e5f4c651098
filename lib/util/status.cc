#include "fpstore/status.h"

namespace fpstore {

namespace {

const char* CodeName(Status::Code code) {
  switch (code) {
    case Status::Code::kOk:
      return "OK";
    case Status::Code::kNotFound:
      return "Not found";
    case Status::Code::kCorruption:
      return "Corruption";
    case Status::Code::kInvalidArgument:
      return "Invalid argument";
    case Status::Code::kIOError:
      return "IO error";
    case Status::Code::kBusy:
      return "Busy";
    case Status::Code::kNotSupported:
      return "Not supported";
  }
  return "Unknown";
}

}  // namespace

Status::Status(const Status& other)
    : state_(other.state_ ? std::make_unique<State>(*other.state_) : nullptr) {}

Status& Status::operator=(const Status& other) {
  if (this != &other) {
    state_ = other.state_ ? std::make_unique<State>(*other.state_) : nullptr;
  }
  return *this;
}

const std::string& Status::message() const {
  static const std::string kEmpty;
  return state_ ? state_->message : kEmpty;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out = CodeName(state_->code);
  if (!state_->message.empty()) {
    out += ": ";
    out += state_->message;
  }
  return out;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return OK();
  std::string msg(context);
  msg += ": ";
  msg += state_->message;
  return Status(state_->code, msg);
}

}  // namespace fpstore
