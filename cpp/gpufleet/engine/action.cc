#include "gpufleet/engine/action.h"

namespace gpufleet::engine {

PointSet ActionTraits::Needs() const {
  PointSet out;
  for (Point p : needs) out.set(static_cast<int>(p));
  if (places_tasks) out.set(static_cast<int>(Point::kPredicates));
  return out;
}

Json ActionTraits::ToJson() const {
  Json out = {{"places_tasks", places_tasks}, {"evicts", evicts}, {"admits_jobs", admits_jobs},
              {"needs", Json::array()}};
  for (Point p : needs) out["needs"].push_back(PointName(p));
  return out;
}

absl::StatusOr<std::unique_ptr<Action>> MakeAction(const std::string& name, const Json& args) {
  return Registry<Action>::Global().Create(name, args);
}

}  // namespace gpufleet::engine
