// `tunebench compare`: two runs side by side, or the latest runs of one suite on two hosts.
#include <iostream>

#include "app/commands.h"

namespace tunebench::cli {

int compare_command(const CompareOptions& options) {
  if (options.runs.empty() && options.hosts.empty()) {
    std::cerr << "tunebench: error: compare needs two runs (compare RUN_A RUN_B) or "
                 "--hosts H1 H2\n";
    return kExitBadInput;
  }
  const auto db = open_existing(options.db);
  try {
    auto runs = options.hosts.empty() ? std::pair{options.runs[0], options.runs[1]}
                                      : check::latest_runs_of_hosts(
                                            db, options.hosts[0], options.hosts[1], options.suite);
    std::cout << check::format_comparison(check::compare(db, runs.first, runs.second),
                                          options.format);
    return 0;
  } catch (const std::invalid_argument& e) {
    std::cerr << "tunebench: error: " << e.what() << "\n";
    return kExitBadInput;
  }
}

}  // namespace tunebench::cli
