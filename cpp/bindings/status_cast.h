// absl::Status -> Python exception with the core's message. The code picks the class of gpufleet's
// exception family (python/gpufleet/errors.py): NotFound -> NotFoundError (a KeyError),
// InvalidArgument/OutOfRange -> InvalidInputError, AlreadyExists -> ConflictError,
// FailedPrecondition -> FailedPreconditionError (each a ValueError), others InternalError (a
// RuntimeError). A binding throws a CoreError (the GIL need not be held); the translator that
// InitErrors registers raises the Python class.
#ifndef GPUFLEET_BINDINGS_STATUS_CAST_H_
#define GPUFLEET_BINDINGS_STATUS_CAST_H_

#include <pybind11/pybind11.h>

#include <exception>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gpufleet::bindings {

class CoreError : public std::exception {
 public:
  CoreError(absl::StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }
  absl::StatusCode code() const { return code_; }

 private:
  absl::StatusCode code_;
  std::string message_;
};

// For the bindings' own checks: `throw NotFound("job x does not exist")`.
inline CoreError NotFound(std::string message) {
  return CoreError(absl::StatusCode::kNotFound, std::move(message));
}
inline CoreError InvalidInput(std::string message) {
  return CoreError(absl::StatusCode::kInvalidArgument, std::move(message));
}

[[noreturn]] inline void ThrowStatus(const absl::Status& s) {
  throw CoreError(s.code(), std::string(s.message()));
}

inline void Check(const absl::Status& s) {
  if (!s.ok()) ThrowStatus(s);
}

template <typename T>
T Unwrap(absl::StatusOr<T> v) {
  if (!v.ok()) ThrowStatus(v.status());
  return std::move(v).value();
}

// Imports gpufleet.errors and registers the translator from CoreError to its classes.
void InitErrors();

}  // namespace gpufleet::bindings

#endif  // GPUFLEET_BINDINGS_STATUS_CAST_H_
