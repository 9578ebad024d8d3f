// Evidence keys every trial's read-back shares, whatever its knobs: the worker (torch) writes them
// into TrialResult::evidence, the knob families' rules (knobs/<family>.cpp) read them. A family's
// own keys are declared in its header (knobs/autograd.h, knobs/cuda.h, ...). A key written
// nowhere reads back as null, and a checker says so: renaming one constant renames both sides.
#pragma once

namespace tunebench::knobs::evidence {

// The worker's environment as it started: {"OMP_NUM_THREADS": "4", "MALLOC_CONF": ..., ...}
// (the variables the process family sets).
inline constexpr const char* kEnv = "env";
// at::get_num_threads() in the measured step (integer).
inline constexpr const char* kTorchThreads = "torch_threads";
// File names (no directory) of the allocator, OpenMP and BLAS libraries mapped into the worker:
// ["libomp.so.5", "libjemalloc.so.2", ...].
inline constexpr const char* kMappedLibraries = "mapped_libraries";
// The allocator mapped into the worker: "glibc", "jemalloc" or "tcmalloc".
inline constexpr const char* kAllocator = "allocator";
// The CPUs the worker may run on, as a list "0,1,2".
inline constexpr const char* kCpuAffinity = "cpu_affinity";
// The worker's NUMA memory policy: "default", "bind", "interleave", "preferred".
inline constexpr const char* kNumaPolicy = "numa_policy";
// The worker's own executable, the real path of /proc/self/exe (worker_build checks it).
inline constexpr const char* kExecutable = "executable";
// The LibTorch version the worker was built against, "2.15.0".
inline constexpr const char* kTorchVersion = "torch_version";
// Where the model's parameters were in the measured step: "cpu" or "cuda:N".
inline constexpr const char* kDevice = "device";
// The built model's structure, an object (Model::describe()). Its keys are below.
inline constexpr const char* kModel = "model";
// Start and end of the measured region, CLOCK_MONOTONIC nanoseconds (comparable between the
// processes of a multi-process trial).
inline constexpr const char* kMeasuredStartNs = "measured_start_ns";
inline constexpr const char* kMeasuredEndNs = "measured_end_ns";

// Keys inside evidence[kModel]: what the built model says about its build-time options.
namespace model {
inline constexpr const char* kConvBiasParameters = "conv_bias_parameters";  // conv_bias_off
inline constexpr const char* kInplaceAct = "inplace_act";                   // inplace_act
inline constexpr const char* kStoredMaskBuffers = "stored_mask_buffers";    // causal_mask_fly
inline constexpr const char* kVocabRows = "vocab_rows";    // vocab_pad, dims_mult8 (embedding rows)
inline constexpr const char* kVocabSize = "vocab_size";    // vocab_pad (the tokenizer's vocabulary)
inline constexpr const char* kBuiltinOps = "builtin_ops";  // builtin_ops
inline constexpr const char* kFusedAttention = "fused_attention";  // flash_attention
inline constexpr const char* kCheckpoint = "checkpoint";           // checkpoint
inline constexpr const char* kBlocks = "blocks";  // checkpoint: blocks that can be recomputed
inline constexpr const char* kMlpHidden = "mlp_hidden";  // dims_mult8
}  // namespace model

}  // namespace tunebench::knobs::evidence
