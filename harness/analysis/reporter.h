// One reporter per output format over the plain result records the reading commands produce
// (as google/benchmark's BenchmarkReporter, ConsoleReporter and JSONReporter are): `show`'s
// analysis::RunReport, `check`'s check::Report, `compare`'s check::Comparison, `compare
// --hosts`'s hosts::Comparison and `calibrate`'s noise floors. A reporter only formats: the
// numbers are computed before it is called. A new field of a record is added to the record and
// to the reporters that show it, nowhere else.
//
// The reporters: glance (analysis/report_glance.cpp, the default of show, check and compare: one
// line per effect), table (analysis/report_text.cpp, for a terminal; --verbose), md (the same
// file: Markdown for a CI comment or a job summary), json (analysis/report_json.cpp) and junit
// (analysis/report_junit.cpp, check only, for a CI's test view).
#pragma once

#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/check.h"
#include "analysis/compare_runs.h"
#include "analysis/hosts.h"

namespace tunebench::reporters {

// What is printed: each command offers the formats its reporters have.
enum class Output { run, check, comparison, hosts, floors };

class Reporter {
 public:
  virtual ~Reporter() = default;
  // Each returns the whole text, ending in a newline. A reporter is only asked for an output it
  // offers (reporter() refuses the others); the base versions throw std::logic_error.
  virtual std::string run(const analysis::RunReport& report) const;
  virtual std::string check(const check::Report& report) const;
  virtual std::string comparison(const check::Comparison& comparison) const;
  virtual std::string hosts(const hosts::Comparison& comparison) const;
  virtual std::string floors(const std::vector<storage::Database::NoiseFloor>& floors) const;
};

// The reporter of format `name` for `what`, chosen here and nowhere else: show offers table and
// json; check table, md, json and junit; compare and compare --hosts table, md and json;
// calibrate's floors table. Throws std::invalid_argument naming the formats `what` offers
// ("--format must be table, md or json, got 'xml'").
const Reporter& reporter(const std::string& name, Output what);

// The reporters, for reporter() (each in its own file).
const Reporter& table_reporter();
const Reporter& markdown_reporter();
const Reporter& json_reporter();
const Reporter& junit_reporter();
// The default text of show, check and compare RUN_A RUN_B: the record at a glance, one line per
// effect or finding grouped by verdict (analysis/report_glance.cpp; the commands ask for it
// directly: it is no --format, and --verbose gives the table instead); with `colour`, the
// verdicts in colour (for a terminal that wants it).
const Reporter& glance_reporter(bool colour);

// check's last lines, the same in the table, in Markdown and at a glance: "REGRESSION: …",
// "UNKNOWN: …" or "no regression", after an empty line.
std::string check_verdict(const check::Report& report);

}  // namespace tunebench::reporters
