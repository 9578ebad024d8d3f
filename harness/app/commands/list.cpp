// `tunebench list`: the catalog's knobs on this host (each device's verdict and reason) and the
// suites with their experiments as planned here.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "app/commands.h"
#include "knobs/knobs.h"
#include "models/registry.h"
#include "plan/plan.h"
#include "plan/suite.h"
#include "platform/device.h"
#include "run/host.h"

namespace tunebench::cli {

namespace {

// One knob's row: applicability on each device the knob is meant for, for its first model (the
// registry's first for a knob of every model) and mode; the missing GPU is said once above the
// table, not on every CUDA row.
void print_knob(const knobs::Knob& k, const knobs::HostCaps& host) {
  const std::string model = k.models.empty() ? models::model_names().front() : k.models.front();
  const Mode mode = k.modes.empty() ? Mode::infer : k.modes.front();
  std::vector<std::pair<std::string, std::string>> reasons;  // device, why
  auto cell = [&](const std::string& device) -> std::string {
    if (k.where != "both" && k.where != device) return "-";
    if (device == "cuda" && !device::built_with_cuda()) return "no";  // said above
    knobs::HostCaps as_if = host;
    if (device == "cuda" && !host.cuda) {  // what else would stop it on a GPU host
      as_if.cuda = true;
      as_if.gpus = 2;
    }
    const std::string why = knobs::not_applicable_reason(k, model, mode, as_if, device);
    if (!why.empty()) reasons.emplace_back(device, why);
    return why.empty() && (device == "cpu" || host.cuda) ? "yes" : "no";
  };
  const std::string cpu = cell("cpu"), cuda = cell("cuda");
  std::string why;
  if (reasons.size() == 1 && k.where != "both") {
    why = reasons[0].second;
  } else if (reasons.size() == 2 && reasons[0].second == reasons[1].second) {
    why = reasons[0].second;
  } else {
    for (const auto& [device, r] : reasons) why += (why.empty() ? "" : "; ") + device + ": " + r;
  }
  fmt::print("{:<20} {:<5} {:<4} {:<4} {}\n", k.id, k.where, cpu, cuda,
             why.empty() ? k.change : why);
}

void print_suites(const std::string& suites_dir, const knobs::HostCaps& host) {
  fmt::print("\nSuites in {}/:\n", suites_dir);
  std::error_code ec;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(suites_dir, ec)) {
    if (e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    try {
      const auto s = suite::load(f.string());
      fmt::print("  {} ({}): {}\n", s.name, f.string(), s.description);
      for (const auto& [x, why] : plan::make(s, host).experiments) {
        fmt::print("    {:<44} {} arms x {} processes{}\n", x.name, x.arms.size(), x.processes,
                   why.empty() ? "" : "  not applicable: " + why);
      }
    } catch (const suite::SuiteError& e) {
      fmt::print("  {}: invalid: {}\n", f.string(), e.what());
    }
  }
}

}  // namespace

int list_command(const std::string& suites_dir) {
  const knobs::HostCaps host = host::capabilities();
  fmt::print("Built against {}. Host: {} cores, {} NUMA node(s), {} GPU(s).\n",
             device::build_summary(), host.cores, host.numa_nodes, host.gpus);
  if (!host.cuda) fmt::print("No CUDA experiment can run here: {}.\n", host.cuda_reason);
  fmt::print("\n{:<20} {:<5} {:<4} {:<4} {}\n", "knob", "where", "cpu", "cuda", "change / why not");
  for (const auto& k : knobs::catalog()) print_knob(k, host);
  print_suites(suites_dir, host);
  return 0;
}

}  // namespace tunebench::cli
