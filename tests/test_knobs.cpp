// The knob catalog and the evidence checks, without torch.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include "knobs/apply.h"
#include "knobs/autograd.h"
#include "knobs/evidence.h"
#include "knobs/knobs.h"
#include "knobs/precision.h"
#include "knobs/sources.h"
#include "platform/nvml.h"

namespace tunebench::knobs {
namespace {

TEST(Knobs, TheCatalogHasEveryIdOnce) {
  const std::vector<std::string> expected{"no_grad",
                                          "inference_mode",
                                          "zero_grad_none",
                                          "conv_bias_off",
                                          "anomaly_off",
                                          "profiler_off",
                                          "checkpoint",
                                          "inplace_act",
                                          "grad_accum",
                                          "preallocate",
                                          "jit_fusion",
                                          "builtin_ops",
                                          "flash_attention",
                                          "causal_mask_fly",
                                          "channels_last",
                                          "onednn",
                                          "amp",
                                          "tf32",
                                          "dims_mult8",
                                          "vocab_pad",
                                          "cudnn_benchmark",
                                          "fused_adamw",
                                          "quantize_linear",
                                          "freeze_script",
                                          "compile",
                                          "omp_threads",
                                          "omp_affinity",
                                          "omp_runtime",
                                          "allocator",
                                          "malloc_tunables",
                                          "numa_bind",
                                          "worker_build",
                                          "multi_instance",
                                          "empty_cache",
                                          "pinned_memory",
                                          "on_device_alloc",
                                          "avoid_sync",
                                          "cuda_graphs",
                                          "streams_overlap",
                                          "dataloader_workers",
                                          "ddp_scaling",
                                          "ddp_no_sync"};
  std::vector<std::string> ids;
  for (const auto& k : catalog()) {
    ids.push_back(k.id);
    EXPECT_FALSE(k.claim.empty()) << k.id;
  }
  EXPECT_EQ(ids, expected);
  EXPECT_FALSE(find("inplace_act")->false_claim.empty());
  EXPECT_FALSE(find("cudnn_benchmark")->false_claim.empty());
}

// Every claim says where it comes from by the source's name (not a file number), or says it goes
// beyond the documents; every source is cited by some claim.
TEST(Knobs, EveryClaimNamesItsSources) {
  std::set<std::string> cited;
  for (const auto& k : knobs::catalog()) {
    const auto names = knobs::cited_sources(k.claim);
    cited.insert(names.begin(), names.end());
    EXPECT_TRUE(!names.empty() || k.claim.find("(beyond the documents") != std::string::npos)
        << k.id << ": " << k.claim;
    for (char digit = '0'; digit <= '9'; ++digit)
      EXPECT_EQ(k.claim.find(std::string("(00") + digit), std::string::npos) << k.id;
  }
  for (const auto& s : knobs::sources()) EXPECT_TRUE(cited.count(s.name)) << s.name;
  EXPECT_EQ(knobs::cited_sources("faster (PyTorch Performance Tuning Guide; cudnn.benchmark note)"),
            (std::vector<std::string>{"PyTorch Performance Tuning Guide", "cudnn.benchmark note"}));
  EXPECT_TRUE(knobs::cited_sources("faster (000)").empty());
}

TEST(Knobs, NearestIdsSuggestTheIntendedOne) {
  EXPECT_EQ(nearest("no_grd").front(), "no_grad");
  EXPECT_EQ(nearest("allocater").front(), "allocator");
  EXPECT_EQ(nearest("chanels_last").front(), "channels_last");
}

TEST(Knobs, ProcessSettingsBecomeEnvironmentAndPreloads) {
  const auto setup = process_setup({{"omp_threads", 3}, {"allocator", "jemalloc_nodecay"}});
  EXPECT_EQ(setup.env.at("OMP_NUM_THREADS"), "3");
  EXPECT_EQ(setup.env.at("MALLOC_CONF"), "dirty_decay_ms:-1,muzzy_decay_ms:-1");
  ASSERT_EQ(setup.preload.size(), 1u);
  EXPECT_NE(setup.preload[0].find("libjemalloc.so"), std::string::npos);
  EXPECT_TRUE(process_setup({{"allocator", "glibc"}}).preload.empty());
}

// Software A/B: an arm's worker_build names the executable its worker runs; the
// worker's read-back must name the same file; a build not made here is not applicable.
TEST(Knobs, WorkerBuildNamesTheExecutableAndTheWorkerMustHaveRunIt) {
  const std::string self_exe = std::filesystem::read_symlink("/proc/self/exe").string();
  EXPECT_EQ(process_setup({{"worker_build", self_exe}}).executable, self_exe);
  EXPECT_EQ(process_setup({{"worker_build", "self"}}).executable, "self");  // started by path
  EXPECT_TRUE(process_setup({{"omp_threads", 1}}).executable.empty());
  EXPECT_NO_THROW(validate_value(*find("worker_build"), "self"));
  EXPECT_THROW(validate_value(*find("worker_build"), ""), std::invalid_argument);
  EXPECT_THROW(validate_value(*find("worker_build"), 3), std::invalid_argument);
  const nlohmann::json settings = {{"worker_build", self_exe}};
  EXPECT_TRUE(check_evidence(settings, Mode::infer, {{"executable", self_exe}}).empty());
  const auto wrong = check_evidence(settings, Mode::infer, {{"executable", "/usr/bin/true"}});
  ASSERT_EQ(wrong.size(), 1u);
  EXPECT_NE(wrong[0].find("but the worker ran /usr/bin/true"), std::string::npos) << wrong[0];
  // What the worker is sent: it is the build, so a path reads "self" (both arms' requests of one
  // length); the Python worker's value and every other setting go as they are.
  const auto sent = settings_for_worker({{"worker_build", self_exe}, {"omp_threads", 1}});
  EXPECT_EQ(sent, nlohmann::json({{"worker_build", "self"}, {"omp_threads", 1}}));
  EXPECT_EQ(settings_for_worker({{"worker_build", "python"}})["worker_build"], "python");
  EXPECT_EQ(settings_for_worker({{"allocator", "jemalloc"}}),
            nlohmann::json({{"allocator", "jemalloc"}}));
  HostCaps host;
  EXPECT_EQ(arm_not_applicable(settings, 1, host), "");
  EXPECT_NE(arm_not_applicable({{"worker_build", "/nonexistent/tunebench"}}, 1, host)
                .find("not an executable file here"),
            std::string::npos);
  EXPECT_EQ(find("worker_build")->phase,
            Phase::process_start);  // resident pairs, never one process
}

TEST(Knobs, ValuesAreChecked) {
  EXPECT_THROW(validate_value(*find("omp_threads"), 0), std::invalid_argument);
  EXPECT_THROW(validate_value(*find("omp_threads"), "two"), std::invalid_argument);
  EXPECT_NO_THROW(validate_value(*find("omp_threads"), "all"));
  EXPECT_THROW(validate_value(*find("allocator"), "mimalloc"), std::invalid_argument);
  EXPECT_THROW(validate_value(*find("allocator"), "/tmp/evil.so"), std::invalid_argument);
  EXPECT_THROW(validate_value(*find("no_grad"), 1), std::invalid_argument);
}

TEST(Knobs, APositiveControlsSlowdownIsConfirmedByTheWorker) {
  EXPECT_DOUBLE_EQ(slowdown_fraction({{"slowdown", 3}}), 0.03);
  EXPECT_DOUBLE_EQ(slowdown_fraction({{"fault", "slow:10"}}), 0.1);
  EXPECT_DOUBLE_EQ(slowdown_fraction({{"no_grad", true}}), 0);
  EXPECT_TRUE(
      check_evidence({{"slowdown", 3}}, Mode::infer, {{"slowdown_fraction", 0.03}}).empty());
  const auto missing = check_evidence({{"slowdown", 3}}, Mode::infer, nlohmann::json::object());
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0], "slowdown 3 but the worker stretched its steps by 0%");
}

TEST(Knobs, EvidenceThatContradictsTheSettingsIsReported) {
  const nlohmann::json settings = {
      {"omp_threads", 2}, {"allocator", "jemalloc"}, {"no_grad", true}};
  const nlohmann::json agrees = {{"torch_threads", 2},
                                 {"env", {{"OMP_NUM_THREADS", "2"}}},
                                 {"allocator", "jemalloc"},
                                 {"grad_mode_in_step", false}};
  EXPECT_TRUE(check_evidence(settings, Mode::infer, agrees).empty());
  nlohmann::json wrong = agrees;
  wrong["torch_threads"] = 1;
  wrong["allocator"] = "glibc";
  wrong["grad_mode_in_step"] = true;
  const auto problems = check_evidence(settings, Mode::infer, wrong);
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_EQ(problems[0], "allocator=jemalloc but the worker had \"glibc\" mapped");
  EXPECT_EQ(problems[1], "no_grad=true but grad mode in the measured step was true");
  EXPECT_EQ(problems[2], "omp_threads=2 but the worker ran 1 intra-op threads");
  EXPECT_FALSE(check_evidence({{"channels_last", true}}, Mode::infer,
                              {{"input_channels_last", true}, {"weight_channels_last", false}})
                   .empty());
  EXPECT_FALSE(
      check_evidence({{"zero_grad_none", true}}, Mode::train, {{"grads_defined_after_zero", true}})
          .empty());
}

TEST(Knobs, ApplicabilityHasReasons) {
  HostCaps one_core;
  one_core.cores = 1;
  one_core.cuda_reason = "no CUDA device on this host";
  EXPECT_EQ(not_applicable_reason(*find("omp_threads"), "gpt", Mode::infer, one_core),
            "this host has 1 core: nothing to sweep");
  EXPECT_EQ(not_applicable_reason(*find("zero_grad_none"), "gpt", Mode::infer, one_core),
            "applies to train only, not infer");
  EXPECT_EQ(not_applicable_reason(*find("ddp_scaling"), "gpt", Mode::train, one_core),
            "this host has 1 core: there is no second core group for another process");
  // A LibTorch without c10d's Gloo process group: its reason comes first.
  one_core.unsupported_on_cpu["ddp_no_sync"] = "LibTorch 9.9 ships no c10d ProcessGroupGloo header";
  EXPECT_EQ(not_applicable_reason(*find("ddp_no_sync"), "gpt", Mode::train, one_core),
            "LibTorch 9.9 ships no c10d ProcessGroupGloo header");
  EXPECT_EQ(not_applicable_reason(*find("no_grad"), "dlrm", Mode::infer, one_core), "");
}

TEST(CudaKnobs, EachCudaKnobsEvidenceMustShowItsSetting) {
  // What the CUDA worker reads back for an ON arm of every CUDA knob, and for the OFF arm.
  const nlohmann::json on = {{"device", "cuda:0"},
                             {"tf32_matmul", true},
                             {"tf32_cudnn", true},
                             {"cudnn_benchmark", true},
                             {"input_shapes_seen", 4},
                             {"empty_cache_calls_per_step", 0},
                             {"host_batch_pinned", true},
                             {"input_created_on_device", true},
                             {"loss_item_calls_per_step", 0},
                             {"cuda_graph_replay", true},
                             {"copy_stream", "separate"},
                             {"autocast_in_step", true},
                             {"autocast_dtype", "fp16"},
                             {"loss_scaling", true}};
  const nlohmann::json off = {{"device", "cuda:0"},
                              {"tf32_matmul", false},
                              {"tf32_cudnn", false},
                              {"cudnn_benchmark", false},
                              {"input_shapes_seen", 1},
                              {"empty_cache_calls_per_step", 1},
                              {"host_batch_pinned", false},
                              {"input_created_on_device", false},
                              {"loss_item_calls_per_step", 1},
                              {"cuda_graph_replay", false},
                              {"copy_stream", "compute"},
                              {"autocast_in_step", false},
                              {"autocast_dtype", "none"},
                              {"loss_scaling", false}};
  const std::vector<std::string> ids{"tf32",          "cudnn_benchmark", "empty_cache",
                                     "pinned_memory", "on_device_alloc", "avoid_sync",
                                     "cuda_graphs",   "streams_overlap", "amp"};
  for (const auto& id : ids) {
    const Knob* k = find(id);
    ASSERT_NE(k, nullptr) << id;
    EXPECT_TRUE(k->implemented) << id;
    for (const bool value : {false, true}) {
      const nlohmann::json settings = {{id, value}, {"device", "cuda"}};
      EXPECT_TRUE(check_evidence(settings, Mode::train, value ? on : off).empty()) << id;
      // The other arm's evidence contradicts this arm's setting.
      EXPECT_FALSE(check_evidence(settings, Mode::train, value ? off : on).empty()) << id;
    }
  }
  EXPECT_TRUE(check_evidence({{"varying_shapes", true}}, Mode::infer, on).empty());
  EXPECT_EQ(
      check_evidence({{"varying_shapes", true}}, Mode::infer, off),
      std::vector<std::string>{"varying_shapes=true but the measured steps saw 1 input shapes"});
  EXPECT_EQ(check_evidence({{"device", "cuda"}}, Mode::infer, {{"device", "cpu"}}),
            std::vector<std::string>{"device=\"cuda\" but the model ran on \"cpu\""});
  // fp16 training must have scaled the loss; bf16 needs no scaling.
  nlohmann::json unscaled = on;
  unscaled["loss_scaling"] = false;
  EXPECT_EQ(check_evidence({{"amp", "fp16"}}, Mode::train, unscaled),
            std::vector<std::string>{"amp=\"fp16\" but loss scaling was false"});
  EXPECT_EQ(check_evidence({{"amp", "bf16"}}, Mode::train, on),
            std::vector<std::string>{"amp=\"bf16\" but autocast's dtype was \"fp16\""});
}

TEST(CudaKnobs, AmpTakesADtypeAndCudaKnobsNeedAGpu) {
  EXPECT_NO_THROW(validate_value(*find("amp"), "fp16"));
  EXPECT_NO_THROW(validate_value(*find("amp"), "bf16"));
  EXPECT_THROW(validate_value(*find("amp"), "fp8"), std::invalid_argument);
  EXPECT_THROW(validate_value(*find("tf32"), "bf16"), std::invalid_argument);
  HostCaps no_gpu;
  no_gpu.cuda_reason = "no CUDA device on this host";
  EXPECT_EQ(not_applicable_reason(*find("pinned_memory"), "resnet50", Mode::infer, no_gpu),
            "needs a CUDA device: no CUDA device on this host");
  EXPECT_EQ(not_applicable_reason(*find("cuda_graphs"), "gpt", Mode::train, no_gpu),
            "needs a CUDA device: no CUDA device on this host");
  HostCaps gpu = no_gpu;
  gpu.cuda = true;
  EXPECT_EQ(not_applicable_reason(*find("pinned_memory"), "resnet50", Mode::infer, gpu), "");
}

TEST(Nvml, ThrottleReasonsAreNamedAndAMissingDriverIsReported) {
  EXPECT_EQ(nvml::throttle_reason_names(0), nlohmann::json::array());
  EXPECT_EQ(nvml::throttle_reason_names(0x4 | 0x40),
            (nlohmann::json{"sw_power_cap", "hw_thermal_slowdown"}));
  EXPECT_EQ(nvml::throttle_reason_names(0x1000), nlohmann::json{"other"});
  if (!nvml::unavailable_reason().empty()) {
    // No driver here: every query says so instead of failing.
    EXPECT_EQ(nvml::device_count(), 0);
    EXPECT_EQ(nvml::driver_version(), "");
    EXPECT_EQ(nvml::device_state({0, ""}).value("unavailable", ""), nvml::unavailable_reason());
    EXPECT_EQ(nvml::device_state({0, "0000:3B:00.0"}).value("unavailable", ""),
              nvml::unavailable_reason());
    EXPECT_FALSE(nvml::energy_millijoules({0, ""}).has_value());
  } else {
    EXPECT_GT(nvml::device_count(), 0);
    EXPECT_TRUE(nvml::device_state({0, ""}).contains("sm_clock_mhz"));
    // A bus id no GPU has is said, not read from another GPU.
    EXPECT_NE(nvml::device_state({0, "FFFF:FF:1F.7"}).value("unavailable", "").find("FFFF:FF:1F.7"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace tunebench::knobs

namespace tunebench::knobs {
namespace {

TEST(Knobs, GuardToleranceFollowsEveryKnobAnArmSwitchesOn) {
  using nlohmann::json;
  // A factorial cell with bf16 autocast computes in bf16: amp's tolerance, not the default's.
  EXPECT_DOUBLE_EQ(guard_tolerance("factorial", json{{"channels_last", true}, {"amp", true}}),
                   guard_tolerance("amp"));
  EXPECT_DOUBLE_EQ(guard_tolerance("factorial", json{{"channels_last", true}, {"amp", false}}),
                   guard_tolerance("channels_last"));
  EXPECT_GT(guard_tolerance("amp"), guard_tolerance("channels_last"));
  // Settings that are not knobs (the test-only fault) change nothing.
  EXPECT_DOUBLE_EQ(guard_tolerance("checkpoint", json{{"fault", "slow:10"}}),
                   guard_tolerance("checkpoint"));
}

// A row names its family, and the family lists the row's id: a row that points at the wrong
// family, a family that forgets one of its knobs or keeps a stale id, and an id in two families
// all fail here.
TEST(KnobFamilies, EveryCatalogIdHasExactlyOneFamily) {
  std::map<std::string, std::vector<Family>> listed;
  for (Family f : families()) {
    EXPECT_STRNE(to_string(f), "");
    for (const auto& id : rules_of(f).ids()) listed[id].push_back(f);
  }
  for (const auto& k : catalog()) {
    ASSERT_EQ(listed[k.id].size(), 1u)
        << k.id << " is listed by " << listed[k.id].size() << " families";
    EXPECT_EQ(listed[k.id][0], k.family) << k.id << ": its row says " << to_string(k.family) << ", "
                                         << to_string(listed[k.id][0]) << " lists it";
  }
  for (const auto& [id, in] : listed) EXPECT_NE(find(id), nullptr) << id << " is no catalog id";
  EXPECT_EQ(listed.size(), catalog().size());
  // Every family has at least one knob.
  for (Family f : families()) EXPECT_FALSE(rules_of(f).ids().empty()) << to_string(f);
}

// Each family's rules accept its knobs' default arms (the suite expands them), and refuse a value
// of the wrong kind.
TEST(KnobFamilies, EachFamilyValidatesItsKnobsDefaults) {
  HostCaps host;
  host.cores = 4;
  for (const auto& k : catalog()) {
    for (const auto& value : {k.off, k.on}) {
      EXPECT_NO_THROW(validate_value(k, value)) << k.id << "=" << value.dump();
      const nlohmann::json resolved = resolve(k, value, host);
      EXPECT_NO_THROW(validate_value(k, resolved)) << k.id << "=" << resolved.dump();
    }
    EXPECT_THROW(validate_value(k, nlohmann::json::object()), std::invalid_argument) << k.id;
  }
  EXPECT_EQ(resolve(*find("omp_threads"), "all", host), 4);
  EXPECT_EQ(resolve(*find("omp_threads"), 2, host), 2);
  EXPECT_THROW(validate_value(*find("grad_accum"), true), std::invalid_argument);
  EXPECT_THROW(validate_value(*find("dataloader_workers"), 65), std::invalid_argument);
  EXPECT_NO_THROW(validate_value(*find("ddp_scaling"), 3));
  EXPECT_THROW(validate_value(*find("ddp_no_sync"), 3), std::invalid_argument);
}

TEST(KnobFamilies, EvidenceIsSummarisedInOneLine) {
  EXPECT_EQ(summarise_evidence({}, nlohmann::json::object()), "none");
  EXPECT_EQ(summarise_evidence({}, nullptr), "none");
  const nlohmann::json e = {{evidence::kTorchThreads, 2},
                            {evidence::kEnv, {{"OMP_NUM_THREADS", "2"}}},
                            {evidence::kAllocator, "glibc"},
                            {evidence::kMappedLibraries, {"libomp.so.5", "libgomp.so.1"}},
                            {autograd::kGradModeInStep, false},
                            {autograd::kInferenceModeInStep, true},
                            {precision::kInputChannelsLast, true},
                            {evidence::kModel, {{"vocab_rows", 64}, {"blocks", 2}}},
                            {evidence::kCpuAffinity, "0,1"}};
  EXPECT_EQ(summarise_evidence({{"no_grad", true}}, e),
            "threads=2 OMP_NUM_THREADS=2 allocator=glibc openmp=libomp.so.5 grad_mode=off "
            "inference_mode=on vocab_rows=64 channels_last=yes cpus=0,1");
}

// The suite's checks of one arm come from the families: grad_accum's batch (execution),
// cuda_graphs' capture conflicts (cuda), the ranks' batch split on this host (distributed).
TEST(KnobFamilies, ArmChecksComeFromTheFamilies) {
  EXPECT_NE(arm_error({{"grad_accum", 4}}, Mode::train, 6).find("grad_accum=4 splits"),
            std::string::npos);
  EXPECT_EQ(arm_error({{"grad_accum", 4}}, Mode::train, 8), "");
  EXPECT_NE(arm_error({{"cuda_graphs", true}, {"preallocate", true}}, Mode::train, 8)
                .find("cannot be combined with preallocate"),
            std::string::npos);
  // The graph reads one buffer while the copy stream refills two in turn: a race, refused.
  for (const bool overlap : {false, true}) {
    EXPECT_NE(arm_error({{"cuda_graphs", true}, {"streams_overlap", overlap}}, Mode::infer, 8)
                  .find("cannot be combined"),
              std::string::npos);
  }
  EXPECT_EQ(arm_error({{"cuda_graphs", false}, {"streams_overlap", true}}, Mode::infer, 8), "");
  // Anomaly detection reads each backward output to the host; AOTInductor's runner keeps an event.
  EXPECT_NE(arm_error({{"cuda_graphs", true}, {"anomaly_off", false}}, Mode::train, 8)
                .find("anomaly detection"),
            std::string::npos);
  EXPECT_EQ(arm_error({{"cuda_graphs", true}, {"anomaly_off", false}}, Mode::infer, 8), "");
  EXPECT_EQ(arm_error({{"cuda_graphs", true}, {"anomaly_off", true}}, Mode::train, 8), "");
  EXPECT_NE(
      arm_error({{"cuda_graphs", true}, {"compile", true}}, Mode::infer, 8).find("AOTInductor"),
      std::string::npos);
  EXPECT_EQ(arm_error({{"cuda_graphs", true}, {"compile", false}}, Mode::infer, 8), "");
  HostCaps host;
  host.cores = 2;
  EXPECT_EQ(arm_not_applicable({{"ddp_scaling", true}}, 4, host), "");
  EXPECT_EQ(arm_not_applicable({{"ddp_scaling", true}}, 3, host),
            "ddp_scaling: batch 3 does not split into 2 rank(s) × 1 micro-batch(es) on this host "
            "(2 cores): use a multiple of 2");
  EXPECT_EQ(arm_not_applicable({{"no_grad", true}}, 3, host), "");
}

TEST(Knobs, OnlyArmsThatDifferInInProcessKnobsArePairable) {
  using nlohmann::json;
  // Per-arm knobs: both arms can live in one process.
  EXPECT_TRUE(pairable({{"no_grad", false}}, {{"no_grad", true}}));
  EXPECT_TRUE(pairable(json::object(), json::object()));  // the A/A control
  // A knob of the process start, or of process-wide state, that differs: no.
  EXPECT_FALSE(pairable({{"omp_threads", 1}}, {{"omp_threads", 2}}));
  EXPECT_FALSE(pairable({{"jit_fusion", false}}, {{"jit_fusion", true}}));
  EXPECT_FALSE(pairable({{"onednn", false}}, {{"onednn", true}}));
  EXPECT_FALSE(pairable({{"quantize_linear", false}}, {{"quantize_linear", true}}));
  EXPECT_FALSE(pairable({{"allocator", "glibc"}}, json::object()));
  // emptyCache() empties the one caching allocator of the process, the other arm's blocks too.
  EXPECT_FALSE(pairable({{"empty_cache", false}}, {{"empty_cache", true}}));
  // The same baseline in both arms does not matter.
  EXPECT_TRUE(
      pairable({{"omp_threads", 2}, {"no_grad", false}}, {{"omp_threads", 2}, {"no_grad", true}}));
}

// tune's recommendation is written down from the knobs' own process setup and code lines.
TEST(Apply, AConfigurationIsWrittenAsALaunchLineAndCodeLines) {
  const Written w = how_to_apply({{"omp_threads", 2}, {"no_grad", true}, {"amp", true}});
  EXPECT_NE(w.launch.find("OMP_NUM_THREADS=2"), std::string::npos) << w.launch;
  EXPECT_EQ(w.launch.substr(w.launch.size() - 22), "python your_program.py");
  // Code lines in the settings' order (json objects keep keys sorted): amp, no_grad, omp_threads.
  ASSERT_EQ(w.python.size(), 3u);
  EXPECT_NE(w.python[0].find("torch.autocast(\"cpu\", dtype=torch.bfloat16)"), std::string::npos);
  EXPECT_EQ(w.python[1], "with torch.no_grad():  # around the forward");
  EXPECT_EQ(w.python[2], "torch.set_num_threads(2)");
  EXPECT_EQ(w.cpp[2], "at::set_num_threads(2);");
  if (allocator_library("jemalloc")) {
    const Written j = how_to_apply({{"allocator", "jemalloc"}});
    EXPECT_NE(j.launch.find("LD_PRELOAD=" + *allocator_library("jemalloc")), std::string::npos)
        << j.launch;
    EXPECT_TRUE(j.python.empty()) << "a process-start knob is in the launch line only";
  }
  // In-process settings alone need no launch line.
  EXPECT_EQ(how_to_apply({{"no_grad", true}}).launch, "");
}

// Every knob tune may recommend for a model from a file (in-process, CPU, not tied to the
// built-in models' code) has code lines of its own, not the catalog's words.
TEST(Apply, EveryKnobAFileModelCanBeTunedWithHasItsCodeLines) {
  const auto written = written_knobs();
  const std::set<std::string> has(written.begin(), written.end());
  for (const auto& k : catalog()) {
    if (k.where == "cuda" || k.phase == Phase::process_start || !k.models.empty() ||
        !k.implemented) {
      continue;
    }
    EXPECT_TRUE(has.count(k.id)) << k.id << " has no code lines in knobs/apply.cpp";
  }
}

// What a trial that does not set a knob runs: the base setting, the ON state of the knobs whose
// OFF switches a debugging API on, otherwise OFF (tune leaves out a knob whose ON is this).
TEST(Knobs, UnsetValueIsWhatATrialWithoutTheSettingRuns) {
  HostCaps host;
  host.cores = 4;
  EXPECT_EQ(unset_value(*find("omp_threads"), host), 4);
  EXPECT_EQ(unset_value(*find("allocator"), host), "glibc");
  EXPECT_EQ(unset_value(*find("profiler_off"), host), true);
  EXPECT_EQ(unset_value(*find("anomaly_off"), host), true);
  EXPECT_EQ(unset_value(*find("no_grad"), host), false);
  EXPECT_EQ(unset_value(*find("amp"), host), false);
  // Neither arm: both fused_adamw arms train with AdamW, a trial without it with SGD.
  const nlohmann::json fused = unset_value(*find("fused_adamw"), host);
  EXPECT_NE(fused, find("fused_adamw")->off);
  EXPECT_NE(fused, find("fused_adamw")->on);
  // Where LibTorch's own count is known (host::capabilities), a program that sets nothing runs
  // that, whatever the cores: the base settings stay explicit at all cores.
  host.unset_threads = 1;
  EXPECT_EQ(unset_value(*find("omp_threads"), host), 1);
  EXPECT_EQ(unset_settings(host), (nlohmann::json{{"omp_threads", 1}, {"allocator", "glibc"}}));
  EXPECT_EQ(base_settings(host), (nlohmann::json{{"omp_threads", 4}, {"allocator", "glibc"}}));
}

}  // namespace
}  // namespace tunebench::knobs
