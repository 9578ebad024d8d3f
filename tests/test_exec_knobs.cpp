// profiler_off, checkpoint, grad_accum, preallocate and dims_mult8 change what they claim: each
// arm runs in the worker's run_trial and its read-back evidence is checked against the setting,
// both by hand and by knobs::check_evidence (which stores a trial whose setting did not take
// effect as invalid). The models' own halves (recomputed blocks, zero padding units) are checked
// on the models directly.
#include <gtest/gtest.h>
#include <torch/csrc/profiler/orchestration/observer.h>

#include <optional>

#include "knobs/execution.h"
#include "knobs/knobs.h"
#include "models/build.h"
#include "models/gpt.h"
#include "models/registry.h"
#include "plan/suite.h"
#include "platform/compat.h"
#include "worker/actions/execution.h"
#include "worker/worker.h"

namespace tunebench {
namespace {

using nlohmann::json;

TrialSpec trial(const std::string& model, Mode mode, const json& settings,
                const json& options = json::object(), int64_t batch = 8) {
  TrialSpec t;
  t.experiment = t.knob = "exec";
  t.model = {model, "tiny", options};
  t.mode = mode;
  t.batch = batch;
  t.warmup = 0;
  t.samples = 2;
  t.iterations = 2;
  t.seed = 3;
  t.settings = {{"omp_threads", 1}, {"allocator", "glibc"}};
  for (const auto& [k, v] : settings.items()) t.settings[k] = v;
  return t;
}

struct Arms {
  TrialResult off, on;
};

// Both arms of `knob`; each arm's evidence passes the check of its own setting and fails the
// other arm's, and both compute the same function within the knob's guard tolerance.
Arms both_arms(const std::string& knob, const std::string& model, Mode mode,
               const json& options = json::object(), json off = false, json on = true) {
  Arms a{worker::run_trial(trial(model, mode, {{knob, off}}, options)),
         worker::run_trial(trial(model, mode, {{knob, on}}, options))};
  EXPECT_EQ(a.off.status, "ok") << a.off.error;
  EXPECT_EQ(a.on.status, "ok") << a.on.error;
  auto problems = [&](const json& value, const TrialResult& r) {
    return knobs::check_evidence({{knob, value}}, mode, r.evidence);
  };
  EXPECT_EQ(problems(off, a.off), std::vector<std::string>{}) << knob;
  EXPECT_EQ(problems(on, a.on), std::vector<std::string>{}) << knob;
  EXPECT_FALSE(problems(on, a.off).empty()) << knob << ": the OFF arm's evidence passes as ON";
  EXPECT_FALSE(problems(off, a.on).empty()) << knob << ": the ON arm's evidence passes as OFF";
  EXPECT_NEAR(a.on.check_value / a.off.check_value, 1.0, knobs::guard_tolerance(knob)) << knob;
  return a;
}

TEST(ExecKnobs, ProfilerOffRunsTheOffArmUnderTheAutogradProfiler) {
  for (Mode mode : {Mode::infer, Mode::train}) {
    const auto a = both_arms("profiler_off", "gpt", mode);
    EXPECT_EQ(a.off.evidence["profiler_enabled_in_step"], true);
    EXPECT_GT(a.off.evidence["profiler_events_per_step"].get<int64_t>(), 10);  // every op
    EXPECT_EQ(a.on.evidence["profiler_enabled_in_step"], false);
    EXPECT_EQ(a.on.evidence["profiler_events_per_step"], 0);
  }
}

TEST(ExecKnobs, CheckpointRunsEveryBlockAgainInBackward) {
  // GPT tiny: 2 transformer blocks; ResNet-50: 16 bottlenecks in 4 checkpointed stages.
  for (const auto& [model, blocks] : {std::pair{"gpt", 2}, std::pair{"resnet50", 16}}) {
    const auto a = both_arms("checkpoint", model, Mode::train);
    EXPECT_EQ(a.off.evidence["model"]["blocks"], blocks);
    EXPECT_EQ(a.off.evidence["block_forwards_per_step"], blocks) << model;
    EXPECT_EQ(a.on.evidence["block_forwards_per_step"], 2 * blocks) << model;
    // What it is for: only the segments' inputs are kept, so a step's tensors peak lower.
    EXPECT_LT(a.on.evidence["tensor_peak_bytes"], a.off.evidence["tensor_peak_bytes"]) << model;
  }
}

TEST(ExecKnobs, TheTensorPeakCountsWhatAScopeAllocatesAndLeavesTheProfilerOff) {
  const auto before = torch::ones({1000});  // allocated outside: not counted
  compat::CpuTensorPeak peak;
  EXPECT_FALSE(torch::profiler::impl::profilerEnabled());
  {
    const auto a = torch::ones({256, 1024});  // 1 MiB
    const auto b = torch::ones({128, 1024});  // 0.5 MiB, both live
  }
  const auto c = torch::ones({64, 1024});  // after both were freed
  EXPECT_GE(peak.peak_bytes(), 1536 * 1024);
  EXPECT_LT(peak.peak_bytes(), 1536 * 1024 + 64 * 1024);
  EXPECT_GE(peak.reports(), 5);  // three allocations, two frees
}

// Parameters' gradients of one loss on a fixed batch; with `amp`, the forward pass runs under
// CPU autocast to bf16 (as the amp knob's worker scope does) and backward outside it.
std::vector<torch::Tensor> gradients(const models::ModelSpec& spec, bool train, bool amp = false) {
  auto model = models::build_model(spec, 5);
  model->module().train(train);
  const auto batch = model->make_batch(4, 6);
  torch::Tensor loss;
  {
    std::optional<compat::AutocastGuard> cast;
    if (amp) cast.emplace(c10::DeviceType::CPU, torch::kBFloat16);
    loss = model->loss(batch);
  }
  loss.backward();
  std::vector<torch::Tensor> out;
  for (const auto& p : model->module().parameters()) out.push_back(p.grad().clone());
  return out;
}

TEST(ExecKnobs, CheckpointedModelsComputeTheSameGradients) {
  for (const std::string model : {"gpt", "resnet50"}) {
    const auto plain = gradients({model, "tiny"}, true);
    const auto recomputed = gradients({model, "tiny", {{"checkpoint", true}}}, true);
    ASSERT_EQ(plain.size(), recomputed.size());
    for (size_t i = 0; i < plain.size(); ++i) {
      EXPECT_TRUE(torch::allclose(plain[i], recomputed[i], 1e-5, 1e-7)) << model << " " << i;
    }
  }
  // Without training mode nothing is recomputed: one forward per block.
  auto model = models::build_model({"gpt", "tiny", {{"checkpoint", true}}}, 5);
  model->module().eval();
  model->loss(model->make_batch(2, 6)).backward();
  EXPECT_EQ(model->describe()["block_forwards"], 2);
}

TEST(ExecKnobs, CheckpointRecomputesUnderTheForwardsAutocast) {
  // The recompute in backward runs outside the step's autocast scope; it must cast as the
  // forward did, or its activations are fp32 where the forward's were bf16 (ResNet-50's
  // backward then fails on the dtype, GPT's gradients differ).
  for (const std::string model : {"gpt", "resnet50"}) {
    const auto plain = gradients({model, "tiny"}, true, true);
    std::vector<torch::Tensor> recomputed;
    ASSERT_NO_THROW(recomputed = gradients({model, "tiny", {{"checkpoint", true}}}, true, true))
        << model;
    ASSERT_EQ(plain.size(), recomputed.size());
    for (size_t i = 0; i < plain.size(); ++i) {
      EXPECT_TRUE(torch::equal(plain[i], recomputed[i])) << model << " " << i;
    }
  }
  EXPECT_FALSE(compat::autocast_enabled(c10::DeviceType::CPU));  // nothing left switched on
  // And as trials: checkpoint on with amp on runs, recomputes every block, passes both checks.
  for (const auto& [model, blocks] : {std::pair{"gpt", 2}, std::pair{"resnet50", 16}}) {
    const json settings = {{"checkpoint", true}, {"amp", true}};
    const TrialResult r = worker::run_trial(trial(model, Mode::train, settings));
    ASSERT_EQ(r.status, "ok") << model << ": " << r.error;
    EXPECT_EQ(r.evidence["autocast_in_step"], true) << model;
    EXPECT_EQ(r.evidence["block_forwards_per_step"], 2 * blocks) << model;
    EXPECT_EQ(knobs::check_evidence(settings, Mode::train, r.evidence), std::vector<std::string>{})
        << model;
  }
}

TEST(ExecKnobs, GradAccumRunsKMicroBatchesWhoseGradientIsTheFullBatchs) {
  const auto a = both_arms("grad_accum", "gpt", Mode::train, json::object(), 1, 4);
  EXPECT_EQ(a.off.evidence["micro_batches_per_step"], 1);
  EXPECT_EQ(a.on.evidence["micro_batches_per_step"], 4);
  EXPECT_EQ(a.on.evidence["micro_batch_size"], 2);
  EXPECT_EQ(a.on.evidence["batch_norm"], false);
  EXPECT_LT(a.on.evidence["accumulated_gradient_rel_diff"].get<double>(),
            knobs::execution::kAccumulatedGradientTolerance);
  // Activations of B/4 samples at a time.
  EXPECT_LT(a.on.evidence["tensor_peak_bytes"], a.off.evidence["tensor_peak_bytes"]);
  // A wrong accumulation (e.g. without dividing each loss by k) is caught.
  json bad = a.on.evidence;
  bad["accumulated_gradient_rel_diff"] = 3.0;
  EXPECT_FALSE(knobs::check_evidence({{"grad_accum", 4}}, Mode::train, bad).empty());
}

TEST(ExecKnobs, EveryMicroBatchBackwardGoesThroughTheDevicesHook) {
  // On CUDA with fp16 each backward is scaled by the loss scaler (device_trial.h): the step plan
  // must hand every micro-batch's loss to that hook, not call backward itself. A hook that scales
  // by 4 is counted and must give 4× the plain gradient.
  auto gradient = [](int scale, int64_t* calls) {
    const TrialSpec spec = trial("gpt", Mode::train, {{"grad_accum", 4}});
    auto model = models::build_model(spec.model, spec.seed);
    auto batch = model->make_batch(spec.batch, spec.seed);
    exec_steps::StepPlan plan(spec, *model, batch);
    const auto loss = [&](const models::Batch& b) { return model->loss(b); };
    if (calls) {
      plan.forward_backward(loss, [&](const torch::Tensor& l) {
        ++*calls;
        (l * scale).backward();
      });
    } else {
      plan.forward_backward(loss);
    }
    std::vector<torch::Tensor> flat;
    for (const auto& p : model->module().parameters()) flat.push_back(p.grad().flatten());
    return torch::cat(flat);
  };
  int64_t calls = 0;
  const auto scaled = gradient(4, &calls), plain = gradient(1, nullptr);
  EXPECT_EQ(calls, 4);
  EXPECT_TRUE(torch::allclose(scaled, plain * 4, 1e-5, 1e-7));
}

TEST(ExecKnobs, EachTrainingStepReadsTheBatchAsItIsThen) {
  // A loader or the CUDA input pipeline puts each step's inputs into the arm's batch: the plan
  // must see them, not a copy of the first. (StepPlan used to keep a copy.)
  const TrialSpec spec = trial("resnet50", Mode::train, {});
  auto model = models::build_model(spec.model, spec.seed);
  auto batch = model->make_batch(spec.batch, spec.seed);
  exec_steps::StepPlan plan(spec, *model, batch);
  std::vector<double> seen;
  const auto loss = [&](const models::Batch& b) {
    seen.push_back(b.inputs[0].sum().item<double>());
    return model->loss(b);
  };
  double fed = 0;
  for (int step = 0; step < 3; ++step) {
    batch.inputs[0] = torch::full_like(batch.inputs[0], double(step + 1));
    fed += batch.inputs[0].sum().item<double>();
    plan.forward_backward(loss);
  }
  const double per_element = double(batch.inputs[0].numel());
  ASSERT_EQ(seen.size(), 3u);
  for (int step = 0; step < 3; ++step) EXPECT_DOUBLE_EQ(seen[step], (step + 1) * per_element);
  json evidence = json::object();
  plan.add_evidence(evidence, loss);
  EXPECT_EQ(evidence["step_input"]["steps"], 3);
  EXPECT_DOUBLE_EQ(evidence["step_input"]["checksum"].get<double>(), fed);
}

TEST(ExecKnobs, GradAccumWithBatchNormSeesOtherStatisticsAndSaysSo) {
  const auto r = worker::run_trial(trial("resnet50", Mode::train, {{"grad_accum", 4}}));
  ASSERT_EQ(r.status, "ok") << r.error;
  EXPECT_EQ(r.evidence["micro_batches_per_step"], 4);
  EXPECT_EQ(r.evidence["batch_norm"], true);
  // Batch norm over 2 samples instead of 8: a different gradient, not a broken accumulation.
  EXPECT_GT(r.evidence["accumulated_gradient_rel_diff"].get<double>(), 1e-3);
  EXPECT_TRUE(knobs::check_evidence({{"grad_accum", 4}}, Mode::train, r.evidence).empty());
}

TEST(ExecKnobs, GradAccumNeedsABatchDivisibleByK) {
  const std::string why =
      "grad_accum=4 splits each batch into 4 equal micro-batches, but the batch is 6 samples; use "
      "a batch divisible by 4 (e.g. 8)";
  EXPECT_EQ(knobs::execution::batch_error({{"grad_accum", 4}}, 6), why);
  EXPECT_EQ(knobs::execution::batch_error({{"grad_accum", 4}}, 8), "");
  try {
    worker::run_trial(trial("gpt", Mode::train, {{"grad_accum", 4}}, json::object(), 6));
    ADD_FAILURE() << "a batch of 6 in 4 micro-batches ran";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(e.what(), why);
  }
  try {
    suite::parse(R"({"name": "s", "experiments": [{"knob": "grad_accum", "model": "gpt",
                    "preset": "tiny", "mode": "train", "batch": 6}]})",
                 "s.json");
    ADD_FAILURE() << "the suite was accepted";
  } catch (const suite::SuiteError& e) {
    EXPECT_EQ(std::string(e.what()), "s.json: /experiments/0/arms/on: " + why);
  }
  for (const json& value : {json(0), json(true), json(1.5), json("4")}) {
    EXPECT_THROW(knobs::validate_value(*knobs::find("grad_accum"), value), std::invalid_argument)
        << value.dump();
  }
}

TEST(ExecKnobs, PreallocateRunsTheFirstStepAtTheMaxLength) {
  const auto a = both_arms("preallocate", "gpt", Mode::train);
  EXPECT_EQ(a.on.evidence["max_tokens"], 32);
  EXPECT_EQ(a.on.evidence["preallocated_tokens"], 32);
  EXPECT_EQ(a.on.evidence["first_step_tokens"], 32);
  EXPECT_EQ(a.off.evidence["preallocated_tokens"], 0);
  EXPECT_LT(a.off.evidence["first_step_tokens"].get<int64_t>(), 32);
  EXPECT_GE(a.off.evidence["first_step_tokens"].get<int64_t>(), 8);
  // The steps really vary in length (2 guard and 4 measured steps), the same in both arms.
  EXPECT_GE(a.off.evidence["distinct_step_lengths"].get<int64_t>(), 2);
  EXPECT_EQ(a.off.evidence["distinct_step_lengths"], a.on.evidence["distinct_step_lengths"]);
}

TEST(ExecKnobs, DimsMult8PadsTheVocabularyAndTheMlpWithoutChangingTheFunction) {
  const json odd{{"mlp_hidden", 123}};  // GPT tiny: vocabulary 101
  for (Mode mode : {Mode::infer, Mode::train}) {
    const auto a = both_arms("dims_mult8", "gpt", mode, odd);
    EXPECT_EQ(a.off.evidence["model"]["vocab_rows"], 101);
    EXPECT_EQ(a.off.evidence["model"]["mlp_hidden"], 123);
    EXPECT_EQ(a.on.evidence["model"]["vocab_rows"], 104);
    EXPECT_EQ(a.on.evidence["model"]["mlp_hidden"], 128);
  }
  // Sizes that are multiples of 8 already leave nothing to compare: the OFF arm says so.
  const auto aligned = worker::run_trial(trial("gpt", Mode::infer, {{"dims_mult8", false}},
                                               {{"vocab_size", 104}, {"mlp_hidden", 128}}));
  const auto problems =
      knobs::check_evidence({{"dims_mult8", false}}, Mode::infer, aligned.evidence);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("nothing is compared"), std::string::npos) << problems[0];
}

TEST(ExecKnobs, DimsMult8PaddingUnitsStayZeroInTraining) {
  const models::ModelSpec spec{"gpt", "tiny", {{"mlp_hidden", 123}, {"dims_mult8", true}}};
  auto model = models::build_model(spec, 5);
  EXPECT_EQ(models::count_parameters(model->module()), models::summarize(spec).parameters);
  torch::optim::SGD sgd(model->module().parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  for (int i = 0; i < 3; ++i) {
    sgd.zero_grad();
    model->loss(model->make_batch(4, 7 + i)).backward();
    sgd.step();
  }
  auto& gpt = dynamic_cast<models::GptModel&>(*model);
  for (const auto& b : *gpt.net->blocks) {
    const auto* block = b->as<models::GptBlock>();
    EXPECT_EQ(block->c_fc->weight.narrow(0, 123, 5).abs().max().item<float>(), 0.0f);
    EXPECT_EQ(block->c_fc->bias.narrow(0, 123, 5).abs().max().item<float>(), 0.0f);
    EXPECT_EQ(block->mlp_proj->weight.narrow(1, 123, 5).abs().max().item<float>(), 0.0f);
  }
}

}  // namespace
}  // namespace tunebench
