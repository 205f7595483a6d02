// Weighted water-filling (max-min fairness with weights), the deserved-share rule of Volcano's
// proportion plugin, solved exactly per resource: every queue q gets min(cap_q, level * w_q) with
// one level chosen so the shares sum to min(total, sum of caps). Queues with weight 0 share what
// the weighted queues leave, equally. Never above a cap, never negative, no division by zero.
#ifndef GPUFLEET_ENGINE_WATER_FILL_H_
#define GPUFLEET_ENGINE_WATER_FILL_H_

#include <vector>

namespace gpufleet::engine {

// `caps` may be +infinity; negative or NaN totals/caps count as 0.
std::vector<double> WaterFill(double total, const std::vector<double>& weights,
                              const std::vector<double>& caps);

}  // namespace gpufleet::engine

#endif  // GPUFLEET_ENGINE_WATER_FILL_H_
