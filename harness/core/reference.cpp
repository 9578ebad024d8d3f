#include "core/reference.h"

#include <algorithm>
#include <chrono>
#include <vector>

namespace tunebench::reference {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Results land here so that the compiler cannot drop the work.
volatile double g_sink = 0;

// 1.5 million dependent multiply-adds: each waits for the one before (latency, not throughput).
double chain() {
  double x = g_sink + 1.0;
  for (int i = 0; i < 1'500'000; ++i) x = x * 0.999999 + 1e-6;
  return x;
}

constexpr int kN = 96;  // 96 × 96 doubles: three matrices, 216 KiB, in a core's L2

// C = A · B, i-k-j order (vectorisable inner loop), twice.
double gemm() {
  static std::vector<double> a(kN * kN, 0.5), b(kN * kN, 0.25), c(kN * kN);
  for (int rep = 0; rep < 2; ++rep) {
    std::fill(c.begin(), c.end(), 0.0);
    for (int i = 0; i < kN; ++i) {
      for (int k = 0; k < kN; ++k) {
        const double aik = a[size_t(i * kN + k)];
        for (int j = 0; j < kN; ++j) c[size_t(i * kN + j)] += aik * b[size_t(k * kN + j)];
      }
    }
  }
  return c[size_t(kN * kN / 2)];
}

constexpr size_t kStream = size_t(4) << 20;  // 4 Mi doubles: 32 MiB per buffer

long long g_resident = 0;

// dst = src · s + dst over two 32-MiB buffers (64 MiB read, 32 MiB written), once.
double stream() {
  static std::vector<double> src(kStream, 1.0), dst(kStream, 0.0);  // faulted in at first use
  g_resident = (2 * (long long)kStream + 3 * kN * kN) * (long long)sizeof(double);
  const double s = 1e-9;
  for (size_t i = 0; i < kStream; ++i) dst[i] = src[i] * s + dst[i];
  return dst[kStream / 3];
}

}  // namespace

Parts kernel_parts() {
  Parts p;
  auto start = Clock::now();
  g_sink = chain();
  p.chain = since(start);
  start = Clock::now();
  g_sink = gemm();
  p.gemm = since(start);
  start = Clock::now();
  g_sink = stream();
  p.stream = since(start);
  return p;
}

long long resident_bytes() { return g_resident; }

double kernel_seconds() {
  const auto start = Clock::now();
  g_sink = chain();
  g_sink = gemm();
  g_sink = stream();
  return since(start);
}

}  // namespace tunebench::reference
