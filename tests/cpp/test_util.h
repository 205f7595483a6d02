// Shared helpers for the core's GoogleTest suites: status assertions, nodes/pods/allocations from
// compact JSON (through the same NodeFromJson/PodFromJson the scenario files use), a cluster that
// checks its invariants after every mutation, and a scenario-table runner in the style of
// Volcano's uthelper tables (nodes + already-bound allocations + pods in order -> expected node and
// devices, or the reason a pod stays pending).
#ifndef GPUFLEET_TESTS_CPP_TEST_UTIL_H_
#define GPUFLEET_TESTS_CPP_TEST_UTIL_H_

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "gpufleet/accounting/cluster_state.h"
#include "gpufleet/core/quantity.h"
#include "gpufleet/core/registry.h"
#include "gpufleet/io/spec_json.h"
#include "gpufleet/placement/placer.h"
#include "gpufleet/placement/strategy.h"
#include "gtest/gtest.h"

namespace gpufleet::test {

// --- Status assertions ---------------------------------------------------------------------------

inline ::testing::AssertionResult IsOk(const absl::Status& s) {
  if (s.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "status is " << s;
}
template <typename T>
::testing::AssertionResult IsOk(const absl::StatusOr<T>& s) {
  return IsOk(s.status());
}

// The status is an error of `code` whose message contains every one of `parts`.
inline ::testing::AssertionResult IsError(const absl::Status& s, absl::StatusCode code,
                                          std::vector<std::string> parts = {}) {
  if (s.ok()) return ::testing::AssertionFailure() << "status is OK, expected an error";
  if (s.code() != code)
    return ::testing::AssertionFailure()
           << "code is " << absl::StatusCodeToString(s.code()) << ", expected "
           << absl::StatusCodeToString(code) << " (" << s.message() << ")";
  for (const std::string& p : parts)
    if (!absl::StrContains(s.message(), p))
      return ::testing::AssertionFailure()
             << "message \"" << s.message() << "\" does not contain \"" << p << "\"";
  return ::testing::AssertionSuccess();
}
template <typename T>
::testing::AssertionResult IsError(const absl::StatusOr<T>& s, absl::StatusCode code,
                                   std::vector<std::string> parts = {}) {
  return IsError(s.status(), code, std::move(parts));
}

#define EXPECT_OK(expr) EXPECT_TRUE(::gpufleet::test::IsOk(expr))
#define ASSERT_OK(expr) ASSERT_TRUE(::gpufleet::test::IsOk(expr))

// --- Objects from compact JSON -------------------------------------------------------------------

inline Json ParseJsonOrFail(absl::string_view text) {
  Json j = Json::parse(std::string(text), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) ADD_FAILURE() << "test JSON does not parse: " << text;
  return j;
}

// {"name":"n1","cpu":"32","memory":"128Gi","gpus":{"count":4,"model":"V100","memory":"16Gi"}}
inline Node MakeNode(absl::string_view json) {
  absl::StatusOr<Node> n = NodeFromJson(ParseJsonOrFail(json));
  if (!n.ok()) {
    ADD_FAILURE() << "node JSON rejected: " << n.status() << "\n" << json;
    return Node();
  }
  return *n;
}

// {"name":"p","requests":{"aliyun.com/gpu-mem":"8138"}}
inline Pod MakePod(absl::string_view json, const RequestParseOptions& options = {}) {
  absl::StatusOr<Pod> p = PodFromJson(ParseJsonOrFail(json), options);
  if (!p.ok()) {
    ADD_FAILURE() << "pod JSON rejected: " << p.status() << "\n" << json;
    return Pod();
  }
  return *p;
}

// {"pod":"a","node":"n1","cpu":"1","memory":"1Gi","devices":[{"minor":0,"core":0,"memory":"4069Mi"}]}
// Device entries default to type gpu; quantities are Kubernetes strings.
inline Allocation MakeAllocation(absl::string_view json) {
  Json j = ParseJsonOrFail(json);
  Allocation a;
  a.pod = j.value("pod", "");
  a.node = j.value("node", "");
  a.cpu_milli = ParseMilli(j.value("cpu", "0")).value_or(-1);
  a.memory_bytes = ParseQuantity(j.value("memory", "0")).value_or(-1);
  for (const Json& d : j.value("devices", Json::array())) {
    DeviceGrant g;
    g.type = d.value("type", "gpu");
    g.minor = d.value("minor", 0);
    g.core = d.value("core", 0);
    g.memory_bytes = ParseQuantity(d.value("memory", "0")).value_or(-1);
    a.devices.push_back(g);
  }
  return a;
}

inline int64_t MiB(int64_t n) { return n << 20; }
inline int64_t GiB(int64_t n) { return n << 30; }

// "gpu/1" style names of an allocation's devices, sorted, for compact expectations.
inline std::vector<std::string> DeviceNames(const Allocation& a) {
  std::vector<std::string> out;
  for (const DeviceGrant& g : a.devices) out.push_back(absl::StrCat(g.type, "/", g.minor));
  std::sort(out.begin(), out.end());
  return out;
}

inline std::unique_ptr<PlacementStrategy> StrategyOrDie(const std::string& spec) {
  auto s = MakeStrategy(spec);
  if (!s.ok()) {
    ADD_FAILURE() << s.status();
    return nullptr;
  }
  return std::move(s).value();
}

// --- A cluster that verifies its invariants after every mutation -----------------------------------

// Placer::Place with a query of the pod and strategy (and, where a test varies them, the
// candidates and the score cache).
inline Placement PlaceWith(Placer& placer, ClusterState& state, const Pod& pod,
                           const PlacementStrategy& strategy, bool commit = true,
                           const std::vector<int>* candidates = nullptr, bool use_cache = true) {
  return placer.Place(
      state, {.pod = pod, .strategy = strategy, .candidates = candidates, .use_cache = use_cache},
      commit);
}
inline Placement PlaceWith(Placer&& placer, ClusterState& state, const Pod& pod,
                           const PlacementStrategy& strategy, bool commit = true,
                           const std::vector<int>* candidates = nullptr) {
  return PlaceWith(placer, state, pod, strategy, commit, candidates);
}

class CheckedCluster {
 public:
  CheckedCluster() { state_.set_clock([] { return int64_t{1700000000000000000}; }); }

  absl::Status AddNode(const Node& n) { return Checked(state_.AddNode(n)); }
  absl::Status AddNodeJson(absl::string_view json) { return AddNode(MakeNode(json)); }
  absl::Status RemoveNode(const std::string& n) { return Checked(state_.RemoveNode(n)); }
  absl::Status SetDeviceHealth(const std::string& node, const std::string& type, int minor,
                               bool healthy) {
    return Checked(state_.SetDeviceHealth(node, type, minor, healthy));
  }
  absl::Status Reserve(const Allocation& a) { return Checked(state_.Reserve(a)); }
  absl::Status Unreserve(const std::string& p) { return Checked(state_.Unreserve(p)); }
  absl::Status Commit(const std::string& p) { return Checked(state_.Commit(p)); }
  absl::Status Release(const std::string& p) { return Checked(state_.Release(p)); }
  Placement Place(const Pod& pod, const PlacementStrategy& s, bool commit = true) {
    Placement r = PlaceWith(placer_, state_, pod, s, commit);
    ExpectInvariants();
    return r;
  }
  Placement Place(const Pod& pod, const std::string& strategy = "binpack", bool commit = true) {
    auto s = StrategyOrDie(strategy);
    return s ? Place(pod, *s, commit) : Placement();
  }

  FitResult Filter(const Pod& pod, const std::string& node) const {
    int i = state_.FindNode(node);
    EXPECT_GE(i, 0) << "no node " << node;
    return i < 0 ? FitResult::Unresolvable("no such node") : state_.Filter(pod, i);
  }

  ClusterState& state() { return state_; }
  const ClusterState& state() const { return state_; }

 private:
  void ExpectInvariants() const {
    absl::Status inv = state_.CheckInvariants();
    EXPECT_TRUE(inv.ok()) << "invariant broken: " << inv;
  }
  absl::Status Checked(absl::Status s) {
    ExpectInvariants();
    return s;
  }
  ClusterState state_;
  Placer placer_;
};

// --- Scenario tables --------------------------------------------------------------------------------

struct ExpectedPlacement {
  std::string node;                  // "" when the pod must stay pending
  std::vector<std::string> devices;  // sorted "type/minor"; checked when placed
  std::string reason;                // substring of the pending reason; checked when pending
};

struct Scenario {
  std::string name;
  std::vector<std::string> nodes;  // node JSON, added in order
  std::vector<std::string> bound;  // allocation JSON (MakeAllocation) reserved and committed first
  std::vector<std::pair<std::string, ExpectedPlacement>> pods;  // pod JSON, placed in order
  std::string strategy = "binpack";
};

inline void RunScenario(const Scenario& sc) {
  SCOPED_TRACE("scenario " + sc.name);
  CheckedCluster cluster;
  for (const std::string& n : sc.nodes) ASSERT_OK(cluster.AddNodeJson(n));
  for (const std::string& b : sc.bound) {
    Allocation a = MakeAllocation(b);
    ASSERT_OK(cluster.Reserve(a));
    ASSERT_OK(cluster.Commit(a.pod));
  }
  auto strategy = StrategyOrDie(sc.strategy);
  ASSERT_NE(strategy, nullptr);
  for (const auto& [pod_json, expected] : sc.pods) {
    Pod pod = MakePod(pod_json);
    SCOPED_TRACE("pod " + pod.name);
    Placement r = cluster.Place(pod, *strategy);
    if (expected.node.empty()) {
      EXPECT_FALSE(r.ok()) << "placed on " << r.allocation.node;
      EXPECT_TRUE(absl::StrContains(r.reason, expected.reason))
          << "reason \"" << r.reason << "\" lacks \"" << expected.reason << "\"";
    } else {
      ASSERT_TRUE(r.ok()) << r.reason;
      EXPECT_EQ(r.allocation.node, expected.node);
      EXPECT_EQ(DeviceNames(r.allocation), expected.devices);
    }
  }
}

// A table of scenarios, each run on a fresh cluster.
inline void RunScenarioTable(const std::vector<Scenario>& table) {
  for (const Scenario& sc : table) RunScenario(sc);
}

}  // namespace gpufleet::test

#endif  // GPUFLEET_TESTS_CPP_TEST_UTIL_H_
