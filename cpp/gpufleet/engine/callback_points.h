// The engine's callback points: the questions plugins answer, in one table. The session records
// which points each plugin registers and composes the answers as the table says; Volcano's
// per-plugin switches name the point they gate (plugin_switches.cc); the configuration check asks
// whether the points an action or plugin needs are answered; the Python plugin adapter registers
// a Python method under each point that names one; the docs' tables are generated from it.
#ifndef GPUFLEET_ENGINE_CALLBACK_POINTS_H_
#define GPUFLEET_ENGINE_CALLBACK_POINTS_H_

#include <bitset>
#include <optional>
#include <string>
#include <vector>

namespace gpufleet::engine {

enum class Point {
  kJobOrder,
  kQueueOrder,
  kTaskOrder,
  kPredicates,
  kNodeScore,
  kPreemptable,
  kReclaimable,
  kOverused,
  kJobReady,
  kJobValid,
  kAllocatable,
  kEnqueueable,
  kTargetJob,
  kDeviceStrategy,
};
inline constexpr int kNumPoints = static_cast<int>(Point::kDeviceStrategy) + 1;

// What a callback receives and answers.
enum class Signature {
  kCompare,        // (a, b) -> int, negative when a goes first, 0 for no opinion
  kNodeFit,        // (task, node) -> fits, or why not
  kScore,          // (task, node) -> score
  kVictims,        // (preemptor, candidates) -> the candidates it allows as victims
  kQueueTest,      // (queue) -> bool
  kJobTest,        // (job) -> bool
  kJobCheck,       // (job) -> OK, or why not
  kQueueTaskTest,  // (queue, task) -> bool
  kTarget,         // () -> a job, or none
  kStrategy,       // a placement strategy object, set once
};

// How the answers of several plugins combine.
enum class Combine {
  kFirstOpinionByTier,  // tier by tier, the first non-zero answer decides; ties end in a stable id
  kEveryoneAgrees,      // every plugin must accept
  kSum,                 // the sum over all plugins
  kIntersection,        // only what every answering plugin allows, across all tiers
  kAnyone,              // true when any plugin says so
  kFirstObjection,      // the first plugin that objects decides
  kFirstAnswer,         // the first plugin with an answer
  kLastSet,             // the last plugin that sets one (binpack when none does)
};

struct CallbackPoint {
  Point point;
  const char* name;  // in listings, errors and the docs: "job-order"
  Signature signature;
  Combine combine;
  const char* python_method;  // what a Python plugin defines to answer it, or nullptr
};

using PointSet = std::bitset<kNumPoints>;

// Every point, in Point order.
const std::vector<CallbackPoint>& CallbackPoints();
const CallbackPoint& PointInfo(Point point);
const char* PointName(Point point);
std::optional<Point> FindPoint(const std::string& name);
const char* SignatureText(Signature signature);
const char* CombineText(Combine combine);
// The names of the points in `points`, in table order.
std::vector<std::string> PointNames(const PointSet& points);

}  // namespace gpufleet::engine

#endif  // GPUFLEET_ENGINE_CALLBACK_POINTS_H_
