// A results database of synthetic runs for the analysis tests (tests/test_check.cpp,
// tests/test_hosts.cpp): one temporary database per test, removed afterwards, and the record every
// synthetic run starts from.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "store/storage.h"

namespace tunebench::test_db {

class SyntheticDbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::random_device random;
    dir_ = std::filesystem::temp_directory_path() /
           ("tunebench_synthetic_" + std::to_string(random()));
    std::filesystem::create_directories(dir_);
    db_ = std::make_unique<storage::Database>((dir_ / "db.sqlite").string());
  }
  void TearDown() override {
    db_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // The next synthetic run's record: a uuid and a start date (one day apart) from its number,
  // `suite` and `label`, `host` and `software` as given, the rest fixed.
  RunRecord next_run(const std::string& suite, const std::string& label, nlohmann::json host,
                     nlohmann::json software) {
    ++runs_;
    RunRecord run;
    run.uuid = fmt::format("{:08x}-0000-4000-8000-000000000000", runs_);
    run.suite_name = suite;
    run.suite_hash = "h";
    run.suite = nlohmann::json::object();
    run.label = label;
    run.git_revision = "r";
    run.command_line = "tunebench run";
    run.started_at = fmt::format("2026-01-{:02d}T00:00:00Z", runs_);
    run.host = std::move(host);
    run.software = std::move(software);
    run.host_state = nlohmann::json::object();
    return run;
  }

  std::filesystem::path dir_;
  std::unique_ptr<storage::Database> db_;
  int runs_ = 0;
};

}  // namespace tunebench::test_db
