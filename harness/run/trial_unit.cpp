// A unit's worker process(es) started and their results read back (run/trial_unit.h).
#include "run/trial_unit.h"

#include <filesystem>
#include <numeric>

#include "core/multiproc.h"
#include "knobs/knobs.h"
#include "run/resident.h"
#include "run/slurm.h"
#include "run/worker_result.h"
#include "worker/heap_offset.h"

namespace tunebench::orchestrator {

TrialResult run_alone(const TrialSpec& t, const Launch& launch,
                      const volatile sig_atomic_t* interrupt, bool& interrupted) {
  const multiproc::Rendezvous rendezvous;
  std::vector<TrialSpec> parts;
  // Ranks over a Slurm allocation: one slot per task ("ddp_scaling": true is one rank per task),
  // then laid out on its nodes (run/slurm.h).
  const bool over_slurm = launch.slurm && knobs::distributed::layout(t.settings, 1).role == "rank";
  try {
    if (over_slurm) {
      std::vector<int> slots(size_t(launch.slurm->tasks));
      std::iota(slots.begin(), slots.end(), 0);
      parts = knobs::distributed::split(t, slots, rendezvous.dir(), slots.size());
      slurm::place_ranks(t, parts, *launch.slurm, slurm::free_port());
    } else {
      parts = knobs::distributed::split(t, launch.cpus, rendezvous.dir(), launch.gpus);
    }
  } catch (const std::exception& e) {
    return failed_result({}, e.what());  // stored as failed, nothing started
  }
  std::vector<Command> commands;
  for (const auto& part : parts) {
    commands.push_back(launch.command(setup_of(part), to_json(as_sent(part)).dump(), over_slurm));
    if (over_slurm) {
      commands.back().argv = slurm::srun_argv(*launch.slurm, part, commands.back().argv);
      for (const auto& [k, v] : launch.slurm->env) commands.back().env.emplace(k, v);
    }
  }
  const auto outcomes = spawn_all(commands, t.timeout_s, interrupt);
  if (outcomes.front().interrupted) {
    interrupted = true;
    return {};
  }
  std::vector<TrialResult> results;
  for (size_t p = 0; p < parts.size(); ++p) {
    TrialResult pr = interpret(outcomes[p], parts[p]);
    if (outcomes[p].sibling_failed) pr.error = "stopped: another process of the trial failed";
    check_evidence(parts[p], t.mode, pr, *launch.links);
    results.push_back(std::move(pr));
  }
  return multiproc::combine(t, parts, std::move(results));
}

std::vector<TrialResult> run_pair(const TrialSpec& off, const TrialSpec& on, const Launch& launch,
                                  const volatile sig_atomic_t* interrupt, bool& interrupted) {
  PairedSpec spec{off, on, off.pairing.blocks, off.pairing.block_samples, off.pairing.on_first};
  const auto outcome = spawn_all({launch.command(setup_of(off), to_json(spec).dump())},
                                 off.timeout_s + on.timeout_s, interrupt)
                           .front();
  if (outcome.interrupted) {
    interrupted = true;
    return {};
  }
  std::vector<TrialResult> results = interpret_paired(outcome, off);
  check_evidence(off, off.mode, results[0], *launch.links);
  check_evidence(on, on.mode, results[1], *launch.links);
  return results;
}

std::vector<TrialResult> run_resident(const TrialSpec& off, const TrialSpec& on,
                                      const Launch& launch, bool shared_heap_offset,
                                      const volatile sig_atomic_t* interrupt, bool& interrupted) {
  const knobs::ProcessSetup off_setup = setup_of(off), on_setup = setup_of(on);
  namespace fs = std::filesystem;
  std::error_code ec_off, ec_on;
  const bool two_builds = fs::weakly_canonical(launch.executable(off_setup), ec_off) !=
                          fs::weakly_canonical(launch.executable(on_setup), ec_on);
  Command off_command =
      launch.command(off_setup, resident_request(as_sent(off), false), false, two_builds);
  Command on_command =
      launch.command(on_setup, resident_request(as_sent(on), true), false, two_builds);
  const size_t heap_offset = worker::draw_heap_offset();
  off_command.env[worker::kHeapOffsetVariable] = worker::heap_offset_text(heap_offset);
  on_command.env[worker::kHeapOffsetVariable] =
      worker::heap_offset_text(shared_heap_offset ? heap_offset : worker::draw_heap_offset());
  std::vector<TrialResult> results = run_resident_pair(off, on, off_command, on_command, interrupt);
  if (!results.empty()) {
    check_evidence(off, off.mode, results[0], *launch.links);
    check_evidence(on, on.mode, results[1], *launch.links);
  }
  launch.links->remove_copy(off_command.argv.at(off_setup.launcher.size()));
  launch.links->remove_copy(on_command.argv.at(on_setup.launcher.size()));
  if (results.empty()) interrupted = true;
  return results;
}

}  // namespace tunebench::orchestrator
