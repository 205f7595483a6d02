// The engine's scenario JSON ({"nodes", "queues", "jobs"} with "running" tasks), and queues and
// jobs on their own. Any bytes: loaded, or an error naming the entry. A scheduler that took a
// scenario, or part of one before an error, keeps consistent accounting.
#include <cstdint>

#include "fuzz_util.h"
#include "gpufleet/engine/scenario_json.h"
#include "gpufleet/engine/scheduler.h"
#include "gpufleet/engine/spec_json.h"

namespace {

// Up to 1000000 replicas per job are valid and cost time linearly; under the sanitizers a million
// tasks take longer than the per-input timeout and show nothing a thousand would not.
bool ManyReplicas(const gpufleet::Json& job) {
  auto r = job.find("replicas");
  return r != job.end() && r->is_number() && r->get<double>() > 1000;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpufleet;
  const std::optional<Json> parsed = fuzz::ReadJson(data, size);
  if (!parsed) return 0;
  const Json& j = *parsed;
  if (ManyReplicas(j)) return 0;
  if (auto jobs = j.find("jobs"); jobs != j.end() && jobs->is_array())
    for (const Json& job : *jobs)
      if (ManyReplicas(job)) return 0;

  engine::Scheduler scheduler;
  absl::Status loaded = engine::LoadScenario(j, &scheduler);
  FUZZ_CHECK(loaded.ok() || (fuzz::IsUserError(loaded) && !loaded.message().empty()), "%s",
             loaded.ToString().c_str());
  absl::Status consistent = scheduler.cluster().CheckInvariants();
  FUZZ_CHECK(consistent.ok(), "%s (after: %s)", consistent.ToString().c_str(),
             loaded.ToString().c_str());

  for (const auto& status : {engine::QueueFromJson(j).status(), engine::JobFromJson(j).status()})
    FUZZ_CHECK(status.ok() || (fuzz::IsUserError(status) && !status.message().empty()), "%s",
               status.ToString().c_str());
  if (absl::StatusOr<engine::Job> job = engine::JobFromJson(j); job.ok()) {
    FUZZ_CHECK(job->min_available >= 0, "min_available %d", job->min_available);
    // Integers are taken exactly or rejected, never wrapped.
    for (const char* key : {"priority", "min_available"})
      if (auto it = j.find(key); it != j.end() && !it->is_null())
        FUZZ_CHECK(fuzz::SameInteger(*it, std::string(key) == "priority" ? job->priority
                                                                        : job->min_available),
                   "%s %s read as %d", key, it->dump().c_str(),
                   std::string(key) == "priority" ? job->priority : job->min_available);
    for (const Pod& task : job->tasks) FUZZ_CHECK(!task.name.empty(), "a task has no name");
  }
  return 0;
}
