#include "run/resident.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <thread>

namespace tunebench::orchestrator {

using nlohmann::json;

// The pieces of a resident pair (a named namespace: this file shares a unity batch with other
// files of harness/run, whose anonymous namespaces have names of their own).
namespace resident {

using Clock = std::chrono::steady_clock;

struct Interrupted {};
// Why a resident worker gave no usable answer.
struct NoAnswer : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One resident worker: started at construction (its request written as the first line), spoken
// to a line at a time, its process group killed and reaped at destruction.
class ResidentWorker {
 public:
  ResidentWorker(std::string name, const Command& command)
      : name_(std::move(name)), child_(start_child(command)) {
    send_line(command.input);
  }
  ResidentWorker(const ResidentWorker&) = delete;
  ResidentWorker& operator=(const ResidentWorker&) = delete;
  ~ResidentWorker() {
    if (!reaped_) {
      kill(-child_.pid, SIGKILL);
      waitpid(child_.pid, nullptr, 0);
    }
    kill(-child_.pid, SIGKILL);  // anything it left behind in its group
    for (int fd : {child_.in, child_.out, child_.err}) {
      if (fd >= 0) close(fd);
    }
  }

  void send(const json& request) { send_line(request.dump()); }

  // The next line the worker answers, as JSON, once it has one that holds `key`. A failed result
  // (the worker's answer when an arm cannot go on) or anything else throws NoAnswer.
  json expect(const char* key, Clock::time_point deadline, const volatile sig_atomic_t* interrupt) {
    const std::string line = receive_line(deadline, interrupt);
    json reply = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (reply.is_object() && reply.contains(key)) return reply;
    if (reply.is_object() && reply.value("status", "") == "failed") {
      throw NoAnswer(fmt::format("{}: {}", name_, reply.value("error", "failed")));
    }
    throw NoAnswer(fmt::format("{} answered something other than \"{}\": {}", name_, key,
                               line.substr(0, 200)));
  }

  std::string stderr_tail() const { return orchestrator::stderr_tail(err_); }
  const std::string& name() const { return name_; }

 private:
  void send_line(const std::string& line) {
    const std::string out = line + "\n";
    size_t written = 0;
    while (written < out.size()) {
      const ssize_t n = write(child_.in, out.data() + written, out.size() - written);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw NoAnswer(ended("stopped reading its requests"));
      written += size_t(n);
    }
  }

  std::string receive_line(Clock::time_point deadline, const volatile sig_atomic_t* interrupt) {
    char buf[65536];
    for (;;) {
      if (const size_t nl = out_.find('\n'); nl != std::string::npos) {
        std::string line = out_.substr(0, nl);
        out_.erase(0, nl + 1);
        return line;
      }
      if (interrupt && *interrupt) throw Interrupted{};
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) throw NoAnswer(fmt::format("{} timed out; the pair was killed", name_));
      pollfd fds[2] = {{child_.out, POLLIN, 0}, {child_.err, POLLIN, 0}};  // poll skips fd −1
      const int ready = poll(fds, 2, int(std::min<long long>(left, 1000)));
      if (ready < 0 && errno != EINTR) throw NoAnswer(std::string("poll: ") + strerror(errno));
      for (int f = 0; f < 2; ++f) {
        if (!(fds[f].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        int& fd = f == 0 ? child_.out : child_.err;
        const ssize_t got = read(fd, buf, sizeof(buf));
        if (got > 0) {
          if (f == 0) {
            out_.append(buf, size_t(got));
          } else {
            orchestrator::append_stderr(err_, buf, size_t(got));
          }
          continue;
        }
        close(fd);
        fd = -1;
        if (f == 0) throw NoAnswer(ended("ended without an answer"));
      }
    }
  }

  // "<name> <what>: exited with code N" (or the signal), once the process has ended.
  std::string ended(const std::string& what) {
    int status = 0;
    pid_t done = 0;
    // It closed its pipe: it is exiting. Give it a moment to do so before killing it.
    for (int i = 0; i < 200 && (done = waitpid(child_.pid, &status, WNOHANG)) == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (done == 0) {
      kill(-child_.pid, SIGKILL);
      waitpid(child_.pid, &status, 0);
    }
    reaped_ = true;
    if (WIFSIGNALED(status)) {
      return fmt::format("{} {}: killed by signal {} ({})", name_, what, WTERMSIG(status),
                         strsignal(WTERMSIG(status)));
    }
    return fmt::format("{} {}: exited with code {}", name_, what, WEXITSTATUS(status));
  }

  std::string name_;
  StartedChild child_;
  std::string out_, err_;
  bool reaped_ = false;
};

}  // namespace resident

using resident::Interrupted;
using resident::NoAnswer;
using resident::ResidentWorker;

std::string resident_request(const TrialSpec& spec, bool on) {
  return json{{kResidentRequest, true}, {"on", on}, {"trial", to_json(spec)}}.dump();
}

std::vector<TrialResult> run_resident_pair(const TrialSpec& off, const TrialSpec& on,
                                           const Command& off_command, const Command& on_command,
                                           const volatile sig_atomic_t* interrupt) {
  const Pairing& pairing = off.pairing;
  using Clock = resident::Clock;
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(off.timeout_s + on.timeout_s));
  std::unique_ptr<ResidentWorker> workers[2];  // OFF, ON
  try {
    // The first arm's process is started first (counterbalanced across workers, as inside one
    // process); both then prepare and warm up at once, before anything is timed.
    const int first = pairing.on_first ? 1 : 0;
    for (const int a : {first, 1 - first}) {
      workers[a] = std::make_unique<ResidentWorker>(
          a ? "the ON arm's worker" : "the OFF arm's worker", a ? on_command : off_command);
    }
    for (const int a : {first, 1 - first}) workers[a]->expect("ready", deadline, interrupt);
    const std::vector<bool> order = abba_order(pairing.blocks, pairing.on_first);
    for (int b = 0; b < pairing.blocks; ++b) {
      ResidentWorker& w = *workers[order[size_t(b)] ? 1 : 0];
      w.send({{kResidentBlock, b}});
      if (w.expect(kResidentBlock, deadline, interrupt).at(kResidentBlock) != b) {
        throw NoAnswer(w.name() + " answered for another block than " + std::to_string(b));
      }
    }
    std::vector<TrialResult> results;
    for (auto& w : workers) {
      w->send({{kResidentEnd, true}});
      TrialResult r = trial_result_from_json(w->expect("status", deadline, interrupt));
      if (r.status == "failed") throw NoAnswer(w->name() + ": " + r.error);
      r.worker_stderr = w->stderr_tail();
      results.push_back(std::move(r));
    }
    return results;
  } catch (const Interrupted&) {
    return {};
  } catch (const std::exception& e) {  // NoAnswer, a malformed result, pipe or fork failing
    TrialResult failed;
    failed.error = std::string("resident pair: ") + e.what();
    for (const auto& w : workers) {
      if (w && !w->stderr_tail().empty())
        failed.worker_stderr += w->name() + ":\n" + w->stderr_tail() + "\n";
    }
    return {failed, failed};
  }
}

}  // namespace tunebench::orchestrator
