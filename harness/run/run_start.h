// What a new run and a resumed one do before measuring: the host made ready (TMPDIR, what a killed
// run left behind), the database's runs whose orchestrator is gone marked interrupted, and the
// suite's models from files read. Private to the orchestrator's files in harness/run/.
#pragma once

#include <string>

#include "plan/plan.h"
#include "plan/suite.h"
#include "run/orchestrator.h"
#include "store/storage.h"

namespace tunebench::orchestrator {

// Before this process writes a run: the runs of the database left "running" by an orchestrator
// that died without a word (kill -9, a reboot) are marked interrupted (core/liveness.h), each
// said with the command that resumes it, except `resuming` (said by resume itself).
void interrupt_gone_runs(storage::Database& db, const RunOptions& options,
                         const std::string& resuming = "");

// The models of `suite` read from files, read now (models/torchscript.h, run/python_model.h): what
// each offers decides its experiments' applicability, and a file that cannot be read, or whose
// forward rejects its inputs, is bad input, said before anything is written. Throws
// models::InvalidSpec.
plan::ModelOffers read_file_models(const suite::Suite& suite);

// Before a run or resume measures anything: TMPDIR must hold its folders (said before anything
// is written), and what a killed run left behind here (workers, folders) is cleared and said.
bool ready_to_run(const RunOptions& options);

}  // namespace tunebench::orchestrator
