#include "gpufleet/engine/spec_json.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gpufleet/core/quantity.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/io/spec_json.h"
#include "gpufleet/io/strict_json.h"
#include "gpufleet/queues/queue_json.h"
#include "gpufleet/topology/topology_json.h"

namespace gpufleet::engine {
namespace {

absl::Status Bad(const std::string& owner, const std::string& field, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrFormat("%s: %s: %s", owner, field, why));
}

absl::StatusOr<double> CapabilityValue(const Json& v, int resource, const std::string& owner) {
  const std::string field = absl::StrCat("capability.", kResourceNames[resource]);
  std::string text;
  if (v.is_string()) text = v.get<std::string>();
  else if (v.is_number()) text = v.dump();
  else return Bad(owner, field, "expected a quantity, got " + v.dump());
  if (resource == 2) {  // whole-GPU equivalents may be fractional
    try {
      size_t used = 0;
      double x = std::stod(text, &used);
      if (used != text.size() || !(x >= 0) || std::isinf(x)) throw std::invalid_argument(text);
      return x;
    } catch (const std::exception&) {
      return Bad(owner, field, "expected a non-negative number of GPUs, got " + v.dump());
    }
  }
  auto q = ParseQuantityScaled(text, resource == 0 ? 1000 : 1);
  if (!q.ok()) return Bad(owner, field, std::string(q.status().message()));
  return static_cast<double>(*q);
}

// The fields job-time policies read (the jobtime action): per-model speeds and a duration.
absl::Status JobTimeFields(const Json& j, const std::string& owner, Job* job) {
  if (auto t = j.find("throughput"); t != j.end() && !t->is_null()) {
    if (!t->is_object())
      return Bad(owner, "throughput", "expected an object {gpu model: speed}, got " + t->dump());
    for (auto kv = t->begin(); kv != t->end(); ++kv) {
      if (kv.key().empty()) return Bad(owner, "throughput", "a GPU model name is empty");
      if (!kv->is_number() || !(kv->get<double>() >= 0) || std::isinf(kv->get<double>()))
        return Bad(owner, "throughput." + kv.key(),
                   "expected a finite number >= 0 (speed relative to the reference model), got " +
                       kv->dump());
      job->throughput[kv.key()] = kv->get<double>();
    }
  }
  if (auto d = j.find("expected_duration"); d != j.end() && !d->is_null()) {
    if (!d->is_number() || !(d->get<double>() > 0) || std::isinf(d->get<double>()))
      return Bad(owner, "expected_duration",
                 "expected a finite number of seconds > 0, got " + d->dump());
    job->expected_duration = d->get<double>();
  }
  return absl::OkStatus();
}

// One entry of a job's task list: a pod, or with `replicas` and/or `topology` a sub-group of
// the gang (name-0, name-1, ... with replicas; the entry's own name without).
absl::Status TaskEntry(const Json& e, const std::string& owner, const std::string& field, Job* job) {
  const bool group = e.is_object() && (e.contains("replicas") || e.contains("topology"));
  if (!group) {
    auto pod = PodFromJson(e);
    if (!pod.ok()) return Bad(owner, field, std::string(pod.status().message()));
    job->tasks.push_back(*std::move(pod));
    job->task_group.push_back(-1);
    return absl::OkStatus();
  }
  Json pod_json = e;
  pod_json.erase("replicas");
  pod_json.erase("topology");
  auto pod = PodFromJson(pod_json);
  if (!pod.ok()) return Bad(owner, field, std::string(pod.status().message()));
  Job::TaskGroup g;
  g.name = pod->name;
  const std::string where = absl::StrCat(owner, " task ", g.name);
  int64_t replicas = 1;
  if (auto r = e.find("replicas"); r != e.end() && !r->is_null()) {
    if (!r->is_number_integer() || r->get<int64_t>() < 1 ||
        (r->is_number_unsigned() && r->get<uint64_t>() > static_cast<uint64_t>(kMaxJobTasks)))
      return Bad(where, "replicas",
                 absl::StrFormat("expected an integer from 1 to %d, got %s", kMaxJobTasks, r->dump()));
    replicas = r->get<int64_t>();
  }
  if (job->tasks.size() + replicas > static_cast<size_t>(kMaxJobTasks))
    return Bad(where, "replicas",
               absl::StrFormat("the job would have more than the %d tasks a job may have",
                               kMaxJobTasks));
  if (auto t = e.find("topology"); t != e.end() && !t->is_null()) {
    ASSIGN_OR_RETURN(g.topology, topology::ConstraintFromJson(*t, where));
    const int size = g.topology.slice_size;
    if (size > 0 && replicas % size != 0)
      return Bad(where, "topology.slice_size",
                 absl::StrFormat("%d does not divide the task's %d replicas", size, replicas));
  }
  const bool numbered = e.contains("replicas");
  for (int64_t i = 0; i < replicas; ++i) {
    job->tasks.push_back(*pod);
    if (numbered) job->tasks.back().name = absl::StrCat(g.name, "-", i);
    job->task_group.push_back(static_cast<int>(job->task_groups.size()));
  }
  job->task_groups.push_back(std::move(g));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Queue> QueueFromJson(const Json& j) {
  if (!j.is_object()) return absl::InvalidArgumentError("queue: expected an object");
  Queue q;
  auto name = j.find("name");
  if (name == j.end() || !name->is_string() || name->get<std::string>().empty())
    return absl::InvalidArgumentError("queue: name is missing");
  q.name = name->get<std::string>();
  const std::string owner = "queue " + q.name;
  std::vector<std::string> known = {"name", "weight", "capability", "reclaimable"};
  for (const std::string& k : queues::QuotaFieldNames()) known.push_back(k);
  RETURN_IF_ERROR(CheckKnownKeys(j, owner, known));
  RETURN_IF_ERROR(queues::ReadQuotaFields(j, owner, &q.parent, &q.quota));
  if (auto w = j.find("weight"); w != j.end() && !w->is_null()) {
    if (!w->is_number()) return Bad(owner, "weight", "expected a number, got " + w->dump());
    q.weight = w->get<double>();
    if (!(q.weight >= 0) || std::isinf(q.weight))
      return Bad(owner, "weight", "must be a finite number >= 0, got " + w->dump());
  }
  if (auto c = j.find("capability"); c != j.end() && !c->is_null()) {
    if (!c->is_object()) return Bad(owner, "capability", "expected an object");
    for (auto kv = c->begin(); kv != c->end(); ++kv) {
      int r = -1;
      for (int i = 0; i < kNumResources; ++i)
        if (kv.key() == kResourceNames[i]) r = i;
      if (r < 0)
        return Bad(owner, "capability." + kv.key(),
                   absl::StrCat("unknown resource", DidYouMean(kv.key(), {"cpu", "memory", "gpu"})));
      ASSIGN_OR_RETURN(q.capability[r], CapabilityValue(*kv, r, owner));
    }
  }
  if (auto r = j.find("reclaimable"); r != j.end() && !r->is_null()) {
    if (!r->is_boolean()) return Bad(owner, "reclaimable", "expected true or false");
    q.reclaimable = r->get<bool>();
  }
  return q;
}

Json QueueToJson(const Queue& q) {
  // In the units QueueFromJson reads: cpu in cores (kept in milli-CPU), memory in bytes, GPUs.
  Json cap = Json::object();
  for (int i = 0; i < kNumResources; ++i)
    if (!std::isinf(q.capability[i]))
      cap[kResourceNames[i]] = i == 0 ? q.capability[i] / 1000.0 : q.capability[i];
  Json out = {{"name", q.name}, {"weight", q.weight}, {"capability", cap},
              {"reclaimable", q.reclaimable}};
  queues::WriteQuotaFields(q.parent, q.quota, &out);
  return out;
}

absl::StatusOr<Job> JobFromJson(const Json& j) {
  if (!j.is_object()) return absl::InvalidArgumentError("job: expected an object");
  Job job;
  auto name = j.find("name");
  if (name == j.end() || !name->is_string() || name->get<std::string>().empty())
    return absl::InvalidArgumentError("job: name is missing");
  job.name = name->get<std::string>();
  const std::string owner = "job " + job.name;
  auto get_int = [&](const char* key, int64_t fallback, int64_t lo,
                     int64_t hi) -> absl::StatusOr<int64_t> {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return fallback;
    if (!it->is_number_integer()) return Bad(owner, key, "expected an integer, got " + it->dump());
    // Checked before narrowing: 2^64-1 must not read as -1, nor 2^32 as 0 in an int field.
    if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(hi))
      return Bad(owner, key, absl::StrFormat("must be <= %d, got %s", hi, it->dump()));
    int64_t v = it->get<int64_t>();
    if (v < lo) return Bad(owner, key, absl::StrFormat("must be >= %d, got %d", lo, v));
    if (v > hi) return Bad(owner, key, absl::StrFormat("must be <= %d, got %d", hi, v));
    return v;
  };
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
  if (auto q = j.find("queue"); q != j.end() && !q->is_null()) {
    if (!q->is_string() || q->get<std::string>().empty())
      return Bad(owner, "queue", "expected a queue name");
    job.queue = q->get<std::string>();
  }
  ASSIGN_OR_RETURN(int64_t priority, get_int("priority", 0, -1000000000, kIntMax));
  job.priority = static_cast<int>(priority);
  ASSIGN_OR_RETURN(job.creation, get_int("creation", 0, 0, kInt64Max));
  RETURN_IF_ERROR(JobTimeFields(j, owner, &job));
  if (auto t = j.find("topology"); t != j.end() && !t->is_null()) {
    ASSIGN_OR_RETURN(job.topology, topology::ConstraintFromJson(*t, owner));
  }
  const bool has_tasks = j.contains("tasks");
  const bool has_replicas = j.contains("replicas");
  if (has_tasks == has_replicas)
    return Bad(owner, "tasks", "give either \"tasks\" (a list of pods) or \"replicas\" with pod fields");
  const std::vector<std::string> job_fields = {"name",       "queue",      "priority",
                                               "min_available", "creation", "throughput",
                                               "expected_duration", "topology"};
  if (has_tasks) {
    std::vector<std::string> known = job_fields;
    known.push_back("tasks");
    RETURN_IF_ERROR(CheckKnownKeys(j, owner, known));
    const Json& tasks = j["tasks"];
    if (!tasks.is_array()) return Bad(owner, "tasks", "expected a list of pods");
    if (tasks.size() > static_cast<size_t>(kMaxJobTasks))
      return Bad(owner, "tasks",
                 absl::StrFormat("%d tasks is more than the %d a job may have", tasks.size(),
                                 kMaxJobTasks));
    for (size_t i = 0; i < tasks.size(); ++i)
      RETURN_IF_ERROR(TaskEntry(tasks[i], owner, absl::StrFormat("tasks[%d]", i), &job));
    if (job.task_groups.empty()) job.task_group.clear();
  } else {
    // The job's own fields, then the task template's (pod fields, name excepted).
    std::vector<std::string> known = job_fields;
    known.push_back("replicas");
    for (const std::string& f : PodFields())
      if (f != "name") known.push_back(f);
    RETURN_IF_ERROR(CheckKnownKeys(j, owner, known));
    ASSIGN_OR_RETURN(int64_t replicas, get_int("replicas", 1, 0, kInt64Max));
    if (replicas > kMaxJobTasks)
      return Bad(owner, "replicas",
                 absl::StrFormat("%d tasks is more than the %d a job may have", replicas,
                                 kMaxJobTasks));
    Json pod = j;
    for (const char* key : {"queue", "priority", "min_available", "creation", "replicas",
                            "throughput", "expected_duration", "topology"})
      pod.erase(key);
    for (int64_t i = 0; i < replicas; ++i) {
      pod["name"] = absl::StrCat(job.name, "-", i);
      auto p = PodFromJson(pod);
      if (!p.ok()) return Bad(owner, "task template", std::string(p.status().message()));
      job.tasks.push_back(*std::move(p));
    }
  }
  ASSIGN_OR_RETURN(int64_t min_available,
                   get_int("min_available", static_cast<int64_t>(job.tasks.size()), 0, kIntMax));
  job.min_available = static_cast<int>(min_available);
  return job;
}

}  // namespace gpufleet::engine
