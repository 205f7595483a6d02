// Gittins-index variant of discretized 2D-LAS (Tiresias, Gu et al., NSDI 2019, section 3.2, and
// its simulator's "dlas-gpu-gittins"): the same queues, but within a queue jobs are served by
// their Gittins index over the service distribution, with the queue's limit as the quantum:
//   G(a, D) = P(S - a <= D | S > a) / E[min(S - a, D) | S > a]
// for a job with attained service a (GPU-seconds) and D = limit - a (Gittins, "Bandit processes
// and dynamic allocation indices", JRSS B 41(2), 1979). The distribution is a list of GPU-seconds
// (`durations`) or a CSV file with a "duration" column (`distribution_file`, e.g. Tiresias'
// yarn-gput1000.csv).
#include <algorithm>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/policies/dlas_gpu.h"

namespace gpufleet::jobtime {
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
    for (int i : queue) {
      double a = Service(view, i);
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
};

std::vector<ParamSpec> GittinsParams() {
  std::vector<ParamSpec> params = DlasGpu::OptionParams();
  params.push_back({"durations", ParamType::kNumberList, nullptr,
                    "sample of job service times (seconds); this or distribution_file",
                    Json::array({100, 500, 1000, 3000})});
  params.push_back({"distribution_file", ParamType::kString, nullptr,
                    "file of service times, one per line; this or durations"});
  return params;
}

GPUFLEET_REGISTER(JobTimePolicy,
    {.name = "gittins",
     .description = "2D-LAS queues served by Gittins index over a service distribution "
                    "(Tiresias NSDI'19)",
     .params = GittinsParams(),
     .capabilities = {"preemptive"}},
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
      for (double v : dist)
        if (!(v > 0)) return absl::InvalidArgumentError("gittins: durations must be > 0");
      return std::unique_ptr<JobTimePolicy>(new Gittins(std::move(o), std::move(dist)));
    });

}  // namespace
}  // namespace gpufleet::jobtime
