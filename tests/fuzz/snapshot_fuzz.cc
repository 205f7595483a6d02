// Cluster snapshots (nodes plus allocations) read back from text. Any bytes: a cluster with
// consistent accounting, or an error. A snapshot that loads is saved and loaded again to the same
// cluster.
#include <cstdint>

#include "fuzz_util.h"
#include "gpufleet/io/snapshot.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpufleet;
  absl::StatusOr<ClusterState> state = LoadSnapshot(std::string(fuzz::AsText(data, size)));
  if (!state.ok()) {
    FUZZ_CHECK(fuzz::IsUserError(state.status()) && !state.status().message().empty(), "%s",
               state.status().ToString().c_str());
    return 0;
  }
  absl::Status consistent = state->CheckInvariants();
  FUZZ_CHECK(consistent.ok(), "%s", consistent.ToString().c_str());
  const std::string saved = SaveSnapshot(*state);
  absl::StatusOr<ClusterState> again = LoadSnapshot(saved);
  FUZZ_CHECK(again.ok(), "a saved snapshot does not load: %s\n  %s",
             again.status().ToString().c_str(), saved.c_str());
  FUZZ_CHECK(*again == *state, "snapshot changed on a round trip:\n  %s", saved.c_str());
  return 0;
}
