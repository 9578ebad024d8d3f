// The compile knob: the Python twins hold the C++ models' tensors under the same names and shapes
// and compute the same outputs (for every model, with options that change the structure), and a
// tiny GPT runs as an AOTInductor package fed the C++ model's own weights: the package ran in the
// measured steps, every constant came from the C++ model, and both arms compute the same function
// for a seed other than the one the package was compiled from. On a build without AOTInductor the
// knob is not applicable and says why.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "knobs/compile.h"
#include "knobs/knobs.h"
#include "platform/compat.h"
#include "run/host.h"
#include "tests/paths.h"
#include "worker/actions/compile.h"
#include "worker/arm.h"
#include "worker/trial.h"
#include "worker/worker.h"

namespace tunebench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string why_not(const std::string& model = "gpt") {
  return knobs::not_applicable_reason(*knobs::find("compile"), model, Mode::infer,
                                      host::capabilities());
}

TrialSpec spec_of(const std::string& model, const json& options, const json& value,
                  uint64_t seed = 1) {
  TrialSpec t;
  t.experiment = "compile." + model;
  t.knob = "compile";
  t.arm = value == false ? "off" : "on";
  t.model = {model, "tiny", options};
  t.mode = Mode::infer;
  t.batch = 2;
  t.warmup = 1;
  t.samples = 2;
  t.iterations = 2;
  t.seed = seed;
  t.settings = {{"omp_threads", 2}, {"allocator", "glibc"}, {"compile", value}};
  return t;
}

// A folder of the test's own, removed afterwards.
struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/tunebench-compile-test-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string path;
};

TEST(CompileKnob, ApplicableWithAotInductorAndOtherwiseSaysWhy) {
  const std::string why = why_not();
  int major = 0, minor = 0;
  std::sscanf(compat::torch_version().c_str(), "%d.%d", &major, &minor);
  const bool aoti = major > 2 || (major == 2 && minor >= 6);  // AOTInductor's package loader
  if (!aoti) {
    EXPECT_NE(why.find("AOTInductor"), std::string::npos) << why;
    std::cout << "compile not applicable here: " << why << "\n";
    return;
  }
  EXPECT_EQ(why, "");
  for (const char* model : {"resnet50", "dlrm"}) EXPECT_EQ(why_not(model), "") << model;
  // Training is not an AOTInductor graph: there the knob runs in the Python worker, and a suite
  // that asks for it in the C++ worker is told so.
  const auto& rules = knobs::rules_of(knobs::Family::compile);
  const std::string error = rules.arm_error({{"compile", "default"}}, Mode::train, 2);
  EXPECT_NE(error.find("worker_build"), std::string::npos) << error;
  EXPECT_EQ(rules.arm_error({{"compile", "default"}, {"worker_build", "python"}}, Mode::train, 2),
            "");
  EXPECT_EQ(rules.arm_error({{"compile", "default"}}, Mode::infer, 2), "");
}

TEST(CompileKnob, TwinsHoldTheCppTensorsByNameAndComputeTheSameOutputs) {
  if (const auto why = why_not(); !why.empty()) GTEST_SKIP() << why;
  // Each model at its tiny preset, and with options that change its tensors or its graph.
  const std::vector<std::pair<std::string, json>> cases = {
      {"gpt", json::object()},
      {"gpt",
       {{"builtin_ops", false},
        {"fused_attention", false},
        {"causal_mask_fly", false},
        {"vocab_pad", true}}},
      {"gpt", {{"dims_mult8", true}, {"mlp_hidden", 30}}},
      {"resnet50", json::object()},
      {"resnet50", {{"conv_bias", true}}},
      {"dlrm", json::object()},
      {"dlrm", {{"pooling", 3}, {"row_cap", 50}}},
  };
  for (const auto& [model, options] : cases) {
    SCOPED_TRACE(model + " " + options.dump());
    auto arm = worker::set_up(spec_of(model, options, false));
    TempDir dir;
    compile_forward::write_request(*arm, "default", dir.path);
    const json check = compile_forward::check_twin(dir.path);
    const auto named =
        arm->module().named_parameters().size() + arm->module().named_buffers().size();
    EXPECT_EQ(check["tensors"], named) << check.dump();
    EXPECT_EQ(check["agrees"], true) << check.dump();
    EXPECT_LE(check["max_abs_difference"].get<double>(),
              1e-5 * std::max(1.0, check["reference_max_abs"].get<double>()))
        << check.dump();
  }
}

TEST(CompileKnob, ATwinMissingATensorOfTheCppModelIsRefusedByName) {
  if (const auto why = why_not(); !why.empty()) GTEST_SKIP() << why;
  auto arm = worker::set_up(spec_of("gpt", json::object(), false));
  TempDir dir;
  compile_forward::write_request(*arm, "default", dir.path);
  // The C++ model's state with one more tensor than the twin has.
  c10::Dict<std::string, torch::Tensor> state;
  for (const auto& p : arm->module().named_parameters()) state.insert(p.key(), p.value());
  state.insert("blocks.0.extra.weight", torch::zeros({2}));
  const auto bytes = torch::pickle_save(state);
  std::ofstream(dir.path + "/state.pt", std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  try {
    compile_forward::check_twin(dir.path);
    FAIL() << "the twin check accepted a tensor the twin lacks";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("blocks.0.extra.weight"), std::string::npos) << e.what();
  }
}

TEST(CompileKnob, TinyGptRunsAsAPackageFedTheCppWeights) {
  if (const auto why = why_not(); !why.empty()) GTEST_SKIP() << why;
  // The build folder's cache, shared with cli.compile (CI compiles the tiny GPT once): the first
  // ON arm compiles or finds the package, the second finds it.
  const std::string cache =
      fs::path(test_paths::tunebench_binary()).parent_path() / "compile-cache";
  setenv("TUNEBENCH_COMPILE_CACHE", cache.c_str(), 1);
  auto run = [](const json& value, uint64_t seed) {
    const TrialSpec t = spec_of("gpt", json::object(), value, seed);
    auto r = worker::run_trial(t);
    EXPECT_EQ(r.status, "ok") << r.error;
    // This knob's evidence (the in-process run does not set OMP_NUM_THREADS as a worker's does).
    EXPECT_EQ(knobs::check_evidence({{"compile", value}}, t.mode, r.evidence),
              std::vector<std::string>{})
        << r.evidence.dump();
    return r;
  };
  const auto off = run(false, 1);
  const auto on = run("default", 1);
  EXPECT_EQ(off.evidence["compile"]["forward"], "eager");
  const json e = on.evidence["compile"];
  EXPECT_EQ(e["forward"], "aoti");
  EXPECT_TRUE(e["cache"] == "miss" || e["cache"] == "hit") << e.dump();
  EXPECT_EQ(e["package_calls"], 2 * 2);  // samples × iterations: every measured step ran it
  EXPECT_GT(e["constants"].get<int64_t>(), 0);
  EXPECT_EQ(e["constants_loaded"], e["constants"]);
  EXPECT_GT(e["kernels"].get<int64_t>(), 0);
  EXPECT_TRUE(fs::is_directory(e["code"].get<std::string>())) << e.dump();
  EXPECT_GT(e["compile_seconds"].get<double>(), 0);
  EXPECT_NEAR(on.check_value / off.check_value, 1.0, knobs::guard_tolerance("compile"));

  // Another seed: new weights in the C++ model, the cached package compiled from the first
  // seed's. The same output means the package computed with the weights it was fed.
  const auto off2 = run(false, 2);
  const auto on2 = run("default", 2);
  EXPECT_EQ(on2.evidence["compile"]["cache"], "hit");
  EXPECT_NE(off2.check_value, off.check_value);
  EXPECT_NEAR(on2.check_value / off2.check_value, 1.0, knobs::guard_tolerance("compile"));
  unsetenv("TUNEBENCH_COMPILE_CACHE");
}

}  // namespace
}  // namespace tunebench
