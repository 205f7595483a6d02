// The native DRA search (cpp/gpufleet/dra) on hand-made problems: counting refuses impossible
// claims without searching, the rules (in use, counters, taints, constraints, capacity) hold in
// every answer, the verdicts follow Kubernetes' allocator (All under a constraint is an error),
// and the scored search packs partitions.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "gpufleet/dra/search.h"
#include "gpufleet/dra/solve.h"

namespace gpufleet::dra {
namespace {

// n plain identical devices, one claim with requests of the given counts (any device each).
Problem Plain(int n, const std::vector<int>& counts) {
  Problem p;
  for (int d = 0; d < n; ++d) {
    Device dev;
    dev.unit = d;
    dev.twin = 0;
    p.devices.push_back(dev);
    p.unit_free.push_back(1000000);
    p.unit_opened.push_back(0);
  }
  p.num_claims = 1;
  for (int count : counts) {
    Request r;
    r.group = p.num_groups++;
    r.count = count;
    for (int d = 0; d < n; ++d) r.candidates.push_back({d, false, {}, -1});
    p.requests.push_back(r);
  }
  return p;
}

TEST(DraSearch, CountingRefusesTheImpossibleClaimWithoutSearching) {
  for (int n : {8, 10, 11, 16, 24}) {
    const int half = (n + 1) / 2;
    Problem p = Plain(n, {half, n + 1 - half});
    ASSERT_TRUE(ValidateProblem(p).ok());
    for (Objective o : {Objective::kPack, Objective::kFirst}) {
      p.objective = o;
      Result r = Solve(p);
      EXPECT_EQ(r.verdict, Verdict::kUnallocatable) << n;
      EXPECT_FALSE(r.gave_up);
      EXPECT_LE(r.steps, 2) << n;  // decided at the root, before any device is tried
    }
  }
}

TEST(DraSearch, ExactFitTakesEveryDeviceOnce) {
  Problem p = Plain(10, {4, 6});
  Result r = Solve(p);
  ASSERT_EQ(r.verdict, Verdict::kAllocated);
  std::set<int> devices;
  for (const Choice& c : r.choices) devices.insert(c.device);
  EXPECT_EQ(devices.size(), 10u);
  EXPECT_TRUE(r.proved_best);
}

TEST(DraSearch, InUseDevicesAreLeftToAdminAccess) {
  Problem p = Plain(3, {3});
  p.devices[1].in_use = true;
  EXPECT_EQ(Solve(p).verdict, Verdict::kUnallocatable);
  p.requests[0].admin = true;
  Result r = Solve(p);
  ASSERT_EQ(r.verdict, Verdict::kAllocated);
  EXPECT_EQ(r.choices.size(), 3u);
}

TEST(DraSearch, AllModeUnderAConstraintItBreaksIsAnError) {
  // Two devices with different numa values; one request for All of them, matchAttribute numa.
  Problem p = Plain(2, {1});
  p.requests[0].mode = Mode::kAll;
  p.requests[0].count = 2;
  for (Device& d : p.devices) d.twin = -1;
  p.constraints.push_back({0, false, {0}, {{0}, {1}}});
  Result r = Solve(p);
  EXPECT_EQ(r.verdict, Verdict::kError);
  EXPECT_EQ(r.error_request, 0);
  EXPECT_EQ(r.error_device, 1);
  // The same values agree: allocated.
  p.constraints[0].values = {{5}, {5}};
  EXPECT_EQ(Solve(p).verdict, Verdict::kAllocated);
}

TEST(DraSearch, MatchAttributePicksOneValueForAllRequests) {
  // numa: devices 0-2 on 0, 3-5 on 1; two requests of 2 and 1 under one matchAttribute.
  Problem p = Plain(6, {2, 1});
  for (Device& d : p.devices) d.twin = -1;
  p.constraints.push_back({0, false, {0, 1}, {{0}, {0}, {0}, {1}, {1}, {1}}});
  p.devices[0].in_use = p.devices[1].in_use = true;  // numa 0 keeps one free device
  Result r = Solve(p);
  ASSERT_EQ(r.verdict, Verdict::kAllocated);
  for (const Choice& c : r.choices) EXPECT_GE(c.device, 3);
  // Four devices on one value are needed but no value has four: refused by the per-value bound.
  p = Plain(6, {2, 2});
  p.constraints.push_back({0, false, {0, 1}, {{0}, {0}, {0}, {1}, {1}, {1}}});
  r = Solve(p);
  EXPECT_EQ(r.verdict, Verdict::kUnallocatable);
  EXPECT_LE(r.steps, 2);
}

TEST(DraSearch, DistinctAttributeNeverRepeatsAValue) {
  Problem p = Plain(4, {3});
  for (Device& d : p.devices) d.twin = -1;
  p.constraints.push_back({0, true, {0}, {{0}, {0}, {1}, {2}}});
  Result r = Solve(p);
  ASSERT_EQ(r.verdict, Verdict::kAllocated);
  std::set<int> values;
  for (const Choice& c : r.choices) values.insert(p.constraints[0].values[c.device][0]);
  EXPECT_EQ(values.size(), 3u);
  p.requests[0].count = 4;
  EXPECT_EQ(Solve(p).verdict, Verdict::kUnallocatable);
}

// Two GPUs, each a counter set of 7 memory slices, each with seven 1g partitions (devices);
// seven claims of one 1g partition each.
Problem Mig(int claims) {
  Problem p;
  for (int gpu = 0; gpu < 2; ++gpu) {
    p.counter_free.push_back(7);
    p.unit_free.push_back(7);
    p.unit_opened.push_back(0);
    for (int slot = 0; slot < 7; ++slot) {
      Device d;
      d.counters = {{gpu, 1}};
      d.unit = gpu;
      d.twin = gpu;  // a GPU's 1g partitions are interchangeable
      p.devices.push_back(d);
    }
  }
  p.num_claims = claims;
  for (int c = 0; c < claims; ++c) {
    Request r;
    r.claim = c;
    r.group = p.num_groups++;
    for (int d = 0; d < 14; ++d) r.candidates.push_back({d, false, {}, 1});
    p.requests.push_back(r);
  }
  return p;
}

TEST(DraSearch, PackingPutsSevenPartitionsOnOneGpu) {
  Problem p = Mig(7);
  // Interleave the visiting order so that "first" would spread: GPU 1's partitions come first
  // for odd claims.
  for (int c = 1; c < 7; c += 2) std::rotate(p.requests[c].candidates.begin(),
                                             p.requests[c].candidates.begin() + 7,
                                             p.requests[c].candidates.end());
  p.objective = Objective::kFirst;
  Result first = Solve(p);
  ASSERT_EQ(first.verdict, Verdict::kAllocated);
  EXPECT_EQ(first.score.opened, 2);
  EXPECT_EQ(first.score, ScoreOf(p, first.choices));
  p.objective = Objective::kPack;
  Result packed = Solve(p);
  ASSERT_EQ(packed.verdict, Verdict::kAllocated);
  EXPECT_EQ(packed.score.opened, 1);
  EXPECT_EQ(packed.score.leftover, 0);
  std::set<int> gpus;
  for (const Choice& c : packed.choices) gpus.insert(c.device / 7);
  EXPECT_EQ(gpus.size(), 1u);
  // Counters hold: an eighth claim can only go to the other GPU, a fifteenth nowhere.
  EXPECT_EQ(Solve(Mig(14)).verdict, Verdict::kAllocated);
  EXPECT_EQ(Solve(Mig(15)).verdict, Verdict::kUnallocatable);
}

TEST(DraSearch, SharedDevicesHoldRequestsUpToTheirCapacity) {
  // One request takes a device once, even a shared one.
  Problem once = Plain(1, {2});
  once.devices[0].multi = true;
  once.devices[0].twin = -1;
  once.capacity_free = {100};
  once.requests[0].candidates[0].capacity = {{0, 10}};
  EXPECT_EQ(Solve(once).verdict, Verdict::kUnallocatable);
  Problem p = Plain(1, {1, 1, 1});
  p.devices[0].multi = true;
  p.devices[0].twin = -1;
  p.capacity_free = {100};
  for (Request& r : p.requests) r.candidates[0].capacity = {{0, 40}};
  EXPECT_EQ(Solve(p).verdict, Verdict::kUnallocatable);  // 120 of 100
  p.requests.pop_back();
  p.num_groups = 2;
  Result r = Solve(p);
  ASSERT_EQ(r.verdict, Verdict::kAllocated);
  EXPECT_EQ(r.choices[0].device, r.choices[1].device);
}

TEST(DraSearch, TaintedCandidatesAreNeverTaken) {
  Problem p = Plain(2, {2});
  p.requests[0].candidates[1].blocked = true;
  EXPECT_EQ(Solve(p).verdict, Verdict::kUnallocatable);
  p.requests[0].count = 1;
  Result r = Solve(p);
  ASSERT_EQ(r.verdict, Verdict::kAllocated);
  EXPECT_EQ(r.choices[0].device, 0);
}

TEST(DraSearch, FirstAvailableTakesTheEarliestMemberThatFits) {
  Problem p = Plain(3, {4, 2});  // one group of two members: 4 devices (cannot), then 2
  p.requests[1].group = 0;
  p.num_groups = 1;
  Result r = Solve(p);
  ASSERT_EQ(r.verdict, Verdict::kAllocated);
  for (const Choice& c : r.choices) EXPECT_EQ(c.request, 1);
}

TEST(DraSearch, TooLargeAQuestionIsAnErrorNotADeepRecursion) {
  Problem p = Plain(4, {});
  for (int i = 0; i < 200; ++i) {
    Request r;
    r.claim = 0;
    r.group = p.num_groups++;
    r.count = 32;
    p.requests.push_back(r);
  }
  EXPECT_FALSE(ValidateProblem(p).ok());
}

TEST(DraSearch, MalformedProblemsAreErrorsNotCrashes) {
  Problem p = Plain(2, {1});
  p.requests[0].candidates.push_back({7, false, {}, 1});
  EXPECT_FALSE(ValidateProblem(p).ok());
  p = Plain(2, {1});
  p.constraints.push_back({0, false, {3}, {{0}, {0}}});
  EXPECT_FALSE(ValidateProblem(p).ok());
  p = Plain(2, {1});
  p.devices[0].counters = {{4, 1}};
  EXPECT_FALSE(ValidateProblem(p).ok());
}

}  // namespace
}  // namespace gpufleet::dra
