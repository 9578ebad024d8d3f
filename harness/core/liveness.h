// Who runs a run, and whether it still does. Every run stores the identity of its orchestrator
// (schema version 7), so that a run whose `tunebench run` died without a word (kill -9, a lost
// node, a reboot) is known as interrupted instead of "running" forever. A pid alone is no
// identity: pids are reused and count again from 1 after a boot; with the boot id and the
// process's start time it is one. No torch.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace tunebench::liveness {

// The process that runs (or resumed) a run.
struct Orchestrator {
  std::string hostname;
  std::string boot_id;        // /proc/sys/kernel/random/boot_id: new at every boot
  std::string pid_namespace;  // /proc/self/ns/pid, "pid:[4026531836]": where the pid means it
  int64_t pid = 0;
  uint64_t start_ticks = 0;  // field 22 of /proc/PID/stat: clock ticks after boot at its start
};
nlohmann::json to_json(const Orchestrator& orchestrator);
// From what to_json wrote; nullopt for null (a run stored before schema 7) or anything else.
std::optional<Orchestrator> orchestrator_from_json(const nlohmann::json& j);

// This process, as the orchestrator of the run it starts or resumes.
Orchestrator this_process();

// What this machine says about a pid.
struct Seen {
  bool running = false;                 // a live process (not a zombie) has this pid
  std::optional<uint64_t> start_ticks;  // its start time, where /proc lets this user read it
};
Seen look_up(int64_t pid);

// The machine a rule judges from: its identity and how it sees its processes.
struct Here {
  std::string hostname, boot_id, pid_namespace;
  std::function<Seen(int64_t pid)> look_up;
};
Here this_machine();

enum class State {
  kUnrecorded,  // no record (a run from before schema 7): cannot tell
  kAlive,       // its orchestrator runs on this machine
  kGone,        // its orchestrator is dead: the run is interrupted
  kElsewhere,   // it ran on another host or in another pid namespace: cannot check from here
};
struct Verdict {
  State state = State::kUnrecorded;
  std::string why;  // in words: "its orchestrator, pid 4242 on node7, is no longer running"
};

// The rule, for a run stored as "running":
//   no record                                            → unrecorded
//   another hostname                                     → elsewhere ("running on HOST (cannot
//                                                          check from here)")
//   this hostname, another boot id (the machine rebooted) → gone
//   this boot, another pid namespace (a container)       → elsewhere
//   this boot: the pid runs with the same start time     → alive
//              the pid is not running (or a zombie)      → gone
//              the pid runs with another start time      → gone (the pid was reused)
// A pid that runs but whose start time cannot be read (hidepid) counts as alive.
Verdict judge(const std::optional<Orchestrator>& who, const Here& here);

// Every worker an orchestrator starts carries its orchestrator's identity in its environment,
// kWorkerTagVariable=worker_tag(...), inherited by whatever the worker starts in turn. A worker
// normally dies with its orchestrator (the parent-death signal it is started with), but anything
// that outlives it (a process it started, a worker of an older tunebench) would share the CPUs
// with the next run's workers and skew them (a resumed run's OFF arm measured 2.2x slower beside
// one): the next run finds such processes by this tag and stops them first.
inline constexpr const char* kWorkerTagVariable = "TUNEBENCH_ORCHESTRATOR";
// "PPPPPPP:TTTTTTTTTTTTTTTTTTTT": the pid (7 digits) and start ticks (20), of one length for every
// orchestrator, so that the workers' environments have one size from run to run.
std::string worker_tag(const Orchestrator& orchestrator);

// A process that carries a worker tag.
struct TaggedProcess {
  int64_t pid = 0;
  std::string tag;
};
// Every process this user can see that carries a worker tag (from /proc/PID/environ).
std::vector<TaggedProcess> tagged_processes();
// Those whose orchestrator is no longer running on `here` (gone, or its pid now another
// process's); a tag that does not parse counts as gone.
std::vector<TaggedProcess> orphans(const std::vector<TaggedProcess>& tagged, const Here& here);

// The command that resumes a run, its database path quoted for a shell where it needs it:
// "tunebench run --resume UUID --db PATH".
std::string resume_command(const std::string& uuid, const std::string& db_path);

}  // namespace tunebench::liveness
