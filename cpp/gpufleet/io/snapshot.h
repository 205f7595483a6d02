// The whole accounting as JSON: nodes (with health) and allocations. Load(Save(s)) == s.
#ifndef GPUFLEET_IO_SNAPSHOT_H_
#define GPUFLEET_IO_SNAPSHOT_H_

#include <string>

#include "absl/status/statusor.h"
#include "gpufleet/accounting/cluster_state.h"

namespace gpufleet {

std::string SaveSnapshot(const ClusterState& state);
// Rebuilds through AddNode/Reserve/Commit, so a corrupt snapshot cannot over-commit.
absl::StatusOr<ClusterState> LoadSnapshot(const std::string& text);

}  // namespace gpufleet

#endif  // GPUFLEET_IO_SNAPSHOT_H_
