// reservation: the starvation policy for large gangs (kube-batch issue 561). Letting small jobs
// pass a large pending gang keeps the cluster busy but can starve the gang forever; blocking them
// idles the cluster. This plugin elects one target: the valid, admitted job that has been short of
// its gang for at least `after_cycles` consecutive cycles (highest priority first, then longest
// waiting, then oldest), and opens the session's reservation ledger for it (reservation_ledger.h):
// the gang gets a plan on the nodes where the least running work must drain, capacity freed there
// is held for it, and other jobs only use what the plan leaves. So the target starts once the work
// running on its planned devices at election has finished, whatever arrives meanwhile. The
// allocate action places the target first. Volcano's elect/reserve actions follow the same idea.
//   reservation(after_cycles=3)
#include "absl/strings/str_format.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/engine/plugin.h"

namespace gpufleet::engine {
namespace {

class Reservation : public Plugin {
 public:
  explicit Reservation(int after) : after_(after) {}
  void OnSessionOpen(Session& s) override {
    s.AddTargetJobFn(name(), [this, &s]() {
      int best = -1;
      for (const JobInfo& j : s.jobs()) {
        if (!j.valid || !j.inqueue || j.occupied >= j.min_available()) continue;
        if (j.waiting_cycles < after_) continue;
        if (best < 0) {
          best = j.id;
          continue;
        }
        const JobInfo& b = s.job(best);
        if (j.priority() != b.priority()) {
          if (j.priority() > b.priority()) best = j.id;
        } else if (j.waiting_cycles != b.waiting_cycles) {
          if (j.waiting_cycles > b.waiting_cycles) best = j.id;
        } else if (j.spec->creation < b.spec->creation) {
          best = j.id;
        }
      }
      return best;
    });
  }
  // Jobs are validated by now; the holds are in place before any action places a task.
  void OnSessionReady(Session& s) override { s.reservations().Open(s, s.TargetJob()); }

 private:
  int after_;
};

GPUFLEET_REGISTER(Plugin,
    {.name = "reservation",
     .description = "after N waiting cycles a starving gang holds what it collects",
     .params = {{.name = "after_cycles", .type = ParamType::kInt, .default_value = 3,
                 .help = "waiting cycles before a gang reserves", .range = {.at_least = 0}}},
     .traits = {.needs = {Point::kJobReady}}},
    [](const Params& p) -> absl::StatusOr<std::unique_ptr<Plugin>> {
      ASSIGN_OR_RETURN(int after, p.Get<int>("after_cycles"));
      return std::unique_ptr<Plugin>(new Reservation(after));
    });

}  // namespace
}  // namespace gpufleet::engine
