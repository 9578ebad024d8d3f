#include "run/launch_paths.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace tunebench::orchestrator {

namespace {
constexpr int kMostNames = 1000000;  // names of six digits: every one of one length
}  // namespace

std::string LaunchPaths::next_name() { return fmt::format("{}/{:06}", dir_, names_++); }

LaunchPaths::~LaunchPaths() {
  if (dir_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::string LaunchPaths::directory() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return dir_;
}

std::string LaunchPaths::path_for(const std::string& executable) {
  namespace fs = std::filesystem;
  const std::lock_guard<std::mutex> lock(mutex_);
  std::error_code ec;
  const std::string real = fs::weakly_canonical(executable, ec).string();
  if (ec || real.empty() || failed_) return executable;
  if (const auto it = links_.find(real); it != links_.end()) return it->second;
  auto give_up = [&](const std::string& why) {
    failed_ = true;
    fmt::print(stderr,
               "tunebench: cannot make the equal-length launch links for a software A/B ({}); "
               "workers are started by their own paths, whose lengths may bias the A/B\n",
               why);
    return executable;
  };
  if (names_ >= kMostNames) return give_up("more than a million workers in one run");
  if (dir_.empty()) {
    // Folders of runs that were killed are removed before a run starts (run/leftovers.h).
    const fs::path tmp = fs::temp_directory_path(ec);
    // The owner's pid in the name (seven digits: every run's paths of one length).
    std::string pattern = (tmp / fmt::format("tunebench-exe-{:07}-XXXXXX", getpid())).string();
    if (ec || mkdtemp(pattern.data()) == nullptr) {
      return give_up("no temporary directory: " + pattern);
    }
    dir_ = pattern;
  }
  const std::string link = next_name();
  fs::create_hard_link(real, link, ec);
  std::string exe_name = link;  // what /proc/self/exe will name in the worker
  if (ec) {
    const std::string why = ec.message();
    fs::create_symlink(real, link, ec);
    if (ec) return give_up(link + ": " + ec.message());
    exe_name = real;
    if (symlink_why_.empty()) symlink_why_ = real + ": " + why;
  }
  // A symlink leaves /proc/self/exe naming the real path: a bias only where the workers' names
  // for themselves then differ in length, said then, once.
  if (!symlink_why_.empty() && !said_symlink_ &&
      std::any_of(exe_names_.begin(), exe_names_.end(),
                  [&](const std::string& n) { return n.size() != exe_name.size(); })) {
    said_symlink_ = true;
    fmt::print(stderr,
               "tunebench: cannot hard-link into {} ({}): workers start through symlinks of one "
               "length, but their executables' real paths differ in length, which may bias a "
               "software A/B\n",
               dir_, symlink_why_);
  }
  exe_names_.push_back(exe_name);
  links_.emplace(real, link);
  originals_.emplace(link, real);
  return link;
}

std::string LaunchPaths::fresh_copy(const std::string& executable) {
  namespace fs = std::filesystem;
  const std::string link = path_for(executable);
  const std::lock_guard<std::mutex> lock(mutex_);
  if (!originals_.count(link) || names_ >= kMostNames) return link;  // no link: its own path
  const std::string copy = next_name();
  std::error_code ec;
  // From the link, not the build's path: the file this run linked, even after a rebuild.
  fs::copy_file(link, copy, ec);
  if (!ec) fs::permissions(copy, fs::status(link, ec).permissions(), ec);
  if (ec) {
    const std::string why = ec.message();
    fs::remove(copy, ec);
    if (!said_copy_) {
      said_copy_ = true;
      fmt::print(stderr,
                 "tunebench: cannot copy {} for a worker of a software A/B ({}); its workers "
                 "share one file, whose own offset may bias the A/B\n",
                 link, why);
    }
    return link;
  }
  originals_.emplace(copy, originals_.at(link));
  copies_.insert(copy);
  return copy;
}

void LaunchPaths::remove_copy(const std::string& path) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (copies_.erase(path) == 0) return;
  std::error_code ec;
  std::filesystem::remove(path, ec);
}

std::string LaunchPaths::original_of(const std::string& path) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto it = originals_.find(path);
  return it == originals_.end() ? path : it->second;
}

}  // namespace tunebench::orchestrator
