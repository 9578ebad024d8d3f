#include "core/records.h"

#include <openssl/evp.h>

#include <ctime>
#include <stdexcept>

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
          {"seed", s.seed}};
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
    return s;
  } catch (const json::exception& e) {
    throw std::invalid_argument(std::string("trial spec: ") + e.what());
  }
}

json to_json(const TrialResult& r) {
  return {{"status", r.status},
          {"error", r.error},
          {"sample_seconds", r.sample_seconds},
          {"probe_seconds", r.probe_seconds},
          {"peak_rss_bytes", r.peak_rss_bytes},
          {"page_faults_per_iteration", r.page_faults_per_iteration},
          {"device_peak_bytes", r.device_peak_bytes},
          {"items_per_second", r.items_per_second},
          {"check_value", r.check_value},
          {"evidence", r.evidence},
          {"worker_stderr", r.worker_stderr}};
}

TrialResult trial_result_from_json(const json& j) {
  try {
    TrialResult r;
    r.status = j.at("status").get<std::string>();
    r.error = j.value("error", "");
    r.sample_seconds = j.value("sample_seconds", std::vector<double>{});
    r.probe_seconds = j.value("probe_seconds", 0.0);
    r.peak_rss_bytes = j.value("peak_rss_bytes", int64_t{0});
    r.page_faults_per_iteration = j.value("page_faults_per_iteration", 0.0);
    r.device_peak_bytes = j.value("device_peak_bytes", int64_t{-1});
    r.items_per_second = j.value("items_per_second", 0.0);
    r.check_value = j.value("check_value", 0.0);
    r.evidence = j.value("evidence", json::object());
    r.worker_stderr = j.value("worker_stderr", "");
    if (r.status != "ok" && r.status != "invalid" && r.status != "failed") {
      throw std::invalid_argument("trial result: status must be ok, invalid or failed, got \"" +
                                  r.status + "\"");
    }
    return r;
  } catch (const json::exception& e) {
    throw std::invalid_argument(std::string("trial result: ") + e.what());
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
