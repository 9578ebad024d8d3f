#include "analysis/compare_runs.h"

#include <set>

#include "analysis/run_groups.h"

namespace tunebench::check {

namespace {

std::string hostname_of(const storage::Database::StoredRun& run) {
  return run.record.host.value("hostname", std::string("?"));
}

}  // namespace

Comparison compare(const storage::Database& db, const std::string& run_a,
                   const std::string& run_b) {
  Comparison c;
  c.run_a = storage::resolve_run(db, run_a);
  c.run_b = storage::resolve_run(db, run_b);
  c.host_a = hostname_of(db.run(c.run_a));
  c.host_b = hostname_of(db.run(c.run_b));
  const auto a = groups_of(db, c.run_a).absolute, b = groups_of(db, c.run_b).absolute;
  std::set<Key> keys;
  for (const auto& [k, g] : a) keys.insert(k);
  for (const auto& [k, g] : b) keys.insert(k);
  for (const auto& key : keys) {
    Comparison::Row row;
    row.experiment = key.first;
    row.arm = key.second;
    row.effect = stats::Effect{NAN, NAN, NAN, 0.95, 0, stats::Verdict::insufficient, ""};
    const auto ia = a.find(key), ib = b.find(key);
    if (ia != a.end()) row.median_a = median_of(ia->second);
    if (ib != b.end()) row.median_b = median_of(ib->second);
    if (ia != a.end() && ib != b.end()) row.effect = stats::effect(ia->second, ib->second);
    c.rows.push_back(row);
  }
  return c;
}

}  // namespace tunebench::check
