// The host's hardware from known /proc and show_config() text: the CPU facts and kernel flags,
// the hardware class and machine ids, the line a person reads, and LibTorch's configuration one
// value per key (the 1.13 and 2.x texts as they print).
#include <gtest/gtest.h>

#include "core/hardware.h"
#include "core/records.h"

namespace tunebench::hardware {
namespace {

using nlohmann::json;

// Two processors of an AMD EPYC with AVX-512 bf16 under a hypervisor, as /proc/cpuinfo prints.
const char* kEpycCpuinfo =
    "processor\t: 0\n"
    "vendor_id\t: AuthenticAMD\n"
    "cpu family\t: 25\n"
    "model\t\t: 17\n"
    "model name\t: AMD EPYC\n"
    "stepping\t: 1\n"
    "microcode\t: 0x1000065\n"
    "siblings\t: 2\n"
    "cpu cores\t: 1\n"
    "flags\t\t: fpu sse sse2 avx avx2 fma f16c avx512f avx512bw avx512_bf16 hypervisor lm\n"
    "\n"
    "processor\t: 1\n"
    "vendor_id\t: GenuineIntel\n"
    "cpu family\t: 6\n"
    "flags\t\t: fpu amx_tile\n";

json host_with(const json& cpu, const std::string& hostname = "vm") {
  return {{"hostname", hostname},
          {"cpu_model", cpu.value("model_name", "")},
          {"cores", 2},
          {"kernel", "6.1.0-1"},
          {"hardware",
           {{"cpu", cpu},
            {"caches", {{"L1d", "32K"}, {"L2", "1024K"}}},
            {"cores", 2},
            {"sockets", 1},
            {"numa_nodes", 1},
            {"memory_bytes", int64_t(24) << 30},
            {"hypervisor", "KVM"},
            {"gpu", {{"count", 0}, {"name", ""}, {"memory_bytes", 0}, {"capability", ""}}}}}};
}

TEST(Hardware, CpuinfoGivesTheFirstProcessorsFactsAndItsKernelFlagsOnly) {
  const json cpu = cpu_from_cpuinfo(kEpycCpuinfo);
  EXPECT_EQ(cpu["vendor"], "AuthenticAMD");
  EXPECT_EQ(cpu["family"], 25);
  EXPECT_EQ(cpu["model"], 17);
  EXPECT_EQ(cpu["stepping"], 1);
  EXPECT_EQ(cpu["model_name"], "AMD EPYC");
  EXPECT_EQ(cpu["microcode"], "0x1000065");
  EXPECT_EQ(cpu["threads_per_core"], 2);
  // In kernel_flags() order; sse, lm and fpu select no kernel; the second processor's amx_tile
  // is not the first processor's.
  EXPECT_EQ(cpu["flags"], json({"avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512_bf16",
                                "hypervisor"}));
  EXPECT_EQ(bracketed_mode("always [madvise] never"), "madvise");
  EXPECT_EQ(bracketed_mode("never"), "");
}

// The case this identity exists for: one VM name, one "AMD EPYC" model name, two CPUs (AVX2 only,
// then AVX-512 bf16). Another class, another machine; a microcode or kernel update is neither.
TEST(Hardware, AnotherCpuUnderOneNameIsAnotherMachineAMicrocodeUpdateIsNot) {
  const json avx512 = host_with(cpu_from_cpuinfo(kEpycCpuinfo));
  json avx2_cpu = cpu_from_cpuinfo(kEpycCpuinfo);
  avx2_cpu["flags"] = json({"avx", "avx2", "fma", "f16c", "hypervisor"});
  const json avx2 = host_with(avx2_cpu);
  ASSERT_TRUE(recorded(avx512));
  EXPECT_EQ(avx512["cpu_model"], avx2["cpu_model"]);  // what the old fingerprint could see
  EXPECT_NE(class_id(avx512), class_id(avx2));
  EXPECT_NE(machine_id(avx512), machine_id(avx2));

  json updated = avx512;
  updated["hardware"]["cpu"]["microcode"] = "0x1000099";
  updated["kernel"] = "6.12.0-2";
  EXPECT_EQ(class_id(updated), class_id(avx512));
  EXPECT_EQ(machine_id(updated), machine_id(avx512));

  // Identical hardware under two names: one class (procurement), two machines (two histories).
  const json twin = host_with(cpu_from_cpuinfo(kEpycCpuinfo), "vm2");
  EXPECT_EQ(class_id(twin), class_id(avx512));
  EXPECT_NE(machine_id(twin), machine_id(avx512));

  EXPECT_EQ(describe(avx512),
            "AMD EPYC (AuthenticAMD family 25 model 17 stepping 1), 2 cores, 24 GiB, avx avx2 fma "
            "f16c avx512f avx512bw avx512_bf16, under KVM");
  EXPECT_EQ(describe(avx2),
            "AMD EPYC (AuthenticAMD family 25 model 17 stepping 1), 2 cores, 24 GiB, avx avx2 fma "
            "f16c, under KVM");
}

// Two boots of one VM type (the published run's host and a fresh VM of its type) differ only by
// 12 KiB of MemTotal: one class, one machine, one description. A real difference (a kernel flag, a
// core, a GiB of memory) is another class.
TEST(Hardware, MemoryJitterBetweenBootsIsOneClassARealDifferenceIsAnother) {
  json published = host_with(cpu_from_cpuinfo(kEpycCpuinfo));
  published["hardware"]["memory_bytes"] = int64_t(25276194816);
  json fresh = published;
  fresh["hardware"]["memory_bytes"] = int64_t(25276182528);
  EXPECT_EQ(class_id(fresh), class_id(published));
  EXPECT_EQ(machine_id(fresh), machine_id(published));
  EXPECT_EQ(describe(fresh), describe(published));

  json flag = published;
  flag["hardware"]["cpu"]["flags"].push_back("avx512_fp16");
  json core = published;
  core["hardware"]["cores"] = 3;
  json gib = published;
  gib["hardware"]["memory_bytes"] = int64_t(25276194816) + (int64_t(1) << 30);
  json gpu = published;
  gpu["hardware"]["gpu"]["memory_bytes"] = int64_t(80) << 30;
  for (const json* other : {&flag, &core, &gib, &gpu}) {
    EXPECT_NE(class_id(*other), class_id(published)) << other->dump();
    EXPECT_NE(machine_id(*other), machine_id(published)) << other->dump();
  }

  // A GPU's reported total moves a little between drivers too.
  json driver = gpu;
  driver["hardware"]["gpu"]["memory_bytes"] = (int64_t(80) << 30) - (int64_t(6) << 20);
  EXPECT_EQ(class_id(driver), class_id(gpu));
}

// A host stored before the hardware was recorded: not recorded, no class, and its machine is its
// whole fingerprint (so its history is what it was).
TEST(Hardware, AHostWithoutHardwareIsNotRecordedAndKeepsItsOldIdentity) {
  const json old = {{"hostname", "vm"}, {"cpu_model", "AMD EPYC"}, {"cores", 2}};
  EXPECT_FALSE(recorded(old));
  EXPECT_EQ(class_id(old), "");
  EXPECT_EQ(machine_id(old), sha256_hex(old.dump()));
  EXPECT_EQ(describe(old), "hardware not recorded");
  EXPECT_NE(machine_id(old), machine_id(host_with(cpu_from_cpuinfo(kEpycCpuinfo))));
}

// LibTorch 1.13 (Debian) prints its build settings on one line, 2.x too, with values that hold
// ", " themselves (CXX_FLAGS) or commas without a space (CUDA_FLAGS): one value per key.
TEST(Hardware, TorchConfigIsParsedIntoOneValuePerKey) {
  const std::string text =
      "PyTorch built with:\n"
      "  - GCC 13.3\n"
      "  - C++ Version: 202002\n"
      "  - Intel(R) oneAPI Math Kernel Library Version 2024.2-Product Build 20240605 for Intel(R) "
      "64 architecture applications\n"
      "  - Intel(R) MKL-DNN v3.13.3 (Git Hash b38f97eb)\n"
      "  - OpenMP 201511 (a.k.a. OpenMP 4.5)\n"
      "  - LAPACK is enabled (usually provided by MKL)\n"
      "  - CPU capability usage: AVX512\n"
      "  - CUDA Runtime 12.1\n"
      "  - Build settings: BLAS_INFO=mkl, BUILD_TYPE=Release, CUDA_FLAGS= -Xcudafe "
      "--diag_suppress=a,--diag_suppress=b -O2, CXX_FLAGS=-O2 -fPIC, -Wall, LAPACK_INFO=mkl, "
      "TORCH_VERSION=2.15.0, USE_CUDA=1, USE_OPENMP=ON, \n";
  const json c = parse_torch_config(text);
  EXPECT_EQ(c["BLAS_INFO"], "mkl");
  EXPECT_EQ(c["BUILD_TYPE"], "Release");
  EXPECT_EQ(c["CUDA_FLAGS"], "-Xcudafe --diag_suppress=a,--diag_suppress=b -O2");
  EXPECT_EQ(c["CXX_FLAGS"], "-O2 -fPIC, -Wall");
  EXPECT_EQ(c["LAPACK_INFO"], "mkl");
  EXPECT_EQ(c["TORCH_VERSION"], "2.15.0");
  EXPECT_EQ(c["USE_CUDA"], "1");
  EXPECT_EQ(c["USE_OPENMP"], "ON");
  EXPECT_EQ(c["GCC"], "13.3");
  EXPECT_EQ(c["C++ Version"], "202002");
  EXPECT_EQ(c["Intel(R) oneAPI Math Kernel Library"],
            "2024.2-Product Build 20240605 for Intel(R) 64 architecture applications");
  EXPECT_EQ(c["Intel(R) MKL-DNN"], "v3.13.3 (Git Hash b38f97eb)");
  EXPECT_EQ(c["OpenMP"], "201511 (a.k.a. OpenMP 4.5)");
  EXPECT_EQ(c["LAPACK"], "enabled (usually provided by MKL)");
  EXPECT_EQ(c["CPU capability usage"], "AVX512");
  EXPECT_EQ(c["CUDA Runtime"], "12.1");
  EXPECT_FALSE(c.contains("PyTorch built with"));
  // No value holds another key's text (the old matching by substring put the whole settings line
  // under six keys).
  for (const auto& [key, value] : c.items()) {
    EXPECT_EQ(value.get<std::string>().find("USE_CUDA="), std::string::npos) << key;
  }
}

}  // namespace
}  // namespace tunebench::hardware
