// Planning = suite × host: applicability on a host (the knob's reasons, the device, distributed
// batches, host-dependent values), expansion into interleaved trials, the filter.
#include <gtest/gtest.h>

#include "plan/model_suite.h"
#include "plan/plan.h"
#include "run/tune.h"
#include "tests/paths.h"

namespace tunebench::plan {
namespace {

using suite::parse;
using suite::SuiteError;

knobs::HostCaps two_cores() {
  knobs::HostCaps host;
  host.cores = 2;
  host.cuda_reason = "no CUDA device on this host";
  return host;
}

knobs::HostCaps with_gpu() {
  knobs::HostCaps host = two_cores();
  host.cuda = true;
  host.cuda_reason = "";
  host.gpus = 1;
  return host;
}

std::string one(const std::string& experiment) {
  return R"({"name": "t", "experiments": [)" + experiment + "]}";
}

Plan planned(const std::string& text, const knobs::HostCaps& host) {
  return make(parse(text, "s.json"), host);
}

Plan planned_file(const std::string& path, const knobs::HostCaps& host) {
  return make(suite::load(path), host);
}

TEST(Plan, TheShippedSmokeSuiteRunsEverythingOnTwoCores) {
  const Plan smoke = planned_file(test_paths::source_file("suites/smoke.json"), two_cores());
  ASSERT_FALSE(smoke.experiments.empty());
  for (const auto& [x, not_applicable] : smoke.experiments) EXPECT_EQ(not_applicable, "") << x.name;
}

TEST(Plan, HostileNamesReachTheTrialsVerbatim) {
  const std::string name =
      R"(x'; DROP TABLE runs; -- <script>alert(1)</script> $(rm -rf ~) `id` ../../etc/passwd \"q\")";
  const Plan s = planned(
      one(R"({"name": ")" + name + R"(", "knob": "no_grad", "model": "gpt", "preset": "tiny"})"),
      two_cores());
  const std::string expected =
      R"(x'; DROP TABLE runs; -- <script>alert(1)</script> $(rm -rf ~) `id` ../../etc/passwd "q")";
  const auto all = trials(s, "");
  ASSERT_FALSE(all.empty());
  for (const auto& t : all) EXPECT_EQ(t.experiment, expected);
}

TEST(Plan, FactorialExperimentsHaveEveryCell) {
  const Plan s = planned(one(R"({"factorial": ["channels_last", "no_grad"], "model": "resnet50",
                                "preset": "tiny", "processes": 1})"),
                         two_cores());
  const auto all = trials(s, "");
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0].arm, "channels_last=off,no_grad=off");
  EXPECT_EQ(all[3].arm, "channels_last=on,no_grad=on");
  EXPECT_EQ(all[2].settings["channels_last"], true);
  EXPECT_EQ(all[2].settings["no_grad"], false);
  EXPECT_EQ(all[0].knob, "factorial");
}

TEST(Plan, TheDeviceTravelsToTheWorkerAsATrialSetting) {
  const Plan s = planned(one(R"({"knob": "tf32", "model": "gpt", "preset": "tiny"},
                               {"knob": "amp", "model": "gpt", "preset": "tiny"},
                               {"knob": "amp", "model": "gpt", "preset": "tiny", "device": "cuda",
                                "name": "amp.cuda"})"),
                         with_gpu());
  const auto all = trials(s, "");
  ASSERT_FALSE(all.empty());
  for (const auto& t : all) {
    // The device travels to the worker, and into the database, as the trial setting "device".
    EXPECT_EQ(t.settings.value("device", "cpu"),
              t.experiment == "amp.gpt-tiny-infer" ? "cpu" : "cuda")
        << t.experiment;
  }
}

// "all" threads are the host's cores, in the plan and in every trial; arms that differ only in
// such a value compare nothing on a host where they coincide: not applicable, with the reason.
TEST(Plan, HostDependentValuesAreResolvedForTheHost) {
  const std::string text = one(R"({"knob": "omp_threads", "model": "gpt", "preset": "tiny",
                                   "arms": {"off": {"omp_threads": 2}, "on": {"omp_threads": "all"}}},
                                  {"knob": "omp_threads", "model": "gpt", "preset": "tiny",
                                   "name": "default"})");
  const Plan two = planned(text, two_cores());
  EXPECT_EQ(two.experiments[0].experiment.arms[1].settings["omp_threads"], 2);
  EXPECT_EQ(two.experiments[0].not_applicable,
            "omp_threads: the off and on arms set the same values on this host (2 cores): nothing "
            "would be compared");
  EXPECT_EQ(two.experiments[1].not_applicable, "");
  for (const auto& t : trials(two, "")) {
    EXPECT_EQ(t.experiment, "default");
    EXPECT_EQ(t.settings["omp_threads"], t.arm == "on" ? 2 : 1);
  }
  knobs::HostCaps four = two_cores();
  four.cores = 4;
  const Plan wide = planned(text, four);
  EXPECT_EQ(wide.experiments[0].not_applicable, "");
  EXPECT_EQ(wide.experiments[0].experiment.arms[1].settings["omp_threads"], 4);
  EXPECT_EQ(trials(wide, "").size(), 8u);
}

TEST(Plan, ExpansionInterleavesArmsAbbaAndSharesTheSeed) {
  const Plan s =
      planned(one(R"({"knob": "no_grad", "model": "resnet50", "preset": "tiny", "processes": 4})"),
              two_cores());
  const auto expanded = trials(s, "");
  std::vector<std::string> arms;
  for (const auto& t : expanded) arms.push_back(t.arm);
  EXPECT_EQ(arms, (std::vector<std::string>{"off", "on", "on", "off", "off", "on", "on", "off"}));
  for (size_t i = 0; i < expanded.size(); ++i) {
    EXPECT_EQ(expanded[i].sequence, int(i));
    EXPECT_EQ(expanded[i].seed, expanded[0].seed);      // same weights and batch in both arms
    EXPECT_EQ(expanded[i].settings["omp_threads"], 2);  // every trial sets its thread count
    EXPECT_EQ(expanded[i].settings["allocator"], "glibc");
    EXPECT_EQ(expanded[i].settings["no_grad"], expanded[i].arm == "on");
  }
  EXPECT_EQ(expanded[0].process_index, 0);
  EXPECT_EQ(expanded[7].process_index, 3);
}

// A paired experiment's workers each hold both arms: OFF then ON per worker, one pairing, odd
// workers ON-first, and each arm's samples are the blocks it runs.
TEST(Plan, PairedExperimentsGiveEachWorkerBothArms) {
  const Plan s = planned(one(R"({"knob": "no_grad", "model": "resnet50", "preset": "tiny",
                                 "design": "paired", "workers": 3, "blocks": 6,
                                 "block_samples": 3})"),
                         two_cores());
  const auto expanded = trials(s, "");
  ASSERT_EQ(expanded.size(), 6u);
  for (size_t i = 0; i < expanded.size(); ++i) {
    const TrialSpec& t = expanded[i];
    EXPECT_EQ(t.sequence, int(i));
    EXPECT_EQ(t.arm, i % 2 == 0 ? "off" : "on");
    EXPECT_EQ(t.process_index, int(i / 2));
    EXPECT_EQ(t.pairing.blocks, 6);
    EXPECT_EQ(t.pairing.block_samples, 3);
    EXPECT_EQ(t.pairing.on_first, t.process_index % 2 == 1);
    EXPECT_EQ(t.samples, 9);  // 3 of the 6 blocks, 3 samples each
    EXPECT_EQ(t.seed, expanded[0].seed);
    EXPECT_EQ(t.settings["no_grad"], t.arm == "on");
    EXPECT_FALSE(t.pairing.resident);  // both arms in one process
  }
  // A process-start knob's arms are a resident pair: one process each, the same pairing.
  const Plan resident = planned(one(R"({"knob": "allocator", "model": "resnet50",
                                        "preset": "tiny", "design": "paired", "workers": 3})"),
                                two_cores());
  const auto pairs = trials(resident, "");
  ASSERT_EQ(pairs.size(), 6u);
  for (const auto& t : pairs) {
    EXPECT_TRUE(t.pairing.resident);
    EXPECT_EQ(t.pairing, pairs[size_t(t.process_index) * 2].pairing);
    EXPECT_EQ(t.settings["allocator"], t.arm == "on" ? "jemalloc" : "glibc");
  }
  // A trial alone in its process has no pairing.
  const Plan alone =
      planned(one(R"({"knob": "no_grad", "model": "resnet50", "preset": "tiny"})"), two_cores());
  for (const auto& t : trials(alone, "")) EXPECT_FALSE(t.pairing.paired());
}

TEST(Plan, NotApplicableExperimentsAreKeptWithTheirReasonAndNotRun) {
  const Plan s = planned(one(R"({"knob": "channels_last", "model": "gpt", "preset": "tiny"},
                               {"knob": "no_grad", "model": "gpt", "preset": "tiny", "mode": "train"},
                               {"knob": "jit_fusion", "model": "gpt", "preset": "tiny", "device": "cuda"},
                               {"knob": "no_grad", "model": "gpt", "preset": "tiny"})"),
                         two_cores());
  EXPECT_EQ(s.experiments[0].not_applicable, "channels_last: applies to resnet50 only, not gpt");
  EXPECT_EQ(s.experiments[1].not_applicable, "no_grad: applies to infer only, not train");
  EXPECT_EQ(s.experiments[2].not_applicable,
            "device cuda: needs a CUDA device: no CUDA device on this host");
  EXPECT_EQ(s.experiments[3].not_applicable, "");
  const auto expanded = trials(s, "");
  for (const auto& t : expanded) EXPECT_EQ(t.experiment, "no_grad.gpt-tiny-infer");
}

TEST(Plan, DistributedBatchesMustSplitIntoThisHostsRanks) {
  // Two cores: ddp_no_sync runs 2 ranks × 4 micro-batches, so batch 4 cannot run and 8 can;
  // ddp_scaling's ON arm has 2 ranks of one micro-batch each.
  const Plan s = planned(
      one(R"({"knob": "ddp_no_sync", "model": "gpt", "preset": "tiny", "mode": "train", "batch": 4},
             {"knob": "ddp_no_sync", "model": "gpt", "preset": "tiny", "mode": "train", "batch": 8,
              "name": "eight"},
             {"knob": "ddp_scaling", "model": "gpt", "preset": "tiny", "mode": "train", "batch": 3})"),
      two_cores());
  EXPECT_EQ(s.experiments[0].not_applicable,
            "ddp_no_sync: batch 4 does not split into 2 rank(s) × 4 micro-batch(es) on this host "
            "(2 cores): use a multiple of 8");
  EXPECT_EQ(s.experiments[1].not_applicable, "");
  EXPECT_EQ(s.experiments[2].not_applicable,
            "ddp_scaling: batch 3 does not split into 2 rank(s) × 1 micro-batch(es) on this host "
            "(2 cores): use a multiple of 2");
}

TEST(Plan, ApplicabilityFollowsTheExperimentsDevice) {
  // A host with one GPU whose CPU fuser is missing: jit_fusion runs on CUDA (NNC) and not on the
  // CPU; the distributed knobs run on the CPU (two cores) and need two GPUs on CUDA.
  knobs::HostCaps host = two_cores();
  host.cuda = true;
  host.cuda_reason = "";
  host.gpus = 1;
  host.unsupported_on_cpu["jit_fusion"] = "no CPU fuser";
  host.unsupported_on_cuda["fused_adamw"] = "no CUDA kernel";
  const Plan s = planned(one(R"({"knob": "jit_fusion", "model": "gpt", "preset": "tiny"},
      {"knob": "jit_fusion", "model": "gpt", "preset": "tiny", "device": "cuda", "name": "j"},
      {"knob": "ddp_scaling", "model": "gpt", "preset": "tiny", "mode": "train", "batch": 8},
      {"knob": "ddp_scaling", "model": "gpt", "preset": "tiny", "mode": "train", "batch": 8,
       "device": "cuda", "name": "d"},
      {"knob": "fused_adamw", "model": "gpt", "preset": "tiny", "mode": "train"},
      {"knob": "fused_adamw", "model": "gpt", "preset": "tiny", "mode": "train", "device": "cuda",
       "name": "f"})"),
                         host);
  EXPECT_EQ(s.experiments[0].not_applicable, "jit_fusion: no CPU fuser");
  EXPECT_EQ(s.experiments[1].not_applicable, "");
  EXPECT_EQ(s.experiments[2].not_applicable, "");
  EXPECT_EQ(s.experiments[3].not_applicable,
            "ddp_scaling: needs 2 or more GPUs (one rank each, NCCL): this host has 1");
  EXPECT_EQ(s.experiments[4].not_applicable, "");
  EXPECT_EQ(s.experiments[5].not_applicable, "fused_adamw: no CUDA kernel");
}

TEST(Plan, FilterSelectsExperimentsAndRejectsBadPatterns) {
  const Plan s = planned(one(R"({"knob": "no_grad", "model": "resnet50", "preset": "tiny"},
                               {"knob": "no_grad", "model": "gpt", "preset": "tiny"})"),
                         two_cores());
  EXPECT_EQ(trials(s, "gpt").size(), 4u);
  EXPECT_THROW(trials(s, "("), SuiteError);
  EXPECT_THROW(trials(s, "dlrm"), SuiteError);
}

TEST(Plan, CudaExperimentsWithoutAGpuAreNotApplicableAndTheSuiteStillExpands) {
  const Plan s = planned(one(R"({"knob": "tf32", "model": "gpt", "preset": "tiny"},
                             {"knob": "amp", "model": "gpt", "preset": "tiny", "device": "cuda"})"),
                         two_cores());
  EXPECT_EQ(s.experiments[0].not_applicable,
            "tf32: needs a CUDA device: no CUDA device on this host");
  EXPECT_EQ(s.experiments[1].not_applicable,
            "device cuda: needs a CUDA device: no CUDA device on "
            "this host");
  EXPECT_TRUE(trials(s, "").empty());  // nothing to run, and no error
  EXPECT_THROW(trials(s, "^nothing$"), SuiteError);
}

TEST(Plan, TheCudaSuitesAreValidAndNotApplicableWithoutAGpu) {
  for (const char* name : {"cuda-smoke", "cuda-nightly"}) {
    const std::string path = test_paths::source_file(std::string("suites/") + name + ".json");
    const Plan without = planned_file(path, two_cores());
    EXPECT_EQ(without.suite_path, path);
    for (const auto& [x, not_applicable] : without.experiments) {
      EXPECT_EQ(x.device, "cuda") << x.name;
      EXPECT_NE(not_applicable, "") << x.name;
      // Without a GPU the missing device is the reason, not the GPU count.
      if (x.knob.rfind("ddp_", 0) == 0) {
        EXPECT_EQ(not_applicable, "device cuda: needs a CUDA device: no CUDA device on this host");
      }
    }
    EXPECT_TRUE(trials(without, "").empty());
    // With one GPU everything runs but the distributed knobs, which need a second; with two,
    // everything.
    const Plan with = planned_file(path, with_gpu());
    for (const auto& [x, not_applicable] : with.experiments) {
      if (x.knob.rfind("ddp_", 0) == 0) {
        EXPECT_EQ(not_applicable,
                  x.knob + ": needs 2 or more GPUs (one rank each, NCCL): this host has 1");
      } else {
        EXPECT_EQ(not_applicable, "") << x.name;
      }
    }
    knobs::HostCaps two_gpus = with_gpu();
    two_gpus.gpus = 2;
    for (const auto& [x, not_applicable] : planned_file(path, two_gpus).experiments) {
      EXPECT_EQ(not_applicable, "") << x.name;
    }
  }
}

// Where a program that sets nothing runs other settings than tunebench's base (Debian's
// LibTorch counts 1 thread of 2 on some VMs), tune gives them as the request's defaults and every
// stage measures from them: each screened knob, each ladder step and the final's "defaults" arm
// run them, except where an arm sets that knob itself.
TEST(Tune, EveryStageMeasuresFromWhatAProgramThatSetsNothingRuns) {
  ModelRequest model;
  model.builtin = "resnet50";
  model.batch = 4;
  model.defaults = {{"omp_threads", 1}};
  const suite::Suite screen = model_suite(model);
  int threads_experiments = 0;
  for (const auto& x : screen.experiments) {
    if (x.knob == "omp_threads") {
      ++threads_experiments;
      EXPECT_FALSE(x.settings.contains("omp_threads")) << x.settings;
      EXPECT_EQ(x.arms[0].settings, (nlohmann::json{{"omp_threads", 1}}));
      EXPECT_EQ(x.arms[1].settings, (nlohmann::json{{"omp_threads", "all"}}));
    } else {
      EXPECT_EQ(x.settings.value("omp_threads", 0), 1) << x.name << ": " << x.settings;
    }
  }
  EXPECT_EQ(threads_experiments, 1);
  const nlohmann::json config = {{"channels_last", true}, {"omp_threads", 2}};
  const suite::Experiment step = ladder_step_suite(model, "amp", config, 12).experiments.at(0);
  EXPECT_EQ(step.settings, config);  // the configuration's own thread count over the default
  const suite::Experiment threads =
      ladder_step_suite(model, "omp_threads", {{"channels_last", true}}, 12).experiments.at(0);
  EXPECT_EQ(threads.settings, (nlohmann::json{{"channels_last", true}}));
  const suite::Experiment amp =
      ladder_step_suite(model, "amp", {{"no_grad", true}}, 12).experiments.at(0);
  EXPECT_EQ(amp.settings, (nlohmann::json{{"no_grad", true}, {"omp_threads", 1}}));
  const suite::Suite last = final_suite(model, config, {{"channels_last", true}}, 30);
  EXPECT_EQ(last.experiments.at(0).arms[0].settings, (nlohmann::json{{"omp_threads", 1}}));
  EXPECT_EQ(last.experiments.at(0).arms[1].settings, config);
  EXPECT_EQ(last.experiments.at(1).arms[0].settings,
            (nlohmann::json{{"channels_last", true}, {"omp_threads", 1}}));
}

// tune's later stages: a ladder step is the knob off and on with the configuration so far in
// every arm; the final run compares the configuration with the defaults and with the best knob
// alone, both paired (one process holds both arms: their knobs switch inside it).
TEST(Tune, LadderAndFinalSuitesCarryTheConfigurationInTheirArms) {
  ModelRequest model;
  model.builtin = "resnet50";
  model.batch = 4;
  const nlohmann::json config = {{"channels_last", true}, {"no_grad", true}};
  const suite::Suite step = ladder_step_suite(model, "amp", config, 12);
  ASSERT_EQ(step.experiments.size(), 1u);
  const suite::Experiment& x = step.experiments[0];
  EXPECT_EQ(x.name, "tune.add-amp");
  EXPECT_EQ(x.settings, config);
  EXPECT_EQ(x.arms[0].settings, (nlohmann::json{{"amp", false}}));
  EXPECT_EQ(x.arms[1].settings, (nlohmann::json{{"amp", true}}));
  EXPECT_EQ(x.design, "paired");
  EXPECT_EQ(x.budget_s, 12);
  EXPECT_EQ(x.batch, 4);

  const nlohmann::json single = {{"no_grad", true}};
  const suite::Suite last = final_suite(model, config, single, 30);
  ASSERT_EQ(last.experiments.size(), 2u);
  EXPECT_EQ(last.experiments[0].name, "tuned.vs-default");
  EXPECT_EQ(last.experiments[0].arms[0].settings, nlohmann::json::object());
  EXPECT_EQ(last.experiments[0].arms[1].settings, config);
  EXPECT_EQ(last.experiments[1].name, "tuned.vs-best-single");
  EXPECT_EQ(last.experiments[1].arms[0].settings, single);
  EXPECT_EQ(last.experiments[1].design, "paired");
  // One knob kept: nothing to compare beyond the defaults.
  EXPECT_EQ(final_suite(model, single, single, 30).experiments.size(), 1u);
  // A process-start knob in the configuration makes the final comparison a resident pair.
  const nlohmann::json threads = {{"no_grad", true}, {"omp_threads", 2}};
  EXPECT_EQ(final_suite(model, threads, single, 30).experiments[0].design, "paired_processes");

  // A model from a file answers for every knob its arms set (the catalog's model names are the
  // built-in models'): channels_last in a configuration is the file's offer to judge.
  ModelRequest file;
  file.path = "/models/conv.pt";
  file.inputs = {"3x8x8:float32"};
  file.batch = 4;
  const nlohmann::json with_layout = {{"amp", true}, {"channels_last", true}};
  const suite::Suite of_file = final_suite(file, with_layout, {{"channels_last", true}}, 30);
  knobs::HostCaps host;
  host.cores = 2;
  models::ModelOffer conv;
  conv.file = "/models/conv.pt";
  conv.conv2d = true;
  conv.trainable = true;
  conv.output = "tensor";
  models::ModelOffer flat = conv;
  flat.conv2d = false;
  for (const auto& [offer, applies] : {std::pair{conv, true}, std::pair{flat, false}}) {
    const Plan p = make(of_file, host, {{"/models/conv.pt", offer}});
    for (const auto& planned : p.experiments) {
      const bool says_layout = planned.not_applicable.find("channels_last") != std::string::npos;
      EXPECT_EQ(says_layout, !applies) << planned.experiment.name << ": " << planned.not_applicable;
    }
  }

  ModelRequest unknown;
  unknown.builtin = "resnet";
  try {
    model_suite(unknown);
    FAIL() << "an unknown built-in model was accepted";
  } catch (const SuiteError& e) {
    EXPECT_NE(std::string(e.what()).find("not a built-in model (resnet50, gpt, dlrm)"),
              std::string::npos)
        << e.what();
  }
}

// The screen's candidates: helping knobs best first; the controls, knobs that did not help,
// knobs of several processes and knobs whose ON is already every run's default are not.
TEST(Tune, TheCandidatesAreTheHelpingKnobsBestFirst) {
  analysis::RunReport screen;
  auto experiment = [&](const std::string& name, const std::string& knob, double ratio,
                        stats::Verdict verdict, double slowdown = 0) {
    analysis::ExperimentReport x;
    x.name = name;
    x.knob = knob;
    x.slowdown = slowdown;
    stats::Effect e{};
    e.ratio = ratio;
    e.lo = ratio * 0.98;
    e.hi = ratio * 1.02;
    e.verdict = verdict;
    x.effects.push_back({"time", "on vs off", e});
    screen.experiments.push_back(x);
  };
  experiment("no_grad.m", "no_grad", 0.90, stats::Verdict::helps);
  experiment("amp.m", "amp", 0.70, stats::Verdict::helps);
  experiment("onednn.m", "onednn", 1.10, stats::Verdict::hurts);
  experiment("channels_last.m", "channels_last", 0.99, stats::Verdict::no_effect);
  experiment("multi_instance.m", "multi_instance", 0.50, stats::Verdict::helps);
  experiment("aa.no_grad.m", "no_grad", 0.95, stats::Verdict::helps);
  experiment("slow3.no_grad.m", "positive_control", 0.97, stats::Verdict::helps, 0.03);
  experiment("omp_threads.m", "omp_threads", 0.60, stats::Verdict::helps);
  experiment("profiler_off.m", "profiler_off", 0.80, stats::Verdict::helps);
  experiment("fused_adamw.m", "fused_adamw", 0.85, stats::Verdict::helps);
  knobs::HostCaps host;
  host.cores = 2;
  std::vector<orchestrator::LeftOut> left_out;
  const auto c = orchestrator::helping_knobs(screen, host, &left_out);
  // omp_threads ON is all cores, which every trial runs with: nothing to add to the defaults.
  // profiler_off ON is what a program that sets nothing runs (no profiler): nothing to add either.
  // fused_adamw's effect is against per-parameter AdamW, but a program that sets nothing trains
  // with SGD: the final stage's comparison with the defaults would change the optimizer too.
  ASSERT_EQ(left_out.size(), 4u);
  EXPECT_EQ(left_out[0].knob, "multi_instance");
  EXPECT_EQ(left_out[1].knob, "omp_threads");
  EXPECT_NE(left_out[1].why.find("omp_threads=2 is what a program that sets nothing runs here"),
            std::string::npos)
      << left_out[1].why;
  EXPECT_EQ(left_out[2].knob, "profiler_off");
  EXPECT_EQ(left_out[3].knob, "fused_adamw");
  EXPECT_NE(left_out[3].why.find("a program that sets nothing does not run (it runs SGD"),
            std::string::npos)
      << left_out[3].why;
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].knob, "amp");
  EXPECT_EQ(c[0].value, true);
  EXPECT_DOUBLE_EQ(c[0].effect.ratio, 0.70);
  EXPECT_EQ(c[1].knob, "no_grad");
}

// onednn ON is what a program that sets nothing runs (LibTorch enables oneDNN): its screen
// compares it with ATen's own convolutions, which nobody runs, so however much it "helps" it is
// no step of a ladder and no line of advice.
TEST(Tune, ASpeedUpAgainstAnArmNobodyRunsIsLeftOutWithItsReason) {
  analysis::RunReport screen;
  analysis::ExperimentReport x;
  x.name = "onednn.m";
  x.knob = "onednn";
  stats::Effect e{};
  e.ratio = 0.34;
  e.lo = 0.30;
  e.hi = 0.39;
  e.verdict = stats::Verdict::helps;
  x.effects.push_back({"time", "on vs off", e});
  screen.experiments.push_back(x);
  knobs::HostCaps host;
  std::vector<orchestrator::LeftOut> left_out;
  EXPECT_TRUE(orchestrator::helping_knobs(screen, host, &left_out).empty());
  ASSERT_EQ(left_out.size(), 1u);
  EXPECT_NE(left_out[0].why.find("onednn=true is what a program that sets nothing runs here"),
            std::string::npos)
      << left_out[0].why;
}

// A ladder step is kept when it helps, dropped when shown not to (hurts, or no effect beyond
// ±2 %), and sampled on while undecided and the ladder holds another round; only an undecided
// step whose round no longer fits is left out, as undecided.
TEST(Tune, AnUndecidedLadderStepIsSampledOnNotDropped) {
  using orchestrator::StepCall;
  auto effect = [](stats::Verdict v) {
    stats::Effect e{};
    e.ratio = 0.9;
    e.lo = 0.7;
    e.hi = 1.1;
    e.verdict = v;
    return e;
  };
  EXPECT_EQ(orchestrator::step_call(effect(stats::Verdict::helps), 100, 30), StepCall::keep);
  EXPECT_EQ(orchestrator::step_call(effect(stats::Verdict::hurts), 100, 30), StepCall::drop);
  EXPECT_EQ(orchestrator::step_call(effect(stats::Verdict::equivalent), 100, 30), StepCall::drop);
  for (auto open : {stats::Verdict::not_precise, stats::Verdict::no_effect,
                    stats::Verdict::inconclusive, stats::Verdict::insufficient}) {
    EXPECT_EQ(orchestrator::step_call(effect(open), 100, 30), StepCall::sample_on);
    EXPECT_EQ(orchestrator::step_call(effect(open), 29, 30), StepCall::undecided);
  }
  // Kept or dropped whatever the time left.
  EXPECT_EQ(orchestrator::step_call(effect(stats::Verdict::helps), 0, 30), StepCall::keep);
  EXPECT_EQ(orchestrator::step_call(effect(stats::Verdict::equivalent), 0, 30), StepCall::drop);
}

}  // namespace
}  // namespace tunebench::plan
