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

// Thrown from the parser callback to stop at the first violation; caught in ParseJsonText.
struct StrictJsonError {
  std::string message;
};

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

absl::StatusOr<Json> ParseJsonText(absl::string_view text, const std::string& what) {
  // One set of keys per open object, innermost last.
  std::vector<std::set<std::string>> open_objects;
  auto callback = [&](int depth, Json::parse_event_t event, Json& parsed) -> bool {
    if (depth > kMaxJsonDepth)
      throw StrictJsonError{absl::StrFormat("nested deeper than %d levels", kMaxJsonDepth)};
    switch (event) {
      case Json::parse_event_t::object_start:
        open_objects.emplace_back();
        break;
      case Json::parse_event_t::object_end:
        if (!open_objects.empty()) open_objects.pop_back();
        break;
      case Json::parse_event_t::key: {
        const std::string key = parsed.get<std::string>();
        if (!open_objects.empty() && !open_objects.back().insert(key).second)
          throw StrictJsonError{absl::StrFormat("duplicate key \"%s\"", absl::CEscape(key))};
        break;
      }
      default:
        break;
    }
    return true;
  };
  try {
    return Json::parse(text.begin(), text.end(), callback);
  } catch (const StrictJsonError& e) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", e.message));
  } catch (const Json::exception& e) {
    // nlohmann's message quotes the last bytes read; escape them to keep one printable line.
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": not JSON: ", absl::CEscape(e.what())));
  }
}

}  // namespace gpufleet
