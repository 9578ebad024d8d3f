#include "analysis/reporter.h"

#include <stdexcept>

namespace tunebench::reporters {

namespace {

[[noreturn]] void not_offered(const char* what) {
  throw std::logic_error(std::string("this reporter has no ") + what +
                         " output; reporters::reporter() hands out only those it offers");
}

struct Format {
  const char* name;
  const Reporter& (*reporter)();
};

// The formats each output offers, in the order --format's error lists them.
std::vector<Format> formats_of(Output what) {
  const Format table{"table", table_reporter}, md{"md", markdown_reporter},
      json{"json", json_reporter}, junit{"junit", junit_reporter};
  switch (what) {
    case Output::run:
      return {table, json};
    case Output::check:
      return {table, md, json, junit};
    case Output::comparison:
    case Output::hosts:
      return {table, md, json};
    case Output::floors:
      return {table};
  }
  return {};
}

}  // namespace

std::string Reporter::run(const analysis::RunReport&) const { not_offered("show"); }
std::string Reporter::check(const check::Report&) const { not_offered("check"); }
std::string Reporter::comparison(const check::Comparison&) const { not_offered("compare"); }
std::string Reporter::hosts(const hosts::Comparison&) const { not_offered("compare --hosts"); }
std::string Reporter::floors(const std::vector<storage::Database::NoiseFloor>&) const {
  not_offered("noise floors");
}

const Reporter& reporter(const std::string& name, Output what) {
  const auto formats = formats_of(what);
  std::string listed;
  for (size_t i = 0; i < formats.size(); ++i) {
    if (name == formats[i].name) return formats[i].reporter();
    listed += std::string(i == 0 ? "" : i + 1 == formats.size() ? " or " : ", ") + formats[i].name;
  }
  throw std::invalid_argument("--format must be " + listed + ", got '" + name + "'");
}

}  // namespace tunebench::reporters
