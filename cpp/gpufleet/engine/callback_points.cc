#include "gpufleet/engine/callback_points.h"

namespace gpufleet::engine {

const std::vector<CallbackPoint>& CallbackPoints() {
  using enum Point;
  using enum Signature;
  using enum Combine;
  static const auto* kPoints = new std::vector<CallbackPoint>{
      {kJobOrder, "job-order", kCompare, kFirstOpinionByTier, "job_order"},
      {kQueueOrder, "queue-order", kCompare, kFirstOpinionByTier, "queue_order"},
      {kTaskOrder, "task-order", kCompare, kFirstOpinionByTier, "task_order"},
      {kPredicates, "predicates", kNodeFit, kEveryoneAgrees, "predicate"},
      {kNodeScore, "node-score", kScore, kSum, "node_order"},
      {kPreemptable, "preemptable", kVictims, kIntersection, "preemptable"},
      {kReclaimable, "reclaimable", kVictims, kIntersection, "reclaimable"},
      {kOverused, "overused", kQueueTest, kAnyone, "overused"},
      {kJobReady, "job-ready", kJobTest, kEveryoneAgrees, "job_ready"},
      {kJobValid, "job-valid", kJobCheck, kFirstObjection, "job_valid"},
      {kAllocatable, "allocatable", kQueueTaskTest, kEveryoneAgrees, "allocatable"},
      {kEnqueueable, "enqueueable", kJobCheck, kEveryoneAgrees, "enqueueable"},
      {kTargetJob, "target-job", kTarget, kFirstAnswer, nullptr},
      {kDeviceStrategy, "device-strategy", kStrategy, kLastSet, nullptr},
  };
  return *kPoints;
}

const CallbackPoint& PointInfo(Point point) {
  return CallbackPoints()[static_cast<int>(point)];
}

const char* PointName(Point point) { return PointInfo(point).name; }

std::optional<Point> FindPoint(const std::string& name) {
  for (const CallbackPoint& p : CallbackPoints())
    if (name == p.name) return p.point;
  return std::nullopt;
}

const char* SignatureText(Signature signature) {
  switch (signature) {
    case Signature::kCompare: return "(a, b) -> int: negative when a goes first, 0 for no opinion";
    case Signature::kNodeFit: return "(task, node) -> fits, or why not";
    case Signature::kScore: return "(task, node) -> score";
    case Signature::kVictims: return "(preemptor, candidates) -> allowed victims";
    case Signature::kQueueTest: return "(queue) -> bool";
    case Signature::kJobTest: return "(job) -> bool";
    case Signature::kJobCheck: return "(job) -> OK, or why not";
    case Signature::kQueueTaskTest: return "(queue, task) -> bool";
    case Signature::kTarget: return "() -> a job, or none";
    case Signature::kStrategy: return "a placement strategy";
  }
  return "";
}

const char* CombineText(Combine combine) {
  switch (combine) {
    case Combine::kFirstOpinionByTier:
      return "tier by tier, the first plugin with a non-zero answer decides; ties keep a "
             "stable order (jobs: creation time, then name)";
    case Combine::kEveryoneAgrees: return "every plugin must accept";
    case Combine::kSum: return "sum over all plugins";
    case Combine::kIntersection:
      return "intersection of every answering plugin's victims, across tiers";
    case Combine::kAnyone: return "any plugin";
    case Combine::kFirstObjection: return "the first objection";
    case Combine::kFirstAnswer: return "the first plugin with a target";
    case Combine::kLastSet: return "the last plugin that sets one; binpack when none does";
  }
  return "";
}

std::vector<std::string> PointNames(const PointSet& points) {
  std::vector<std::string> out;
  for (const CallbackPoint& p : CallbackPoints())
    if (points.test(static_cast<int>(p.point))) out.push_back(p.name);
  return out;
}

}  // namespace gpufleet::engine
