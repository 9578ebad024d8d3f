#include "core/liveness.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace tunebench::liveness {

using nlohmann::json;

namespace {

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string link_target(const std::string& path) {
  char target[256];
  const ssize_t n = readlink(path.c_str(), target, sizeof(target) - 1);
  return n > 0 ? std::string(target, size_t(n)) : "";
}

std::string hostname() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  return name;
}

// The fields of /proc/PID/stat from field 3 (state) on: field 2, the command in parentheses, may
// itself hold spaces and parentheses, so the split starts after its last ')'.
std::optional<std::vector<std::string>> stat_fields(int64_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string text;
  if (!in || !std::getline(in, text)) return std::nullopt;
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(text.substr(close + 1));
  std::vector<std::string> fields;
  for (std::string f; rest >> f;) fields.push_back(f);
  return fields;
}

constexpr size_t kStartTimeField = 22 - 3;  // field 22 counted from field 3 (state)

// "pid 4242 on node7"
std::string who_where(const Orchestrator& o) {
  return fmt::format("pid {} on {}", o.pid, o.hostname);
}

}  // namespace

json to_json(const Orchestrator& o) {
  return {{"hostname", o.hostname},
          {"boot_id", o.boot_id},
          {"pid_namespace", o.pid_namespace},
          {"pid", o.pid},
          {"start_ticks", o.start_ticks}};
}

std::optional<Orchestrator> orchestrator_from_json(const json& j) {
  if (!j.is_object() || !j.contains("hostname") || !j.contains("pid")) return std::nullopt;
  try {
    Orchestrator o;
    o.hostname = j.at("hostname").get<std::string>();
    o.boot_id = j.value("boot_id", "");
    o.pid_namespace = j.value("pid_namespace", "");
    o.pid = j.at("pid").get<int64_t>();
    o.start_ticks = j.value("start_ticks", uint64_t{0});
    return o;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

Seen look_up(int64_t pid) {
  Seen seen;
  if (pid <= 0) return seen;
  if (const auto fields = stat_fields(pid)) {
    // Z: a zombie, dead but not yet reaped; X: dead.
    seen.running = !fields->empty() && fields->front() != "Z" && fields->front() != "X";
    if (fields->size() > kStartTimeField) {
      seen.start_ticks = std::stoull((*fields)[kStartTimeField]);
    }
    return seen;
  }
  // /proc hides it (hidepid) or it is gone: kill(0) tells which without sending anything.
  seen.running = kill(pid_t(pid), 0) == 0 || errno == EPERM;
  return seen;
}

Orchestrator this_process() {
  Orchestrator o;
  o.hostname = hostname();
  o.boot_id = first_line("/proc/sys/kernel/random/boot_id");
  o.pid_namespace = link_target("/proc/self/ns/pid");
  o.pid = getpid();
  o.start_ticks = look_up(o.pid).start_ticks.value_or(0);
  return o;
}

Here this_machine() {
  const Orchestrator self = this_process();
  return {self.hostname, self.boot_id, self.pid_namespace, look_up};
}

Verdict judge(const std::optional<Orchestrator>& who, const Here& here) {
  if (!who) {
    return {State::kUnrecorded,
            "stored by a tunebench before schema version 7, which did not record its "
            "orchestrator: whether it still runs cannot be checked"};
  }
  if (who->hostname != here.hostname) {
    return {State::kElsewhere,
            fmt::format("running on {} (cannot check from here)", who->hostname)};
  }
  if (who->boot_id != here.boot_id) {
    return {State::kGone, fmt::format("{} has restarted since its orchestrator (pid {}) started",
                                      who->hostname, who->pid)};
  }
  if (!who->pid_namespace.empty() && !here.pid_namespace.empty() &&
      who->pid_namespace != here.pid_namespace) {
    return {State::kElsewhere,
            fmt::format("running on {} in another pid namespace (a container?): cannot check "
                        "from here",
                        who->hostname)};
  }
  const Seen seen = here.look_up(who->pid);
  if (!seen.running) {
    return {State::kGone,
            fmt::format("its orchestrator, {}, is no longer running", who_where(*who))};
  }
  if (seen.start_ticks && *seen.start_ticks != who->start_ticks) {
    return {State::kGone, fmt::format("its orchestrator, {}, is no longer running (pid {} is now "
                                      "another process)",
                                      who_where(*who), who->pid)};
  }
  return {State::kAlive, fmt::format("its orchestrator, {}, is running", who_where(*who))};
}

std::string worker_tag(const Orchestrator& o) {
  return fmt::format("{:07}:{:020}", o.pid, o.start_ticks);
}

std::vector<TaggedProcess> tagged_processes() {
  namespace fs = std::filesystem;
  const std::string prefix = std::string(kWorkerTagVariable) + "=";
  std::vector<TaggedProcess> found;
  std::error_code ec;
  for (fs::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    // NUL-separated NAME=VALUE entries; unreadable (another user's, or gone): skipped.
    std::ifstream in(it->path() / "environ", std::ios::binary);
    for (std::string entry; std::getline(in, entry, '\0');) {
      if (entry.rfind(prefix, 0) == 0) {
        found.push_back({std::stoll(name), entry.substr(prefix.size())});
        break;
      }
    }
  }
  return found;
}

std::vector<TaggedProcess> orphans(const std::vector<TaggedProcess>& tagged, const Here& here) {
  std::vector<TaggedProcess> gone;
  for (const auto& p : tagged) {
    int64_t pid = 0;
    uint64_t ticks = 0;
    char colon = 0;
    std::istringstream in(p.tag);
    const bool parsed = bool(in >> pid >> colon >> ticks) && colon == ':';
    const Seen seen = parsed ? here.look_up(pid) : Seen{};
    if (!seen.running || (seen.start_ticks && *seen.start_ticks != ticks)) gone.push_back(p);
  }
  return gone;
}

std::string resume_command(const std::string& uuid, const std::string& db_path) {
  // Characters a shell takes literally; anything else is single-quoted ('\'' for a quote).
  constexpr const char* kPlain =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-+:,@%=";
  std::string quoted = db_path;
  if (db_path.empty() || db_path.find_first_not_of(kPlain) != std::string::npos) {
    quoted = "'";
    for (char c : db_path) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    quoted += "'";
  }
  return fmt::format("tunebench run --resume {} --db {}", uuid, quoted);
}

}  // namespace tunebench::liveness
