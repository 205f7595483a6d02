#include "gpufleet/io/strict_json.h"

#include <algorithm>
#include <set>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace gpufleet {
std::string DidYouMean(const std::string& word, const std::vector<std::string>& known) {
  const std::string best = ClosestName(word, known);
  if (!best.empty()) return absl::StrFormat("; did you mean \"%s\"?", best);
  return absl::StrCat("; known: ", absl::StrJoin(known, ", "));
}

absl::Status CheckKnownKeys(const Json& j, const std::string& owner,
                            const std::vector<std::string>& known) {
  if (!j.is_object()) return absl::OkStatus();
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (std::find(known.begin(), known.end(), it.key()) != known.end()) continue;
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: unknown field \"%s\"%s", owner, absl::CEscape(it.key()), DidYouMean(it.key(), known)));
  }
  return absl::OkStatus();
}


}  // namespace gpufleet
