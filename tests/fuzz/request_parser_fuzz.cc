// A pod's requests map ("name=value" per line) to cpu, memory and device requests. On error the
// pod is untouched; on success every device request is well formed (a positive count, core and
// memory ratio within one device, one entry per type, sorted), and cpu and memory read back from
// their canonical strings.
#include <cstdint>

#include "fuzz_util.h"
#include "gpufleet/core/quantity.h"
#include "gpufleet/core/request_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpufleet;
  // The first byte picks gpushare's memory unit; the rest are the requests.
  if (size == 0) return 0;
  RequestParseOptions options;
  options.gpushare_unit_bytes = (data[0] & 1) ? int64_t{1} << 30 : int64_t{1} << 20;
  const auto requests = fuzz::KeyValueLines(fuzz::AsText(data + 1, size - 1));

  Pod pod;
  pod.name = "fuzz/pod";
  pod.cpu_milli = 7;
  pod.memory_bytes = 11;
  pod.devices.push_back(DeviceRequest{"fpga", 1, 13, 0, 0});
  const Pod before = pod;
  absl::Status s = ParseRequests(requests, &pod, options);
  if (!s.ok()) {
    FUZZ_CHECK(s.code() == absl::StatusCode::kInvalidArgument && !s.message().empty(), "%s",
               s.ToString().c_str());
    FUZZ_CHECK(pod == before, "a failed parse changed the pod: %s", s.ToString().c_str());
    return 0;
  }
  FUZZ_CHECK(pod.cpu_milli >= 0 && pod.memory_bytes >= 0, "negative cpu or memory");
  FUZZ_CHECK(*ParseMilli(FormatMilli(pod.cpu_milli)) == pod.cpu_milli, "cpu does not read back");
  FUZZ_CHECK(*ParseQuantity(FormatBytes(pod.memory_bytes)) == pod.memory_bytes,
             "memory does not read back");
  for (size_t i = 0; i < pod.devices.size(); ++i) {
    const DeviceRequest& r = pod.devices[i];
    FUZZ_CHECK(i == 0 || pod.devices[i - 1].type < r.type, "device types not sorted and unique");
    FUZZ_CHECK(r.count >= 1, "%s count %d", r.type.c_str(), r.count);
    FUZZ_CHECK(r.core >= 0 && r.core <= 100, "%s core %lld", r.type.c_str(),
               static_cast<long long>(r.core));
    FUZZ_CHECK(r.memory_ratio >= 0 && r.memory_ratio <= 100, "%s ratio %lld", r.type.c_str(),
               static_cast<long long>(r.memory_ratio));
    FUZZ_CHECK(r.memory_bytes >= 0, "%s memory %lld", r.type.c_str(),
               static_cast<long long>(r.memory_bytes));
    // Multi-device requests are whole devices or an even split; either way something is asked.
    FUZZ_CHECK(r.core > 0 || r.memory_ratio > 0 || r.memory_bytes > 0,
               "%s request asks for nothing", r.type.c_str());
  }
  // Parsing is a function of its input.
  Pod again;
  FUZZ_CHECK(ParseRequests(requests, &again, options).ok(), "second parse failed");
  FUZZ_CHECK(again.cpu_milli == pod.cpu_milli && again.memory_bytes == pod.memory_bytes &&
                 again.devices == pod.devices,
             "second parse differs");
  return 0;
}
