// gang-topology: places gangs across network topology levels. Builds the session's topology from
// node labels, one level per entry of `levels` ("block=cloud.provider.com/topology-block,
// rack=cloud.provider.com/topology-rack, host=kubernetes.io/hostname", widest first), and hands it
// to the session with the fit rule; jobs whose spec carries a `topology` constraint are then
// placed whole by it (actions/place_by_topology.h) and planned inside one domain when they starve.
//   gang-topology(levels="rack=topology/rack", fit="best-fit")
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/engine/plugin.h"

namespace gpufleet::engine {
namespace {

absl::StatusOr<std::vector<topology::Level>> ParseLevels(const std::string& text) {
  std::vector<topology::Level> out;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    std::vector<std::string> kv = absl::StrSplit(part, absl::MaxSplits('=', 1));
    if (kv.size() != 2)
      return absl::InvalidArgumentError(absl::StrFormat(
          "gang-topology: level \"%s\" is not name=label", std::string(absl::StripAsciiWhitespace(part))));
    out.push_back({std::string(absl::StripAsciiWhitespace(kv[0])),
                   std::string(absl::StripAsciiWhitespace(kv[1]))});
  }
  if (out.empty()) return absl::InvalidArgumentError("gang-topology: no levels");
  return out;
}

class GangTopologyPlugin : public Plugin {
 public:
  GangTopologyPlugin(std::vector<topology::Level> levels, topology::Fit fit)
      : levels_(std::move(levels)), fit_(fit) {}
  void OnSessionOpen(Session& s) override {
    absl::StatusOr<topology::Topology> t = topology::Topology::FromLabels(s.state(), levels_);
    if (!t.ok()) return;  // the levels were checked when the configuration was parsed
    auto gt = std::make_unique<GangTopology>();
    gt->topology = *std::move(t);
    gt->fit = fit_;
    s.SetGangTopology(std::move(gt));
  }

 private:
  std::vector<topology::Level> levels_;
  topology::Fit fit_;
};

GPUFLEET_REGISTER(Plugin,
    {.name = "gang-topology",
     .description = "place gangs with a topology constraint inside network domains (rack, block)",
     .params = {{"levels", ParamType::kString, Json(),
                 "name=label per level, widest first, comma-separated", "rack=topology/rack"},
                {.name = "fit", .type = ParamType::kString, .default_value = "best-fit",
                 .help = "how a domain is chosen",
                 .one_of = {"best-fit", "least-free-capacity", "largest-fit", "fragmentation"}}}},
    [](const Params& p) -> absl::StatusOr<std::unique_ptr<Plugin>> {
      ASSIGN_OR_RETURN(std::string levels_text, p.Get<std::string>("levels"));
      ASSIGN_OR_RETURN(std::string fit_text, p.Get<std::string>("fit"));
      ASSIGN_OR_RETURN(std::vector<topology::Level> levels, ParseLevels(levels_text));
      // The level list's own errors (a name or label twice), found on an empty cluster.
      RETURN_IF_ERROR(topology::Topology::FromLabels(ClusterState(), levels).status());
      ASSIGN_OR_RETURN(topology::Fit fit, topology::ParseFit(fit_text));
      return std::unique_ptr<Plugin>(new GangTopologyPlugin(std::move(levels), fit));
    });

}  // namespace
}  // namespace gpufleet::engine
