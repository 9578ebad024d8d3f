#include "core/records.h"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <stdexcept>
#include <tuple>

namespace tunebench {

using nlohmann::json;

std::string to_string(Mode mode) { return mode == Mode::infer ? "infer" : "train"; }

Mode mode_from_string(const std::string& text) {
  if (text == "infer") return Mode::infer;
  if (text == "train") return Mode::train;
  throw std::invalid_argument("mode must be \"infer\" or \"train\", got \"" + text + "\"");
}

std::string sha256_hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("sha256 failed");
  }
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

json to_json(const TrialSpec& s) {
  return {{"run_uuid", s.run_uuid},
          {"experiment", s.experiment},
          {"knob", s.knob},
          {"arm", s.arm},
          {"settings", s.settings},
          {"model",
           {{"name", s.model.model}, {"preset", s.model.preset}, {"options", s.model.options}}},
          {"mode", to_string(s.mode)},
          {"batch", s.batch},
          {"warmup", s.warmup},
          {"samples", s.samples},
          {"iterations", s.iterations},
          {"timeout_s", s.timeout_s},
          {"process_index", s.process_index},
          {"sequence", s.sequence},
          {"seed", s.seed},
          {"pairing",
           {{"blocks", s.pairing.blocks},
            {"block_samples", s.pairing.block_samples},
            {"on_first", s.pairing.on_first},
            {"resident", s.pairing.resident}}}};
}

TrialSpec trial_spec_from_json(const json& j) {
  try {
    TrialSpec s;
    s.run_uuid = j.value("run_uuid", "");
    s.experiment = j.at("experiment").get<std::string>();
    s.knob = j.at("knob").get<std::string>();
    s.arm = j.at("arm").get<std::string>();
    s.settings = j.value("settings", json::object());
    const auto& m = j.at("model");
    s.model.model = m.at("name").get<std::string>();
    s.model.preset = m.at("preset").get<std::string>();
    s.model.options = m.value("options", json::object());
    s.mode = mode_from_string(j.at("mode").get<std::string>());
    s.batch = j.at("batch").get<int64_t>();
    s.warmup = j.at("warmup").get<int>();
    s.samples = j.at("samples").get<int>();
    s.iterations = j.at("iterations").get<int>();
    s.timeout_s = j.at("timeout_s").get<double>();
    s.process_index = j.value("process_index", 0);
    s.sequence = j.value("sequence", 0);
    s.seed = j.value("seed", uint64_t{1});
    if (j.contains("pairing")) {
      const auto& p = j.at("pairing");
      s.pairing.blocks = p.value("blocks", 0);
      s.pairing.block_samples = p.value("block_samples", 0);
      s.pairing.on_first = p.value("on_first", false);
      s.pairing.resident = p.value("resident", false);
    }
    return s;
  } catch (const json::exception& e) {
    throw std::invalid_argument(std::string("trial spec: ") + e.what());
  }
}

json to_json(const TrialResult& r) {
  json out = {{"status", r.status},
              {"error", r.error},
              {"sample_seconds", r.sample_seconds},
              {"sample_cpu_seconds", r.sample_cpu_seconds},
              {"probe_seconds", r.probe_seconds},
              {"reference_seconds", r.reference_seconds},
              {"peak_rss_bytes", r.peak_rss_bytes},
              {"page_faults_per_iteration", r.page_faults_per_iteration},
              {"device_peak_bytes", r.device_peak_bytes},
              {"items_per_second", r.items_per_second},
              {"check_value", r.check_value},
              {"evidence", r.evidence},
              {"worker_stderr", r.worker_stderr}};
  if (!r.paired_samples.empty()) {
    out["paired_samples"] = json::array();
    for (const auto& sample : r.paired_samples) out["paired_samples"].push_back(to_json(sample));
  }
  return out;
}

std::string impossible_samples(const TrialSpec& spec, const TrialResult& r) {
  if (r.status != "ok") return "";
  const double longest = spec.timeout_s / std::max(1, spec.iterations);
  auto sample_problem = [&](const char* what, double s, size_t i) -> std::string {
    if (std::isfinite(s) && s > 0 && s <= longest) return "";
    return fmt::format(
        "its {} {} is {:g} s per iteration: a sample takes a finite time above 0 and at most {:g} "
        "s "
        "(its timeout_s {:g} over {} iteration(s))",
        what, i + 1, s, longest, spec.timeout_s, spec.iterations);
  };
  for (size_t i = 0; i < r.sample_seconds.size(); ++i) {
    if (auto p = sample_problem("sample", r.sample_seconds[i], i); !p.empty()) return p;
  }
  for (size_t i = 0; i < r.paired_samples.size(); ++i) {
    if (auto p = sample_problem("paired sample", r.paired_samples[i].seconds, i); !p.empty()) {
      return p;
    }
  }
  return "";
}

std::string impossible_result(const TrialSpec& spec, const TrialResult& r) {
  if (std::string why = impossible_samples(spec, r); !why.empty()) return why;
  if (r.status != "ok") return "";
  const size_t n = r.sample_seconds.size();
  if (r.paired_samples.empty() && n != size_t(std::max(0, spec.samples))) {
    return fmt::format("it has {} sample(s) where its spec asks for {}", n, spec.samples);
  }
  if (!r.paired_samples.empty() && r.paired_samples.size() != n) {
    return fmt::format("it has {} sample(s) but {} paired sample(s): one of each per sample", n,
                       r.paired_samples.size());
  }
  if (n == 0) return "it has no samples";
  if (!r.sample_cpu_seconds.empty() && r.sample_cpu_seconds.size() != n) {
    return fmt::format("it has {} sample(s) but {} CPU time(s): one per sample, or none", n,
                       r.sample_cpu_seconds.size());
  }
  for (const double c : r.sample_cpu_seconds) {
    if (!std::isfinite(c) || c < 0) return fmt::format("a CPU time per iteration is {:g}", c);
  }
  if (!std::isfinite(r.items_per_second) || r.items_per_second < 0) {
    return fmt::format("its items_per_second is {:g}", r.items_per_second);
  }
  if (r.peak_rss_bytes < 0) return fmt::format("its peak_rss_bytes is {}", r.peak_rss_bytes);
  if (!std::isfinite(r.page_faults_per_iteration) || r.page_faults_per_iteration < 0) {
    return fmt::format("its page_faults_per_iteration is {:g}", r.page_faults_per_iteration);
  }
  return "";
}

TrialResult trial_result_from_json(const json& j) {
  try {
    TrialResult r;
    r.status = j.at("status").get<std::string>();
    r.error = j.value("error", "");
    r.sample_seconds = j.value("sample_seconds", std::vector<double>{});
    r.sample_cpu_seconds = j.value("sample_cpu_seconds", std::vector<double>{});
    r.probe_seconds = j.value("probe_seconds", 0.0);
    r.reference_seconds = j.value("reference_seconds", std::vector<double>{});
    r.peak_rss_bytes = j.value("peak_rss_bytes", int64_t{0});
    r.page_faults_per_iteration = j.value("page_faults_per_iteration", 0.0);
    r.device_peak_bytes = j.value("device_peak_bytes", int64_t{-1});
    r.items_per_second = j.value("items_per_second", 0.0);
    r.check_value = j.value("check_value", 0.0);
    r.evidence = j.value("evidence", json::object());
    r.worker_stderr = j.value("worker_stderr", "");
    for (const auto& sample : j.value("paired_samples", json::array())) {
      r.paired_samples.push_back(paired_sample_from_json(sample));
    }
    if (r.status != "ok" && r.status != "invalid" && r.status != "failed") {
      throw std::invalid_argument("trial result: status must be ok, invalid or failed, got \"" +
                                  r.status + "\"");
    }
    return r;
  } catch (const json::exception& e) {
    throw std::invalid_argument(std::string("trial result: ") + e.what());
  }
}

std::vector<bool> abba_order(int blocks, bool on_first) {
  std::vector<bool> order;
  for (int b = 0; b < blocks; ++b) {
    // Position in the repeating A B B A unit: blocks 0 and 3 are A, 1 and 2 are B.
    const int k = b % 4;
    const bool is_a = k == 0 || k == 3;
    order.push_back(is_a ? on_first : !on_first);
  }
  return order;
}

json to_json(const PairedSpec& s) {
  return {{"paired", true},
          {"off", to_json(s.off)},
          {"on", to_json(s.on)},
          {"blocks", s.blocks},
          {"block_samples", s.block_samples},
          {"on_first", s.on_first}};
}

PairedSpec paired_spec_from_json(const json& j) {
  try {
    PairedSpec s;
    s.off = trial_spec_from_json(j.at("off"));
    s.on = trial_spec_from_json(j.at("on"));
    s.blocks = j.at("blocks").get<int>();
    s.block_samples = j.at("block_samples").get<int>();
    s.on_first = j.value("on_first", false);
    if (s.blocks < 2 || s.block_samples < 1) {
      throw std::invalid_argument("paired spec: needs blocks >= 2 and block_samples >= 1, got " +
                                  std::to_string(s.blocks) + " and " +
                                  std::to_string(s.block_samples));
    }
    if (s.off.experiment != s.on.experiment || s.off.seed != s.on.seed ||
        s.off.batch != s.on.batch || s.off.mode != s.on.mode ||
        s.off.iterations != s.on.iterations) {
      throw std::invalid_argument(
          "paired spec: both arms must be of one experiment, seed, batch, mode and iterations");
    }
    return s;
  } catch (const json::exception& e) {
    throw std::invalid_argument(std::string("paired spec: ") + e.what());
  }
}

json to_json(const PairedSample& s) {
  return {{"on", s.on},
          {"block", s.block},
          {"position", s.position},
          {"seconds", s.seconds},
          {"cpu_seconds", s.cpu_seconds},
          {"wait_seconds", s.wait_seconds},
          {"involuntary_switches", s.involuntary_switches},
          {"start_ns", s.start_ns},
          {"cpu_pressure", s.cpu_pressure}};
}

PairedSample paired_sample_from_json(const json& j) {
  try {
    PairedSample s;
    s.on = j.at("on").get<bool>();
    s.block = j.at("block").get<int>();
    s.position = j.at("position").get<int>();
    s.seconds = j.at("seconds").get<double>();
    s.cpu_seconds = j.value("cpu_seconds", 0.0);
    s.wait_seconds = j.value("wait_seconds", 0.0);
    s.involuntary_switches = j.value("involuntary_switches", int64_t{0});
    s.start_ns = j.value("start_ns", int64_t{0});
    s.cpu_pressure = j.value("cpu_pressure", -1.0);
    return s;
  } catch (const json::exception& e) {
    throw std::invalid_argument(std::string("paired sample: ") + e.what());
  }
}

// Every sample is written once, in its arm's paired_samples; `samples` (both arms in the order
// taken) is formed again when the result is read.
json to_json(const PairedResult& r) {
  return {{"status", r.status},
          {"error", r.error},
          {"off", to_json(r.off)},
          {"on", to_json(r.on)},
          {"probe_seconds", r.probe_seconds}};
}

PairedResult paired_result_from_json(const json& j) {
  try {
    PairedResult r;
    r.status = j.at("status").get<std::string>();
    r.error = j.value("error", "");
    if (j.contains("off")) r.off = trial_result_from_json(j.at("off"));
    if (j.contains("on")) r.on = trial_result_from_json(j.at("on"));
    for (const TrialResult* arm : {&r.off, &r.on}) {
      r.samples.insert(r.samples.end(), arm->paired_samples.begin(), arm->paired_samples.end());
    }
    std::sort(r.samples.begin(), r.samples.end(), [](const PairedSample& a, const PairedSample& b) {
      return std::tie(a.block, a.position) < std::tie(b.block, b.position);
    });
    r.probe_seconds = j.value("probe_seconds", 0.0);
    return r;
  } catch (const json::exception& e) {
    throw std::invalid_argument(std::string("paired result: ") + e.what());
  }
}

std::string now_iso8601() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace tunebench
