// Suites: validation messages (file, JSON path, offending value, what would be valid), typed
// experiments, factorial and A/A arms, the device. Parsing needs no host (planning on a host is
// tests/test_plan.cpp).
#include <gtest/gtest.h>

#include <fstream>

#include "plan/suite.h"
#include "tests/paths.h"

namespace tunebench::suite {
namespace {

using nlohmann::json;

std::string error_of(const std::string& text) {
  try {
    parse(text, "s.json");
  } catch (const SuiteError& e) {
    return e.what();
  }
  return "";
}

std::string one(const std::string& experiment) {
  return R"({"name": "t", "experiments": [)" + experiment + "]}";
}

TEST(Suite, TheShippedSuitesAreValid) {
  const Suite smoke = load(test_paths::source_file("suites/smoke.json"));
  EXPECT_EQ(smoke.name, "smoke");
  EXPECT_EQ(smoke.hash.size(), 64u);
  for (const std::string id :
       {"no_grad", "zero_grad_none", "channels_last", "omp_threads", "allocator", "profiler_off",
        "checkpoint", "grad_accum", "preallocate", "dims_mult8"}) {
    EXPECT_TRUE(std::any_of(smoke.experiments.begin(), smoke.experiments.end(),
                            [&](const Experiment& x) { return x.knob == id; }))
        << id;
  }
}

TEST(Suite, ErrorsNameTheFilePathValueAndWhatIsValid) {
  EXPECT_EQ(error_of(one(R"({"knob": "no_grd", "model": "resnet50", "preset": "tiny"})")),
            "s.json: /experiments/0/knob: unknown knob \"no_grd\"; nearest catalog ids: no_grad "
            "(tunebench list shows all)");
  EXPECT_EQ(error_of(one(R"({"knob": "speed_up", "model": "resnet50", "preset": "tiny"})")),
            "s.json: /experiments/0/knob: unknown knob \"speed_up\"; no catalog id is close "
            "(tunebench list shows all)");
  EXPECT_EQ(error_of(one(R"({"knob": "no_grad", "model": "resnet50", "preset": "huge"})")),
            "s.json: /experiments/0: unknown preset 'huge' for model 'resnet50'; valid presets: "
            "tiny, full");
  EXPECT_EQ(
      error_of(
          one(R"({"knob": "no_grad", "model": "resnet50", "preset": "tiny", "batchsize": 3})")),
      "s.json: /experiments/0/batchsize: unknown field \"batchsize\"; valid fields: processes, "
      "warmup, samples, iterations, timeout_s, batch, mode, model, preset, options, settings, "
      "device, design, workers, blocks, block_samples, budget_s, max_workers, target_pct, "
      "confidence_pct, decide_pct, heap_offset, worker_s, name, knob, "
      "factorial, arms, aa, slowdown");
  EXPECT_EQ(
      error_of(one(R"({"knob": "no_grad", "model": "resnet50", "preset": "tiny", "samples": -1})")),
      "s.json: /experiments/0/samples: must be an integer from 1 to 1000000, got -1");
  EXPECT_EQ(
      error_of(one(R"({"knob": "omp_threads", "model": "gpt", "preset": "tiny",
                            "arms": {"off": {"omp_threads": 0}, "on": {"omp_threads": 2}}})")),
      "s.json: /experiments/0/arms/off/omp_threads: omp_threads must be a thread count from 1 to "
      "4096 or \"all\", got 0");
  EXPECT_EQ(error_of(one(
                R"({"knob": "no_grad", "model": "resnet50", "preset": "tiny", "mode": "eval"})")),
            "s.json: /experiments/0/mode: mode must be \"infer\" or \"train\", got \"eval\"");
  EXPECT_NE(error_of("{\"name\": \"t\",\n \"experiments\": [,]}")
                .find("s.json: line 2, column 18: not valid JSON"),
            std::string::npos)
      << error_of("{\"name\": \"t\",\n \"experiments\": [,]}");
  EXPECT_EQ(error_of(R"({"name": "t", "experiments": []})"),
            "s.json: /experiments: must be a non-empty array of experiments");
  EXPECT_NE(error_of(one(R"({"knob": "no_grad", "model": "resnet50", "preset": "tiny",
                            "arms": {"off": {"no_grad": true}, "on": {"no_grad": true}}})"))
                .find("nothing would be compared"),
            std::string::npos);
  EXPECT_NE(error_of(one(R"({"knob": "no_grad", "model": "resnet50", "preset": "tiny"},
                            {"knob": "no_grad", "model": "resnet50", "preset": "tiny"})"))
                .find("is used twice"),
            std::string::npos);
}

// Inputs that crashed or escaped as another exception before fuzz/fuzz_suite.cpp found them:
// each must now be one SuiteError naming the file and where, never a crash.
TEST(Suite, HostileInputsFoundByTheFuzzerGetOneClearError) {
  // A number beyond a double: nlohmann's out_of_range, not a parse_error, escaped the parser.
  EXPECT_EQ(
      error_of(one(R"({"knob": "no_grad", "model": "gpt", "preset": "tiny", "batch": 1e309})")),
      "s.json: not valid JSON: [json.exception.out_of_range.406] number overflow parsing "
      "'1e309'");
  // "aa" of the wrong type: json::type_error escaped before the type was checked.
  EXPECT_EQ(error_of(one(R"({"knob": "no_grad", "model": "gpt", "preset": "tiny", "aa": "yes"})")),
            "s.json: /experiments/0/aa: must be true or false, got \"yes\"");
  EXPECT_EQ(error_of(one(R"({"factorial": ["channels_last", "no_grad"], "model": "resnet50",
                            "preset": "tiny", "aa": true})")),
            "s.json: /experiments/0/aa: an A/A control takes one \"knob\", not a factorial");
  // 200,000 nested brackets overflowed the stack (recursive copy and dump of JSON values).
  const std::string deep(200000, '[');
  EXPECT_EQ(
      error_of("{\"name\": \"t\",\n \"experiments\": [" + deep + std::string(200000, ']') + "]}"),
      "s.json: line 2, column 80: nested more than 64 levels deep (a suite needs 5)");
  // A bracket inside a string is not nesting.
  EXPECT_EQ(parse(one(R"({"name": ")" + deep.substr(0, 100) +
                      R"(", "knob": "no_grad", "model": "gpt", "preset": "tiny"})"),
                  "s.json")
                .experiments[0]
                .name,
            deep.substr(0, 100));
  // A name of 300,000 characters overflowed the stack in std::regex_search (--filter).
  EXPECT_EQ(error_of(one(R"({"name": ")" + std::string(300000, 'a') +
                         R"(", "knob": "no_grad", "model": "gpt", "preset": "tiny"})")),
            "s.json: /experiments/0/name: must be at most 200 characters, got 300000");
  // A setting that is a build option of another model: every worker failed on it.
  EXPECT_EQ(error_of(one(R"({"knob": "no_grad", "model": "gpt", "preset": "tiny",
                            "settings": {"inplace_act": true}})")),
            "s.json: /experiments/0/settings/inplace_act: inplace_act applies to resnet50 only, "
            "not gpt");
  EXPECT_EQ(error_of(one(R"({"knob": "omp_threads", "model": "gpt", "preset": "tiny",
                            "arms": {"off": {"omp_threads": 1}, "on": {"omp_threads": 2,
                                     "conv_bias_off": true}}})")),
            "s.json: /experiments/0/arms/on/conv_bias_off: conv_bias_off applies to resnet50 only, "
            "not gpt");
  // Model options so large that the size arithmetic overflowed int64_t (undefined behaviour).
  EXPECT_EQ(error_of(one(R"({"knob": "no_grad", "model": "resnet50", "preset": "tiny",
                            "options": {"width": 4611686018427387904}})")),
            "s.json: /experiments/0: option 'width' of model 'resnet50' must be at most 4096, got "
            "4611686018427387904");
  EXPECT_EQ(error_of(one(R"({"knob": "no_grad", "model": "gpt", "preset": "tiny",
                            "options": {"n_embd": 18446744073709551615}})")),
            "s.json: /experiments/0: option 'n_embd' of model 'gpt' must be at most 65536, got "
            "18446744073709551615");
}

// Quotes, SQL, HTML, shell metacharacters and path traversal in names are data: kept verbatim
// (stored through bound parameters, escaped by the report), never interpreted.
TEST(Suite, HostileNamesAreKeptVerbatim) {
  const std::string name =
      R"(x'; DROP TABLE runs; -- <script>alert(1)</script> $(rm -rf ~) `id` ../../etc/passwd \"q\")";
  const Suite s = parse(
      one(R"({"name": ")" + name + R"(", "knob": "no_grad", "model": "gpt", "preset": "tiny"})"),
      "s.json");
  const std::string expected =
      R"(x'; DROP TABLE runs; -- <script>alert(1)</script> $(rm -rf ~) `id` ../../etc/passwd "q")";
  EXPECT_EQ(s.experiments[0].name, expected);
}

TEST(Suite, FactorialExperimentsHaveEveryCell) {
  const Suite s = parse(one(R"({"factorial": ["channels_last", "no_grad"], "model": "resnet50",
                               "preset": "tiny", "processes": 1})"),
                        "s.json");
  const auto& arms = s.experiments[0].arms;
  ASSERT_EQ(arms.size(), 4u);
  EXPECT_EQ(arms[0].name, "channels_last=off,no_grad=off");
  EXPECT_EQ(arms[3].name, "channels_last=on,no_grad=on");
  EXPECT_EQ(arms[2].settings["channels_last"], true);
  EXPECT_EQ(arms[2].settings["no_grad"], false);
  EXPECT_EQ(s.experiments[0].knob, "factorial");
  EXPECT_EQ(s.experiments[0].varied, (std::vector<std::string>{"channels_last", "no_grad"}));
}

TEST(Suite, AnExperimentsSettingsAndOptionsAddToTheDefaults) {
  // Before: the experiment's objects replaced the defaults' whole, and its trials ran without
  // the suite's baseline (glibc tunables) while nothing said so.
  const Suite s = parse(R"({"name": "s", "defaults": {"model": "resnet50", "preset": "tiny",
                             "settings": {"malloc_tunables": true, "omp_threads": 1},
                             "options": {"image_size": 64}},
                           "experiments": [
                             {"name": "own", "knob": "no_grad", "settings": {"omp_threads": 2},
                              "options": {"width": 4}},
                             {"name": "plain", "knob": "no_grad"}]})",
                        "s.json");
  const auto& own = s.experiments[0];
  EXPECT_EQ(own.settings["malloc_tunables"], true);
  EXPECT_EQ(own.settings["omp_threads"], 2);  // its own value wins
  EXPECT_EQ(own.model.options, (nlohmann::json{{"image_size", 64}, {"width", 4}}));
  const auto& plain = s.experiments[1];
  EXPECT_EQ(plain.settings["malloc_tunables"], true);
  EXPECT_EQ(plain.settings["omp_threads"], 1);
  EXPECT_EQ(plain.model.options, (nlohmann::json{{"image_size", 64}}));
}

// A paired design (both arms alternating inside each worker) only where the arms differ in knobs
// that switch inside a process; "auto" pairs where it can.
TEST(Suite, PairedDesignOnlyWhereTheArmsSwitchInsideAProcess) {
  const auto design = [](const std::string& experiment) {
    return parse(one(experiment), "s.json").experiments.front().design;
  };
  EXPECT_EQ(design(R"({"knob": "no_grad", "model": "resnet50", "preset": "tiny"})"), "processes");
  EXPECT_EQ(design(R"({"knob": "no_grad", "model": "resnet50", "preset": "tiny",
                       "design": "paired", "workers": 3})"),
            "paired");
  EXPECT_EQ(design(R"({"knob": "no_grad", "model": "resnet50", "preset": "tiny",
                       "design": "auto", "workers": 3})"),
            "paired");
  EXPECT_EQ(design(R"({"knob": "no_grad", "aa": true, "model": "resnet50", "preset": "tiny",
                       "design": "auto", "workers": 3})"),
            "paired");
  // Arms that differ at process start are paired as two resident processes.
  EXPECT_EQ(design(R"({"knob": "omp_threads", "model": "gpt", "preset": "tiny", "design": "auto",
                       "arms": {"off": {"omp_threads": 1}, "on": {"omp_threads": 2}}})"),
            "paired_processes");
  EXPECT_EQ(design(R"({"knob": "allocator", "model": "gpt", "preset": "tiny",
                       "design": "paired"})"),
            "paired_processes");
  EXPECT_EQ(design(R"({"knob": "onednn", "model": "resnet50", "preset": "tiny",
                       "design": "paired"})"),
            "paired_processes");  // process-wide state: one process cannot hold both arms
  // Asked for, an in-process knob is paired across processes too (agreement; process-level A/A).
  EXPECT_EQ(design(R"({"knob": "no_grad", "aa": true, "model": "resnet50", "preset": "tiny",
                       "design": "paired_processes"})"),
            "paired_processes");
  // Arms of several processes each are not paired; "auto" measures them in processes.
  EXPECT_EQ(design(R"({"knob": "multi_instance", "model": "resnet50", "preset": "tiny",
                       "design": "auto"})"),
            "processes");
  EXPECT_EQ(design(R"({"factorial": ["no_grad", "channels_last"], "model": "resnet50",
                       "preset": "tiny", "design": "auto"})"),
            "processes");
  const Experiment x = parse(one(R"({"knob": "no_grad", "model": "resnet50", "preset": "tiny",
                                     "design": "paired", "workers": 4, "blocks": 6,
                                     "block_samples": 3})"),
                             "s.json")
                           .experiments.front();
  EXPECT_EQ(x.workers, 4);
  EXPECT_EQ(x.blocks, 6);
  EXPECT_EQ(x.block_samples, 3);

  EXPECT_EQ(error_of(one(R"({"knob": "multi_instance", "model": "resnet50", "preset": "tiny",
                             "design": "paired", "workers": 3})")),
            "s.json: /experiments/0/design: \"paired\" is not possible: multi_instance runs an arm "
            "as several processes (instances or ranks), and pairing alternates one process per "
            "arm; use \"processes\" (or \"auto\", which pairs where it can)");
  EXPECT_EQ(error_of(one(R"({"factorial": ["no_grad", "channels_last"], "model": "resnet50",
                             "preset": "tiny", "design": "paired_processes"})")),
            "s.json: /experiments/0/design: \"paired_processes\" is not possible: a factorial "
            "experiment has more than two arms; pairing alternates two; use \"processes\" (or "
            "\"auto\", which pairs where it can)");
  EXPECT_EQ(error_of(one(R"({"knob": "no_grad", "model": "resnet50", "preset": "tiny",
                             "design": "paired", "workers": 2})")),
            "s.json: /experiments/0/workers: a paired experiment needs at least 3 workers (its "
            "interval has workers - 1 degrees of freedom), got 2");
  EXPECT_EQ(error_of(one(R"({"knob": "no_grad", "model": "resnet50", "preset": "tiny",
                             "design": "paired", "workers": 3, "blocks": 5})")),
            "s.json: /experiments/0/blocks: must be even (blocks 2j and 2j+1 are one OFF/ON "
            "pair), got 5");
  EXPECT_EQ(error_of(one(R"({"knob": "no_grad", "model": "resnet50", "preset": "tiny",
                             "design": "pairs"})")),
            "s.json: /experiments/0/design: must be \"processes\", \"paired\", "
            "\"paired_processes\" or \"auto\", got \"pairs\"");
  EXPECT_EQ(error_of(one(R"({"knob": "no_grad", "model": "resnet50", "preset": "tiny",
                             "design": "paired", "workers": 3, "block_samples": 1})")),
            "s.json: /experiments/0/block_samples: must be an integer from 2 to 100000, got 1");
}

TEST(Suite, APairedExperimentsSamplingBudgetAndMostWorkers) {
  const auto first = [](const std::string& experiment) {
    return parse(one(experiment), "s.json").experiments.front();
  };
  const Experiment plain = first(R"({"knob": "no_grad", "model": "resnet50", "preset": "tiny",
                                     "design": "paired"})");
  EXPECT_EQ(plain.budget_s, 60);
  EXPECT_EQ(plain.max_workers, 32);
  // Never fewer than the planned workers by default.
  EXPECT_EQ(first(R"({"knob": "no_grad", "model": "resnet50", "preset": "tiny",
                      "design": "paired", "workers": 40})")
                .max_workers,
            40);
  const Experiment set = first(R"({"knob": "no_grad", "model": "resnet50", "preset": "tiny",
                                   "design": "paired", "budget_s": 0, "max_workers": 8})");
  EXPECT_EQ(set.budget_s, 0);
  EXPECT_EQ(set.max_workers, 8);
  EXPECT_EQ(error_of(one(R"({"knob": "no_grad", "model": "resnet50", "preset": "tiny",
                             "design": "paired", "workers": 6, "max_workers": 4})")),
            "s.json: /experiments/0/max_workers: must be at least workers (6), got 4");
  EXPECT_EQ(error_of(one(R"({"knob": "no_grad", "model": "resnet50", "preset": "tiny",
                             "budget_s": -1})")),
            "s.json: /experiments/0/budget_s: must be a number from 0 to 604800, got -1");
  // Samples sized to the step only where the suite gives the seconds a pair of blocks should take.
  EXPECT_EQ(plain.worker_s, 0);
  EXPECT_DOUBLE_EQ(first(R"({"knob": "no_grad", "model": "resnet50", "preset": "tiny",
                             "design": "paired", "worker_s": 1.5})")
                       .worker_s,
                   1.5);
  EXPECT_EQ(error_of(one(R"({"knob": "no_grad", "model": "resnet50", "preset": "tiny",
                             "design": "paired", "worker_s": "1s"})")),
            "s.json: /experiments/0/worker_s: must be a number from 0 to 3600, got \"1s\"");
  // The half-width sampling on aims for: ±2 % unless the suite says otherwise.
  EXPECT_DOUBLE_EQ(plain.target, 0.02);
  EXPECT_DOUBLE_EQ(first(R"({"knob": "no_grad", "model": "resnet50", "preset": "tiny",
                             "design": "paired", "target_pct": 2.4})")
                       .target,
                   0.024);
  EXPECT_EQ(error_of(one(R"({"knob": "no_grad", "model": "resnet50", "preset": "tiny",
                             "target_pct": 0})")),
            "s.json: /experiments/0/target_pct: must be a number from 0.1 to 50, got 0");
  // ... at the level of a 95 % interval unless it says otherwise (stage 2 of check does).
  EXPECT_DOUBLE_EQ(plain.confidence, 0.95);
  EXPECT_DOUBLE_EQ(first(R"({"knob": "no_grad", "model": "resnet50", "preset": "tiny",
                             "design": "paired", "confidence_pct": 99.5})")
                       .confidence,
                   0.995);
  EXPECT_EQ(error_of(one(R"({"knob": "no_grad", "model": "resnet50", "preset": "tiny",
                             "confidence_pct": 100})")),
            "s.json: /experiments/0/confidence_pct: must be a number from 50 to 99.9999, got 100");
  // Deciding at looks is off unless asked for (stage 2 of check asks, with its threshold).
  EXPECT_DOUBLE_EQ(plain.decide, 0);
  EXPECT_DOUBLE_EQ(first(R"({"knob": "no_grad", "model": "resnet50", "preset": "tiny",
                             "design": "paired", "decide_pct": 5})")
                       .decide,
                   0.05);
  EXPECT_EQ(error_of(one(R"({"knob": "no_grad", "model": "resnet50", "preset": "tiny",
                             "decide_pct": 60})")),
            "s.json: /experiments/0/decide_pct: must be a number from 0 to 50, got 60");
  // A resident pair's two processes share one heap offset unless told otherwise.
  EXPECT_TRUE(plain.heap_offset_per_pair);
  EXPECT_FALSE(first(R"({"knob": "allocator", "model": "resnet50", "preset": "tiny",
                         "design": "paired", "heap_offset": "per_process"})")
                   .heap_offset_per_pair);
  EXPECT_EQ(error_of(one(R"({"knob": "no_grad", "model": "resnet50", "preset": "tiny",
                             "heap_offset": "random"})")),
            "s.json: /experiments/0/heap_offset: must be \"per_pair\" (both processes of a "
            "resident pair start their heap at one offset, drawn afresh for every pair) or "
            "\"per_process\" (each draws its own), got \"random\"");
}

TEST(Suite, AaControlsRunTheSameArmTwice) {
  const Suite s = parse(
      one(R"({"aa": true, "knob": "no_grad", "model": "resnet50", "preset": "tiny"})"), "s.json");
  EXPECT_EQ(s.experiments[0].name, "aa.no_grad.resnet50-tiny-infer");
  EXPECT_EQ(s.experiments[0].knob, "aa");
  EXPECT_EQ(s.experiments[0].arms[0].settings, s.experiments[0].arms[1].settings);
  EXPECT_EQ(s.experiments[0].varied, std::vector<std::string>{"no_grad"});
}

TEST(Suite, APositiveControlSlowsOnlyItsOnArmByAKnownPercentage) {
  const Experiment x = parse(one(R"({"slowdown": 3, "knob": "no_grad", "model": "resnet50",
                                     "preset": "tiny", "design": "auto"})"),
                             "s.json")
                           .experiments.front();
  EXPECT_EQ(x.name, "slow3.no_grad.resnet50-tiny-infer");
  EXPECT_EQ(x.knob, "positive_control");
  EXPECT_EQ(x.slowdown, 3);
  EXPECT_EQ(x.arms[0].settings, (json{{"no_grad", true}}));
  EXPECT_EQ(x.arms[1].settings, (json{{"no_grad", true}, {"slowdown", 3}}));
  EXPECT_EQ(x.design, "paired");  // the arms differ in nothing that acts at process start
  EXPECT_EQ(error_of(one(R"({"slowdown": 0.5, "knob": "no_grad", "model": "resnet50",
                             "preset": "tiny"})")),
            "s.json: /experiments/0/slowdown: slowdown must be a whole percentage from 1 to 100 "
            "(the ON arm's known slowdown), got 0.5");
  EXPECT_EQ(error_of(one(R"({"slowdown": 3, "aa": true, "knob": "no_grad", "model": "resnet50",
                             "preset": "tiny"})")),
            "s.json: /experiments/0/slowdown: an experiment is an A/A control (\"aa\") or a "
            "positive control (\"slowdown\"), not both");
  EXPECT_EQ(error_of(one(R"({"slowdown": 3, "factorial": ["no_grad", "channels_last"],
                             "model": "resnet50", "preset": "tiny"})")),
            "s.json: /experiments/0/slowdown: a positive control takes one \"knob\", not a "
            "factorial");
  // As a setting of its own it is checked the same way.
  EXPECT_EQ(error_of(one(R"({"knob": "no_grad", "model": "resnet50", "preset": "tiny",
                             "settings": {"slowdown": 200}})")),
            "s.json: /experiments/0/settings/slowdown: slowdown must be a whole percentage from 1 "
            "to 100 (the ON arm's known slowdown), got 200");
}

TEST(Suite, CudaGraphsAreRefusedWithWhatAGraphCannotReplay) {
  // Training capture is fine with SGD and bf16; fp16 loss scaling, per-step inputs and AdamW's
  // host-side step count are refused, naming the arm and the reason.
  EXPECT_NO_THROW(parse(one(R"({"knob": "cuda_graphs", "model": "gpt", "preset": "tiny",
                                "mode": "train", "settings": {"amp": "bf16"}})"),
                        "s.json"));
  const std::string fp16 = error_of(one(
      R"({"knob": "cuda_graphs", "model": "gpt", "preset": "tiny", "mode": "train", "settings": {"amp": true}})"));
  EXPECT_NE(fp16.find("/experiments/0/arms/on: cuda_graphs cannot capture a training step with "
                      "fp16 loss scaling"),
            std::string::npos)
      << fp16;
  EXPECT_EQ(error_of(one(R"({"factorial": ["cuda_graphs", "on_device_alloc"], "model": "gpt",
                             "preset": "tiny"})")),
            "s.json: /experiments/0/arms/cuda_graphs=on,on_device_alloc=off: cuda_graphs replays "
            "one captured step with fixed inputs and shapes: it cannot be combined with "
            "on_device_alloc");
  EXPECT_NE(error_of(one(R"({"knob": "fused_adamw", "model": "gpt", "preset": "tiny",
                             "mode": "train", "device": "cuda", "settings": {"cuda_graphs": true}})"))
                .find("keeps its step count on the host"),
            std::string::npos);
  // Inference under fp16 autocast has no scaler: capturable.
  EXPECT_NO_THROW(parse(one(R"({"knob": "cuda_graphs", "model": "gpt", "preset": "tiny",
                                "settings": {"amp": true}})"),
                        "s.json"));
}

TEST(Suite, TheDeviceIsValidatedAndCudaOnlyKnobsImplyIt) {
  EXPECT_EQ(error_of(one(R"({"knob": "amp", "model": "gpt", "preset": "tiny", "device": "gpu"})")),
            "s.json: /experiments/0/device: device must be \"cpu\" or \"cuda\", got \"gpu\"");
  EXPECT_EQ(error_of(one(R"({"knob": "tf32", "model": "gpt", "preset": "tiny", "device": "cpu"})")),
            "s.json: /experiments/0/device: tf32 runs on CUDA only: device must be \"cuda\" (or "
            "left out), got \"cpu\"");
  EXPECT_EQ(error_of(one(
                R"({"knob": "omp_threads", "model": "gpt", "preset": "tiny", "device": "cuda"})")),
            "s.json: /experiments/0/device: omp_threads is a CPU knob: device must be \"cpu\" (or "
            "left out), got \"cuda\"");
  EXPECT_EQ(error_of(one(R"({"knob": "amp", "model": "gpt", "preset": "tiny",
                           "settings": {"device": "cuda"}})")),
            "s.json: /experiments/0/settings/device: give the device as the experiment's "
            "\"device\" field");
  EXPECT_EQ(error_of(one(R"({"knob": "cudnn_benchmark", "model": "resnet50", "preset": "tiny",
                           "settings": {"varying_shapes": 1}})")),
            "s.json: /experiments/0/settings/varying_shapes: varying_shapes must be true or false, "
            "got 1");
  // A CUDA-only knob runs on CUDA without being told; a "both" knob on the CPU unless told.
  const Suite s = parse(one(R"({"knob": "tf32", "model": "gpt", "preset": "tiny"},
                             {"knob": "amp", "model": "gpt", "preset": "tiny"},
                             {"knob": "amp", "model": "gpt", "preset": "tiny", "device": "cuda",
                              "name": "amp.cuda"})"),
                        "s.json");
  EXPECT_EQ(s.experiments[0].device, "cuda");
  EXPECT_EQ(s.experiments[1].device, "cpu");
  EXPECT_EQ(s.experiments[2].device, "cuda");
}

// Parsing needs no host: "all" threads stay symbolic (the plan makes them the host's cores), and
// arms that differ only in such a value are a valid suite.
TEST(Suite, HostDependentValuesStaySymbolic) {
  const Suite s = parse(one(R"({"knob": "omp_threads", "model": "gpt", "preset": "tiny",
                               "arms": {"off": {"omp_threads": 2}, "on": {"omp_threads": "all"}}},
                              {"knob": "omp_threads", "model": "gpt", "preset": "tiny",
                               "name": "default"})"),
                        "s.json");
  EXPECT_EQ(s.experiments[0].arms[1].settings["omp_threads"], "all");
  EXPECT_EQ(s.experiments[1].arms[0].settings["omp_threads"], 1);
  EXPECT_EQ(s.experiments[1].arms[1].settings["omp_threads"], "all");
}

}  // namespace
}  // namespace tunebench::suite
