#include "gpufleet/core/effective_request.h"

#include <iterator>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gpufleet/core/status_macros.h"

namespace gpufleet {
namespace {

// One container's request per resource: requests, defaulted from limits (whole-number rules of
// extended resources checked on each value).
absl::StatusOr<ResourceQuantities> ContainerRequestOf(const ContainerResources& c,
                                                      const std::string& where) {
  ResourceQuantities out;
  auto read = [&](const char* field, const std::map<std::string, std::string>& values) -> absl::Status {
    for (const auto& [name, text] : values) {
      if (out.count(name)) continue;  // a request wins over the limit
      absl::StatusOr<Quantity> q = ReadResourceQuantity(name, text);
      if (!q.ok())
        return absl::InvalidArgumentError(absl::StrFormat("%s.%s.%s", where, field, q.status().message()));
      out.emplace(name, *std::move(q));
    }
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(read("requests", c.requests));
  RETURN_IF_ERROR(read("limits", c.limits));
  return out;
}

absl::Status AddQuantitiesInto(ResourceQuantities& total, const ResourceQuantities& add,
                               const std::string& where) {
  for (const auto& [name, q] : add) {
    auto [it, fresh] = total.emplace(name, q);
    if (fresh) continue;
    absl::StatusOr<Quantity> sum = AddQuantities(it->second, q);
    if (!sum.ok())
      return absl::InvalidArgumentError(absl::StrCat(where, ": ", name, ": ", sum.status().message()));
    it->second = *std::move(sum);
  }
  return absl::OkStatus();
}

void MaxQuantitiesInto(ResourceQuantities& into, const ResourceQuantities& other) {
  for (const auto& [name, q] : other) {
    auto [it, fresh] = into.emplace(name, q);
    if (!fresh && q.nanos > it->second.nanos) it->second = q;
  }
}

}  // namespace

absl::StatusOr<ResourceQuantities> EffectiveRequests(const PodResources& pod) {
  ResourceQuantities running;   // regular containers and sidecars, after initialization
  ResourceQuantities sidecars;  // the sidecars started so far
  ResourceQuantities init;      // the largest need at any point of initialization
  for (size_t i = 0; i < pod.containers.size(); ++i) {
    const std::string where = absl::StrFormat("containers[%d]", i);
    ASSIGN_OR_RETURN(ResourceQuantities r, ContainerRequestOf(pod.containers[i], where));
    RETURN_IF_ERROR(AddQuantitiesInto(running, r, where));
  }
  for (size_t i = 0; i < pod.init_containers.size(); ++i) {
    const std::string where = absl::StrFormat("init_containers[%d]", i);
    ASSIGN_OR_RETURN(ResourceQuantities r, ContainerRequestOf(pod.init_containers[i], where));
    if (pod.init_containers[i].sidecar) {
      RETURN_IF_ERROR(AddQuantitiesInto(running, r, where));
      RETURN_IF_ERROR(AddQuantitiesInto(sidecars, r, where));
      MaxQuantitiesInto(init, sidecars);
    } else {
      RETURN_IF_ERROR(AddQuantitiesInto(r, sidecars, where));
      MaxQuantitiesInto(init, r);
    }
  }
  MaxQuantitiesInto(running, init);
  ResourceQuantities overhead;
  for (const auto& [name, text] : pod.overhead) {
    absl::StatusOr<Quantity> q = ReadResourceQuantity(name, text);
    if (!q.ok()) return absl::InvalidArgumentError(absl::StrCat("overhead.", q.status().message()));
    overhead.emplace(name, *std::move(q));
  }
  RETURN_IF_ERROR(AddQuantitiesInto(running, overhead, "overhead"));
  for (auto it = running.begin(); it != running.end();)
    it = it->second.zero() ? running.erase(it) : std::next(it);
  return running;
}

}  // namespace gpufleet
