#include "gpufleet/engine/plugin.h"

#include "gpufleet/core/status_macros.h"

namespace gpufleet::engine {

Json PluginTraits::ToJson() const {
  Json out = {{"needs", Json::array()}};
  for (Point p : needs) out["needs"].push_back(PointName(p));
  return out;
}

absl::StatusOr<std::unique_ptr<Plugin>> MakePlugin(const std::string& name, const Json& args) {
  return Registry<Plugin>::Global().Create(name, args);
}

absl::StatusOr<PointSet> ObserveAnswers(const std::string& name, const Json& args,
                                        PointSet disabled) {
  ASSIGN_OR_RETURN(std::unique_ptr<Plugin> plugin, MakePlugin(name, args));
  ClusterState empty;
  SessionInput in;
  in.state = &empty;
  in.tiers = {{name}};
  if (disabled.any()) in.disabled[name] = disabled;
  Session session(in);
  plugin->OnSessionOpen(session);
  return session.Answers(name);
}

std::vector<std::string> PluginsAnswering(Point point) {
  std::vector<std::string> out;
  for (const auto& r : Registry<Plugin>::Global().Infos()) {
    absl::StatusOr<PointSet> answers = ObserveAnswers(r.name, r.ExampleParams());
    if (answers.ok() && answers->test(static_cast<int>(point))) out.push_back(r.name);
  }
  return out;
}

}  // namespace gpufleet::engine
