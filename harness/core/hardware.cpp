#include "core/hardware.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <sstream>

#include "core/records.h"

namespace tunebench::hardware {

using nlohmann::json;

namespace {

std::string trim(std::string s) {
  s.erase(0, s.find_first_not_of(" \t\r\n"));
  s.erase(s.find_last_not_of(" \t\r\n") + 1);
  return s;
}

constexpr double kGiB = 1024.0 * 1024 * 1024;

// A memory size in whole GiB, rounded: what is installed, not what the kernel kept back this boot.
void coarsen_memory(json& facts) {
  if (!facts.is_object() || !facts.contains("memory_bytes")) return;
  const json& bytes = facts["memory_bytes"];
  if (bytes.is_number()) facts["memory_gib"] = std::llround(bytes.get<double>() / kGiB);
  facts.erase("memory_bytes");
}

// The facts of the host fingerprint that make its hardware class: all of "hardware" but the
// microcode (a firmware update, not another machine), with memory (the host's and the GPUs')
// in whole GiB. MemTotal moves by a few KiB between boots of one VM type (kernel versions and
// boot options reserve more or less), and a GPU's reported total by driver; a GiB is a real
// difference. Everything else recorded there is the same on every boot of one machine type.
json class_facts(const json& host) {
  json facts = host.at("hardware");
  if (facts.contains("cpu")) facts["cpu"].erase("microcode");
  coarsen_memory(facts);
  if (facts.contains("gpu")) coarsen_memory(facts["gpu"]);
  return facts;
}

std::string human_bytes(int64_t bytes) {
  const double gib = double(bytes) / kGiB;
  return gib >= 10 ? fmt::format("{:.0f} GiB", gib) : fmt::format("{:.1f} GiB", gib);
}

}  // namespace

const std::vector<std::string>& kernel_flags() {
  static const std::vector<std::string> flags{
      "avx",      "avx2",     "fma",         "f16c",        "avx512f",     "avx512bw",
      "avx512vl", "avx512dq", "avx512_vnni", "avx512_bf16", "avx512_fp16", "avx_vnni",
      "amx_tile", "amx_bf16", "amx_int8",    "amx_fp16",    "hypervisor"};
  return flags;
}

json cpu_from_cpuinfo(const std::string& cpuinfo) {
  json cpu = json::object();
  std::istringstream in(cpuinfo);
  std::string line;
  int siblings = 0, cores = 0;
  while (std::getline(in, line)) {
    if (trim(line).empty()) break;  // the first processor's block only
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
    auto number = [&](const char* name) {
      try {
        cpu[name] = std::stoi(value, nullptr, 0);
      } catch (const std::exception&) {
        cpu[name] = value;
      }
    };
    if (key == "vendor_id") cpu["vendor"] = value;
    if (key == "cpu family") number("family");
    if (key == "model") number("model");
    if (key == "stepping") number("stepping");
    if (key == "model name") cpu["model_name"] = value;
    if (key == "microcode") cpu["microcode"] = value;
    if (key == "siblings") siblings = std::atoi(value.c_str());
    if (key == "cpu cores") cores = std::atoi(value.c_str());
    if (key == "flags") {
      std::set<std::string> present;
      std::istringstream words(value);
      for (std::string w; words >> w;) present.insert(w);
      json flags = json::array();
      for (const auto& f : kernel_flags()) {
        if (present.count(f)) flags.push_back(f);
      }
      cpu["flags"] = flags;
    }
  }
  if (siblings > 0 && cores > 0) cpu["threads_per_core"] = std::max(1, siblings / cores);
  return cpu;
}

std::string bracketed_mode(const std::string& text) {
  const auto open = text.find('['), close = text.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) return "";
  return text.substr(open + 1, close - open - 1);
}

bool recorded(const json& host) { return host.is_object() && host.contains("hardware"); }

std::string class_id(const json& host) {
  return recorded(host) ? sha256_hex(class_facts(host).dump()) : "";
}

std::string machine_id(const json& host) {
  if (!recorded(host)) return sha256_hex(host.dump());
  return sha256_hex(
      json{{"hostname", host.value("hostname", "")}, {"class", class_id(host)}}.dump());
}

std::string describe(const json& host) {
  if (!recorded(host)) return "hardware not recorded";
  const json& hw = host["hardware"];
  const json cpu = hw.value("cpu", json::object());
  std::string flags;
  for (const auto& f : cpu.value("flags", json::array())) {
    if (f != "hypervisor") flags += (flags.empty() ? "" : " ") + f.get<std::string>();
  }
  auto text = [](const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
  std::string out =
      fmt::format("{} ({} family {} model {} stepping {}), {} cores", cpu.value("model_name", "?"),
                  cpu.value("vendor", "?"), text(cpu.value("family", json("?"))),
                  text(cpu.value("model", json("?"))), text(cpu.value("stepping", json("?"))),
                  hw.value("cores", 0));
  if (hw.value("memory_bytes", int64_t(0)) > 0) out += ", " + human_bytes(hw["memory_bytes"]);
  out += ", " + (flags.empty() ? std::string("no AVX") : flags);
  const std::string hypervisor = hw.value("hypervisor", "none");
  if (hypervisor != "none") out += ", under " + hypervisor;
  const json gpu = hw.value("gpu", json::object());
  if (gpu.value("count", 0) > 0) {
    out += fmt::format(", {} x {}", gpu.value("count", 0), gpu.value("name", "?"));
  }
  return out;
}

json parse_torch_config(const std::string& text) {
  json out = json::object();
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    line = trim(line);
    if (line.rfind("- ", 0) == 0) line = trim(line.substr(2));
    if (line.empty() || line.back() == ':') continue;  // "PyTorch built with:"
    static const std::string kSettings = "Build settings:";
    if (line.rfind(kSettings, 0) == 0) {
      // KEY=value entries joined by ", "; a value may hold ", " itself (CXX_FLAGS, CUDA_FLAGS),
      // so a piece that does not start with KEY= continues the previous value.
      // The line ends with ", " (trimmed to ","): no empty last entry.
      std::string rest = trim(line.substr(kSettings.size())), last;
      if (!rest.empty() && rest.back() == ',') rest.pop_back();
      size_t start = 0;
      while (start <= rest.size()) {
        size_t end = rest.find(", ", start);
        if (end == std::string::npos) end = rest.size();
        const std::string piece = trim(rest.substr(start, end - start));
        start = end + 2;
        if (piece.empty()) continue;
        const auto eq = piece.find('=');
        const std::string key = eq == std::string::npos ? "" : piece.substr(0, eq);
        const bool is_key = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
          return std::isupper(static_cast<unsigned char>(c)) ||
                 std::isdigit(static_cast<unsigned char>(c)) || c == '_';
        });
        if (is_key) {
          last = key;
          out[key] = trim(piece.substr(eq + 1));
        } else if (!last.empty()) {
          out[last] = out[last].get<std::string>() + ", " + piece;
        }
      }
      continue;
    }
    // "Name: value", "Name is value", else the name runs up to the first word that starts with
    // a digit or "v<digit>" (a version): "OpenMP 201511 (...)", "Intel(R) MKL-DNN v3.5.3 (...)".
    if (const auto colon = line.find(": "); colon != std::string::npos) {
      out[line.substr(0, colon)] = trim(line.substr(colon + 2));
      continue;
    }
    if (const auto is = line.find(" is "); is != std::string::npos) {
      out[line.substr(0, is)] = trim(line.substr(is + 4));
      continue;
    }
    std::istringstream words(line);
    std::string name, word, value;
    while (words >> word) {
      const bool version =
          std::isdigit(static_cast<unsigned char>(word[0])) ||
          (word.size() > 1 && word[0] == 'v' && std::isdigit(static_cast<unsigned char>(word[1])));
      if (version || !value.empty()) {
        value += (value.empty() ? "" : " ") + word;
      } else {
        name += (name.empty() ? "" : " ") + word;
      }
    }
    static const std::string kVersion = " Version";
    if (name.size() > kVersion.size() &&
        name.compare(name.size() - kVersion.size(), kVersion.size(), kVersion) == 0) {
      name.erase(name.size() - kVersion.size());
    }
    out[name] = value;
  }
  return out;
}

}  // namespace tunebench::hardware
