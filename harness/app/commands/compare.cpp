// `tunebench compare`: two runs side by side, or the procurement comparison of two or more hosts
// (analysis/hosts.h).
#include <iostream>

#include "analysis/compare_runs.h"
#include "analysis/hosts.h"
#include "analysis/reporter.h"
#include "app/commands.h"

namespace tunebench::cli {

int compare_command(const CompareOptions& options) {
  if (options.runs.empty() && options.hosts.empty()) {
    std::cerr << "tunebench: error: compare needs two runs (compare RUN_A RUN_B) or "
                 "--hosts H1 H2 [H3 ...]\n";
    return kExitBadInput;
  }
  if (options.hosts.empty() && !options.prices.empty()) {
    std::cerr << "tunebench: error: --prices goes with --hosts (compare --hosts H1 H2 --prices "
                 "FILE); two runs are compared on time alone\n";
    return kExitBadInput;
  }
  try {
    hosts::Options host_options;
    if (!options.hosts.empty()) {
      // The prices first: a bad file is reported before the database is opened.
      if (!options.prices.empty()) host_options.prices = hosts::load_prices(options.prices);
      host_options.hosts = options.hosts;
      host_options.suite = options.suite;
    }
    // Hosts side by side have no glance: a few hosts per workload, each figure with its interval.
    const auto& reporter =
        options.hosts.empty()
            ? text_reporter(options.format, options.verbose, reporters::Output::comparison)
            : reporters::reporter(options.format.empty() ? "table" : options.format,
                                  reporters::Output::hosts);
    const auto db = open_existing(options.db);
    if (options.hosts.empty()) {
      const auto comparison = check::compare(db, options.runs[0], options.runs[1]);
      if (comparison.run_a == comparison.run_b) {
        std::cerr << "tunebench: warning: '" << options.runs[0] << "' and '" << options.runs[1]
                  << "' are one run (" << comparison.run_a
                  << "): it is compared with itself, so every ratio is 1\n";
      }
      std::cout << reporter.comparison(comparison);
    } else {
      std::cout << reporter.hosts(hosts::compare_hosts(db, host_options));
    }
    return 0;
  } catch (const std::invalid_argument& e) {
    std::cerr << "tunebench: error: " << e.what() << "\n";
    return kExitBadInput;
  }
}

}  // namespace tunebench::cli
