#include "gpufleet/io/strict_json.h"

#include <algorithm>
#include <set>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace gpufleet {
namespace {

size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string DidYouMean(const std::string& word, const std::vector<std::string>& known) {
  const std::string* best = nullptr;
  size_t best_distance = 0, best_prefix = 0;
  for (const std::string& k : known) {
    const size_t d = EditDistance(word, k);
    // Ties go to the longer shared prefix: "gpu" is closer to "gpus" than to "cpu".
    const size_t prefix =
        std::mismatch(word.begin(), word.end(), k.begin(), k.end()).first - word.begin();
    if (best == nullptr || d < best_distance || (d == best_distance && prefix > best_prefix)) {
      best = &k;
      best_distance = d;
      best_prefix = prefix;
    }
  }
  // A near miss: a typo or two, scaled with the word so short keys don't match everything.
  if (best != nullptr && best_distance <= std::max<size_t>(2, best->size() / 3))
    return absl::StrFormat("; did you mean \"%s\"?", *best);
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
