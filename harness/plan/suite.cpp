#include "plan/suite.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/build_paths.h"
#include "knobs/cuda.h"
#include "knobs/knobs.h"
#include "models/registry.h"

namespace tunebench::suite {

using nlohmann::json;

namespace {

// Experiment names are database keys, report labels and what --filter's regular expression
// searches; libstdc++'s std::regex recurses once per character and overflowed the stack on a
// name of 300,000 characters.
constexpr size_t kMaxNameLength = 200;
// A suite needs five levels of nesting; JSON values are copied, compared and printed
// recursively, so a file of 200,000 '[' overflowed the stack.
constexpr int kMaxDepth = 64;

struct Context {
  std::string path;
  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw SuiteError(fmt::format("{}: {}: {}", path, where.empty() ? "/" : where, what));
  }
};

std::string short_dump(const json& v) {
  std::string s = v.dump();
  return s.size() > 80 ? s.substr(0, 77) + "..." : s;
}

template <class T>
T number(const Context& ctx, const json& obj, const std::string& where, const char* key, T fallback,
         T min_value, T max_value) {
  if (!obj.contains(key)) return fallback;
  const json& v = obj[key];
  const bool ok = std::is_integral_v<T> ? v.is_number_integer() : v.is_number();
  if (!ok || v.get<double>() < double(min_value) || v.get<double>() > double(max_value)) {
    ctx.fail(where + "/" + key, fmt::format("must be {} from {} to {}, got {}",
                                            std::is_integral_v<T> ? "an integer" : "a number",
                                            min_value, max_value, short_dump(v)));
  }
  return v.get<T>();
}

std::string text(const Context& ctx, const json& obj, const std::string& where, const char* key,
                 const std::string& fallback, bool required) {
  if (!obj.contains(key)) {
    if (required) ctx.fail(where, fmt::format("missing \"{}\"", key));
    return fallback;
  }
  if (!obj[key].is_string() || obj[key].get<std::string>().empty()) {
    ctx.fail(where + "/" + key, "must be a non-empty string, got " + short_dump(obj[key]));
  }
  return obj[key];
}

void only_keys(const Context& ctx, const json& obj, const std::string& where,
               const std::vector<std::string>& allowed) {
  for (const auto& [key, value] : obj.items()) {
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      ctx.fail(where + "/" + key, fmt::format("unknown field \"{}\"; valid fields: {}", key, list));
    }
  }
}

const knobs::Knob& knob_of(const Context& ctx, const json& id, const std::string& where) {
  if (!id.is_string()) ctx.fail(where, "must be a catalog id (a string), got " + short_dump(id));
  const knobs::Knob* k = knobs::find(id);
  if (!k) {
    std::string near;
    for (const auto& n : knobs::nearest(id)) near += (near.empty() ? "" : ", ") + n;
    ctx.fail(where, fmt::format(
                        "unknown knob \"{}\"; {} (tunebench list shows all)", id.get<std::string>(),
                        near.empty() ? "no catalog id is close" : "nearest catalog ids: " + near));
  }
  return *k;
}

json checked_settings(const Context& ctx, const json& settings, const std::string& where) {
  if (!settings.is_object()) ctx.fail(where, "must be an object of knob id -> value");
  json out = json::object();
  for (const auto& [id, value] : settings.items()) {
    if (knobs::cuda::is_reserved(id)) {
      if (auto why = knobs::cuda::reserved_error(id, value); !why.empty()) {
        ctx.fail(where + "/" + id, why);
      }
      if (id == knobs::cuda::kDevice) {
        ctx.fail(where + "/" + id, "give the device as the experiment's \"device\" field");
      }
      out[id] = value;
      continue;
    }
    if (knobs::is_harness_setting(id)) {
      if (auto why = knobs::harness_setting_error(id, value); !why.empty())
        ctx.fail(where + "/" + id, why);
      out[id] = value;
      continue;
    }
    const knobs::Knob& k = knob_of(ctx, id, where + "/" + id);
    try {
      knobs::validate_value(k, value);
    } catch (const std::invalid_argument& e) {
      ctx.fail(where + "/" + id, fmt::format("{} {}, got {}", id, e.what(), short_dump(value)));
    }
    out[id] = value;  // host-dependent values ("all") are resolved by the plan (plan/plan.cpp)
  }
  return out;
}

// A setting of another knob that does not apply to the model would reach the worker as a build
// option the model lacks (inplace_act on gpt) and fail every trial: refused up front. The
// experiment's own knobs (`varied`) are not checked here: they make it not applicable instead;
// nor is a model from a file, which answers for every knob set on it from what reading it found
// (the plan asks, plan/plan.cpp).
void check_setting_models(const Context& ctx, const json& settings, const std::string& where,
                          const std::string& model, const std::vector<std::string>& varied) {
  if (models::descriptor(model).from_file) return;
  for (const auto& [id, value] : settings.items()) {
    const knobs::Knob* k = knobs::find(id);
    if (!k || k->models.empty() || std::find(varied.begin(), varied.end(), id) != varied.end()) {
      continue;
    }
    if (std::find(k->models.begin(), k->models.end(), model) == k->models.end()) {
      std::string list;
      for (const auto& m : k->models) list += (list.empty() ? "" : ", ") + m;
      ctx.fail(where + "/" + id, fmt::format("{} applies to {} only, not {}", id, list, model));
    }
  }
}

const std::vector<std::string> kSharedFields{
    "processes",  "warmup",         "samples",    "iterations",    "timeout_s", "batch",
    "mode",       "model",          "preset",     "options",       "settings",  "device",
    "design",     "workers",        "blocks",     "block_samples", "budget_s",  "max_workers",
    "target_pct", "confidence_pct", "decide_pct", "heap_offset",   "worker_s"};

// The fields an experiment shares with "defaults" (`merged`): model, mode, counts, settings.
void parse_shared(const Context& ctx, const json& merged, const std::string& where, Experiment& x) {
  x.model.model = text(ctx, merged, where, "model", "", true);
  x.model.preset = text(ctx, merged, where, "preset", "", true);
  x.model.options = merged.value("options", json::object());
  try {
    models::summarize(x.model);  // model, preset and options exist and are well typed
  } catch (const models::InvalidSpec& err) {
    ctx.fail(where, err.what());
  }
  try {
    x.mode = mode_from_string(text(ctx, merged, where, "mode", "infer", false));
  } catch (const std::invalid_argument& err) {
    ctx.fail(where + "/mode", err.what());
  }
  x.batch = number<int64_t>(ctx, merged, where, "batch", 8, 1, 1 << 20);
  x.processes = number<int>(ctx, merged, where, "processes", 2, 1, 1000);
  x.warmup = number<int>(ctx, merged, where, "warmup", 2, 0, 1000000);
  x.samples = number<int>(ctx, merged, where, "samples", 5, 1, 1000000);
  x.iterations = number<int>(ctx, merged, where, "iterations", 1, 1, 1000000);
  x.timeout_s = number<double>(ctx, merged, where, "timeout_s", 300, 1, 7 * 24 * 3600);
  x.design = text(ctx, merged, where, "design", "processes", false);
  if (x.design != "processes" && x.design != "paired" && x.design != "paired_processes" &&
      x.design != "auto") {
    ctx.fail(where + "/design",
             fmt::format("must be \"processes\", \"paired\", \"paired_processes\" or \"auto\", "
                         "got \"{}\"",
                         x.design));
  }
  x.workers = number<int>(ctx, merged, where, "workers", 4, 1, kMostWorkers);
  x.blocks = number<int>(ctx, merged, where, "blocks", 16, 2, 100000);
  if (x.blocks % 2 != 0) {
    ctx.fail(
        where + "/blocks",
        fmt::format("must be even (blocks 2j and 2j+1 are one OFF/ON pair), got {}", x.blocks));
  }
  // The estimator drops each block's first sample (carry-over from the other arm).
  x.block_samples = number<int>(ctx, merged, where, "block_samples", 4, 2, 100000);
  x.worker_s = number<double>(ctx, merged, where, "worker_s", 0, 0, 3600);
  x.budget_s = number<double>(ctx, merged, where, "budget_s", 60, 0, 7 * 24 * 3600);
  x.target = number<double>(ctx, merged, where, "target_pct", 2, 0.1, 50) / 100;
  x.confidence = number<double>(ctx, merged, where, "confidence_pct", 95, 50, 99.9999) / 100;
  x.decide = number<double>(ctx, merged, where, "decide_pct", 0, 0, 50) / 100;
  const std::string heap = text(ctx, merged, where, "heap_offset", "per_pair", false);
  if (heap != "per_pair" && heap != "per_process") {
    ctx.fail(where + "/heap_offset",
             fmt::format("must be \"per_pair\" (both processes of a resident pair start their "
                         "heap at one offset, drawn afresh for every pair) or \"per_process\" "
                         "(each draws its own), got \"{}\"",
                         heap));
  }
  x.heap_offset_per_pair = heap == "per_pair";
  x.max_workers =
      number<int>(ctx, merged, where, "max_workers", std::max(32, x.workers), 1, kMostWorkers);
  if (x.max_workers < x.workers) {
    ctx.fail(where + "/max_workers",
             fmt::format("must be at least workers ({}), got {}", x.workers, x.max_workers));
  }
  x.settings = checked_settings(ctx, merged.value("settings", json::object()), where + "/settings");
}

// One knob's experiment: its off and on arms (the catalog's, or the suite's "arms"), or for an
// A/A control the knob's ON setting in both.
void parse_knob_arms(const Context& ctx, const json& e, const std::string& where, Experiment& x) {
  const knobs::Knob& k = knob_of(ctx, e["knob"], where + "/knob");
  x.knob = k.id;
  x.varied.push_back(k.id);
  if (e.contains("aa") && !e["aa"].is_boolean()) {
    ctx.fail(where + "/aa", "must be true or false, got " + short_dump(e["aa"]));
  }
  const bool aa = e.value("aa", false);
  if (aa && e.contains("arms"))
    ctx.fail(where + "/arms", "an A/A control runs the knob's ON arm twice: give no arms");
  // A positive control: the knob's ON arm twice, the ON arm `slowdown` % slower.
  const bool positive = e.contains("slowdown");
  if (positive) {
    if (aa) {
      ctx.fail(where + "/slowdown",
               "an experiment is an A/A control (\"aa\") or a positive control (\"slowdown\"), "
               "not both");
    }
    if (e.contains("arms")) {
      ctx.fail(where + "/arms",
               "a positive control runs the knob's ON arm twice, one of them slowed: give no arms");
    }
    if (auto why = knobs::slowdown_setting_error(e["slowdown"]); !why.empty())
      ctx.fail(where + "/slowdown", why);
    x.slowdown = e["slowdown"].get<int>();
  }
  // An A/A control: both arms identical (the knob ON), to measure the noise floor of the
  // experiment itself; its effect should be "no measurable effect".
  json arms = e.value(
      "arms", json{{"off", {{k.id, aa || positive ? k.on : k.off}}}, {"on", {{k.id, k.on}}}});
  if (positive) arms["on"][knobs::kSlowdownSetting] = x.slowdown;
  if (!arms.is_object() || !arms.contains("off") || !arms.contains("on") || arms.size() != 2) {
    ctx.fail(where + "/arms",
             "must be {\"off\": {settings}, \"on\": {settings}}, got " + short_dump(arms));
  }
  for (const char* name : {"off", "on"}) {
    x.arms.push_back({name, checked_settings(ctx, arms[name], where + "/arms/" + name)});
  }
  x.aa = aa;
  if (aa) x.knob = "aa";  // not the knob's effect: the experiment's noise floor
  if (positive)
    x.knob = knobs::kPositiveControl;  // nor here: how well the run sees a known slowdown
  if (!aa && x.arms[0].settings == x.arms[1].settings) {
    ctx.fail(where + "/arms", "the off and on arms set the same values: nothing would be compared");
  }
}

// A factorial experiment: 2^n cells of 2 to 4 knobs, each off or on.
void parse_factorial_arms(const Context& ctx, const json& e, const std::string& where,
                          Experiment& x) {
  if (e.contains("arms"))
    ctx.fail(where + "/arms", "a factorial experiment takes its arms from its knobs");
  if (e.contains("aa"))
    ctx.fail(where + "/aa", "an A/A control takes one \"knob\", not a factorial");
  if (e.contains("slowdown"))
    ctx.fail(where + "/slowdown", "a positive control takes one \"knob\", not a factorial");
  const json& f = e["factorial"];
  if (!f.is_array() || f.size() < 2 || f.size() > 4) {
    ctx.fail(where + "/factorial", "must list 2 to 4 catalog ids, got " + short_dump(f));
  }
  x.knob = "factorial";
  std::vector<const knobs::Knob*> used;
  for (size_t i = 0; i < f.size(); ++i) {
    const knobs::Knob& k = knob_of(ctx, f[i], fmt::format("{}/factorial/{}", where, i));
    if (std::find(x.factors.begin(), x.factors.end(), k.id) != x.factors.end()) {
      ctx.fail(fmt::format("{}/factorial/{}", where, i), "\"" + k.id + "\" is listed twice");
    }
    x.factors.push_back(k.id);
    used.push_back(&k);
  }
  x.varied = x.factors;
  const size_t cells = size_t{1} << x.factors.size();
  for (size_t cell = 0; cell < cells; ++cell) {
    Arm arm;
    for (size_t i = 0; i < x.factors.size(); ++i) {
      const bool on = cell >> (x.factors.size() - 1 - i) & 1;
      const knobs::Knob& k = *used[i];
      arm.name += (i ? "," : "") + k.id + (on ? "=on" : "=off");
      arm.settings[k.id] = checked_settings(ctx, json{{k.id, on ? k.on : k.off}}, where)[k.id];
    }
    x.arms.push_back(arm);
  }
}

// The name given, or knob.model-preset-mode (factors joined by '+'; "aa." before an A/A control,
// "slowPCT." before a positive control).
std::string experiment_name(const Context& ctx, const json& e, const std::string& where,
                            const Experiment& x) {
  std::string varied;
  for (const auto& id : x.varied) varied += (varied.empty() ? "" : "+") + id;
  const std::string name =
      e.contains("name") ? text(ctx, e, where, "name", "", true)
                         : fmt::format("{}{}.{}-{}-{}",
                                       x.aa         ? "aa."
                                       : x.slowdown ? fmt::format("slow{}.", x.slowdown)
                                                    : "",
                                       varied, x.model.model, x.model.preset, to_string(x.mode));
  if (name.size() > kMaxNameLength) {
    ctx.fail(where + "/name",
             fmt::format("must be at most {} characters, got {}", kMaxNameLength, name.size()));
  }
  return name;
}

// The device: the suite's "device" field, or CUDA for a CUDA-only knob; it travels to the worker
// (and into the database) as the trial setting "device". Each arm must be one a CUDA graph can
// capture when it turns cuda_graphs on.
void parse_device(const Context& ctx, const json& merged, const std::string& where, Experiment& x) {
  std::vector<const knobs::Knob*> used;
  for (const auto& id : x.varied) used.push_back(knobs::find(id));
  x.device = text(ctx, merged, where, "device", knobs::cuda::default_device(used), false);
  if (auto why = knobs::cuda::reserved_error(knobs::cuda::kDevice, x.device); !why.empty()) {
    ctx.fail(where + "/device", why);
  }
  for (const knobs::Knob* k : used) {
    if (auto why = knobs::cuda::device_mismatch(*k, x.device); !why.empty()) {
      ctx.fail(where + "/device", why);
    }
  }
  if (x.device == "cuda") x.settings[knobs::cuda::kDevice] = "cuda";
  for (const Arm& arm : x.arms) {
    json settings = x.settings;
    settings.update(arm.settings);
    if (auto why = knobs::arm_error(settings, x.mode, x.batch); !why.empty()) {
      ctx.fail(where + "/arms/" + arm.name, why);
    }
  }
}

// The design an experiment runs with. "paired": both arms alternate inside each worker where
// they differ only in knobs that switch inside a process, else each arm in a process of its own,
// the two resident together and alternating blocks ("paired_processes"). "paired_processes" asks
// for the resident pair even where one process could hold both arms (an A/A control of the
// process level; agreement between the two ways). "auto" pairs where it can; "processes" never.
// Arms of several processes each (instances, ranks) and factorials cannot be paired.
void resolve_design(const Context& ctx, const std::string& where, Experiment& x) {
  std::string why_not;
  bool one_process = false;
  if (!x.factors.empty()) {
    why_not = "a factorial experiment has more than two arms; pairing alternates two";
  } else {
    json off = x.settings, on = x.settings;
    off.update(x.arms[0].settings);
    on.update(x.arms[1].settings);
    one_process = knobs::pairable(off, on);
    std::string several = knobs::several_processes(off);
    if (several.empty()) several = knobs::several_processes(on);
    if (!several.empty()) {
      why_not = fmt::format(
          "{} runs an arm as several processes (instances or ranks), and pairing alternates one "
          "process per arm",
          several);
    }
  }
  const bool asks = x.design == "paired" || x.design == "paired_processes";
  if (asks && !why_not.empty()) {
    ctx.fail(where + "/design", fmt::format("\"{}\" is not possible: {}; use \"processes\" (or "
                                            "\"auto\", which pairs where it can)",
                                            x.design, why_not));
  }
  if (x.design == "processes" || (x.design == "auto" && !why_not.empty())) {
    x.design = "processes";
    return;
  }
  if (x.design != "paired_processes") x.design = one_process ? "paired" : "paired_processes";
  if (x.workers < 3) {
    ctx.fail(where + "/workers",
             fmt::format("a paired experiment needs at least 3 workers (its interval has "
                         "workers - 1 degrees of freedom), got {}",
                         x.workers));
  }
}

Experiment parse_experiment(const Context& ctx, const json& e, const json& defaults,
                            const std::string& where) {
  if (!e.is_object()) ctx.fail(where, "must be an object, got " + short_dump(e));
  std::vector<std::string> allowed = kSharedFields;
  for (const char* k : {"name", "knob", "factorial", "arms", "aa", "slowdown"})
    allowed.push_back(k);
  only_keys(ctx, e, where, allowed);
  // The experiment's fields over the defaults'. Its "settings" and "options" objects add to the
  // defaults' key by key (its own keys win): a baseline such as malloc_tunables in the defaults
  // stays in force for an experiment that sets omp_threads too.
  json merged = defaults;
  for (const auto& [k, v] : e.items()) {
    const bool adds = (k == "settings" || k == "options") && v.is_object() && merged.contains(k) &&
                      merged[k].is_object();
    if (!adds) {
      merged[k] = v;
      continue;
    }
    for (const auto& [key, value] : v.items()) merged[k][key] = value;
  }

  Experiment x;
  parse_shared(ctx, merged, where, x);
  const bool has_knob = e.contains("knob"), has_factorial = e.contains("factorial");
  if (has_knob == has_factorial) ctx.fail(where, "needs exactly one of \"knob\" or \"factorial\"");
  if (has_knob) {
    parse_knob_arms(ctx, e, where, x);
  } else {
    parse_factorial_arms(ctx, e, where, x);
  }
  check_setting_models(ctx, x.settings, where + "/settings", x.model.model, x.varied);
  for (const Arm& arm : x.arms) {
    if (has_knob)
      check_setting_models(ctx, arm.settings, where + "/arms/" + arm.name, x.model.model, x.varied);
  }
  resolve_design(ctx, where, x);
  x.name = experiment_name(ctx, e, where, x);
  parse_device(ctx, merged, where, x);
  return x;
}

std::string line_and_column(const std::string& text, size_t byte) {
  size_t line = 1, column = 1;
  // nlohmann's byte count is 1-based: the offending character is at byte − 1.
  for (size_t i = 0; i + 1 < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return fmt::format("line {}, column {}", line, column);
}

// Where the nesting first goes deeper than kMaxDepth (brackets outside strings), or npos.
size_t too_deep(const std::string& text) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxDepth) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return std::string::npos;
}

}  // namespace

Suite parse(const std::string& text_in, const std::string& path) {
  Context ctx{path};
  Suite s;
  s.path = path;
  s.hash = sha256_hex(text_in);
  if (const size_t at = too_deep(text_in); at != std::string::npos) {
    throw SuiteError(fmt::format("{}: {}: nested more than {} levels deep (a suite needs 5)", path,
                                 line_and_column(text_in, at + 1), kMaxDepth));
  }
  try {
    s.json = json::parse(text_in);
  } catch (const json::parse_error& e) {
    throw SuiteError(fmt::format("{}: {}: not valid JSON: {}", path,
                                 line_and_column(text_in, e.byte), e.what()));
  } catch (const json::exception& e) {
    // A number beyond a double (1e309) is out_of_range, not a parse_error: it has no position.
    throw SuiteError(fmt::format("{}: not valid JSON: {}", path, e.what()));
  }
  const json& j = s.json;
  if (!j.is_object()) ctx.fail("", "a suite must be a JSON object, got " + short_dump(j));
  only_keys(ctx, j, "", {"name", "description", "defaults", "experiments"});
  s.name = text(ctx, j, "", "name", "", true);
  s.description = j.contains("description") ? text(ctx, j, "", "description", "", true) : "";
  const json defaults = j.value("defaults", json::object());
  if (!defaults.is_object()) ctx.fail("/defaults", "must be an object");
  only_keys(ctx, defaults, "/defaults", kSharedFields);
  if (!j.contains("experiments") || !j["experiments"].is_array() || j["experiments"].empty()) {
    ctx.fail("/experiments", "must be a non-empty array of experiments");
  }
  for (size_t i = 0; i < j["experiments"].size(); ++i) {
    const std::string where = fmt::format("/experiments/{}", i);
    Experiment x = parse_experiment(ctx, j["experiments"][i], defaults, where);
    for (const auto& other : s.experiments) {
      if (other.name == x.name) ctx.fail(where, "experiment name \"" + x.name + "\" is used twice");
    }
    s.experiments.push_back(std::move(x));
  }
  return s;
}

std::string shipped_suite(const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos) return "";
  const std::string file =
      name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0 ? name : name + ".json";
  const std::string path = build_paths::source_dir() + "/suites/" + file;
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec) ? path : "";
}

Suite load(const std::string& given) {
  std::error_code ec;
  const std::string shipped =
      std::filesystem::exists(given, ec) ? std::string() : shipped_suite(given);
  const std::string& path = shipped.empty() ? given : shipped;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw SuiteError(path +
                     ": cannot read the suite file (does it exist? a name without a folder, "
                     "such as smoke, names one of the suites tunebench ships: " +
                     build_paths::source_dir() + "/suites)");
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return parse(buffer.str(), path);
}

}  // namespace tunebench::suite
