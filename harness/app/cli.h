// The `tunebench` command line. Exit codes: 0 success, 1 a failure while running, 2 bad input
// (unknown subcommand, model, preset or option; malformed arguments).
#pragma once

namespace tunebench::cli {

int run(int argc, char** argv);

}  // namespace tunebench::cli
