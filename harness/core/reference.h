// The reference kernel: a fixed piece of work with no LibTorch, timed by every worker
// beside its samples, so that a benchmark's history can be kept relative to how fast the host was
// when it ran. This VM drifts between a fast phase and one about 2× slower for minutes at a time;
// a benchmark timed in the slow phase one night and the fast one the next looks 2× apart in
// absolute time, while its time relative to a kernel timed in the same minutes need not.
//
// The mix matters (docs/user-guide.md, "Paired measurement"): a compute probe alone missed
// memory-bandwidth contention that slowed a stream 1.55×. So the kernel is three parts, one after
// another, single threaded: a floating-point dependency chain (latency), a small matrix product
// (throughput, in cache) and a stream over buffers larger than a last-level cache (bandwidth). Its
// buffers are allocated and faulted in at the first call, so no later call pays for page faults;
// they stay resident, and the worker subtracts them from the peak RSS it reports (resident_bytes).
// About 10 ms a run here.
//
// Whether relative time is the quieter history on a host is measured, not assumed: `tunebench
// calibrate` measures the night-to-night noise of both, and `tunebench check` uses the quieter.
#pragma once

namespace tunebench::reference {

// Wall seconds of one run of the whole kernel (the three parts).
double kernel_seconds();

// The seconds of each part of one run, for the tests and bench/: the parts must each take time
// and scale with their own work.
struct Parts {
  double chain = 0, gemm = 0, stream = 0;
};
Parts kernel_parts();

// Bytes of the kernel's buffers in this process: 0 before the first run, then what they hold
// resident (64 MiB and a little), which a worker's peak RSS would otherwise include.
long long resident_bytes();

}  // namespace tunebench::reference
