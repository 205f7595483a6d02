// A pod's effective request from its containers by Kubernetes' rule (init containers one at a
// time beside the sidecars started before them; sidecars and regular containers together after
// initialization; the larger of the two plus the overhead), every quantity read once and summed
// exactly.
#include "gpufleet/core/effective_request.h"

#include <map>
#include <string>

#include "gtest/gtest.h"
#include "test_util.h"

namespace gpufleet {
namespace {

using Texts = std::map<std::string, std::string>;

ContainerResources Container(Texts requests, Texts limits = {}, bool sidecar = false) {
  return ContainerResources{std::move(requests), std::move(limits), sidecar};
}

ContainerResources Sidecar(Texts requests) { return Container(std::move(requests), {}, true); }

// The effective request as exact text per resource.
Texts EffectiveTexts(const PodResources& pod) {
  absl::StatusOr<ResourceQuantities> r = EffectiveRequests(pod);
  EXPECT_TRUE(r.ok()) << r.status();
  Texts out;
  if (r.ok())
    for (const auto& [name, q] : *r) out[name] = Quantity::Exact(q.nanos).text;
  return out;
}

TEST(EffectiveRequestTest, TheLargestInitContainerAgainstTheSumOfTheApps) {
  // The init-containers page's example: init 250m/256Mi and 500m/1Gi, apps 500m/1Gi and 250m/1Gi.
  PodResources pod;
  pod.init_containers = {Container({{"cpu", "250m"}, {"memory", "256Mi"}}),
                         Container({{"cpu", "500m"}, {"memory", "1Gi"}})};
  pod.containers = {Container({{"cpu", "500m"}, {"memory", "1Gi"}}),
                    Container({{"cpu", "250m"}, {"memory", "1Gi"}})};
  EXPECT_EQ(EffectiveTexts(pod), (Texts{{"cpu", "0.75"}, {"memory", "2147483648"}}));
  pod.init_containers.push_back(Container({{"cpu", "2"}}));
  EXPECT_EQ(EffectiveTexts(pod)["cpu"], "2");
}

TEST(EffectiveRequestTest, AnInitContainerRunsBesideTheSidecarsStartedBeforeIt) {
  PodResources pod;
  pod.containers = {Container({{"cpu", "500m"}})};
  pod.init_containers = {Sidecar({{"cpu", "100m"}}), Container({{"cpu", "1"}})};
  EXPECT_EQ(EffectiveTexts(pod)["cpu"], "1.1");  // 1 + the sidecar before it
  pod.init_containers = {Container({{"cpu", "1"}}), Sidecar({{"cpu", "100m"}})};
  EXPECT_EQ(EffectiveTexts(pod)["cpu"], "1");  // the sidecar starts after it
  pod.init_containers = {Container({{"cpu", "200m"}}), Sidecar({{"cpu", "300m"}})};
  EXPECT_EQ(EffectiveTexts(pod)["cpu"], "0.8");  // after init: 500m + the sidecar's 300m
}

TEST(EffectiveRequestTest, SidecarsAddUpDuringInitialization) {
  PodResources pod;
  pod.containers = {Container({})};
  pod.init_containers = {Sidecar({{"memory", "1Gi"}}), Sidecar({{"memory", "1Gi"}}),
                         Container({{"memory", "3Gi"}})};
  EXPECT_EQ(EffectiveTexts(pod)["memory"], std::to_string(5LL << 30));  // 3Gi + two sidecars
}

TEST(EffectiveRequestTest, OverheadIsAddedToTheLarger) {
  PodResources pod;
  pod.containers = {Container({{"cpu", "1"}})};
  pod.init_containers = {Container({{"cpu", "2"}})};
  pod.overhead = {{"cpu", "250m"}, {"memory", "120Mi"}};
  EXPECT_EQ(EffectiveTexts(pod), (Texts{{"cpu", "2.25"}, {"memory", std::to_string(120LL << 20)}}));
}

TEST(EffectiveRequestTest, AMissingRequestDefaultsToTheLimitAndARequestWins) {
  PodResources pod;
  pod.containers = {Container({{"cpu", "1"}}, {{"cpu", "4"}, {"nvidia.com/gpu", "1"}})};
  EXPECT_EQ(EffectiveTexts(pod), (Texts{{"cpu", "1"}, {"nvidia.com/gpu", "1"}}));
}

TEST(EffectiveRequestTest, SumsAreExactAndZerosAreLeftOut) {
  PodResources pod;
  pod.containers = {Container({{"cpu", "250m"}, {"nvidia.com/gpu", "0"}}), Container({{"cpu", "0.75"}}),
                    Container({{"memory", "100n"}}), Container({{"memory", "100n"}})};
  EXPECT_EQ(EffectiveTexts(pod), (Texts{{"cpu", "1"}, {"memory", "0.0000002"}}));
}

TEST(EffectiveRequestTest, ErrorsNameTheContainerAndTheField) {
  PodResources pod;
  pod.containers = {Container({{"cpu", "1"}}), Container({{"cpu", "lots"}})};
  absl::Status s = EffectiveRequests(pod).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "containers[1].requests.cpu: invalid quantity \"lots\": no digits");
  pod.containers = {Container({})};
  pod.init_containers = {Container({}, {{"nvidia.com/gpu", "1.5"}})};
  s = EffectiveRequests(pod).status();
  EXPECT_NE(s.message().find("init_containers[0].limits.nvidia.com/gpu: "), absl::string_view::npos) << s;
  EXPECT_NE(s.message().find("whole numbers only"), absl::string_view::npos) << s;
  pod.init_containers.clear();
  pod.overhead = {{"memory", "-1"}};
  EXPECT_NE(EffectiveRequests(pod).status().message().find("overhead.memory: "), absl::string_view::npos);
  pod.overhead = {};
  pod.containers = {Container({{"memory", "7Ei"}}), Container({{"memory", "7Ei"}})};
  EXPECT_NE(EffectiveRequests(pod).status().message().find("too large"), absl::string_view::npos);
}

}  // namespace
}  // namespace gpufleet
