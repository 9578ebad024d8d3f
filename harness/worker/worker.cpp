#include "worker/worker.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <iterator>

#include "knobs/knobs.h"
#include "worker/heap_offset.h"
#include "worker/paired.h"

namespace tunebench::worker {

using nlohmann::json;

namespace {

// The test-only faults (knobs.h, kFaultSetting) that happen before the trial runs; "slow" acts
// inside the measured step (worker/trial.cpp).
void fail_on_purpose(const TrialSpec& spec, int result_fd) {
  if (!spec.settings.contains(knobs::kFaultSetting)) return;
  const std::string fault = spec.settings[knobs::kFaultSetting];
  if (fault == "segfault") raise(SIGSEGV);
  if (fault == "abort") std::abort();
  if (fault == "killed") raise(SIGKILL);
  if (fault == "garbage") {
    const char text[] = "this is not JSON\n";
    (void)!write(result_fd, text, sizeof(text) - 1);
    _exit(0);
  }
  if (fault == "silent") _exit(0);
  if (fault == "hang") {
    for (;;) pause();
  }
}

}  // namespace

double cpu_probe_seconds() {
  // A fixed dependent chain of floating-point work: no memory traffic, no threads.
  const auto start = std::chrono::steady_clock::now();
  volatile double sink = 0;
  double x = 1.0;
  for (int i = 0; i < 2'000'000; ++i) x = x * 1.0000001 + 1e-9;
  sink = x;
  (void)sink;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int main_worker() {
  // Before anything of the trial is allocated, the request included (worker/heap_offset.h).
  randomize_heap_offset();
  // Only the result goes to the real stdout; whatever a library prints goes to stderr.
  const int result_fd = dup(STDOUT_FILENO);
  dup2(STDERR_FILENO, STDOUT_FILENO);
  json result;
  int code = 0;
  bool paired = false;
  try {
    // The request is the first line; a resident worker (core/records.h, kResidentRequest) reads
    // its commands from the lines after it, any other request may go on to the end of stdin.
    std::string input;
    std::getline(std::cin, input);
    json request = json::parse(input, nullptr, /*allow_exceptions=*/false);
    if (request.is_object() && request.value(kResidentRequest, false)) {
      const TrialSpec spec = trial_spec_from_json(request.at("trial"));
      fail_on_purpose(spec, result_fd);
      return run_resident(spec, request.value("on", false), std::cin, result_fd);
    }
    input += std::string(std::istreambuf_iterator<char>(std::cin), {});
    request = json::parse(input);
    // A paired trial (worker/paired.h) says so; anything else is one arm's TrialSpec.
    paired = request.is_object() && request.value("paired", false);
    if (paired) {
      const PairedSpec spec = paired_spec_from_json(request);
      fail_on_purpose(spec.off, result_fd);
      fail_on_purpose(spec.on, result_fd);
      result = to_json(run_paired(spec));
    } else {
      const TrialSpec spec = trial_spec_from_json(request);
      fail_on_purpose(spec, result_fd);
      result = to_json(run_trial(spec));
    }
  } catch (const std::exception& e) {
    result = paired ? to_json(PairedResult{}) : to_json(TrialResult{});
    result["status"] = "failed";
    result["error"] = std::string("worker: ") + e.what();
    code = 1;
  }
  const bool written = write_line(result_fd, result.dump());
  close(result_fd);
  return written ? code : 1;
}

}  // namespace tunebench::worker
