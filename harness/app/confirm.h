// Stage 2 of `tunebench check`: every benchmark stage 1 flagged is measured again,
// the same night, as a paired A/B of the kept last-good build (OFF) against this build (ON): a
// software A/B experiment (knob worker_build) per flagged benchmark, with the benchmark's own
// model, mode, batch and settings, resident pairs of processes alternating blocks, and sampling
// on until its interval decides (detect::confirm_target) or its budget is spent. The A/B is a run
// of its own (suite "confirm", label "confirm RUN"), stored like any other, so its trials,
// evidence and guard can be inspected; detect::decide turns its interval into the answer.
#pragma once

#include <string>

#include "analysis/check.h"

namespace tunebench::cli {

struct ConfirmOptions {
  std::string db;
  std::string last_good;  // the last-good tunebench executable
  double budget_s = 480;  // per flagged benchmark: seconds its workers may take in all
  int workers = 4;        // planned workers (resident pairs) per flagged benchmark
  bool quiet = false;
  std::string command_line;
};

// Runs the A/B of every flagged benchmark of `report` (one run for all of them) and sets each
// one's confirmation and status; marks the report confirmed. Throws std::invalid_argument when
// the last-good build is not an executable file or the A/B run could not start.
void confirm(check::Report& report, const ConfirmOptions& options);

}  // namespace tunebench::cli
