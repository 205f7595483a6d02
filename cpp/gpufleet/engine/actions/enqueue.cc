// enqueue: admits waiting jobs whose minimum fits (Volcano's enqueue action): every enqueueable
// callback must agree (proportion: the queue's capability and the cluster's size). Admission is
// remembered across cycles; jobs not admitted keep their reason and are not placed.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/engine/action.h"

namespace gpufleet::engine {
namespace {

class Enqueue : public Action {
 public:
  void Execute(Session& s) override {
    std::vector<int> waiting;
    for (const JobInfo& j : s.jobs())
      if (j.valid && !j.inqueue) waiting.push_back(j.id);
    std::stable_sort(waiting.begin(), waiting.end(), [&](int a, int b) {
      int qa = s.job(a).queue, qb = s.job(b).queue;
      if (qa != qb) return s.QueueLess(qa, qb);
      return s.JobLess(a, b);
    });
    for (int id : waiting) {
      JobInfo& j = s.job(id);
      absl::Status why = s.Enqueueable(j);
      if (!why.ok()) {
        j.reason = absl::StrCat("not admitted: ", why.message());
        continue;
      }
      j.inqueue = true;
      s.queue(j.queue).inqueue += j.min_request;
    }
  }
};

GPUFLEET_REGISTER(Action,
    {.name = "enqueue",
     .description = "admit jobs whose minimum fits their queue and the cluster",
     .traits = {.admits_jobs = true}},
    [](const Params&) -> absl::StatusOr<std::unique_ptr<Action>> {
      return std::unique_ptr<Action>(new Enqueue());
    });

}  // namespace
}  // namespace gpufleet::engine
