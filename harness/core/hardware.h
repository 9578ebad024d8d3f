// What a host's hardware is, from the facts the host fingerprint records (run/host.cpp reads them
// from /proc and /sys; here they are plain text and JSON, so the rules are tested on known input).
// Two identities come from it:
//   - the hardware class: the CPU (vendor, family, model, stepping, name, the instruction-set
//     flags that change PyTorch's kernels, caches, SMT), cores, sockets, NUMA nodes, memory, the
//     hypervisor and the GPUs. Identical machines share it; procurement compares classes.
//   - the machine: a hostname on one hardware class. A nightly history belongs to a machine, so a
//     cloud VM that moves to another CPU under the same name starts a new history (and `check`
//     says so) instead of mixing two machines' timings.
// Microcode, kernel and transparent-huge-page mode are recorded but change neither id: they are
// the machine's configuration, shown beside it.
// A host stored before the hardware was recorded has no "hardware" object: its class is unknown
// ("hardware not recorded"), and its machine is its whole fingerprint, as before.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tunebench::hardware {

// The instruction-set flags of /proc/cpuinfo that select PyTorch's CPU kernels (ATen's CPU
// capability, oneDNN's ISA, bf16/fp16/int8 paths), in this order.
const std::vector<std::string>& kernel_flags();

// The first processor's vendor, family, model, stepping, model name, microcode and kernel flags,
// and the threads per core (siblings / cpu cores), from the text of /proc/cpuinfo. Missing keys
// are left out.
nlohmann::json cpu_from_cpuinfo(const std::string& cpuinfo);

// The mode in brackets of /sys/kernel/mm/transparent_hugepage/enabled ("always [madvise] never"
// gives "madvise"); "" when there is none.
std::string bracketed_mode(const std::string& text);

// Whether the host fingerprint records its hardware.
bool recorded(const nlohmann::json& host);
// The hardware class's id (hex SHA-256 of the hardware facts), "" when not recorded.
std::string class_id(const nlohmann::json& host);
// The machine's id: hostname and hardware class; for a host without hardware, its whole
// fingerprint (the identity every run had before the hardware was recorded).
std::string machine_id(const nlohmann::json& host);
// One line a person reads: "AMD EPYC (AuthenticAMD family 25 model 17 stepping 1), 2 cores,
// 24 GiB, avx2 avx512f avx512_bf16, KVM", or "hardware not recorded".
std::string describe(const nlohmann::json& host);

// LibTorch's at::show_config() text as keys with one value each: every "Build settings" entry
// (BLAS_INFO, USE_CUDA, ...), and the other lines under names of their own ("compiler",
// "CPU capability usage", "oneDNN", "MKL", "OpenMP", "LAPACK", ...).
nlohmann::json parse_torch_config(const std::string& text);

}  // namespace tunebench::hardware
