// The translator from CoreError to gpufleet's exception family. The classes are Python's own
// (gpufleet/errors.py, importable without the extension), looked up once when the module loads.
#include <pybind11/pybind11.h>

#include "status_cast.h"

namespace py = pybind11;

namespace gpufleet::bindings {
namespace {

// The classes of gpufleet.errors, in ErrorClassOf's numbering.
constexpr const char* kErrorClassNames[] = {"NotFoundError", "InvalidInputError", "ConflictError",
                                            "FailedPreconditionError", "InternalError"};
constexpr int kErrorClasses = sizeof(kErrorClassNames) / sizeof(kErrorClassNames[0]);

// Strong references kept for the life of the process (the classes outlive every module).
PyObject* g_error_classes[kErrorClasses] = {};

int ErrorClassOf(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kNotFound: return 0;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange: return 1;
    case absl::StatusCode::kAlreadyExists: return 2;
    case absl::StatusCode::kFailedPrecondition: return 3;
    default: return 4;
  }
}

}  // namespace

void InitErrors() {
  py::module_ errors = py::module_::import("gpufleet.errors");
  for (int k = 0; k < kErrorClasses; ++k)
    g_error_classes[k] = py::object(errors.attr(kErrorClassNames[k])).release().ptr();
  py::register_local_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const CoreError& e) {
      PyErr_SetString(g_error_classes[ErrorClassOf(e.code())], e.what());
    }
  });
}

}  // namespace gpufleet::bindings
