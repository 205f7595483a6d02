// PythonRandom against values CPython 3.11 printed for the same seeds (random.Random).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpufleet/policies/python_random.h"

namespace gpufleet::jobtime {
namespace {

TEST(PythonRandom, MatchesCPython) {
  // random.Random(5).getrandbits(32), three times.
  PythonRandom five(5);
  EXPECT_EQ(five.GetRandBits(32), 2675342405u);
  EXPECT_EQ(five.GetRandBits(32), 1097127993u);
  EXPECT_EQ(five.GetRandBits(32), 3185950873u);
  // [random.Random(0).randrange(3) for _ in range(10)]
  PythonRandom zero(0);
  std::vector<int64_t> draws;
  for (int i = 0; i < 10; ++i) draws.push_back(zero.RandBelow(3));
  EXPECT_EQ(draws, (std::vector<int64_t>{1, 1, 0, 1, 2, 1, 1, 1, 1, 1}));
  // A seed of more than 32 bits: shuffle(list(range(5))), then getrandbits(7).
  PythonRandom big((uint64_t{1} << 40) + 7);
  std::vector<int> v = {0, 1, 2, 3, 4};
  big.Shuffle(v);
  EXPECT_EQ(v, (std::vector<int>{2, 0, 1, 3, 4}));
  EXPECT_EQ(big.GetRandBits(7), 66u);
}

// Gavel's per-round shuffle of its GPU types with the generator seeded by seed + 5 (seed 0).
TEST(PythonRandom, GavelTypeShuffles) {
  PythonRandom shuffler(5);
  const std::vector<std::vector<std::string>> expected = {
      {"v100", "p100", "k80"}, {"v100", "p100", "k80"}, {"p100", "v100", "k80"},
      {"k80", "v100", "p100"}, {"p100", "v100", "k80"}, {"p100", "k80", "v100"}};
  for (const auto& want : expected) {
    std::vector<std::string> types = {"v100", "p100", "k80"};
    shuffler.Shuffle(types);
    EXPECT_EQ(types, want);
  }
}

}  // namespace
}  // namespace gpufleet::jobtime
