#include "knobs/knobs.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "core/multiproc.h"
#include "knobs/device_settings.h"
#include "knobs/exec_knobs.h"
#include "knobs/script_knobs.h"

namespace tunebench::knobs {

using nlohmann::json;

namespace {

Knob entry(std::string id, std::string group, std::string change, std::string where,
           std::string claim) {
  Knob k;
  k.id = std::move(id);
  k.group = std::move(group);
  k.change = std::move(change);
  k.where = std::move(where);
  k.claim = std::move(claim);
  k.off = false;
  k.on = true;
  return k;
}

std::vector<Knob> make_catalog() {
  const std::string exec = "execution mode and autograd", kern = "kernels, layout and precision",
                    host = "host, threads and memory", dist = "distributed";
  std::vector<Knob> c;
  auto add = [&](Knob k) -> Knob& { return c.emplace_back(std::move(k)); };

  Knob& no_grad = add(entry("no_grad", exec, "grad-enabled forward → forward under no-grad", "both",
                            "faster and less memory (000)"));
  no_grad.implemented = true;
  no_grad.modes = {Mode::infer};
  no_grad.memory_effect = true;
  Knob& k_inference_mode = add(entry("inference_mode", exec, "no-grad → inference mode", "both",
                                     "(beyond the documents: the stricter mode)"));
  k_inference_mode.modes = {Mode::infer};
  k_inference_mode.implemented = true;
  Knob& zero = add(entry("zero_grad_none", exec, "zero gradients in place → set them to none",
                         "both", "fewer memory operations (000)"));
  zero.implemented = true;
  zero.modes = {Mode::train};
  Knob& k_conv_bias_off =
      add(entry("conv_bias_off", exec, "conv with bias before batch norm → without", "both",
                "bias is redundant before BN (000)"));
  k_conv_bias_off.models = {"resnet50"};
  k_conv_bias_off.implemented = true;
  k_conv_bias_off.model_option = "conv_bias";
  k_conv_bias_off.option_inverted = true;
  Knob& k_anomaly_off = add(entry("anomaly_off", exec, "anomaly detection on → off", "both",
                                  "debugging APIs slow training (000)"));
  k_anomaly_off.modes = {Mode::train};
  k_anomaly_off.implemented = true;
  add(entry("profiler_off", exec, "autograd profiler recording → not", "both",
            "profiling and debugging APIs slow execution (000)"))
      .implemented = true;
  Knob& ckpt =
      add(entry("checkpoint", exec, "store all activations → recompute blocks in backward", "both",
                "50-70 % less memory for ~20 % more time (001); selective checkpointing "
                "cuts peak 40 % (004)"));
  ckpt.models = {"resnet50", "gpt"};
  ckpt.modes = {Mode::train};
  ckpt.memory_effect = true;
  ckpt.implemented = true;
  ckpt.model_option = "checkpoint";
  Knob& inplace = add(entry("inplace_act", exec, "out-of-place activations → in-place (relu_)",
                            "both", "saves memory (001)"));
  inplace.implemented = true;
  inplace.model_option = "inplace_act";
  inplace.models = {"resnet50"};
  inplace.memory_effect = true;
  inplace.false_claim =
      "001 says an in-place update such as x = x + y breaks autograd: it does not (autograd "
      "checks versions and the tests train with in-place residual adds)";
  Knob& accum =
      add(entry("grad_accum", exec, "batch B → B/k micro-batches × k, gradients accumulated",
                "both", "larger effective batch within memory (001)"));
  accum.models = {"gpt", "resnet50"};
  accum.modes = {Mode::train};
  accum.memory_effect = true;
  accum.implemented = true;
  accum.off = 1;  // micro-batches per step
  accum.on = 4;
  Knob& prealloc = add(entry("preallocate", exec,
                             "variable sequence lengths as they come → one max-length step first",
                             "both", "avoids re-allocation and fragmentation (000)"));
  prealloc.models = {"gpt"};
  prealloc.memory_effect = true;
  prealloc.implemented = true;
  prealloc.modes = {Mode::train};  // one forward and backward at the max length

  Knob& jit = add(entry(
      "jit_fusion", kern, "eager pointwise chain → TorchScript-fused", "both",
      "fusion amortises memory traffic and launches (000); compile 1.2-2x (001), 2.5x (004)"));
  jit.implemented = true;  // the GPT MLP's bias add + erf-GELU (worker/script_forward.h)
  jit.models = {"gpt"};
  jit.modes = {Mode::infer};
  Knob& k_builtin_ops = add(entry("builtin_ops", kern,
                                  "hand-written LayerNorm / GELU / attention → built-in fused ops",
                                  "both", "built-in fused kernels are faster (004)"));
  k_builtin_ops.models = {"gpt"};
  k_builtin_ops.implemented = true;
  k_builtin_ops.model_option = "builtin_ops";
  Knob& k_flash_attention =
      add(entry("flash_attention", kern, "math attention → fused/flash attention", "both",
                "up to 40 % faster (004)"));
  k_flash_attention.models = {"gpt"};
  k_flash_attention.implemented = true;
  k_flash_attention.model_option = "fused_attention";
  Knob& mask =
      add(entry("causal_mask_fly", kern, "causal mask stored as a buffer → made on the fly", "both",
                "less memory, matters at long context (004)"));
  mask.implemented = true;
  mask.models = {"gpt"};
  mask.memory_effect = true;
  mask.model_option = "causal_mask_fly";
  Knob& cl = add(entry("channels_last", kern, "NCHW → NHWC model and input", "both",
                       "faster, with AMP on tensor cores (000)"));
  cl.implemented = true;
  cl.models = {"resnet50"};
  Knob& amp = add(entry("amp", kern, "fp32 → autocast bf16 (CPU; fp16 with loss scaling on CUDA)",
                        "both", "up to 3x (000, 001), bf16 3x (004)"));
  amp.implemented = true;
  add(entry("tf32", kern, "fp32 matmul → TF32", "cuda", "tensor cores (004)")).implemented = true;
  Knob& mult8 =
      add(entry("dims_mult8", kern, "odd vocabulary and MLP widths → padded to multiples of 8",
                "both", "tensor cores need multiples of 8 (000)"));
  mult8.models = {"gpt"};
  mult8.implemented = true;
  mult8.model_option = "dims_mult8";
  Knob& k_vocab_pad = add(entry("vocab_pad", kern, "vocab 50257 → 50304 (next multiple of 64)",
                                "both", "~10 % faster (004)"));
  k_vocab_pad.models = {"gpt"};
  k_vocab_pad.implemented = true;
  k_vocab_pad.model_option = "vocab_pad";
  Knob& cudnn =
      add(entry("cudnn_benchmark", kern, "cuDNN autotuner off → on (static and varying shapes)",
                "cuda", "helps static shapes, can hurt varying ones (000, 002)"));
  cudnn.models = {"resnet50"};
  cudnn.false_claim = "002's conv(x, algo=...) does not exist in any PyTorch API";
  cudnn.implemented = true;
  Knob& fused = add(entry("fused_adamw", kern, "per-parameter AdamW → one fused AdamW kernel",
                          "both", "5-10 % faster (004)"));
  fused.implemented = true;
  fused.modes = {Mode::train};
  Knob& quant =
      add(entry("quantize_linear", kern, "fp32 Linear → dynamically quantized int8 Linear", "cpu",
                "partial quantization saves memory (004)"));
  quant.implemented = true;
  quant.models = {"dlrm"};
  quant.modes = {Mode::infer};
  quant.memory_effect = true;
  Knob& freeze =
      add(entry("freeze_script", kern, "eager module → scripted, frozen, optimised for inference",
                "both", "TorchScript for deployment (001)"));
  freeze.models = {"resnet50"};
  freeze.modes = {Mode::infer};
  freeze.implemented = true;

  Knob& threads =
      add(entry("omp_threads", host, "OMP_NUM_THREADS and intra-op threads: 1 → all cores", "cpu",
                "the easiest switch (000)"));
  threads.implemented = true;
  threads.phase = Phase::process_start;
  threads.off = 1;
  threads.on = "all";  // resolved to the host's cores when the suite is expanded
  Knob& k_omp_affinity = add(entry(
      "omp_affinity", host, "unbound → OMP_PROC_BIND=CLOSE, OMP_SCHEDULE=STATIC, GOMP_CPU_AFFINITY",
      "cpu", "pinning threads steadies and speeds execution (000)"));
  k_omp_affinity.phase = Phase::process_start;
  k_omp_affinity.implemented = true;
  Knob& k_omp_runtime = add(entry("omp_runtime", host, "GNU libgomp → LLVM libomp preloaded", "cpu",
                                  "sometimes faster (000)"));
  k_omp_runtime.phase = Phase::process_start;
  k_omp_runtime.implemented = true;
  Knob& alloc =
      add(entry("allocator", host, "glibc malloc → jemalloc (or tcmalloc, jemalloc without decay)",
                "cpu", "reuses memory, fewer system calls (000)"));
  alloc.implemented = true;
  alloc.phase = Phase::process_start;
  alloc.off = "glibc";
  alloc.on = "jemalloc";
  alloc.memory_effect = true;
  Knob& k_malloc_tunables =
      add(entry("malloc_tunables", host, "glibc defaults → glibc told to keep freed memory", "cpu",
                "(beyond the documents: the cheapest fix for allocator page-fault storms)"));
  k_malloc_tunables.phase = Phase::process_start;
  k_malloc_tunables.implemented = true;
  k_malloc_tunables.memory_effect = true;
  Knob& numa = add(entry("numa_bind", host, "unbound → numactl --cpunodebind=0 --membind=0", "cpu",
                         "avoid cross-socket traffic (000)"));
  numa.implemented = true;
  numa.phase = Phase::process_start;
  Knob& multi = add(entry("multi_instance", host,
                          "one process with all cores → one instance per core group (pinned), "
                          "throughput summed",
                          "cpu", "raises throughput (000)"));
  multi.implemented = true;
  multi.phase = Phase::process_start;
  multi.modes = {Mode::infer};
  // The CUDA knobs act in the worker through worker/cuda_runtime.cpp; their evidence is checked
  // in knobs/device_settings.cpp.
  Knob& k_empty_cache = add(entry(
      "empty_cache", host, "empty_cache() every step → only in idle windows", "cuda", "(004)"));
  k_empty_cache.implemented = true;
  k_empty_cache.memory_effect = true;
  add(entry("pinned_memory", host, "pageable host batches → pinned + non-blocking copies", "cuda",
            "faster host-to-device transfer (001, 004)"))
      .implemented = true;
  add(entry("on_device_alloc", host, "create on CPU then .to(cuda) → create on the device", "cuda",
            "(000)"))
      .implemented = true;
  Knob& k_avoid_sync =
      add(entry("avoid_sync", host, "host sync every step → none", "cuda", "(000)"));
  k_avoid_sync.modes = {Mode::train};
  k_avoid_sync.implemented = true;
  Knob& k_cuda_graphs = add(entry("cuda_graphs", host, "eager launches → captured graph replay",
                                  "cuda", "\"reduce-overhead\" (001)"));
  k_cuda_graphs.implemented = true;
  add(entry("streams_overlap", host, "copies and compute on one stream → copy stream overlapped",
            "cuda", "reduces idle time (004)"))
      .implemented = true;
  Knob& loader = add(entry("dataloader_workers", host,
                           "0 workers → N workers (and prefetch), synthetic per-sample decode cost",
                           "both", "data loading is often the bottleneck (001)"));
  loader.implemented = true;
  loader.models = {"resnet50"};
  loader.off = 0;
  loader.on = 2;
  Knob& scaling = add(entry("ddp_scaling", dist,
                            "1 rank → one rank per core group or GPU (c10d Gloo / NCCL, batch "
                            "split across ranks, gradients all-reduced)",
                            "both", "2 GPUs ~1.8x, 4 ~3.5x (001)"));
  scaling.implemented = true;
  scaling.phase = Phase::process_start;
  scaling.models = {"gpt", "resnet50"};
  scaling.modes = {Mode::train};
  Knob& no_sync =
      add(entry("ddp_no_sync", dist,
                "all-reduce every micro-batch → only on the last of 4 (c10d Gloo / NCCL ranks)",
                "both", "skip unnecessary all-reduce (000)"));
  no_sync.implemented = true;
  no_sync.phase = Phase::process_start;
  no_sync.models = {"gpt"};
  no_sync.modes = {Mode::train};
  return c;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

const char* kLlvmOpenMp = "/usr/lib/x86_64-linux-gnu/libomp.so.5";
const char* kNumactl = "/usr/bin/numactl";
const std::vector<std::string> kAllocators{"glibc", "jemalloc", "jemalloc_nodecay", "tcmalloc"};

// What the built model must show for a build-time switch; empty when it does.
std::string check_model(const std::string& id, bool on, const json& model) {
  if (!model.is_object()) return id + ": the worker read back no model structure";
  auto fact = [&](const char* key) { return model.contains(key) ? model[key] : json(); };
  bool ok = true;
  std::string seen;
  if (id == "conv_bias_off") {
    ok = (fact("conv_bias_parameters") == 0) == on;
    seen = fact("conv_bias_parameters").dump() + " conv bias parameters";
  } else if (id == "inplace_act") {
    ok = fact("inplace_act") == on;
    seen = "in-place activations " + fact("inplace_act").dump();
  } else if (id == "causal_mask_fly") {
    ok = (fact("stored_mask_buffers") == 0) == on;
    seen = fact("stored_mask_buffers").dump() + " stored mask buffers";
  } else if (id == "vocab_pad") {
    ok = (fact("vocab_rows") != fact("vocab_size")) == on;
    seen = fact("vocab_rows").dump() + " embedding rows for vocab " + fact("vocab_size").dump();
  } else if (id == "builtin_ops") {
    ok = fact("builtin_ops") == on;
    seen = "built-in ops " + fact("builtin_ops").dump();
  } else if (id == "flash_attention") {
    ok = fact("fused_attention") == on;
    seen = "fused attention " + fact("fused_attention").dump();
  }
  return ok ? "" : fmt::format("{}={} but the built model has {}", id, on ? "true" : "false", seen);
}

// What a rank must show for the distributed knobs; empty when it does.
std::string check_ddp(const json& settings, const json& ddp) {
  if (!settings.contains(multiproc::kProcessSetting)) {
    return "a distributed trial ran without ranks (it was not split into processes)";
  }
  const json& process = settings[multiproc::kProcessSetting];
  if (!ddp.is_object()) return "the rank read back no process group";
  const int micro = settings.contains("ddp_no_sync") ? multiproc::kNoSyncMicroBatches : 1;
  const int syncs = settings.value("ddp_no_sync", false) == true ? 1 : micro;
  const int64_t buckets = ddp.value("buckets", int64_t(0));
  // Gloo on the CPU; NCCL on CUDA, each rank on the GPU it was given.
  const bool cuda = settings.value("device", "cpu") == "cuda";
  const bool backend_ok = cuda ? ddp.value("backend", "") == "nccl" &&
                                     ddp.value("gpu", json()) == process.value("gpu", json(-1))
                               : ddp.value("backend", "") == "gloo";
  if (!backend_ok || ddp["world_size"] != process["count"] || ddp["rank"] != process["index"] ||
      ddp["micro_batches"] != micro || buckets < 1 ||
      ddp.value("allreduces_per_step", -1.0) != double(buckets * syncs)) {
    return fmt::format(
        "rank {} of {} ({}) with {} micro-batch(es), {} all-reduce(s) per micro-batch sync "
        "expected {} all-reduces per step, but its process group read back {}",
        process["index"].dump(), process["count"].dump(),
        cuda ? "NCCL on GPU " + process.value("gpu", json()).dump() : "Gloo", micro, buckets,
        buckets * syncs, ddp.dump());
  }
  return "";
}

}  // namespace

const std::vector<Knob>& catalog() {
  static const std::vector<Knob> knobs = make_catalog();
  return knobs;
}

const Knob* find(const std::string& id) {
  for (const auto& k : catalog()) {
    if (k.id == id) return &k;
  }
  return nullptr;
}

std::vector<std::string> nearest(const std::string& id, size_t n) {
  std::vector<std::pair<size_t, std::string>> scored;
  for (const auto& k : catalog()) scored.emplace_back(edit_distance(id, k.id), k.id);
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  // Only ids a typo away: at most a third of the name's letters (and at least 2) differ.
  const size_t limit = std::max<size_t>(2, id.size() / 3);
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && out.size() < n; ++i) {
    if (scored[i].first <= limit) out.push_back(scored[i].second);
  }
  return out;
}

HostCaps probe_host() {
  HostCaps caps;
  caps.cores = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  caps.numa_nodes = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/sys/devices/system/node", ec)) {
    const std::string name = e.path().filename();
    if (name.rfind("node", 0) == 0 && name.size() > 4 && isdigit(name[4])) ++caps.numa_nodes;
  }
  caps.numa_nodes = std::max(1, caps.numa_nodes);
  return caps;
}

std::string not_applicable_reason(const Knob& knob, const std::string& model, Mode mode,
                                  const HostCaps& host, const std::string& device) {
  if (!knob.implemented) return "not implemented yet";
  if (knob.id == "ddp_scaling" && model == "resnet50") {
    // The catalog lists it; what stops it is the correctness guard, not the code.
    return "ResNet-50's batch norm normalises each rank's shard (C++ has no SyncBatchNorm), so N "
           "ranks train a different function from one rank on the whole batch (the loss after a "
           "step differs by ~9 %): the correctness guard cannot hold";
  }
  if (!knob.models.empty() &&
      std::find(knob.models.begin(), knob.models.end(), model) == knob.models.end()) {
    std::string list;
    for (const auto& m : knob.models) list += (list.empty() ? "" : ", ") + m;
    return fmt::format("applies to {} only, not {}", list, model);
  }
  if (!knob.modes.empty() &&
      std::find(knob.modes.begin(), knob.modes.end(), mode) == knob.modes.end()) {
    return fmt::format("applies to {} only, not {}", to_string(knob.modes.front()),
                       to_string(mode));
  }
  if (knob.where == "cuda" && !host.cuda) return "needs a CUDA device: " + host.cuda_reason;
  const auto& on_device = device == "cuda" ? host.unsupported_on_cuda : host.unsupported_on_cpu;
  if (auto it = on_device.find(knob.id); it != on_device.end()) return it->second;
  if (knob.id == "omp_threads" && host.cores < 2) return "this host has 1 core: nothing to sweep";
  const bool distributed = knob.id == "ddp_scaling" || knob.id == "ddp_no_sync";
  if (distributed && device == "cuda" && host.cuda && host.gpus < 2) {  // no GPU: the device says
    return fmt::format("needs 2 or more GPUs (one rank each, NCCL): this host has {}", host.gpus);
  }
  if ((knob.id == "multi_instance" || distributed) && device == "cpu" && host.cores < 2) {
    return "this host has 1 core: there is no second core group for another process";
  }
  if (knob.id == "numa_bind" && !std::filesystem::exists(kNumactl)) {
    return "numactl is not installed (Debian package numactl)";
  }
  if (knob.id == "omp_runtime" && !std::filesystem::exists(kLlvmOpenMp)) {
    return "LLVM libomp is not installed (libomp5-14)";
  }
  if (knob.id == "allocator" && !allocator_library("jemalloc")) {
    return "jemalloc is not installed (libjemalloc2)";
  }
  return "";
}

void validate_value(const Knob& knob, const json& value) {
  if (exec_knobs::validate_value(knob.id, value)) return;
  if (knob.id == "omp_threads") {
    if (value == "all") return;
    if (!value.is_number_integer() || value.get<int64_t>() < 1 || value.get<int64_t>() > 4096) {
      throw std::invalid_argument("must be a thread count from 1 to 4096 or \"all\"");
    }
    return;
  }
  if (knob.id == "allocator") {
    if (!value.is_string() || std::find(kAllocators.begin(), kAllocators.end(),
                                        value.get<std::string>()) == kAllocators.end()) {
      throw std::invalid_argument(
          "must be one of \"glibc\", \"jemalloc\", \"jemalloc_nodecay\", \"tcmalloc\"");
    }
    if (!allocator_library(value.get<std::string>()) && value != "glibc") {
      throw std::invalid_argument("names an allocator that is not installed on this host");
    }
    return;
  }
  if (knob.id == "multi_instance" || knob.id == "ddp_scaling") {
    if (value.is_boolean()) return;
    if (!value.is_number_integer() || value.get<int64_t>() < 1 || value.get<int64_t>() > 4096) {
      throw std::invalid_argument(
          "must be true (one process per core), false (one) or a process count from 1 to 4096");
    }
    return;
  }
  if (knob.id == "dataloader_workers") {
    if (!value.is_number_integer() || value.get<int64_t>() < 0 || value.get<int64_t>() > 64) {
      throw std::invalid_argument("must be a number of loader workers from 0 to 64");
    }
    return;
  }
  if (knob.id == "amp" && (value == "bf16" || value == "fp16")) return;
  if (!value.is_boolean()) {
    throw std::invalid_argument(
        knob.id == "amp" ? "must be true (the device's default), false, \"bf16\" or \"fp16\""
                         : "must be true or false");
  }
}

json base_settings(const HostCaps& host) {
  return {{"omp_threads", host.cores}, {"allocator", "glibc"}};
}

std::optional<std::string> allocator_library(const std::string& allocator) {
  static const std::map<std::string, std::string> paths{
      {"jemalloc", "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"},
      {"jemalloc_nodecay", "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"},
      {"tcmalloc", "/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4"}};
  auto it = paths.find(allocator);
  if (it == paths.end() || !std::filesystem::exists(it->second)) return std::nullopt;
  return it->second;
}

ProcessSetup process_setup(const json& settings) {
  ProcessSetup setup;
  if (settings.contains("omp_threads")) {
    const std::string n = std::to_string(settings["omp_threads"].get<int64_t>());
    setup.env["OMP_NUM_THREADS"] = n;
    setup.env["MKL_NUM_THREADS"] = n;
    setup.env["OPENBLAS_NUM_THREADS"] = "1";  // LibTorch calls BLAS from its own threads
  }
  if (settings.value("omp_affinity", false) == true) {
    const int64_t n = settings.value("omp_threads", int64_t{1});
    setup.env["OMP_PROC_BIND"] = "CLOSE";
    setup.env["OMP_SCHEDULE"] = "STATIC";
    setup.env["GOMP_CPU_AFFINITY"] = n > 1 ? fmt::format("0-{}", n - 1) : "0";
  }
  if (settings.value("omp_runtime", false) == true) {
    setup.preload.push_back(kLlvmOpenMp);
    setup.env["KMP_AFFINITY"] = "granularity=fine,compact,1,0";
    setup.env["KMP_BLOCKTIME"] = "1";
  }
  if (settings.value("numa_bind", false) == true) {
    // Node 0 on every host: on a one-node host this binds to the only node (the report says so).
    setup.launcher = {kNumactl, "--cpunodebind=0", "--membind=0"};
  }
  if (settings.value("malloc_tunables", false) == true) {
    // Keep freed memory in the process: no mmap for large blocks (each would be unmapped on free
    // and faulted in again), and never trim the heap top.
    setup.env["MALLOC_MMAP_MAX_"] = "0";
    setup.env["MALLOC_TRIM_THRESHOLD_"] = "68719476736";
    setup.env["MALLOC_TOP_PAD_"] = "268435456";
  }
  if (settings.contains("allocator")) {
    const std::string allocator = settings["allocator"];
    if (auto lib = allocator_library(allocator)) setup.preload.push_back(*lib);
    // jemalloc 5.3's defaults return large frees at once and fault them back in (CATALOG.md).
    if (allocator == "jemalloc_nodecay")
      setup.env["MALLOC_CONF"] = "dirty_decay_ms:-1,muzzy_decay_ms:-1";
  }
  return setup;
}

json model_options(const json& settings, json options) {
  if (!options.is_object()) options = json::object();
  for (const auto& [id, value] : settings.items()) {
    const Knob* k = find(id);
    if (k && !k->model_option.empty() && value.is_boolean()) {
      options[k->model_option] = k->option_inverted ? !value.get<bool>() : value.get<bool>();
    }
  }
  return options;
}

std::vector<std::string> check_evidence(const json& settings, Mode mode, const json& evidence) {
  std::vector<std::string> wrong;
  auto says = [&](const char* key) { return evidence.contains(key) ? evidence[key] : json(); };
  for (const auto& [id, value] : settings.items()) {
    if (auto device_wrong = device_settings::check_evidence(id, value, mode, evidence)) {
      wrong.insert(wrong.end(), device_wrong->begin(), device_wrong->end());
    } else if (exec_knobs::check_evidence(id, value, mode, evidence, wrong)) {
      continue;
    } else if (id == "omp_threads") {
      const int64_t n = value.get<int64_t>();
      if (says("torch_threads") != n) {
        wrong.push_back(fmt::format("omp_threads={} but the worker ran {} intra-op threads", n,
                                    says("torch_threads").dump()));
      }
      const json env = says("env");
      if (!env.is_object() || env.value("OMP_NUM_THREADS", "") != std::to_string(n)) {
        wrong.push_back(
            fmt::format("omp_threads={} but the worker's OMP_NUM_THREADS was {}", n,
                        env.is_object() ? env.value("OMP_NUM_THREADS", "unset") : "unknown"));
      }
    } else if (id == "allocator") {
      std::string expected = value.get<std::string>();
      if (expected == "jemalloc_nodecay") expected = "jemalloc";
      if (says("allocator") != expected) {
        wrong.push_back(fmt::format("allocator={} but the worker had {} mapped",
                                    value.get<std::string>(), says("allocator").dump()));
      }
    } else if (id == "no_grad" && mode == Mode::infer) {
      if (says("grad_mode_in_step") != !value.get<bool>()) {
        wrong.push_back(fmt::format("no_grad={} but grad mode in the measured step was {}",
                                    value.dump(), says("grad_mode_in_step").dump()));
      }
    } else if (id == "zero_grad_none" && mode == Mode::train) {
      if (says("grads_defined_after_zero") != !value.get<bool>()) {
        wrong.push_back(
            fmt::format("zero_grad_none={} but gradients after zeroing were {}", value.dump(),
                        says("grads_defined_after_zero") == true ? "defined" : "undefined"));
      }
    } else if (id == "inference_mode" && mode == Mode::infer) {
      if (says("inference_mode_in_step") != value || says("grad_mode_in_step") != false) {
        wrong.push_back(fmt::format(
            "inference_mode={} but the measured step ran with inference mode {} and grad mode {}",
            value.dump(), says("inference_mode_in_step").dump(), says("grad_mode_in_step").dump()));
      }
    } else if (id == "anomaly_off" && mode == Mode::train) {
      if (says("anomaly_mode_in_step") != !value.get<bool>()) {
        wrong.push_back(
            fmt::format("anomaly_off={} but anomaly detection in the measured step was {}",
                        value.dump(), says("anomaly_mode_in_step").dump()));
      }
    } else if (id == "omp_affinity" && value == true) {
      const json env = says("env");
      if (!env.is_object() || env.value("OMP_PROC_BIND", "") != "CLOSE" ||
          !env.contains("GOMP_CPU_AFFINITY")) {
        wrong.push_back(
            "omp_affinity=true but OMP_PROC_BIND/GOMP_CPU_AFFINITY were not in the worker's "
            "environment");
      }
    } else if (id == "omp_runtime") {
      bool llvm = false;
      for (const auto& lib : says("mapped_libraries")) {
        llvm |= lib.get<std::string>().rfind("libomp", 0) == 0;
      }
      if (llvm != value.get<bool>()) {
        wrong.push_back(fmt::format("omp_runtime={} but LLVM libomp was {}mapped in the worker",
                                    value.dump(), llvm ? "" : "not "));
      }
    } else if (id == "malloc_tunables" && value == true) {
      const json env = says("env");
      if (!env.is_object() || env.value("MALLOC_MMAP_MAX_", "") != "0") {
        wrong.push_back(
            "malloc_tunables=true but MALLOC_MMAP_MAX_ was not 0 in the worker's environment");
      }
    } else if (const Knob* k = find(id); k && !k->model_option.empty()) {
      if (auto why = check_model(id, value.get<bool>(), says("model")); !why.empty()) {
        wrong.push_back(why);
      }
    } else if (id == "numa_bind") {
      const bool bound = says("numa_policy") == "bind";
      if (bound != value.get<bool>()) {
        wrong.push_back(fmt::format("numa_bind={} but the worker's NUMA memory policy was {}",
                                    value.dump(), says("numa_policy").dump()));
      }
    } else if (id == "fused_adamw" && mode == Mode::train) {
      const std::string expected = value == true ? "adamw_fused" : "adamw";
      if (says("optimizer") != expected) {
        wrong.push_back(fmt::format("fused_adamw={} but the optimizer was {}", value.dump(),
                                    says("optimizer").dump()));
      }
    } else if (id == multiproc::kProcessSetting) {
      // A process of a multi-process trial runs on its own core group.
      std::string cpus;
      for (const auto& c : value["cpus"]) cpus += (cpus.empty() ? "" : ",") + c.dump();
      if (says("cpu_affinity") != cpus) {
        wrong.push_back(fmt::format("{} {} should run on CPUs {} but ran on {}",
                                    value["role"].get<std::string>(), value["index"].dump(), cpus,
                                    says("cpu_affinity").dump()));
      }
    } else if (id == "ddp_no_sync" || (id == "ddp_scaling" && !settings.contains("ddp_no_sync"))) {
      if (auto why = check_ddp(settings, says("ddp")); !why.empty()) wrong.push_back(why);
    } else if (id == "dataloader_workers") {
      const json loader = says("loader");
      const int64_t workers = value.get<int64_t>();
      if (!loader.is_object() || loader.value("workers", int64_t(-1)) != workers ||
          loader.value("producer_threads", int64_t(-1)) != std::max<int64_t>(1, workers) ||
          loader.value("produced_on_main_thread", false) != (workers == 0)) {
        wrong.push_back(fmt::format(
            "dataloader_workers={} but the batches came from {} (want {} thread(s), {})", workers,
            loader.dump(), std::max<int64_t>(1, workers),
            workers == 0 ? "the main thread" : "none of them the main thread"));
      }
    } else if (script_knobs::handles(id)) {
      if (auto why = script_knobs::check_evidence(id, value == true, evidence); !why.empty()) {
        wrong.push_back(why);
      }
    } else if (id == "channels_last") {
      if (says("input_channels_last") != value || says("weight_channels_last") != value) {
        wrong.push_back(fmt::format(
            "channels_last={} but input/first conv weight channels-last were {}/{}", value.dump(),
            says("input_channels_last").dump(), says("weight_channels_last").dump()));
      }
    }
  }
  return wrong;
}

std::string fault_setting_error(const json& value) {
  const char* allowed = std::getenv("TUNEBENCH_TEST_FAULTS");
  if (!allowed || std::string(allowed) != "1") {
    return "\"fault\" is a test-only setting (it needs TUNEBENCH_TEST_FAULTS=1)";
  }
  static const std::vector<std::string> kinds{"segfault", "abort", "killed", "garbage",
                                              "silent",   "hang",  "slow"};
  const std::string valid =
      "fault must be one of segfault, abort, killed, garbage, silent, hang, slow, or slow:PCT "
      "with PCT a whole percentage from 1 to 1000; got " +
      value.dump();
  if (!value.is_string()) return valid;
  const std::string fault = value.get<std::string>();
  if (fault.rfind("slow:", 0) == 0) {
    const std::string pct = fault.substr(5);
    if (pct.empty() || pct.size() > 4 ||
        !std::all_of(pct.begin(), pct.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        std::stoi(pct) < 1 || std::stoi(pct) > 1000) {
      return valid;
    }
    return "";
  }
  if (std::find(kinds.begin(), kinds.end(), fault) == kinds.end()) return valid;
  return "";
}

double guard_tolerance(const std::string& knob_id) {
  // fp32 knobs change only the order of floating-point sums (threads, layout, allocator).
  // bf16 keeps 8 bits of mantissa: outputs and losses differ by up to a few per cent.
  if (knob_id == "amp" || knob_id == "quantize_linear") return 5e-2;
  // The same arithmetic (recomputed, profiled, preallocated, or with zero padding units): only
  // rounding differs.
  if (knob_id == "checkpoint" || knob_id == "profiler_off" || knob_id == "preallocate" ||
      knob_id == "dims_mult8")
    return 1e-5;
  return 1e-3;
}

double guard_tolerance(const std::string& knob_id, const json& settings) {
  double tolerance = guard_tolerance(knob_id);
  // A factorial cell (or any arm) that switches on a lower-precision knob computes within that
  // knob's tolerance, whatever the experiment's own knob is.
  if (settings.is_object()) {
    for (const auto& [key, value] : settings.items()) {
      if (find(key) && value != false && value != 0) {
        tolerance = std::max(tolerance, guard_tolerance(key));
      }
    }
  }
  return tolerance;
}

}  // namespace tunebench::knobs
