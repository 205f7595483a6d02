#include "gpufleet/engine/actions/place_by_topology.h"

#include "absl/strings/str_format.h"
#include "gpufleet/placement/node_plan.h"
#include "gpufleet/topology/gang_placer.h"

namespace gpufleet::engine {

namespace {

// The sub-group a task's entry of the task list names (job.h), or -1 (also for a job built
// without the per-task list, as code other than JobFromJson may).
int TaskGroupOf(const Job& spec, const TaskInfo& task) {
  const size_t k = static_cast<size_t>(task.pod - spec.tasks.data());
  return k < spec.task_group.size() ? spec.task_group[k] : -1;
}

}  // namespace

bool UsesTopology(const Session& s, const JobInfo& job) {
  return s.gang_topology() != nullptr && job.spec->HasTopology();
}

bool PlaceByTopology(Session& s, int job_id, const std::vector<int>& tasks, Statement& st,
                     std::string* why) {
  const JobInfo& job = s.job(job_id);
  const GangTopology& gt = *s.gang_topology();
  topology::GangRequest request;
  request.name = job.name();
  request.fit = gt.fit;
  const Job& spec = *job.spec;
  // Groups: one per sub-group of the task list; tasks of plain entries with equal requests in a
  // row form one (a leader, then workers).
  std::vector<std::vector<int>> members;  // task ids per group
  std::vector<int> group_of;              // per group: its sub-group, or -1
  for (int t : tasks) {
    const TaskInfo& task = s.tasks()[t];
    const int sub = TaskGroupOf(spec, task);
    if (members.empty() || group_of.back() != sub ||
        s.tasks()[members.back().front()].request_key != task.request_key) {
      topology::GroupRequest g;
      g.name = sub >= 0 ? spec.task_groups[sub].name : task.name();
      g.pod = *task.pod;
      if (sub >= 0) g.constraint = spec.task_groups[sub].topology;
      request.groups.push_back(std::move(g));
      members.emplace_back();
      group_of.push_back(sub);
    }
    members.back().push_back(t);
    request.groups.back().count = static_cast<int>(members.back().size());
  }
  if (request.groups.empty()) return true;
  // One group without a constraint of its own takes the job's whole (slices, balance); otherwise
  // the job's required and preferred levels hold the groups together.
  const topology::Constraint& c = spec.topology;
  const topology::Constraint& first = request.groups[0].constraint;
  if (request.groups.size() == 1 && first.empty() && !first.balanced) {
    request.groups[0].constraint = c;
  } else {
    request.constraint.required = c.required;
    request.constraint.preferred = c.preferred;
  }
  topology::GangPlacer placer;
  absl::StatusOr<topology::GangPlacement> p =
      placer.Choose(s.state(), gt.topology, request, s.strategy());
  if (!p.ok()) {
    *why = std::string(p.status().message());
    return false;
  }
  if (!p->ok()) {
    *why = p->reason;
    return false;
  }
  const QueueInfo& q = s.queue(job.queue);
  for (size_t g = 0; g < members.size(); ++g) {
    const std::vector<int> nodes = p->groups[g].PodNodes();
    for (size_t k = 0; k < members[g].size(); ++k) {
      const int t = members[g][k];
      const TaskInfo& task = s.task(t);
      const int node = nodes[k];
      if (!s.Allocatable(q, task)) {
        *why = absl::StrFormat("queue %s would exceed its capability (%s)", q.name(),
                               q.spec->capability.ToString());
        return false;
      }
      FitResult f = s.Predicate(task, node);
      Placement plan = f.ok() ? PlanOnNode(s.state(), *task.pod, node, s.strategy(),
                                           Admission::kCapacityOnly)
                              : Placement::None(f.reason);
      absl::Status ok = plan.ok() ? st.Allocate(t, plan.allocation)
                                  : absl::FailedPreconditionError(plan.reason);
      if (!ok.ok()) {
        *why = absl::StrFormat("task %s on %s (topology domain): %s", task.name(),
                               s.state().node(node).name, ok.message());
        return false;
      }
    }
  }
  return true;
}

}  // namespace gpufleet::engine
