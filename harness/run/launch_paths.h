#pragma once
// The paths software A/B workers are started by.
//
// The length of the path a program is started by (argv[0] and the kernel's AT_EXECFN, both
// copied onto its initial stack) moved a tiny GPT training step by 6-9 % on this VM: two
// byte-identical copies of one worker at /tmp/s2/tb-copy and /tmp/s2/tb-copy2 (15 and 16
// characters) came out 1.057-1.092x apart in five resident-pair A/A runs, and 0.999-1.012x when
// both were started through symlinks of equal length; the length of the executable's real path
// (/proc/self/exe) seemed to count too (docs/software-ab.md). No pairing removes such a bias: it
// stays with the arm for every process, and a launcher (numactl for numa_bind) would start one
// arm's worker by its full path and the other's by /proc/self/exe. So every worker a run starts
// on this host is started through a hard link of one length, DIR/000000, DIR/000001, ... in a
// directory of this run's own ($TMPDIR/tunebench-exe-PID-XXXXXX, PID of seven digits; a later run
// removes the directories of runs that were killed, run/leftovers.h), which is then also what
// /proc/self/exe names (a symlink where the directory is on another filesystem, said once on stderr
// where two executables' real paths differ in length). original_of() turns a link back into the
// build it stands for.
//
// Where two arms run two executables, a second bias stays with each file: in the regression
// study's stage 2 (this build against a byte-identical last-good copy, both through links of one
// length) the build ran a tiny GPT training step 3-5 % faster than its copy in 9 of 9 A/Bs. Where
// a file's pages lie is fixed while it stays cached; a copy made afresh for every process is a new
// draw. So fresh_copy() gives each worker of such a pair its own copy (a name of the links'
// length, removed with remove_copy()), and the per-file offset becomes pair-to-pair noise, which
// the interval over pairs counts, instead of a bias no pairing removes.
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace tunebench::orchestrator {

class LaunchPaths {
 public:
  LaunchPaths() = default;
  LaunchPaths(const LaunchPaths&) = delete;
  LaunchPaths& operator=(const LaunchPaths&) = delete;
  ~LaunchPaths();  // removes the directory and its links

  // The path to start `executable` by: a hard link to it (or a symlink), the same one for the
  // same executable, every one of the same length. Where no link can be made (no writable
  // temporary directory), `executable` itself, said once on stderr.
  std::string path_for(const std::string& executable);

  // A new byte copy of `executable` (of its link: the file as it was when first linked), in the
  // links' directory under a name of the links' length, for one worker. Where it cannot be made,
  // the link (path_for), said once on stderr.
  std::string fresh_copy(const std::string& executable);

  // Removes a copy fresh_copy() made (once its worker has exited); anything else stays.
  void remove_copy(const std::string& path);

  // The canonical executable a link or copy made here stands for; any other path as it is.
  std::string original_of(const std::string& path) const;

  // The directory holding the links; empty before the first link.
  std::string directory() const;

 private:
  std::string next_name();  // DIR/NNNNNN, the next of one length; under the mutex

  mutable std::mutex mutex_;
  std::string dir_;
  std::map<std::string, std::string> links_;      // canonical executable -> link
  std::map<std::string, std::string> originals_;  // link or copy -> canonical executable
  std::set<std::string> copies_;                  // copies made here, still on disk
  int names_ = 0;                                 // names given in dir_ so far
  std::vector<std::string> exe_names_;  // what /proc/self/exe names in each link's workers
  std::string symlink_why_;             // why the first symlink was not a hard link
  bool failed_ = false, said_symlink_ = false, said_copy_ = false;
};

}  // namespace tunebench::orchestrator
