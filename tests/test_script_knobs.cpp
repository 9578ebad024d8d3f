// jit_fusion, quantize_linear and freeze_script really change what they claim: each arm runs a
// tiny trial and the worker's read-back evidence shows what ran (a fusion group in the optimised
// graph, int8 Linear layers, a frozen graph without batch norms), while both arms compute the
// same function within the knob's guard tolerance.
#include <gtest/gtest.h>

#include <algorithm>

#include "knobs/knobs.h"
#include "knobs/script.h"
#include "run/host.h"
#include "worker/worker.h"

namespace tunebench {
namespace {

using nlohmann::json;

TrialResult run_arm(const std::string& model, const std::string& knob, bool on) {
  TrialSpec t;
  t.experiment = knob + "." + model;
  t.knob = knob;
  t.arm = on ? "on" : "off";
  t.model = {model, "tiny"};
  t.mode = Mode::infer;
  t.batch = 2;
  t.warmup = 1;
  t.samples = 2;
  t.iterations = 2;
  t.settings = {{"omp_threads", 2}, {"allocator", "glibc"}, {knob, on}};
  auto r = worker::run_trial(t);
  EXPECT_EQ(r.status, "ok") << r.error;
  // This knob's evidence (the in-process run does not set OMP_NUM_THREADS as a worker's does).
  EXPECT_EQ(knobs::check_evidence({{knob, on}}, t.mode, r.evidence), std::vector<std::string>{})
      << r.evidence.dump();
  return r;
}

// The reason this build gives for not running `knob`, or empty when it runs it.
std::string not_applicable_here(const std::string& knob, const std::string& model) {
  return knobs::not_applicable_reason(*knobs::find(knob), model, Mode::infer, host::capabilities());
}

TEST(ScriptKnobs, JitFusionRunsTheChainAsOneFusionGroupOrSaysWhyNot) {
  const std::string why = not_applicable_here("jit_fusion", "gpt");
  if (!why.empty()) {
    // The record of this build: it could not fuse, and says so in terms of the fuser.
    EXPECT_NE(why.find("fus"), std::string::npos) << why;
    std::cout << "jit_fusion not applicable here: " << why << "\n";
    return;
  }
  const auto off = run_arm("gpt", "jit_fusion", false);
  const auto on = run_arm("gpt", "jit_fusion", true);
  EXPECT_EQ(off.evidence["jit_fusion"]["chain"], "eager");
  EXPECT_EQ(off.evidence["jit_fusion"]["fusion_groups"], 0);
  EXPECT_EQ(on.evidence["jit_fusion"]["chain"], "torchscript");
  EXPECT_GE(on.evidence["jit_fusion"]["fusion_groups"], 1);
  // The whole chain is in the group, erf included.
  const json ops = on.evidence["jit_fusion"]["fused_ops"];
  for (const char* op : {"aten::add", "aten::mul", "aten::div", "aten::erf"}) {
    EXPECT_NE(std::find(ops.begin(), ops.end(), op), ops.end()) << op << " in " << ops.dump();
  }
  // 2 blocks × (guard + warm-up + 2 samples × 2 iterations + the step after the measured region
  // that measures the tensor peak) calls of the chain in each arm.
  EXPECT_EQ(on.evidence["jit_fusion"]["chain_calls"], 2 * (1 + 1 + 4 + 1));
  EXPECT_EQ(off.evidence["jit_fusion"]["chain_calls"], 2 * (1 + 1 + 4 + 1));
  EXPECT_NEAR(on.check_value / off.check_value, 1.0, knobs::guard_tolerance("jit_fusion"));
}

TEST(ScriptKnobs, QuantizeLinearRunsEveryLinearLayerInInt8) {
  const std::string why = not_applicable_here("quantize_linear", "dlrm");
  ASSERT_EQ(why, "") << "both LibTorch builds here have a quantized engine";
  const auto off = run_arm("dlrm", "quantize_linear", false);
  const auto on = run_arm("dlrm", "quantize_linear", true);
  // DLRM tiny: bottom 13-32-8 and top 44-32-1, four Linear layers.
  EXPECT_EQ(off.evidence["quantize_linear"]["fp32_linear_layers"], 4);
  EXPECT_EQ(off.evidence["quantize_linear"]["int8_linear_layers"], 0);
  const json q = on.evidence["quantize_linear"];
  EXPECT_EQ(q["fp32_linear_layers"], 0);
  EXPECT_EQ(q["int8_linear_layers"], 4);
  EXPECT_EQ(q["weight_dtype"], "QInt8");
  EXPECT_TRUE(q["engine"] == "FBGEMM" || q["engine"] == "QNNPACK") << q["engine"];
  EXPECT_EQ(q["int8_calls"],
            4 * (1 + 1 + 4 + 1));  // 4 layers × (guard + warm-up + 4 steps + peak step)
  // Really quantized: the outputs (click probabilities) move, but only by the quantization error.
  EXPECT_GT(q["max_abs_error"].get<double>(), 0.0);
  EXPECT_LT(q["max_abs_error"].get<double>(), 0.05);
  EXPECT_NEAR(on.check_value / off.check_value, 1.0, knobs::guard_tolerance("quantize_linear"));
}

TEST(ScriptKnobs, FreezeScriptFoldsEveryBatchNormIntoTheFrozenGraph) {
  const auto off = run_arm("resnet50", "freeze_script", false);
  const auto on = run_arm("resnet50", "freeze_script", true);
  EXPECT_EQ(off.evidence["freeze_script"]["module"], "eager");
  const json f = on.evidence["freeze_script"];
  EXPECT_EQ(f["module"], "frozen");
  // ResNet-50: the stem, 16 bottlenecks × 3 and 4 downsamples.
  EXPECT_EQ(f["batch_norm_nodes_scripted"], 1 + 16 * 3 + 4);
  EXPECT_EQ(f["batch_norm_nodes_frozen"], 0);
  EXPECT_GT(f["parameters_scripted"].get<int64_t>(), 100);
  EXPECT_EQ(f["parameters_frozen"], 0);
  // The frozen module computes the eager model's function.
  EXPECT_LT(f["max_abs_difference_vs_eager"].get<double>(),
            1e-4 * f["eager_max_abs"].get<double>() + 1e-6);
  EXPECT_NEAR(on.check_value / off.check_value, 1.0, knobs::guard_tolerance("freeze_script"));
}

TEST(ScriptKnobs, EvidenceThatContradictsTheSettingIsCaught) {
  const json no_group = {
      {"jit_fusion", {{"chain", "torchscript"}, {"fusion_groups", 0}, {"chain_calls", 12}}}};
  EXPECT_EQ(knobs::script::check_evidence("jit_fusion", true, no_group),
            "jit_fusion=true but the optimised graph that ran held 0 fusion groups (chain "
            "\"torchscript\")");
  const json fp32_left = {{"quantize_linear",
                           {{"fp32_linear_layers", 1},
                            {"int8_linear_layers", 3},
                            {"weight_dtype", "QInt8"},
                            {"int8_calls", 10}}}};
  EXPECT_NE(knobs::script::check_evidence("quantize_linear", true, fp32_left), "");
  const json bn_left = {{"freeze_script",
                         {{"module", "frozen"},
                          {"batch_norm_nodes_scripted", 53},
                          {"batch_norm_nodes_frozen", 53},
                          {"parameters_frozen", 0}}}};
  EXPECT_NE(knobs::script::check_evidence("freeze_script", true, bn_left), "");
  EXPECT_EQ(knobs::script::check_evidence("freeze_script", false, json::object()),
            "freeze_script: the worker read back nothing about it");
  // Through the catalog's check, as the orchestrator stores a trial invalid.
  EXPECT_EQ(knobs::check_evidence({{"jit_fusion", true}}, Mode::infer, no_group).size(), 1u);
}

TEST(ScriptKnobs, EachKnobAppliesToItsModelOnly) {
  EXPECT_EQ(not_applicable_here("quantize_linear", "gpt"), "applies to dlrm only, not gpt");
  EXPECT_EQ(not_applicable_here("freeze_script", "dlrm"), "applies to resnet50 only, not dlrm");
  EXPECT_EQ(knobs::not_applicable_reason(*knobs::find("freeze_script"), "resnet50", Mode::train,
                                         host::capabilities()),
            "applies to infer only, not train");
}

}  // namespace
}  // namespace tunebench
