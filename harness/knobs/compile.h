// The compile family: the model compiled ahead of time by Inductor (torch.export → AOTInductor
// package) from its Python twin (models/python/twins.py), loaded in the C++ worker and fed the C++
// model's own parameters by name. The worker side is worker/actions/compile.cpp.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "knobs/knob.h"

namespace tunebench::knobs::compile {

inline constexpr const char* kCompile = "compile";

// The knob's values besides false (the eager C++ model): Inductor's modes that an AOTInductor
// package can be compiled with on this device kind.
const std::vector<std::string>& modes();

// evidence["compile"]:
//   kForward         "eager" | "aoti"
//   kMode            the Inductor mode the package was compiled with
//   kPackageCalls    calls of the package in the measured steps
//   kConstants       constants the package holds; kConstantsLoaded: of them fed from the C++
//                    model by name; kConstantsDerived: the rest, made from the C++ model's
//                    weights when the package was compiled (max-autotune's packed weights: its
//                    packages are keyed by a digest of those weights). Loaded + derived = all.
//   kKernels         kernels in the generated code; kCode: where that code is kept
//   kCompileSeconds  export + compilation when the package was made; kPackageBytes its size
//   kCache           "hit" (the package was in the cache) | "miss" (compiled for this trial)
inline constexpr const char* kForward = "forward";
inline constexpr const char* kMode = "mode";
inline constexpr const char* kPackageCalls = "package_calls";
inline constexpr const char* kConstants = "constants";
inline constexpr const char* kConstantsLoaded = "constants_loaded";
inline constexpr const char* kConstantsDerived = "constants_derived";
inline constexpr const char* kKernels = "kernels";
inline constexpr const char* kCode = "code";
inline constexpr const char* kCompileSeconds = "compile_seconds";
inline constexpr const char* kPackageBytes = "package_bytes";
inline constexpr const char* kCache = "cache";

// The rules of this family (knobs/knob.h's KnobRules).
const KnobRules& rules();

// Empty when `evidence` shows that compile = `value` took effect; otherwise what contradicts it.
std::string check_evidence(const nlohmann::json& value, const nlohmann::json& evidence);

}  // namespace tunebench::knobs::compile
