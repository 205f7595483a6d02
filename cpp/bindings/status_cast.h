// absl::Status -> Python exception with the core's message: NotFound -> KeyError,
// InvalidArgument/AlreadyExists/FailedPrecondition/OutOfRange -> ValueError, others RuntimeError.
#ifndef GPUFLEET_BINDINGS_STATUS_CAST_H_
#define GPUFLEET_BINDINGS_STATUS_CAST_H_

#include <pybind11/pybind11.h>

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gpufleet::bindings {

[[noreturn]] inline void ThrowStatus(const absl::Status& s) {
  std::string message(s.message());
  switch (s.code()) {
    case absl::StatusCode::kNotFound:
      throw pybind11::key_error(message);
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
      throw pybind11::value_error(message);
    default:
      throw std::runtime_error(message);
  }
}

inline void Check(const absl::Status& s) {
  if (!s.ok()) ThrowStatus(s);
}

template <typename T>
T Unwrap(absl::StatusOr<T> v) {
  if (!v.ok()) ThrowStatus(v.status());
  return std::move(v).value();
}

}  // namespace gpufleet::bindings

#endif  // GPUFLEET_BINDINGS_STATUS_CAST_H_
