// Status and Expected<T>: errors as values with a message, for the Module layer (which may
// use the STL; the core runtime does not).
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "runtime/core/error.h"

namespace ember {

class Status {
 public:
  Status() = default;
  Status(Error code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return Status(); }

  bool ok() const { return code_ == Error::Ok; }
  Error code() const { return code_; }
  // What failed and what to do about it; empty when ok().
  const std::string& message() const { return message_; }
  // "InvalidArgument: input 0 must be float32, got int64".
  std::string to_string() const {
    return ok() ? "Ok" : std::string(error_name(code_)) + ": " + message_;
  }

 private:
  Error code_ = Error::Ok;
  std::string message_;
};

// A value or a non-ok Status.
template <typename T>
class Expected {
 public:
  Expected(T value) : value_(std::move(value)) {}         // NOLINT: implicit
  Expected(Status status) : status_(std::move(status)) {  // NOLINT: implicit
    if (status_.ok()) status_ = Status(Error::Internal, "Expected built from an ok Status");
  }
  bool ok() const { return status_.ok(); }
  const Status& error() const { return status_; }
  // Precondition: ok().
  T& value() { return *value_; }
  const T& value() const { return *value_; }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace ember
