// Early-return helpers for absl::Status / absl::StatusOr (Debian's Abseil has no status_macros.h).
#ifndef GPUFLEET_CORE_STATUS_MACROS_H_
#define GPUFLEET_CORE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define GPUFLEET_CONCAT_INNER_(a, b) a##b
#define GPUFLEET_CONCAT_(a, b) GPUFLEET_CONCAT_INNER_(a, b)

#define RETURN_IF_ERROR(expr)                         \
  do {                                                \
    absl::Status gpufleet_status_ = (expr);           \
    if (!gpufleet_status_.ok()) return gpufleet_status_; \
  } while (0)

#define ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                           \
  if (!tmp.ok()) return tmp.status();          \
  lhs = std::move(tmp).value()

#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL_(GPUFLEET_CONCAT_(gpufleet_statusor_, __LINE__), lhs, expr)

#endif  // GPUFLEET_CORE_STATUS_MACROS_H_
