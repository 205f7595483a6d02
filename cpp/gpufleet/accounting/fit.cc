#include "gpufleet/accounting/fit.h"

#include "absl/strings/str_cat.h"

namespace gpufleet {

std::string NodesUnavailable(int total, const std::map<std::string, int>& counts) {
  std::string out = absl::StrCat("0/", total, " nodes are available");
  const char* sep = ": ";
  for (const auto& [reason, n] : counts) {
    absl::StrAppend(&out, sep, n, " ", reason);
    sep = ", ";
  }
  return out;
}

}  // namespace gpufleet
