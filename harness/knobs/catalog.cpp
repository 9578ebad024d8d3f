// The catalog: one row per knob, as data (the fields are knobs::Knob's, in its order: id, family,
// phase, group, where, change, claim, models, modes, off, on, guard tolerance, memory effect, then
// where set the model option, whether ON inverts it, and a false claim of the sources). What a row
// means is in knobs/knob.h and docs/knobs.md; what its family does with it is in
// knobs/<family>.cpp.
#include <algorithm>

#include "knobs/knobs.h"

namespace tunebench::knobs {

namespace {

constexpr Phase kStart = Phase::process_start, kInProcess = Phase::in_process,
                kProcessWide = Phase::process_wide;
const char* const kExec = "execution mode and autograd";
const char* const kKernels = "kernels, layout and precision";
const char* const kHost = "host, threads and memory";
const char* const kDistributed = "distributed";
// Guard tolerances. fp32 knobs change only the order of floating-point sums (threads, layout,
// allocator); knobs that keep the same arithmetic (recomputed, profiled, preallocated, or with
// zero padding units) differ by rounding only; bf16 keeps 8 bits of mantissa (and int8 less):
// outputs and losses differ by up to a few per cent.
constexpr double kRounding = 1e-3, kSameArithmetic = 1e-5, kLowPrecision = 5e-2;
constexpr bool kMemory = true, kTimeOnly = false;  // report the peak-memory effect too
constexpr bool kInverted = true, kAsIs = false;    // ON sets the model option false / true
// A trial without the setting runs ON (Knob::on_when_unset): the debugging APIs off, LibTorch's
// oneDNN, and the built-in models' own defaults (no conv bias before batch norm, the built-in
// fused ops and attention, the causal mask made on the fly), as a worker started with nothing set
// reads back (KnobEvidence.AProgramThatSetsNothingRunsTheArmTheCatalogSaysForEveryKnob).
constexpr bool kOnWhenUnset = true;

// One knob per block of lines, its fields in Knob's order.
// clang-format off
const std::vector<Knob> kCatalog{
    {"no_grad", Family::autograd, kInProcess, kExec, "both",
     "grad-enabled forward → forward under no-grad",
     "faster and less memory (PyTorch Performance Tuning Guide)",
     {}, {Mode::infer}, false, true, kRounding, kMemory},
    {"inference_mode", Family::autograd, kInProcess, kExec, "both",
     "no-grad → inference mode",
     "(beyond the documents: the stricter mode)",
     {}, {Mode::infer}, false, true, kRounding, kTimeOnly},
    {"zero_grad_none", Family::autograd, kInProcess, kExec, "both",
     "zero gradients in place → set them to none",
     "fewer memory operations (PyTorch Performance Tuning Guide)",
     {}, {Mode::train}, false, true, kRounding, kTimeOnly},
    {"conv_bias_off", Family::build, kInProcess, kExec, "both",
     "conv with bias before batch norm → without",
     "bias is redundant before BN (PyTorch Performance Tuning Guide)",
     {"resnet50"}, {}, false, true, kRounding, kTimeOnly, "conv_bias", kInverted, "", true, Needs::nothing,
     kOnWhenUnset},
    {"anomaly_off", Family::autograd, kInProcess, kExec, "both",
     "anomaly detection on → off",
     "debugging APIs slow training (PyTorch Performance Tuning Guide)",
     {}, {Mode::train}, false, true, kRounding, kTimeOnly, "", kAsIs, "", true, Needs::nothing,
     kOnWhenUnset},
    {"profiler_off", Family::execution, kInProcess, kExec, "both",
     "autograd profiler recording → not",
     "profiling and debugging APIs slow execution (PyTorch Performance Tuning Guide)",
     {}, {}, false, true, kSameArithmetic, kTimeOnly, "", kAsIs, "", true, Needs::nothing,
     kOnWhenUnset},
    {"checkpoint", Family::execution, kInProcess, kExec, "both",
     "store all activations → recompute blocks in backward",
     "50-70 % less memory for ~20 % more time (Performance Optimization Tips); selective checkpointing cuts peak 40 % (Memory Management Strategies)",
     {"resnet50", "gpt"}, {Mode::train}, false, true, kSameArithmetic, kMemory,
     "checkpoint", kAsIs},
    {"inplace_act", Family::build, kInProcess, kExec, "both",
     "out-of-place activations → in-place (relu_)",
     "saves memory (Performance Optimization Tips)",
     {"resnet50"}, {}, false, true, kRounding, kMemory, "inplace_act", kAsIs,
     "001 says an in-place update such as x = x + y breaks autograd: it does not (autograd "
     "checks versions and the tests train with in-place residual adds)"},
    // off/on: micro-batches per step.
    {"grad_accum", Family::execution, kInProcess, kExec, "both",
     "batch B → B/k micro-batches × k, gradients accumulated",
     "larger effective batch within memory (Performance Optimization Tips)",
     {"gpt", "resnet50"}, {Mode::train}, 1, 4, kRounding, kMemory},
    // Training only: one forward and backward at the max length.
    {"preallocate", Family::execution, kInProcess, kExec, "both",
     "variable sequence lengths as they come → one max-length step first",
     "avoids re-allocation and fragmentation (PyTorch Performance Tuning Guide)",
     {"gpt"}, {Mode::train}, false, true, kSameArithmetic, kMemory},
    // The GPT MLP's bias add + erf-GELU (worker/actions/script.cpp).
    {"jit_fusion", Family::script, kProcessWide, kKernels, "both",
     "eager pointwise chain → TorchScript-fused",
     "fusion amortises memory traffic and launches (PyTorch Performance Tuning Guide); compile 1.2-2x (Performance Optimization Tips), 2.5x (Memory Management Strategies)",
     {"gpt"}, {Mode::infer}, false, true, kRounding, kTimeOnly},
    {"builtin_ops", Family::build, kInProcess, kKernels, "both",
     "hand-written LayerNorm / GELU / attention → built-in fused ops",
     "built-in fused kernels are faster (Memory Management Strategies)",
     {"gpt"}, {}, false, true, kRounding, kTimeOnly, "builtin_ops", kAsIs, "", true, Needs::nothing,
     kOnWhenUnset},
    {"flash_attention", Family::build, kInProcess, kKernels, "both",
     "math attention → fused/flash attention",
     "up to 40 % faster (Memory Management Strategies)",
     {"gpt"}, {}, false, true, kRounding, kTimeOnly, "fused_attention", kAsIs, "", true, Needs::nothing,
     kOnWhenUnset},
    {"causal_mask_fly", Family::build, kInProcess, kKernels, "both",
     "causal mask stored as a buffer → made on the fly",
     "less memory, matters at long context (Memory Management Strategies)",
     {"gpt"}, {}, false, true, kRounding, kMemory, "causal_mask_fly", kAsIs, "", true, Needs::nothing,
     kOnWhenUnset},
    {"channels_last", Family::precision, kInProcess, kKernels, "both",
     "NCHW → NHWC model and input",
     "faster, with AMP on tensor cores (PyTorch Performance Tuning Guide)",
     {"resnet50"}, {}, false, true, kRounding, kTimeOnly, "", kAsIs, "", true, Needs::conv2d},
    {"onednn", Family::precision, kProcessWide, kKernels, "cpu",
     "ATen's own CPU convolutions → oneDNN's (LibTorch's default)",
     "(beyond the documents: the default kernels; seen while setting up Debian's LibTorch: 1x1 "
     "convs leave oneDNN for a slow im2col path at 1 thread)",
     // Inference only: in training the loss after one step differed by 0.36 % between the two
     // kernel libraries (ResNet-50 tiny, batch 8), beyond an fp32 knob's tolerance; not yet
     // understood, so not measured.
     // LibTorch enables oneDNN unless told not to: a program that sets nothing runs ON (read back
     // by every conv model's trial, test Arms.WhatAProgramThatSetsNothingRunsIsMeasured…).
     {"resnet50"}, {Mode::infer}, false, true, kRounding, kTimeOnly, "", kAsIs, "", true,
     Needs::conv2d, kOnWhenUnset},
    {"amp", Family::precision, kInProcess, kKernels, "both",
     "fp32 → autocast bf16 (CPU; fp16 with loss scaling on CUDA)",
     "up to 3x (PyTorch Performance Tuning Guide; Performance Optimization Tips), bf16 3x (Memory Management Strategies)",
     {}, {}, false, true, kLowPrecision, kTimeOnly},
    // The CUDA knobs act in the worker through worker/actions/cuda.cpp.
    {"tf32", Family::cuda, kProcessWide, kKernels, "cuda",
     "fp32 matmul → TF32",
     "tensor cores (Memory Management Strategies)",
     {}, {}, false, true, kRounding, kTimeOnly},
    {"dims_mult8", Family::execution, kInProcess, kKernels, "both",
     "odd vocabulary and MLP widths → padded to multiples of 8",
     "tensor cores need multiples of 8 (PyTorch Performance Tuning Guide)",
     {"gpt"}, {}, false, true, kSameArithmetic, kTimeOnly, "dims_mult8", kAsIs},
    {"vocab_pad", Family::build, kInProcess, kKernels, "both",
     "vocab 50257 → 50304 (next multiple of 64)",
     "~10 % faster (Memory Management Strategies)",
     {"gpt"}, {}, false, true, kRounding, kTimeOnly, "vocab_pad", kAsIs},
    {"cudnn_benchmark", Family::cuda, kProcessWide, kKernels, "cuda",
     "cuDNN autotuner off → on (static and varying shapes)",
     "helps static shapes, can hurt varying ones (PyTorch Performance Tuning Guide; cudnn.benchmark note)",
     {"resnet50"}, {}, false, true, kRounding, kTimeOnly, "", kAsIs,
     "002's conv(x, algo=...) does not exist in any PyTorch API"},
    {"fused_adamw", Family::precision, kInProcess, kKernels, "both",
     "per-parameter AdamW → one fused AdamW kernel",
     "5-10 % faster (Memory Management Strategies)",
     {}, {Mode::train}, false, true, kRounding, kTimeOnly, "", kAsIs, "", true, Needs::nothing,
     false, "SGD (the worker's optimizer when no optimizer knob is set)"},
    // Process-wide, not per arm: beside an fp32 arm in one paired worker, the quantized engine's
    // threads kept running after its blocks (the fp32 arm's samples took 0.3 ms alone, 1.1 ms
    // with ~75-140 % of their wall time waiting for a CPU right after a quantized block).
    {"quantize_linear", Family::script, kProcessWide, kKernels, "cpu",
     "fp32 Linear → dynamically quantized int8 Linear",
     "partial quantization saves memory (Memory Management Strategies)",
     {"dlrm"}, {Mode::infer}, false, true, kLowPrecision, kMemory},
    {"freeze_script", Family::script, kInProcess, kKernels, "both",
     "eager module → scripted, frozen, optimised for inference",
     "TorchScript for deployment (Performance Optimization Tips)",
     {"resnet50"}, {Mode::infer}, false, true, kRounding, kTimeOnly},
    // Values: false or an Inductor mode (knobs/compile.h). Inference in the C++ worker: an
    // AOTInductor package, compiled once per model configuration and cached; training (and
    // inference under worker_build "python"): torch.compile in the Python worker.
    {"compile", Family::compile, kInProcess, kKernels, "both",
     "eager model → compiled by Inductor (C++: AOTInductor package; Python worker: torch.compile)",
     "torch.compile: typical speedups 1.2-2x (Performance Optimization Tips); about 2.5x (Memory Management Strategies)",
     {}, {}, false, "default", kRounding, kTimeOnly, "", kAsIs, "", true, Needs::twin},
    // "all" is resolved to the host's cores when the suite is expanded.
    {"omp_threads", Family::process, kStart, kHost, "cpu",
     "OMP_NUM_THREADS and intra-op threads: 1 → all cores",
     "the easiest switch (PyTorch Performance Tuning Guide)",
     {}, {}, 1, "all", kRounding, kTimeOnly},
    {"omp_affinity", Family::process, kStart, kHost, "cpu",
     "unbound → OMP_PROC_BIND=CLOSE, OMP_SCHEDULE=STATIC, GOMP_CPU_AFFINITY",
     "pinning threads steadies and speeds execution (PyTorch Performance Tuning Guide)",
     {}, {}, false, true, kRounding, kTimeOnly},
    {"omp_runtime", Family::process, kStart, kHost, "cpu",
     "GNU libgomp → LLVM libomp preloaded",
     "sometimes faster (PyTorch Performance Tuning Guide)",
     {}, {}, false, true, kRounding, kTimeOnly},
    {"allocator", Family::process, kStart, kHost, "cpu",
     "glibc malloc → jemalloc (or tcmalloc, jemalloc without decay)",
     "reuses memory, fewer system calls (PyTorch Performance Tuning Guide)",
     {}, {}, "glibc", "jemalloc", kRounding, kMemory},
    {"malloc_tunables", Family::process, kStart, kHost, "cpu",
     "glibc defaults → glibc told to keep freed memory",
     "(beyond the documents: the cheapest fix for allocator page-fault storms)",
     {}, {}, false, true, kRounding, kMemory},
    {"numa_bind", Family::process, kStart, kHost, "cpu",
     "unbound → numactl --cpunodebind=0 --membind=0",
     "avoid cross-socket traffic (PyTorch Performance Tuning Guide)",
     {}, {}, false, true, kRounding, kTimeOnly},
    {"worker_build", Family::process, kStart, kHost, "both",
     "this tunebench build → another build's worker (a path per arm: yesterday's build, "
     "another LibTorch)",
     "(beyond the documents: software A/B, the same experiment run by two builds)",
     {}, {}, "self", "self", kRounding, kTimeOnly},
    {"multi_instance", Family::distributed, kStart, kHost, "cpu",
     "one process with all cores → one instance per core group (pinned), throughput summed",
     "raises throughput (PyTorch Performance Tuning Guide)",
     {}, {Mode::infer}, false, true, kRounding, kTimeOnly},
    {"empty_cache", Family::cuda, kProcessWide, kHost, "cuda",
     "empty_cache() every step → only in idle windows",
     "(Memory Management Strategies)",
     {}, {}, false, true, kRounding, kMemory, "", kAsIs, "", true, Needs::nothing, false, "",
     true},
    {"pinned_memory", Family::cuda, kInProcess, kHost, "cuda",
     "pageable host batches → pinned + non-blocking copies",
     "faster host-to-device transfer (Performance Optimization Tips; Memory Management Strategies)",
     {}, {}, false, true, kRounding, kTimeOnly},
    {"on_device_alloc", Family::cuda, kInProcess, kHost, "cuda",
     "create on CPU then .to(cuda) → create on the device",
     "(PyTorch Performance Tuning Guide)",
     {}, {}, false, true, kRounding, kTimeOnly},
    {"avoid_sync", Family::cuda, kInProcess, kHost, "cuda",
     "host sync every step → none",
     "(PyTorch Performance Tuning Guide)",
     {}, {Mode::train}, false, true, kRounding, kTimeOnly},
    {"cuda_graphs", Family::cuda, kInProcess, kHost, "cuda",
     "eager launches → captured graph replay",
     "\"reduce-overhead\" (Performance Optimization Tips)",
     {}, {}, false, true, kRounding, kTimeOnly},
    {"streams_overlap", Family::cuda, kInProcess, kHost, "cuda",
     "copies and compute on one stream → copy stream overlapped",
     "reduces idle time (Memory Management Strategies)",
     {}, {}, false, true, kRounding, kTimeOnly},
    {"dataloader_workers", Family::input, kProcessWide, kHost, "both",
     "0 workers → N workers (and prefetch), synthetic per-sample decode cost",
     "data loading is often the bottleneck (Performance Optimization Tips)",
     {"resnet50"}, {}, 0, 2, kRounding, kTimeOnly},
    {"ddp_scaling", Family::distributed, kStart, kDistributed, "both",
     "1 rank → one rank per core group or GPU (c10d Gloo / NCCL, batch split across ranks, "
     "gradients all-reduced)",
     "2 GPUs ~1.8x, 4 ~3.5x (Performance Optimization Tips)",
     {"gpt", "resnet50"}, {Mode::train}, false, true, kRounding, kTimeOnly},
    {"ddp_no_sync", Family::distributed, kStart, kDistributed, "both",
     "all-reduce every micro-batch → only on the last of 4 (c10d Gloo / NCCL ranks)",
     "skip unnecessary all-reduce (PyTorch Performance Tuning Guide)",
     {"gpt"}, {Mode::train}, false, true, kRounding, kTimeOnly},
};
// clang-format on

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

}  // namespace

const std::vector<Knob>& catalog() { return kCatalog; }

const Knob* find(const std::string& id) {
  for (const auto& k : catalog()) {
    if (k.id == id) return &k;
  }
  return nullptr;
}

bool pairable(const nlohmann::json& off, const nlohmann::json& on) {
  for (const auto* settings : {&off, &on}) {
    for (const auto& [id, value] : settings->items()) {
      const Knob* knob = find(id);
      if (!knob || knob->phase == Phase::in_process) continue;
      const nlohmann::json& other = settings == &off ? on : off;
      if (!other.contains(id) || other.at(id) != value) return false;
    }
  }
  return true;
}

std::string several_processes(const nlohmann::json& settings) {
  for (const auto& [id, value] : settings.items()) {
    const Knob* knob = find(id);
    if (knob && knob->family == Family::distributed && value != knob->off) return id;
  }
  return "";
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

}  // namespace tunebench::knobs
