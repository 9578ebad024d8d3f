// The compile action's request and twin check, for tests/test_compile_knob.cpp (the action itself
// is worker/actions/compile.cpp).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace tunebench::worker {
struct Arm;
}

namespace tunebench::compile_forward {

// Writes what models/python/aoti_compile.py reads into the existing folder `dir`: request.json
// (model, resolved options, device, `mode`), the C++ model's parameters and buffers by name
// (state.pt), the arm's batch (inputs.pt) and the model's inference output on it (expected.pt).
// Returns the request.
nlohmann::json write_request(worker::Arm& arm, const std::string& mode, const std::string& dir);

// The twin check of a request folder (aoti_compile.py --check): the JSON it prints (tensors,
// max_abs_difference, agrees). Throws std::runtime_error with the script's message when the twin
// cannot be built (names or shapes differ) or this build cannot run the script.
nlohmann::json check_twin(const std::string& dir);

}  // namespace tunebench::compile_forward
