// The Tiresias-compatible Gittins table (gittins.h): Python 2 rounding and the index rule of
// Tiresias' cal_r_gittins_index / get_gittins_index on hand-worked distributions.
#include <gtest/gtest.h>

#include <cmath>

#include "gpufleet/policies/gittins.h"

namespace gpufleet::jobtime {
namespace {

TEST(Python2Round, HalvesGoAwayFromZeroOnTheExactBinaryValue) {
  EXPECT_EQ(Python2Round(0.125, 2), 0.13);         // exact half: away (Python 3 gives 0.12)
  EXPECT_EQ(Python2Round(0.015625, 5), 0.01563);   // 1/64, an exact half at 5 digits
  EXPECT_EQ(Python2Round(-2.5, 0), -3.0);
  EXPECT_EQ(Python2Round(2.675, 2), 2.67);         // the double is just below 2.675
  EXPECT_EQ(Python2Round(9.99995, 4), 10.0);       // carry into a new digit
  EXPECT_EQ(Python2Round(2.0 / 3.0, 5), 0.66667);
  EXPECT_EQ(Python2Round(1e-7, 5), 0.0);
}

TEST(TiresiasGittinsTable, HandWorkedIndexWithFlooredMean) {
  // Samples 100, 200, 400, quantum 3250. At a = 0 every sample ends within the quantum, but
  // since a + quantum passes the largest sample Tiresias counts the largest as not ending:
  // p = round(2/3, 5) = 0.66667, e = (100 + 200 + 3250) // 3 = 1183 (Python 2 floor; the true
  // mean is 1183.33), index = round(0.66667 * 1e6 / 1183, 4).
  TiresiasGittinsTable t({400, 100, 200}, 3250);
  EXPECT_DOUBLE_EQ(t.IndexAt(0), Python2Round(0.66667 * 1000000 / 1183, 4));
  // Between samples the rank is constant, taken at the next sample minus one.
  EXPECT_EQ(t.Rank(0), t.IndexAt(99));
  EXPECT_EQ(t.Rank(99), t.IndexAt(99));
  EXPECT_EQ(t.Rank(100), t.IndexAt(199));
  EXPECT_EQ(t.Rank(250), t.IndexAt(399));
  // At a = 199: one of the two remaining samples "ends": p = 0.5, e = (200 + 3250) // 2 = 1725
  // (the sample itself, not 200 - 199, as Tiresias sums it).
  EXPECT_DOUBLE_EQ(t.IndexAt(199), Python2Round(0.5 * 1000000 / 1725, 4));
  // At or past the largest sample nothing is known: rank 0 (served last).
  EXPECT_EQ(t.IndexAt(399), 0);
  EXPECT_EQ(t.Rank(400), 0);
  EXPECT_EQ(t.Rank(100000), 0);
}

TEST(TiresiasGittinsTable, QuantumWithinTheSamples) {
  // Samples 10, 20, 5000, quantum 100: at a = 0 the jobs of 10 and 20 end within the quantum,
  // the third does not: p = round(2/3, 5), e = (10 + 20 + 100) // 3 = 43.
  TiresiasGittinsTable t({10, 20, 5000}, 100);
  EXPECT_DOUBLE_EQ(t.IndexAt(0), Python2Round(0.66667 * 1000000 / 43, 4));
  // Once past 20 the only sample left is 5000: nothing ends within the quantum.
  EXPECT_EQ(t.IndexAt(20), 0);
  EXPECT_GT(t.Rank(5), t.Rank(25));  // a young job outranks one past the short mode
}

}  // namespace
}  // namespace gpufleet::jobtime
