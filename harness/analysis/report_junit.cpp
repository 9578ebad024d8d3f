// The JUnit reporter: `check` as a test suite for a CI's test view — a benchmark per test case,
// a regression a failure, an undecided stage 2 an error, a benchmark without a baseline skipped.
#include <fmt/format.h>

#include "analysis/reporter.h"

namespace tunebench::reporters {

namespace {

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string testcase(const check::BenchmarkCheck& b) {
  std::string out = fmt::format("  <testcase classname=\"{}\" name=\"{}\">",
                                xml_escape(b.experiment), xml_escape(b.arm));
  if (b.status == "regression") {
    out += fmt::format(
        "<failure message=\"{}\"/>",
        xml_escape(b.confirmation
                       ? "confirmed against the last-good build: " + b.confirmation->decision.why
                       : "slower than the baseline: " + stats::format_effect(b.judgement.effect)));
  } else if (b.status == "unknown") {
    out += fmt::format(
        "<error message=\"{}\"/>",
        xml_escape(b.confirmation ? "flagged, and the A/B against the last-good build could not "
                                    "decide: " +
                                        b.confirmation->decision.why
                                  : std::string(check::BenchmarkCheck::kUnconfirmed) + ": " +
                                        stats::format_effect(b.judgement.effect)));
  } else if (b.judgement.status == "no baseline") {
    out += "<skipped message=\"no baseline\"/>";
  }
  return out + "</testcase>\n";
}

class JunitReporter : public Reporter {
 public:
  std::string check(const check::Report& r) const override {
    int failures = 0, errors = 0;
    for (const auto& b : r.benchmarks) {
      failures += b.status == "regression";
      errors += b.status == "unknown";
    }
    std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    out += fmt::format(
        "<testsuite name=\"tunebench check {}\" tests=\"{}\" failures=\"{}\" errors=\"{}\">\n",
        xml_escape(r.run_uuid), r.benchmarks.size(), failures, errors);
    if (r.machine_changed) {
      out += fmt::format(
          "  <testcase classname=\"machine\" name=\"history\"><skipped message=\"{}\"/>"
          "</testcase>\n",
          xml_escape(r.machine_changed->text()));
    }
    for (const auto& b : r.benchmarks) out += testcase(b);
    return out + "</testsuite>\n";
  }
};

}  // namespace

const Reporter& junit_reporter() {
  static const JunitReporter reporter;
  return reporter;
}

}  // namespace tunebench::reporters
