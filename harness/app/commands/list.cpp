// `tunebench list`: the catalog's knobs on this host (each device's verdict and reason) and the
// suites with their experiments as planned here.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "app/commands.h"
#include "knobs/knobs.h"
#include "knobs/sources.h"
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

// A Markdown table cell: pipes escaped, never empty.
std::string cell(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out.empty() ? "-" : out;
}

// The knob reference: the sources, then every knob of each catalog group. The same on every host
// and build (no applicability), so docs/knobs.md, made from it, can be checked to be current.
void print_reference() {
  fmt::print(
      "# Knob reference\n\n"
      "Generated from the catalog by `tunebench list --format md` (CI checks that this file is "
      "current: do not edit it by hand). Whether a knob applies on a host and build, and why not: "
      "`tunebench list`.\n\n## Sources\n\n"
      "Each claim names the documents it comes from.\n\n"
      "| source | document | kind | what it claims |\n|---|---|---|---|\n");
  for (const auto& s : knobs::sources())
    fmt::print("| {} | {} | {} | {} |\n", cell(s.name), cell(s.title), cell(s.kind),
               cell(s.claims));
  std::vector<std::string> groups;
  for (const auto& k : knobs::catalog()) {
    if (std::find(groups.begin(), groups.end(), k.group) == groups.end()) groups.push_back(k.group);
  }
  for (const auto& group : groups) {
    fmt::print(
        "\n## {}\n\n| knob | where | change (off → on) | claim | models | modes | arms "
        "(off / on) |\n|---|---|---|---|---|---|---|\n",
        group);
    for (const auto& k : knobs::catalog()) {
      if (k.group != group) continue;
      std::string models, modes;
      for (const auto& m : k.models) models += (models.empty() ? "" : ", ") + m;
      for (const auto& m : k.modes) modes += std::string(modes.empty() ? "" : ", ") + to_string(m);
      fmt::print("| `{}` | {} | {} | {} | {} | {} | `{}` / `{}` |\n", k.id, k.where, cell(k.change),
                 cell(k.claim), models.empty() ? "all" : cell(models),
                 modes.empty() ? "both" : modes, cell(k.off.dump()), cell(k.on.dump()));
    }
  }
}

}  // namespace

int list_command(const std::string& suites_dir, const std::string& format) {
  if (format == "md") {
    print_reference();
    return 0;
  }
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
