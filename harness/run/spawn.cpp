// Starting worker processes and collecting what they leave (run/orchestrator.h: spawn, start_child,
// spawn_all): each child started with execve (an explicit argv and environment, never a shell) in a
// process group of its own, its input written, then one poll loop over every child's pipes that
// keeps stdout whole and stderr's tail, and ends them all on a failure, the timeout or the
// interrupt.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <stdexcept>

#include "run/orchestrator.h"

namespace tunebench::orchestrator {

using Clock = std::chrono::steady_clock;

WorkerOutcome spawn(const std::vector<std::string>& argv,
                    const std::map<std::string, std::string>& env, const std::string& input,
                    double timeout_s, const volatile sig_atomic_t* interrupt) {
  return spawn_all({{argv, env, input}}, timeout_s, interrupt).front();
}

void append_stderr(std::string& kept, const char* data, size_t size) {
  kept.append(data, size);
  if (kept.size() > 4 * kStderrTail) kept.erase(0, kept.size() - kStderrTail);
}

std::string stderr_tail(const std::string& kept) {
  return kept.size() > kStderrTail ? kept.substr(kept.size() - kStderrTail) : kept;
}

StartedChild start_child(const Command& command) {
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) {
    throw std::runtime_error(std::string("pipe: ") + strerror(errno));
  }
  // Everything execve needs is built before fork: the child only calls async-signal-safe
  // functions.
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : command.env) env_strings.push_back(k + "=" + v);
  std::vector<char*> cargv, cenv;
  for (const auto& a : command.argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : env_strings) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);

  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);  // its own process group, so a timeout kills everything it started
    // Dies with this process, however it ends (kill -9 included): a worker left running would
    // share the CPUs with the next run's. Kept across execve (launchers and the Python worker
    // included); the check closes the window in which the parent died before prctl.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    dup2(in[0], STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    execve(cargv[0], cargv.data(), cenv.data());
    const char msg[] = "tunebench: execve of the worker failed\n";
    (void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
    _exit(127);
  }
  setpgid(pid, pid);
  close(in[0]);
  close(out[1]);
  close(err[1]);
  return {pid, in[1], out[0], err[0]};
}

// Long (~100 lines) because it is one poll loop over every child's pipes, deadline and the
// interrupt flag: a child that fails, hangs or is interrupted must stop all the others at once,
// and that state (fds, pids, buffers, the deadline) is shared by every branch of the loop.
std::vector<WorkerOutcome> spawn_all(const std::vector<Command>& commands, double timeout_s,
                                     const volatile sig_atomic_t* interrupt) {
  struct Child {
    pid_t pid = -1;
    int out = -1, err = -1;
    std::string err_text;
    bool reaped = false;
  };
  const size_t n = commands.size();
  std::vector<WorkerOutcome> outcomes(n);
  std::vector<Child> children(n);
  const auto start = Clock::now();
  for (size_t c = 0; c < n; ++c) {
    const StartedChild child = start_child(commands[c]);
    // The trial is small (≪ a pipe buffer); a worker that died early gives EPIPE, ignored here.
    (void)!write(child.in, commands[c].input.data(), commands[c].input.size());
    close(child.in);
    children[c].pid = child.pid;
    children[c].out = child.out;
    children[c].err = child.err;
  }

  // Reaps child c once both its pipes are closed; a failure ends its siblings.
  bool failure = false;
  auto reap = [&](size_t c) {
    int status = 0;
    waitpid(children[c].pid, &status, 0);
    kill(-children[c].pid, SIGKILL);  // anything the worker left behind in its group
    children[c].reaped = true;
    if (WIFEXITED(status)) outcomes[c].exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) outcomes[c].signal = WTERMSIG(status);
    if (outcomes[c].signal || outcomes[c].exit_code != 0) failure = true;
    outcomes[c].seconds = std::chrono::duration<double>(Clock::now() - start).count();
  };
  const auto deadline = start + std::chrono::duration<double>(timeout_s);
  char buf[65536];
  bool timed_out = false, interrupted = false;
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<size_t> owner;
    for (size_t c = 0; c < n; ++c) {
      for (int fd : {children[c].out, children[c].err}) {
        if (fd >= 0) {
          fds.push_back({fd, POLLIN, 0});
          owner.push_back(c);
        }
      }
    }
    if (fds.empty() || (failure && n > 1)) break;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    if (interrupt && *interrupt) {
      interrupted = true;
      break;
    }
    const int ready = poll(fds.data(), fds.size(), int(std::min<long long>(left, 1000)));
    if (ready < 0 && errno != EINTR) break;
    for (size_t f = 0; f < fds.size(); ++f) {
      if (!(fds[f].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Child& child = children[owner[f]];
      const bool is_out = fds[f].fd == child.out;
      const ssize_t got = read(fds[f].fd, buf, sizeof(buf));
      if (got <= 0) {
        close(fds[f].fd);
        (is_out ? child.out : child.err) = -1;
        if (child.out < 0 && child.err < 0) reap(owner[f]);
        continue;
      }
      if (is_out) {
        outcomes[owner[f]].out.append(buf, size_t(got));
      } else {
        append_stderr(child.err_text, buf, size_t(got));
      }
    }
  }
  for (size_t c = 0; c < n; ++c) {
    Child& child = children[c];
    if (!child.reaped) {
      kill(-child.pid, SIGKILL);
      outcomes[c].timed_out = timed_out;
      outcomes[c].interrupted = interrupted;
      outcomes[c].sibling_failed = !timed_out && !interrupted;
      reap(c);
    }
    for (int fd : {child.out, child.err}) {
      if (fd >= 0) close(fd);
    }
    outcomes[c].err_tail = stderr_tail(child.err_text);
  }
  return outcomes;
}

}  // namespace tunebench::orchestrator
