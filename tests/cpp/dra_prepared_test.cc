// Questions kept in parts (cpp/gpufleet/dra/prepared.h): what is held turns into the problem's
// in-use devices, counters, capacities, opened units and twin classes; adding an answer to a Held
// and taking it away again leaves it as it was; and a problem built with nothing held answers as
// the same problem built by hand.
#include <gtest/gtest.h>

#include "gpufleet/dra/prepared.h"
#include "gpufleet/dra/solve.h"

namespace gpufleet::dra {
namespace {

// Two partitions of one counter set (4 slices, 2 each), two whole devices, one shared device
// with one capacity (100).
NodeTable Table() {
  NodeTable t;
  t.counter_total = {4000};
  t.capacity_total = {100000};
  t.capacity_device = {4};
  t.unit_counters = {{0}, {}, {}, {}};
  t.unit_device = {-1, 2, 3, 4};
  for (int p = 0; p < 2; ++p) t.devices.push_back({false, false, {{0, 2000}}, 0, -1, -1});
  t.devices.push_back({false, false, {}, 1, -1, -1});
  t.devices.push_back({false, false, {}, 2, -1, -1});
  t.devices.push_back({false, true, {}, 3, -1, -1});
  return t;
}

// One claim, one request for `count` of the whole devices (2, 3) or of everything.
ClaimRequests Requests(int count, bool everything) {
  ClaimRequests r;
  r.num_claims = 1;
  r.num_groups = 1;
  Request q;
  q.count = count;
  for (int d = everything ? 0 : 2; d < 4; ++d) q.candidates.push_back({d, false, {}, -1});
  if (everything) q.candidates.push_back({4, false, {{0, 30000}}, 300000});
  r.requests = {q};
  r.twin_signature = {0, 0, 1, 1, -1};
  return r;
}

TEST(DraPrepared, WhatIsHeldShapesTheProblem) {
  const NodeTable t = Table();
  ASSERT_TRUE(ValidateTable(t).ok());
  const ClaimRequests r = Requests(1, true);
  ASSERT_TRUE(ValidateRequests(t, r).ok());
  Held h = EmptyHeld(t);
  h.in_use[0] = 1;       // one partition held: two slices of the set consumed
  h.in_use[2] = 1;       // one whole device held
  h.sharers[4] = 1;      // the shared device partly consumed
  h.capacity_used[0] = 40000;
  h.counter_used[0] = 1000;  // a device published for another node consumes one more slice
  ASSERT_TRUE(ValidateHeld(t, h).ok());
  const Problem p = BuildProblem(t, r, h, Objective::kPack, 77);
  EXPECT_TRUE(p.devices[0].in_use);
  EXPECT_FALSE(p.devices[1].in_use);
  EXPECT_TRUE(p.devices[2].in_use);
  EXPECT_FALSE(p.devices[4].in_use);  // shared devices are never in use, only consumed
  EXPECT_EQ(p.counter_free, std::vector<int64_t>({1000}));
  EXPECT_EQ(p.capacity_free, std::vector<int64_t>({60000}));
  EXPECT_EQ(p.unit_free, std::vector<int64_t>({250000, 1000000, 1000000, 600000}));
  EXPECT_EQ(p.unit_opened, std::vector<uint8_t>({1, 0, 0, 1}));
  // Twins: the two partitions share a signature but one is held; the whole devices likewise.
  EXPECT_NE(p.devices[0].twin, p.devices[1].twin);
  EXPECT_NE(p.devices[2].twin, p.devices[3].twin);
  EXPECT_EQ(p.devices[4].twin, -1);
  EXPECT_TRUE(p.locality);
  EXPECT_EQ(p.budget, 77);
  EXPECT_TRUE(ValidateProblem(p).ok());
}

TEST(DraPrepared, HoldingAnAnswerAndGivingItBackRestoresTheHeld) {
  const NodeTable t = Table();
  const ClaimRequests r = Requests(3, true);
  Held h = EmptyHeld(t);
  const Result answer = Solve(BuildProblem(t, r, h, Objective::kPack, 200000));
  ASSERT_EQ(answer.verdict, Verdict::kAllocated);
  HoldChoices(t, r, answer.choices, +1, h);
  int held = 0;
  for (uint8_t u : h.in_use) held += u;
  EXPECT_EQ(held + h.sharers[4], 3);
  // Asked again with the answer held, fewer devices are left: 4 of 5 cannot be had.
  EXPECT_EQ(Solve(BuildProblem(t, Requests(4, true), h, Objective::kPack, 200000)).verdict,
            Verdict::kUnallocatable);
  HoldChoices(t, r, answer.choices, -1, h);
  const Held empty = EmptyHeld(t);
  EXPECT_EQ(h.in_use, empty.in_use);
  EXPECT_EQ(h.sharers, empty.sharers);
  EXPECT_EQ(h.capacity_used, empty.capacity_used);
}

TEST(DraPrepared, RequestsOutOfTheTableAreRefused) {
  const NodeTable t = Table();
  ClaimRequests r = Requests(1, false);
  r.requests[0].candidates.push_back({9, false, {}, -1});
  EXPECT_FALSE(ValidateRequests(t, r).ok());
  r = Requests(1, false);
  r.twin_signature.pop_back();
  EXPECT_FALSE(ValidateRequests(t, r).ok());
  NodeTable bad = Table();
  bad.unit_device[1] = 7;
  EXPECT_FALSE(ValidateTable(bad).ok());
}

}  // namespace
}  // namespace gpufleet::dra
