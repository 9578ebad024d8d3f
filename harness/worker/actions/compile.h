// The compile action's request and twin check, for tests/test_compile_knob.cpp (the action itself
// is worker/actions/compile.cpp).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace tunebench::worker {
struct Arm;
}

namespace tunebench::compile_forward {

// Writes what models/python/aoti_compile.py and worker.py read into the existing folder `dir`:
// request.json (model, resolved options, device, `mode`), the C++ model's parameters and buffers
// by name (state.pt), the arm's batch (inputs.pt), its target (target.pt) and the model's
// inference output on it (expected.pt).
// Returns the request.
nlohmann::json write_request(worker::Arm& arm, const std::string& mode, const std::string& dir);

// The twin check of a request folder (aoti_compile.py --check): the JSON it prints (tensors,
// max_abs_difference, agrees). Throws std::runtime_error with the script's message when the twin
// cannot be built (names or shapes differ) or this build cannot run the script.
nlohmann::json check_twin(const std::string& dir);

// `tunebench twin-request --out DIR` (internal; models/python/worker.py runs it): the request of
// the trial given as JSON on stdin, its settings left out (the model and batch of its seed). Exit
// 0, or 1 with the reason on stderr.
int main_twin_request(const std::string& dir);

}  // namespace tunebench::compile_forward
