// Result<T>: a value or an Error, without exceptions.
#pragma once

#include <new>
#include <utility>

#include "runtime/core/error.h"

namespace ember {

template <typename T>
class Result {
 public:
  Result(T value) : ok_(true) { new (&value_) T(std::move(value)); }  // NOLINT: implicit
  Result(Error error) : ok_(false), error_(error == Error::Ok ? Error::Internal : error) {}  // NOLINT
  Result(Result&& other) noexcept : ok_(other.ok_), error_(other.error_) {
    if (ok_) new (&value_) T(std::move(*other.ptr()));
  }
  Result(const Result&) = delete;
  Result& operator=(const Result&) = delete;
  Result& operator=(Result&&) = delete;
  ~Result() {
    if (ok_) ptr()->~T();
  }

  bool ok() const { return ok_; }
  Error error() const { return ok_ ? Error::Ok : error_; }
  // Precondition: ok().
  T& get() { return *ptr(); }
  const T& get() const { return *ptr(); }
  T& operator*() { return get(); }
  const T& operator*() const { return get(); }
  T* operator->() { return ptr(); }
  const T* operator->() const { return ptr(); }

 private:
  T* ptr() { return &value_; }
  const T* ptr() const { return &value_; }
  bool ok_;
  Error error_ = Error::Ok;
  // Typed storage, constructed only when ok_ (a union member is not constructed by default).
  union {
    T value_;
  };
};

}  // namespace ember

#define EMBER_CONCAT_INNER(a, b) a##b
#define EMBER_CONCAT(a, b) EMBER_CONCAT_INNER(a, b)
// Declares `lhs` from a Result expression, returning its Error on failure.
#define EMBER_ASSIGN_OR_RETURN(lhs, expr) \
  EMBER_ASSIGN_OR_RETURN_IMPL(EMBER_CONCAT(ember_result_, __LINE__), lhs, expr)
#define EMBER_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.error();                \
  lhs = std::move(tmp.get())
