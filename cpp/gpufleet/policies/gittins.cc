// Gittins-index variant of discretized 2D-LAS (Tiresias, Gu et al., NSDI 2019, section 3.2, and
// its simulator's "dlas-gpu-gittins"): the same queues, but within a queue jobs are served by
// their Gittins index over the service distribution, with the queue's limit as the quantum:
//   G(a, D) = P(S - a <= D | S > a) / E[min(S - a, D) | S > a]
// for a job with attained service a (GPU-seconds) and D = limit - a (Gittins, "Bandit processes
// and dynamic allocation indices", JRSS B 41(2), 1979). The distribution is a list of GPU-seconds
// (`durations`) or a CSV file with a "duration" column (`distribution_file`, e.g. Tiresias'
// yarn-gput1000.csv). With tiresias_compat the ranks come from Tiresias' own table instead
// (gittins.h lists how it differs).
#include "gpufleet/policies/gittins.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/policies/dlas_gpu.h"

namespace gpufleet::jobtime {

double Python2Round(double x, int digits) {
  if (!std::isfinite(x) || digits < 0 || digits > 17) return x;
  // Every double has a finite decimal expansion of at most 309 integer and 1,074 fractional
  // digits, so this prints x exactly; rounding is then done on the digits.
  char buf[1500];
  const bool negative = std::signbit(x);
  const int len = std::snprintf(buf, sizeof buf, "%.1100f", std::fabs(x));
  std::string digits_kept(buf, static_cast<size_t>(len));
  const size_t cut = digits_kept.find('.') + 1 + static_cast<size_t>(digits);
  const bool up = digits_kept[cut] >= '5';  // a half (5 then zeros) or more: away from zero
  digits_kept.resize(cut);
  bool carry = up;
  for (size_t i = digits_kept.size(); carry && i-- > 0;) {
    if (digits_kept[i] == '.') continue;
    carry = digits_kept[i] == '9';
    digits_kept[i] = carry ? '0' : static_cast<char>(digits_kept[i] + 1);
  }
  char text[1500];
  std::snprintf(text, sizeof text, "%s%s%s", negative ? "-" : "", carry ? "1" : "",
                digits_kept.c_str());
  return std::strtod(text, nullptr);
}

TiresiasGittinsTable::TiresiasGittinsTable(std::vector<int64_t> samples, int64_t delta)
    : data_(std::move(samples)), delta_(delta) {
  std::sort(data_.begin(), data_.end());
  prefix_.assign(data_.size() + 1, 0);
  for (size_t i = 0; i < data_.size(); ++i) prefix_[i + 1] = prefix_[i] + data_[i];
  rank_.reserve(data_.size());
  for (int64_t v : data_) rank_.push_back(IndexAt(v - 1));
}

double TiresiasGittinsTable::IndexAt(int64_t a) const {
  const int64_t n = static_cast<int64_t>(data_.size());
  const int64_t last = data_.back();
  if (a > last - 1) return 0;
  const int64_t idx = std::upper_bound(data_.begin(), data_.end(), a) - data_.begin();
  const int64_t next = a + delta_;
  // Tiresias stops one short of the end when the quantum passes the largest sample.
  const int64_t idx_delta =
      next > last - 1 ? n - 1 : std::upper_bound(data_.begin(), data_.end(), next) - data_.begin();
  const double p =
      Python2Round(static_cast<double>(idx_delta - idx) / static_cast<double>(n - idx), 5);
  const int64_t e_sum = prefix_[idx_delta] - prefix_[idx] + delta_ * (n - idx_delta);
  const int64_t e = e_sum / (n - idx);  // Python 2 floors int / int
  if (e <= 0) return 0;                 // not reached with samples and delta >= 1
  return Python2Round(p * 1000000 / static_cast<double>(e), 4);
}

double TiresiasGittinsTable::Rank(int64_t attained) const {
  if (data_.empty() || attained > data_.back()) return 0;
  size_t idx = std::upper_bound(data_.begin(), data_.end(), attained) - data_.begin();
  return idx < rank_.size() ? rank_[idx] : 0;
}

namespace {

absl::StatusOr<std::vector<double>> ReadDurations(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrFormat("gittins: cannot open \"%s\"", path));
  std::vector<double> out;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    std::string field(absl::StripAsciiWhitespace(line.substr(0, line.find(','))));
    if (field.empty() || (line_no == 1 && field == "duration")) continue;
    double v;
    if (!absl::SimpleAtod(field, &v) || !(v > 0))
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s line %d, field duration: '%s' is not a positive number", path, line_no, field));
    out.push_back(v);
  }
  return out;
}

class Gittins : public DlasGpu {
 public:
  Gittins(Options o, std::vector<double> dist) : DlasGpu(std::move(o)), dist_(std::move(dist)) {
    std::sort(dist_.begin(), dist_.end());
    prefix_.assign(dist_.size() + 1, 0);
    for (size_t i = 0; i < dist_.size(); ++i) prefix_[i + 1] = prefix_[i] + dist_[i];
  }

  double Index(double a, double quantum) const {
    const size_t n = dist_.size();
    size_t lo = std::upper_bound(dist_.begin(), dist_.end(), a) - dist_.begin();
    if (lo == n) return 0;  // older than every sample: no evidence it will end soon
    double b = a + quantum;
    size_t hi = std::upper_bound(dist_.begin(), dist_.end(), b) - dist_.begin();
    double done = static_cast<double>(hi - lo);
    double expected = (prefix_[hi] - prefix_[lo]) - done * a + (n - hi) * quantum;
    return expected > 0 ? done / expected : kNever;
  }

 protected:
  void OrderQueue(const JobTimeView& view, int q, std::vector<int>& queue) override {
    const auto& limits = options().queue_limits;
    rank_.resize(view.jobs->size());
    if (view.tiresias_compat && !tiresias_) {
      // Tiresias reads its samples with int(); a sample below one second counts as one.
      std::vector<int64_t> whole;
      whole.reserve(dist_.size());
      for (double v : dist_) whole.push_back(std::max<int64_t>(1, static_cast<int64_t>(v)));
      tiresias_ = std::make_unique<TiresiasGittinsTable>(std::move(whole));
    }
    for (int i : queue) {
      double a = Service(view, i);
      if (view.tiresias_compat) {  // whole GPU-seconds, as Tiresias keeps them
        rank_[i] = tiresias_->Rank(static_cast<int64_t>(std::floor(a + 1e-6)));
        continue;
      }
      double quantum = q < static_cast<int>(limits.size()) ? std::max(limits[q] - a, 1.0)
                                                           : std::max(dist_.back() - a, 1.0);
      rank_[i] = Index(a, quantum);
    }
    std::stable_sort(queue.begin(), queue.end(), [&](int x, int y) {
      if (rank_[x] != rank_[y]) return rank_[x] > rank_[y];
      return view.job(x).spec.submit_time < view.job(y).spec.submit_time;
    });
  }

 private:
  std::vector<double> dist_, prefix_, rank_;
  std::unique_ptr<TiresiasGittinsTable> tiresias_;  // built on the first tiresias_compat call
};

std::vector<ParamSpec> GittinsParams() {
  std::vector<ParamSpec> params = DlasGpu::OptionParams();
  params.push_back({.name = "durations", .type = ParamType::kNumberList,
                    .help = "sample of job service times (seconds); this or distribution_file",
                    .example = Json::array({100, 500, 1000, 3000}), .range = {.above = 0}});
  params.push_back({"distribution_file", ParamType::kString, nullptr,
                    "file of service times, one per line; this or durations"});
  return params;
}

GPUFLEET_REGISTER(JobTimePolicy,
    {.name = "gittins",
     .description = "2D-LAS queues served by Gittins index over a service distribution "
                    "(Tiresias NSDI'19)",
     .params = GittinsParams(),
     .traits = {.preemptive = true}},
    [](const Params& p) -> absl::StatusOr<std::unique_ptr<JobTimePolicy>> {
      ASSIGN_OR_RETURN(auto o, DlasGpu::ParseOptions(p));
      std::vector<double> dist;
      if (p.Has("durations")) {
        ASSIGN_OR_RETURN(dist, p.Get<std::vector<double>>("durations"));
      }
      if (p.Has("distribution_file")) {
        if (p.Has("durations"))
          return absl::InvalidArgumentError(
              "gittins: give durations or distribution_file, not both");
        ASSIGN_OR_RETURN(std::string file, p.Get<std::string>("distribution_file"));
        ASSIGN_OR_RETURN(dist, ReadDurations(file));
      }
      if (dist.empty())
        return absl::InvalidArgumentError(
            "gittins: needs a service distribution: durations=[...] or distribution_file=PATH");
      return std::unique_ptr<JobTimePolicy>(new Gittins(std::move(o), std::move(dist)));
    });

}  // namespace
}  // namespace gpufleet::jobtime
