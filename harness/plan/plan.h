// Planning = suite × host: which of a suite's experiments can run on this host and build, and
// the trials the run makes of those that can. The suite (plan/suite.h) is parsed without a host;
// everything that depends on one — a knob this LibTorch or machine lacks, a missing GPU, a
// distributed batch that does not split into this host's ranks, "all" cores — is decided here.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/model_spec.h"
#include "core/records.h"
#include "knobs/knobs.h"
#include "plan/suite.h"

namespace tunebench::plan {

// One experiment of the suite on this host.
struct PlannedExperiment {
  // The suite's experiment with its settings and arms resolved for this host (omp_threads "all"
  // becomes the host's cores).
  suite::Experiment experiment;
  std::string not_applicable;  // why it cannot run on this host/build; empty when it can
};

struct Plan {
  std::string suite_path;
  nlohmann::json base_settings;  // what every trial sets unless its arm says otherwise
  std::vector<PlannedExperiment> experiments;  // the suite's, in its order
};

// What the models read from files offer (models/torchscript.h inspect_file_model), by the path
// the suite gives each.
using ModelOffers = std::map<std::string, models::ModelOffer>;

// Never throws for a suite that parsed: what cannot run here is not applicable, with the reason.
// A model from a file is asked what it offers through `offers` (without its offer, a knob that
// needs something of it is not applicable, with the reason).
Plan make(const suite::Suite& suite, const knobs::HostCaps& host, const ModelOffers& offers = {});

// The run's trials: for each applicable experiment whose name matches `filter` (ECMAScript regex,
// empty = all), `processes` trials per arm in ABBA order (off, on, on, off, …; factorial cells
// forward then reversed), each with base settings, the experiment's and the arm's. Empty when
// every matching experiment is not applicable here; throws suite::SuiteError when none matches
// or the filter is not a regular expression. A paired experiment's trials come two by two, OFF
// then ON, for each of its `workers` (same process_index and pairing; odd workers
// ON-first).
std::vector<TrialSpec> trials(const Plan& plan, const std::string& filter);

}  // namespace tunebench::plan
