// The results database: round trips, fingerprint deduplication, constraints, atomic trials,
// connection settings, refusal of files it must not touch, run lookup and the views.
#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <sstream>

#include "analysis/analysis.h"
#include "analysis/effects.h"
#include "analysis/export.h"
#include "analysis/reporter.h"
#include "core/hardware.h"
#include "core/liveness.h"
#include "store/columns.h"
#include "store/internal.h"
#include "store/storage.h"
#include "store/trial_columns.h"

namespace tunebench::storage {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

int64_t count(const Database& db, const std::string& table) {
  SQLite::Statement query(db.connection(), "SELECT COUNT(*) FROM " + table);
  query.executeStep();
  return query.getColumn(0).getInt64();
}

json host_fingerprint(const std::string& hostname) {
  return {
      {"hostname", hostname}, {"cpu_model", "Test CPU @ 3.0GHz"}, {"cores", 2},    {"sockets", 1},
      {"numa_nodes", 1},      {"memory_bytes", 8589934592},       {"gpu", nullptr}};
}

RunRecord make_run(const std::string& uuid, const std::string& started_at,
                   const std::string& hostname = "bench-1") {
  RunRecord run;
  run.uuid = uuid;
  run.suite_name = "smoke";
  run.suite_hash = sha256_hex("suite bytes");
  run.suite = {{"name", "smoke"}, {"experiments", json::array({"no_grad.resnet50"})}};
  run.label = "nightly";
  run.git_revision = "0123abcd";
  run.command_line = "tunebench run suites/smoke.json --label 'nightly'";
  run.started_at = started_at;
  run.host = host_fingerprint(hostname);
  run.software = {{"libtorch_version", "1.13.1"},
                  {"cuda", ""},
                  {"git_revision", "0123abcd"},
                  {"blas", "openblas"}};
  run.host_state = {{"load_1m", 0.25}, {"governor", "performance"}};
  run.host_quiet = false;
  return run;
}

TrialSpec make_spec(const std::string& run_uuid, int sequence, const std::string& arm) {
  TrialSpec spec;
  spec.run_uuid = run_uuid;
  spec.experiment = "no_grad.resnet50 \"quoted\"; DROP TABLE runs; --";
  spec.knob = "no_grad";
  spec.arm = arm;
  spec.settings = {{"no_grad", arm == "on"}};
  spec.model.model = "resnet50";
  spec.model.preset = "tiny";
  spec.model.options = {{"width", 8}, {"inplace_act", true}};
  spec.mode = sequence % 2 ? Mode::train : Mode::infer;
  spec.batch = 4 + sequence;
  spec.warmup = 2;
  spec.samples = 3;
  spec.iterations = 10;
  spec.timeout_s = 120.5;
  spec.process_index = sequence / 2;
  spec.sequence = sequence;
  spec.seed = 7 + sequence;
  return spec;
}

TrialResult make_result(const std::string& status, std::vector<double> seconds) {
  TrialResult result;
  result.status = status;
  result.error = status == "failed" ? "worker exited with signal 9" : "";
  result.sample_seconds = std::move(seconds);
  result.probe_seconds = 0.0123;
  result.peak_rss_bytes = 123456789;
  result.page_faults_per_iteration = 1.5;
  result.device_peak_bytes = -1;
  result.items_per_second = 321.25;
  result.check_value = -0.75;
  result.evidence = {{"grad_mode", false}, {"threads", 2}, {"note", "é ünïcode"}};
  result.worker_stderr = "warning: something\nline two";
  return result;
}

class StorageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::random_device random;
    dir_ = fs::temp_directory_path() /
           ("tunebench_storage_" + std::to_string(random()) + "_" + std::to_string(random()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string db_path(const std::string& name = "results.sqlite") const {
    return (dir_ / name).string();
  }

  fs::path dir_;
};

TEST_F(StorageTest, StorageCreatesFolderAndSchema) {
  const std::string path = (dir_ / "new" / "folder" / "tunebench.sqlite").string();
  {
    Database db(path);
    EXPECT_EQ(db.schema_version(), kSchemaVersion);
    EXPECT_EQ(db.path(), path);
    EXPECT_EQ(count(db, "runs"), 0);
    EXPECT_FALSE(db.latest_run_uuid().has_value());
    EXPECT_TRUE(db.run_uuids().empty());
  }
  EXPECT_TRUE(fs::is_regular_file(path));
  Database again(path);  // reopening an existing, current file changes nothing
  EXPECT_EQ(again.schema_version(), kSchemaVersion);
}

TEST_F(StorageTest, StorageRoundTripsRunTrialsAndSamples) {
  const RunRecord run = make_run("0f1e2d3c-0000-4000-8000-000000000001", "2024-05-01T10:00:00Z");
  std::vector<std::pair<TrialSpec, TrialResult>> stored;
  stored.emplace_back(make_spec(run.uuid, 0, "off"), make_result("ok", {0.5, 0.25, 0.75}));
  stored.emplace_back(make_spec(run.uuid, 1, "on"),
                      make_result("invalid", {1e-9, 3.0, 2.0, 1.0, 1e3}));
  stored.emplace_back(make_spec(run.uuid, 2, "on"), make_result("failed", {}));
  stored[1].first.seed = std::numeric_limits<uint64_t>::max() - 5;  // above 2^63
  stored[1].second.device_peak_bytes = 4096;
  stored[2].second.device_peak_bytes = 0;
  stored[2].second.worker_stderr = "bytes \xff\xfe not UTF-8";
  {
    Database db(db_path());
    db.begin_run(run);
    // Stored out of sequence order: trials() gives them back in sequence order.
    std::vector<int64_t> ids(3);
    for (int i : {2, 0, 1}) ids[i] = db.store_trial(run.uuid, stored[i].first, stored[i].second);
    EXPECT_NE(ids[0], ids[1]);
    EXPECT_NE(ids[1], ids[2]);
    EXPECT_EQ(db.run(run.uuid).status, "running");
    EXPECT_EQ(db.run(run.uuid).ended_at, "");
    db.finish_run(run.uuid, "completed with failures", "2024-05-01T10:05:00Z");
  }

  const Database db(db_path());  // a fresh connection reads what the first one wrote
  const Database::StoredRun back = db.run(run.uuid);
  EXPECT_EQ(back.status, "completed with failures");
  EXPECT_EQ(back.ended_at, "2024-05-01T10:05:00Z");
  EXPECT_EQ(back.record.uuid, run.uuid);
  EXPECT_EQ(back.record.suite_name, run.suite_name);
  EXPECT_EQ(back.record.suite_hash, run.suite_hash);
  EXPECT_EQ(back.record.suite, run.suite);
  EXPECT_EQ(back.record.label, run.label);
  EXPECT_EQ(back.record.git_revision, run.git_revision);
  EXPECT_EQ(back.record.command_line, run.command_line);
  EXPECT_EQ(back.record.started_at, run.started_at);
  EXPECT_EQ(back.record.host, run.host);
  EXPECT_EQ(back.record.software, run.software);
  EXPECT_EQ(back.record.host_state, run.host_state);
  EXPECT_EQ(back.record.host_quiet, run.host_quiet);

  const std::vector<Database::StoredTrial> trials = db.trials(run.uuid);
  ASSERT_EQ(trials.size(), 3u);
  for (size_t i = 0; i < trials.size(); ++i) {
    SCOPED_TRACE("trial " + std::to_string(i));
    const TrialSpec& want = stored[i].first;
    const TrialSpec& got = trials[i].spec;
    // Every field: the JSON forms are equal exactly when all fields are.
    EXPECT_EQ(to_json(got), to_json(want));
    EXPECT_EQ(got.seed, want.seed);
    EXPECT_EQ(got.settings, want.settings);
    EXPECT_EQ(got.model.options, want.model.options);
    const TrialResult& wanted = stored[i].second;
    const TrialResult& result = trials[i].result;
    EXPECT_EQ(to_json(result), to_json(wanted));
    EXPECT_EQ(result.sample_seconds, wanted.sample_seconds);  // same values, same order
    EXPECT_EQ(result.evidence, wanted.evidence);
    EXPECT_EQ(result.worker_stderr, wanted.worker_stderr);
    EXPECT_EQ(result.device_peak_bytes, wanted.device_peak_bytes);
  }
  EXPECT_EQ(count(db, "samples"), 8);
  EXPECT_TRUE(db.trials("no-such-run").empty());
}

TEST_F(StorageTest, StorageDeduplicatesHostsAndSoftware) {
  Database db(db_path());
  const RunRecord first = make_run("aaaa0001", "2024-05-01T10:00:00Z");
  db.begin_run(first);
  db.begin_run(make_run("aaaa0002", "2024-05-02T10:00:00Z"));
  EXPECT_EQ(count(db, "hosts"), 1);
  EXPECT_EQ(count(db, "software"), 1);

  // The id is the hash of the canonical dump, and the common fields get their own columns.
  SQLite::Statement host(
      db.connection(), "SELECT id, json, hostname, cpu_model, cores, memory_bytes, gpu FROM hosts");
  ASSERT_TRUE(host.executeStep());
  EXPECT_EQ(host.getColumn(0).getString(), sha256_hex(first.host.dump()));
  EXPECT_EQ(json::parse(host.getColumn(1).getString()), first.host);
  EXPECT_EQ(host.getColumn(2).getString(), "bench-1");
  EXPECT_EQ(host.getColumn(3).getString(), "Test CPU @ 3.0GHz");
  EXPECT_EQ(host.getColumn(4).getInt64(), 2);
  EXPECT_EQ(host.getColumn(5).getInt64(), 8589934592);
  EXPECT_TRUE(host.getColumn(6).isNull());
  SQLite::Statement software(db.connection(), "SELECT id, libtorch_version FROM software");
  ASSERT_TRUE(software.executeStep());
  EXPECT_EQ(software.getColumn(0).getString(), sha256_hex(first.software.dump()));
  EXPECT_EQ(software.getColumn(1).getString(), "1.13.1");

  db.begin_run(make_run("aaaa0003", "2024-05-03T10:00:00Z", "bench-2"));
  EXPECT_EQ(count(db, "hosts"), 2);
  EXPECT_EQ(count(db, "software"), 1);

  // The same uuid twice is refused with SQLite's constraint code, and stores nothing.
  try {
    db.begin_run(make_run("aaaa0003", "2024-05-04T10:00:00Z", "bench-3"));
    FAIL() << "expected StorageError";
  } catch (const StorageError& e) {
    EXPECT_EQ(e.sqlite_code(), SQLITE_CONSTRAINT) << e.what();
  }
  EXPECT_EQ(count(db, "runs"), 3);
  EXPECT_EQ(count(db, "hosts"), 2);
}

// An SQLite error says its extended result code when that tells more than its text: every kind
// of I/O error reads "disk I/O error", every constraint "constraint failed".
TEST(StorageErrors, SayTheExtendedResultCode) {
  SQLite::Database db(":memory:", SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
  db.exec("CREATE TABLE t (x INTEGER UNIQUE); INSERT INTO t VALUES (1)");
  try {
    internal::guarded("mem.sqlite", "inserting", [&] { db.exec("INSERT INTO t VALUES (1)"); });
    FAIL() << "expected StorageError";
  } catch (const StorageError& e) {
    EXPECT_EQ(e.sqlite_code(), SQLITE_CONSTRAINT) << e.what();
    EXPECT_NE(std::string(e.what()).find("mem.sqlite: inserting: "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(
                  fmt::format("(SQLite extended result code {})", SQLITE_CONSTRAINT_UNIQUE)),
              std::string::npos)
        << e.what();
  }
  // A code with nothing more to say (a syntax error's extended code is its primary one) adds
  // nothing.
  try {
    internal::guarded("mem.sqlite", "reading", [&] { db.exec("SELEKT 1"); });
    FAIL() << "expected StorageError";
  } catch (const StorageError& e) {
    EXPECT_EQ(std::string(e.what()).find("extended result code"), std::string::npos) << e.what();
  }
}

TEST_F(StorageTest, StorageEnforcesForeignKeys) {
  Database db(db_path());
  db.begin_run(make_run("bbbb0001", "2024-05-01T10:00:00Z"));
  try {
    db.store_trial("no-such-run", make_spec("no-such-run", 0, "off"),
                   make_result("ok", {0.1, 0.2}));
    FAIL() << "expected StorageError";
  } catch (const StorageError& e) {
    EXPECT_EQ(e.sqlite_code(), SQLITE_CONSTRAINT) << e.what();
    EXPECT_NE(std::string(e.what()).find("no-such-run"), std::string::npos) << e.what();
  }
  EXPECT_EQ(count(db, "trials"), 0);
  EXPECT_EQ(count(db, "samples"), 0);

  SQLite::Statement pragma(db.connection(), "PRAGMA foreign_keys");
  ASSERT_TRUE(pragma.executeStep());
  EXPECT_EQ(pragma.getColumn(0).getInt(), 1);

  EXPECT_THROW(db.finish_run("no-such-run", "completed", "2024-05-01T11:00:00Z"), StorageError);
  EXPECT_THROW(db.finish_run("bbbb0001", "done", "2024-05-01T11:00:00Z"), StorageError);
  EXPECT_THROW(db.run("no-such-run"), StorageError);
  EXPECT_EQ(db.run("bbbb0001").status, "running");
}

TEST_F(StorageTest, StorageTrialIsAllOrNothing) {
  Database db(db_path());
  const std::string uuid = "cccc0001";
  db.begin_run(make_run(uuid, "2024-05-01T10:00:00Z"));
  db.store_trial(uuid, make_spec(uuid, 0, "off"), make_result("ok", {0.1, 0.2, 0.3}));

  // Fails at the trial row: the sequence number is taken.
  try {
    db.store_trial(uuid, make_spec(uuid, 0, "on"), make_result("ok", {1, 2, 3, 4, 5}));
    FAIL() << "expected StorageError";
  } catch (const StorageError& e) {
    EXPECT_EQ(e.sqlite_code(), SQLITE_CONSTRAINT) << e.what();
  }
  EXPECT_EQ(count(db, "trials"), 1);
  EXPECT_EQ(count(db, "samples"), 3);

  // Fails after the trial row and two samples are in: all of it is rolled back.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(db.store_trial(uuid, make_spec(uuid, 1, "on"), make_result("ok", {1, 2, nan, 4})),
               StorageError);
  EXPECT_EQ(count(db, "trials"), 1);
  EXPECT_EQ(count(db, "samples"), 3);

  // The connection is usable afterwards, and the sequence number is still free.
  db.store_trial(uuid, make_spec(uuid, 1, "on"), make_result("ok", {1, 2}));
  EXPECT_EQ(count(db, "trials"), 2);
  EXPECT_EQ(count(db, "samples"), 5);
}

TEST_F(StorageTest, StorageUsesWalAndBusyTimeout) {
  Database db(db_path());
  {  // statements left mid-result would keep the next write from committing
    SQLite::Statement journal(db.connection(), "PRAGMA journal_mode");
    ASSERT_TRUE(journal.executeStep());
    EXPECT_EQ(journal.getColumn(0).getString(), "wal");
    SQLite::Statement timeout(db.connection(), "PRAGMA busy_timeout");
    ASSERT_TRUE(timeout.executeStep());
    EXPECT_EQ(timeout.getColumn(0).getInt(), 10000);
  }

  db.begin_run(make_run("dddd0001", "2024-05-01T10:00:00Z"));
  EXPECT_TRUE(fs::exists(db_path() + "-wal"));
  // WAL mode is a property of the file: another connection sees it too.
  SQLite::Database other(db_path(), SQLite::OPEN_READONLY);
  EXPECT_EQ(other.execAndGet("PRAGMA journal_mode").getString(), "wal");
  EXPECT_EQ(other.execAndGet("SELECT COUNT(*) FROM runs").getInt(), 1);
}

// The POSIX locks this process holds on `path`, as /proc/locks lists them
// ("1: POSIX  ADVISORY  READ 9250 fd:01:1234567 1073741826 1073742335").
int posix_locks_held(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return 0;
  const std::string inode = ":" + std::to_string(st.st_ino) + " ";
  const std::string pid = " " + std::to_string(getpid()) + " ";
  std::ifstream locks("/proc/locks");
  int held = 0;
  for (std::string line; std::getline(locks, line);) {
    held += line.find("POSIX") != std::string::npos && line.find(pid) != std::string::npos &&
            line.find(inode) != std::string::npos;
  }
  return held;
}

// A second connection in the same process (check's stage 2 runs a whole run beside the check's
// own) must not drop the first one's locks. Closing any descriptor of a file drops every POSIX
// lock the process holds on it, so the header check before opening must not open and close the
// file while this process has it open: another process would then take the file as unused when
// it closes and delete the WAL that this one's connections still read ("disk I/O error", SQLite's
// short read, on the next open).
TEST_F(StorageTest, OpeningTheFileAgainKeepsThisProcesssLocksOnIt) {
  Database first(db_path());
  first.begin_run(make_run("eeee0001", "2024-05-01T10:00:00Z"));
  const int held = posix_locks_held(db_path());
  ASSERT_GT(held, 0) << "a WAL-mode connection holds a shared lock on its database file";
  {
    Database second(db_path());
    EXPECT_EQ(posix_locks_held(db_path()), held);
  }
  EXPECT_EQ(posix_locks_held(db_path()), held);
}

TEST_F(StorageTest, StorageRefusesFileThatIsNotSqlite) {
  const std::string path = db_path("notes.sqlite");
  {
    std::ofstream out(path, std::ios::binary);
    out << "these are my notes, not a database\n";
  }
  const std::string before = read_bytes(path);
  try {
    Database db(path);
    FAIL() << "expected StorageError";
  } catch (const StorageError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find("not an SQLite database"), std::string::npos) << message;
  }
  EXPECT_EQ(read_bytes(path), before);
  EXPECT_FALSE(fs::exists(path + "-wal"));
  EXPECT_FALSE(fs::exists(path + "-shm"));

  // A few bytes, shorter than SQLite's header, are not a database either.
  const std::string short_path = db_path("short.sqlite");
  std::ofstream(short_path, std::ios::binary) << "SQLite";
  EXPECT_THROW(Database{short_path}, StorageError);
  EXPECT_EQ(read_bytes(short_path), "SQLite");
}

TEST_F(StorageTest, StorageRefusesNewerSchema) {
  const std::string path = db_path("future.sqlite");
  {
    SQLite::Database future(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    future.exec("CREATE TABLE runs (uuid TEXT PRIMARY KEY, something_new TEXT)");
    future.exec("INSERT INTO runs VALUES ('x', 'y')");
    future.exec("PRAGMA user_version = 99");
  }
  const std::string before = read_bytes(path);
  ASSERT_FALSE(before.empty());
  try {
    Database db(path);
    FAIL() << "expected StorageError";
  } catch (const StorageError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find("schema version 99"), std::string::npos) << message;
    EXPECT_NE(message.find("up to " + std::to_string(kSchemaVersion)), std::string::npos)
        << message;
    EXPECT_NE(message.find("upgrade tunebench"), std::string::npos) << message;
  }
  EXPECT_EQ(read_bytes(path), before);
}

TEST_F(StorageTest, StorageRefusesSomeoneElsesDatabase) {
  const std::string path = db_path("other.sqlite");
  {
    SQLite::Database other(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    other.exec("CREATE TABLE recipes (name TEXT)");
  }
  const std::string before = read_bytes(path);
  try {
    Database db(path);
    FAIL() << "expected StorageError";
  } catch (const StorageError& e) {
    EXPECT_NE(std::string(e.what()).find("not a tunebench one"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_bytes(path), before);

  // An empty file (as `touch` or SQLite itself leaves it) is a new database.
  const std::string empty = db_path("empty.sqlite");
  { std::ofstream touch(empty); }
  Database db(empty);
  EXPECT_EQ(db.schema_version(), kSchemaVersion);
}

// Turns a current file into what schema version 5 wrote: without reference times and relative
// noise.
// Turns a current file into what schema version 9 wrote: findings whose kind may not be
// "unconfirmed" (the table as version 9 made it, its rows kept).
void downgrade_to_v9(const std::string& path) {
  SQLite::Database raw(path, SQLite::OPEN_READWRITE);
  std::string sql =
      raw.execAndGet("SELECT sql FROM sqlite_master WHERE name = 'regressions'").getString();
  const std::string now = ", 'unconfirmed'";
  const auto at = sql.find(now);
  ASSERT_NE(at, std::string::npos) << sql;
  sql.erase(at, now.size());
  sql.replace(sql.find("regressions"), std::string("regressions").size(), "regressions_v9");
  raw.exec(sql);
  raw.exec(
      "INSERT INTO regressions_v9 SELECT * FROM regressions; DROP TABLE regressions; "
      "ALTER TABLE regressions_v9 RENAME TO regressions; "
      "CREATE INDEX regressions_run_uuid ON regressions (run_uuid); PRAGMA user_version = 9;");
}

// Turns a current file into what schema version 8 wrote: runs without their certification and
// how they spent their budget.
void downgrade_to_v8(const std::string& path) {
  downgrade_to_v9(path);
  SQLite::Database raw(path, SQLite::OPEN_READWRITE);
  for (const auto& c : run_columns()) {
    if (c.since == 9) raw.exec("ALTER TABLE runs DROP COLUMN " + c.name);
  }
  raw.exec("PRAGMA user_version = 8;");
}

// Turns a current file into what schema version 7 wrote: no recommendations.
void downgrade_to_v7(const std::string& path) {
  downgrade_to_v8(path);
  SQLite::Database raw(path, SQLite::OPEN_READWRITE);
  raw.exec("DROP TABLE tunings");
  for (const auto& c : trial_columns()) {
    if (c.since == 8) raw.exec("ALTER TABLE trials DROP COLUMN " + c.name);
  }
  raw.exec("PRAGMA user_version = 7;");
}

// Turns a current file into what schema version 6 wrote: runs without their orchestrator.
void downgrade_to_v6(const std::string& path) {
  downgrade_to_v7(path);
  SQLite::Database raw(path, SQLite::OPEN_READWRITE);
  raw.exec("ALTER TABLE runs DROP COLUMN orchestrator");
  for (const auto& c : trial_columns()) {
    if (c.since == 7) raw.exec("ALTER TABLE trials DROP COLUMN " + c.name);
  }
  raw.exec("PRAGMA user_version = 6;");
}

void downgrade_to_v5(const std::string& path) {
  downgrade_to_v6(path);
  SQLite::Database raw(path, SQLite::OPEN_READWRITE);
  raw.exec("ALTER TABLE noise_floors DROP COLUMN sigma_log_relative");
  for (const auto& c : trial_columns()) {
    if (c.since == 6) raw.exec("ALTER TABLE trials DROP COLUMN " + c.name);
  }
  raw.exec("PRAGMA user_version = 5;");
}

// Turns a current file into what schema version 4 wrote: without version 5's column.
void downgrade_to_v4(const std::string& path) {
  downgrade_to_v5(path);
  SQLite::Database raw(path, SQLite::OPEN_READWRITE);
  raw.exec("ALTER TABLE samples DROP COLUMN cpu_pressure; PRAGMA user_version = 4;");
}

// Turns a current file into what schema version 3 wrote: without version 4's columns.
void downgrade_to_v3(const std::string& path) {
  downgrade_to_v4(path);
  SQLite::Database raw(path, SQLite::OPEN_READWRITE);
  for (const char* column :
       {"block", "position", "cpu_seconds", "wait_seconds", "involuntary_switches", "start_ns"}) {
    raw.exec(std::string("ALTER TABLE samples DROP COLUMN ") + column);
  }
  for (const auto& c : trial_columns()) {
    if (c.since == 4) raw.exec("ALTER TABLE trials DROP COLUMN " + c.name);
  }
  raw.exec("PRAGMA user_version = 3;");
}

// Turns a current file into what schema version 2 wrote: the same tables without version 3's.
void downgrade_to_v2(const std::string& path) {
  downgrade_to_v3(path);
  SQLite::Database raw(path, SQLite::OPEN_READWRITE);
  raw.exec("DROP TABLE effects; DROP TABLE arm_summaries; PRAGMA user_version = 2;");
}

// Turns a current file into what schema version 1 wrote: the same tables without version 2's.
void downgrade_to_v1(const std::string& path) {
  downgrade_to_v2(path);
  SQLite::Database raw(path, SQLite::OPEN_READWRITE);
  raw.exec("DROP TABLE regressions; DROP TABLE noise_floors; PRAGMA user_version = 1;");
}

bool has_table(const SQLite::Database& db, const std::string& table) {
  SQLite::Statement query(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?");
  query.bind(1, table);
  return query.executeStep();
}

TEST_F(StorageTest, StorageMigratesVersion1AfterABackupCopy) {
  const std::string path = db_path("v1.sqlite");
  const RunRecord run = make_run("aaaa0001-0000-4000-8000-000000000001", "2024-05-01T10:00:00Z");
  {
    Database db(path);
    db.begin_run(run);
    db.store_trial(run.uuid, make_spec(run.uuid, 0, "off"), make_result("ok", {0.5, 0.25}));
    db.finish_run(run.uuid, "completed", "2024-05-01T10:05:00Z");
  }
  downgrade_to_v1(path);
  {
    Database db(path);
    EXPECT_EQ(db.schema_version(), kSchemaVersion);
    EXPECT_EQ(db.migrated_from(), 1);
    EXPECT_EQ(db.backup_path(), path + ".schema-v1.bak");
    EXPECT_TRUE(has_table(db.connection(), "noise_floors"));
    EXPECT_TRUE(has_table(db.connection(), "regressions"));
    ASSERT_EQ(db.trials(run.uuid).size(), 1u);  // the data survived the migration
    EXPECT_EQ(db.trials(run.uuid)[0].result.sample_seconds, (std::vector<double>{0.5, 0.25}));
    // Its host keeps its id and its fingerprint, which has no hardware: shown as not recorded,
    // with a hardware class of its own that no recorded host shares.
    const json host = db.run(run.uuid).record.host;
    EXPECT_EQ(host, make_run(run.uuid, run.started_at).host);
    EXPECT_EQ(hardware::describe(host), "hardware not recorded");
    EXPECT_EQ(hardware::class_id(host), "");
    EXPECT_EQ(hardware::machine_id(host), sha256_hex(host.dump()));
    const std::string shown =
        reporters::reporter("table", reporters::Output::run).run(analysis::analyze(db, run.uuid));
    EXPECT_NE(shown.find("\nhardware not recorded\n"), std::string::npos) << shown;
  }
  // The backup is the file as it was: version 1, the run, no version-2 tables.
  SQLite::Database backup(path + ".schema-v1.bak", SQLite::OPEN_READONLY);
  EXPECT_EQ(backup.execAndGet("PRAGMA user_version").getInt(), 1);
  EXPECT_EQ(backup.execAndGet("SELECT COUNT(*) FROM runs").getInt(), 1);
  EXPECT_EQ(backup.execAndGet("SELECT COUNT(*) FROM samples").getInt(), 2);
  EXPECT_FALSE(has_table(backup, "noise_floors"));
  // A current file is not migrated again and gets no new backup; a second migration of another
  // version-1 file next to it does not overwrite the first backup.
  {
    Database again(path);
    EXPECT_EQ(again.migrated_from(), 0);
  }
  downgrade_to_v1(path);
  Database third(path);
  EXPECT_EQ(third.backup_path(), path + ".schema-v1.1.bak");
  EXPECT_TRUE(fs::exists(path + ".schema-v1.bak"));
}

TEST_F(StorageTest, StorageRefusesTruncatedFileUnchanged) {
  const std::string path = db_path("cut.sqlite");
  {
    Database db(path);
    for (int r = 0; r < 4; ++r) {
      const RunRecord run = make_run(fmt::format("cccc000{}-0000-4000-8000-000000000001", r),
                                     fmt::format("2024-05-0{}T10:00:00Z", r + 1));
      db.begin_run(run);
      for (int t = 0; t < 8; ++t) {
        db.store_trial(run.uuid, make_spec(run.uuid, t, t % 2 ? "on" : "off"),
                       make_result("ok", std::vector<double>(50, 0.001 * (t + 1))));
      }
    }
  }  // closing the last connection checkpoints the WAL into the file
  ASSERT_FALSE(fs::exists(path + "-wal"));
  const auto size = fs::file_size(path);
  ASSERT_GT(size, 8 * 4096u);
  fs::resize_file(path, size / 2);
  const std::string before = read_bytes(path);
  try {
    Database db(path);
    FAIL() << "expected StorageError";
  } catch (const StorageError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(path + " is truncated"), std::string::npos) << message;
    EXPECT_NE(message.find(std::to_string(size / 2) + " bytes"), std::string::npos) << message;
  }
  EXPECT_EQ(read_bytes(path), before);
  EXPECT_FALSE(fs::exists(path + "-wal"));
  // Cut inside the 100-byte header: the same refusal.
  fs::resize_file(path, 60);
  EXPECT_THROW(Database{path}, StorageError);
  EXPECT_EQ(fs::file_size(path), 60u);
}

TEST_F(StorageTest, StorageKeepsNoiseFloorsAndFindingsPerRun) {
  Database db(db_path());
  const RunRecord run = make_run("dddd0001-0000-4000-8000-000000000001", "2024-05-01T10:00:00Z");
  const RunRecord other_host =
      make_run("dddd0002-0000-4000-8000-000000000001", "2024-05-01T11:00:00Z", "bench-2");
  db.begin_run(run);
  db.begin_run(other_host);
  Database::NoiseFloor floor;
  floor.experiment = "no_grad.resnet50";
  floor.arm = "off";
  floor.run_uuids = {run.uuid};
  floor.sigma_log = 0.02;
  floor.false_alarm = 0.01;
  floor.power = 0.8;
  floor.baseline_runs = 5;
  floor.min_detectable = 0.071;
  floor.calibrated_at = "2024-05-02T00:00:00Z";
  db.store_noise_floors(run.uuid, {floor});
  ASSERT_EQ(db.noise_floors(run.uuid).size(), 1u);
  EXPECT_DOUBLE_EQ(db.noise_floors(run.uuid)[0].min_detectable, 0.071);
  EXPECT_EQ(db.noise_floors(run.uuid)[0].run_uuids, floor.run_uuids);
  EXPECT_TRUE(db.noise_floors(other_host.uuid).empty());  // another host: not its floor
  floor.sigma_log = NAN;
  EXPECT_THROW(db.store_noise_floors(run.uuid, {floor}), StorageError);
  EXPECT_EQ(db.noise_floors(run.uuid).size(), 1u);  // the failed store changed nothing

  Database::Finding finding{"no_grad.resnet50", "off", "regression", 1.12, 1.08, 1.17,
                            "12 % slower"};
  db.store_findings(run.uuid, {"b1", "b2"}, 0.05, "2024-05-02T00:00:00Z", {finding});
  ASSERT_EQ(db.findings(run.uuid).size(), 1u);
  EXPECT_DOUBLE_EQ(db.findings(run.uuid)[0].lo, 1.08);
  finding.kind = "step change";
  finding.lo = NAN;
  db.store_findings(run.uuid, {"b1"}, 0.05, "2024-05-03T00:00:00Z", {finding});  // replaces
  ASSERT_EQ(db.findings(run.uuid).size(), 1u);
  EXPECT_EQ(db.findings(run.uuid)[0].kind, "step change");
  EXPECT_TRUE(std::isnan(db.findings(run.uuid)[0].lo));
  finding.kind = "bad; DROP TABLE runs";
  EXPECT_THROW(db.store_findings(run.uuid, {}, 0.05, "x", {finding}), StorageError);
  EXPECT_EQ(db.findings(run.uuid).size(), 1u);
  EXPECT_THROW(db.store_findings("no-such-run", {}, 0.05, "x", {}), StorageError);
}

TEST_F(StorageTest, AVersion9FileTakesUnconfirmedFindingsAfterItsMigrationAndKeepsItsOwn) {
  const std::string path = db_path("v9.sqlite");
  const RunRecord run = make_run("aaaa0009-0000-4000-8000-000000000009", "2024-05-01T10:00:00Z");
  Database::Finding finding{"no_grad.resnet50", "off", "regression", 1.12, 1.08, 1.17,
                            "12 % slower"};
  {
    Database db(path);
    db.begin_run(run);
    db.store_trial(run.uuid, make_spec(run.uuid, 0, "off"), make_result("ok", {0.5, 0.25}));
    db.finish_run(run.uuid, "completed", "2024-05-01T10:05:00Z");
    db.store_findings(run.uuid, {"b1"}, 0.05, "2024-05-02T00:00:00Z", {finding});
  }
  downgrade_to_v9(path);
  {
    // What version 9 refused: the CHECK of its kind column.
    SQLite::Database raw(path, SQLite::OPEN_READWRITE);
    EXPECT_THROW(raw.exec("UPDATE regressions SET kind = 'unconfirmed'"), SQLite::Exception);
  }
  Database db(path);
  EXPECT_EQ(db.migrated_from(), 9);
  ASSERT_EQ(db.findings(run.uuid).size(), 1u);  // the row survived the table's rebuild
  EXPECT_EQ(db.findings(run.uuid)[0].kind, "regression");
  EXPECT_DOUBLE_EQ(db.findings(run.uuid)[0].hi, 1.17);
  finding.kind = "unconfirmed";
  db.store_findings(run.uuid, {"b1"}, 0.05, "2024-05-03T00:00:00Z", {finding});
  ASSERT_EQ(db.findings(run.uuid).size(), 1u);
  EXPECT_EQ(db.findings(run.uuid)[0].kind, "unconfirmed");
  // The rebuilt table still has its index.
  SQLite::Statement index(db.connection(),
                          "SELECT 1 FROM sqlite_master WHERE name = 'regressions_run_uuid'");
  EXPECT_TRUE(index.executeStep());
}

TEST_F(StorageTest, StorageMergeImportsEachRunOnceAndKeepsHostsApart) {
  Database here(db_path("here.sqlite"));
  const RunRecord mine = make_run("eeee0001-0000-4000-8000-000000000001", "2024-05-01T10:00:00Z");
  here.begin_run(mine);
  here.finish_run(mine.uuid, "completed", "2024-05-01T10:05:00Z");
  const std::string other_path = db_path("other-machine.sqlite");
  const RunRecord theirs =
      make_run("eeee0002-0000-4000-8000-000000000001", "2024-05-01T12:00:00Z", "bench-2");
  const RunRecord unfinished =
      make_run("eeee0003-0000-4000-8000-000000000001", "2024-05-01T13:00:00Z", "bench-2");
  {
    Database other(other_path);
    other.begin_run(mine);  // a run both files already hold (merged before, say)
    other.begin_run(theirs);
    for (int t = 0; t < 3; ++t) {
      other.store_trial(theirs.uuid, make_spec(theirs.uuid, t, t % 2 ? "on" : "off"),
                        make_result(t == 2 ? "failed" : "ok", {0.1 * (t + 1), 0.2 * (t + 1)}));
    }
    other.finish_run(theirs.uuid, "completed with failures", "2024-05-01T12:05:00Z");
    other.begin_run(unfinished);
    Database::Finding f{"x", "on", "regression", 1.2, 1.1, 1.3, "slower"};
    other.store_findings(theirs.uuid, {}, 0.05, "2024-05-02T00:00:00Z", {f});
  }
  const std::string other_bytes = read_bytes(other_path);

  auto result = here.merge_from(other_path);
  EXPECT_EQ(result.imported, std::vector<std::string>{theirs.uuid});
  EXPECT_EQ(result.already_here, std::vector<std::string>{mine.uuid});
  EXPECT_EQ(result.still_running, std::vector<std::string>{unfinished.uuid});
  EXPECT_EQ(result.hosts_added, 1);
  EXPECT_EQ(read_bytes(other_path), other_bytes);  // the other file is only read

  const auto run = here.run(theirs.uuid);
  EXPECT_EQ(run.status, "completed with failures");
  EXPECT_EQ(run.record.host["hostname"], "bench-2");
  const auto trials = here.trials(theirs.uuid);
  ASSERT_EQ(trials.size(), 3u);
  EXPECT_EQ(trials[1].spec.experiment, make_spec(theirs.uuid, 1, "on").experiment);
  EXPECT_EQ(trials[1].result.sample_seconds, (std::vector<double>{0.2, 0.4}));
  EXPECT_EQ(trials[2].result.status, "failed");
  EXPECT_EQ(here.findings(theirs.uuid).size(), 1u);
  EXPECT_EQ(count(here, "hosts"), 2);
  // The merged run has its effects, the ones the other file stored for it.
  const auto merged_effects = here.effects(theirs.uuid);
  ASSERT_FALSE(merged_effects.empty());
  EXPECT_EQ(merged_effects.arms.size(), 2u);
  EXPECT_EQ(merged_effects.effects.size(),
            Database(other_path).effects(theirs.uuid).effects.size());

  // Importing the same file again stores nothing twice.
  result = here.merge_from(other_path);
  EXPECT_TRUE(result.imported.empty());
  EXPECT_EQ(result.already_here.size(), 2u);
  EXPECT_EQ(count(here, "runs"), 2);
  EXPECT_EQ(count(here, "trials"), 3);
  EXPECT_EQ(count(here, "samples"), 6);
  EXPECT_EQ(count(here, "regressions"), 1);

  // A newer schema, this file itself, or a missing file: refused, nothing imported.
  const std::string future = db_path("future.sqlite");
  {
    SQLite::Database f(future, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    f.exec("CREATE TABLE runs (uuid TEXT); PRAGMA user_version = 99;");
  }
  try {
    here.merge_from(future);
    FAIL() << "expected StorageError";
  } catch (const StorageError& e) {
    EXPECT_NE(std::string(e.what()).find("schema version 99"), std::string::npos) << e.what();
  }
  EXPECT_THROW(here.merge_from(db_path("here.sqlite")), StorageError);
  EXPECT_THROW(here.merge_from(db_path("missing.sqlite")), StorageError);
  EXPECT_EQ(count(here, "runs"), 2);
}

TEST_F(StorageTest, StorageFindsLatestRunAndResolvesPrefixes) {
  Database db(db_path());
  EXPECT_THROW(resolve_run(db, "latest"), StorageError);
  db.begin_run(make_run("abcd1111-aaaa", "2024-05-02T10:00:00Z"));
  db.begin_run(make_run("abcd2222-bbbb", "2024-05-01T10:00:00Z"));  // started earlier
  db.begin_run(make_run("ef012345-cccc", "2024-05-02T10:00:00Z"));  // same time, inserted later

  EXPECT_EQ(db.latest_run_uuid(), "ef012345-cccc");
  EXPECT_EQ(db.run_uuids(),
            (std::vector<std::string>{"abcd2222-bbbb", "abcd1111-aaaa", "ef012345-cccc"}));

  EXPECT_EQ(resolve_run(db, "latest"), "ef012345-cccc");
  EXPECT_EQ(resolve_run(db, "abcd1"), "abcd1111-aaaa");
  EXPECT_EQ(resolve_run(db, "ef01"), "ef012345-cccc");
  EXPECT_EQ(resolve_run(db, "abcd2222-bbbb"), "abcd2222-bbbb");
  try {
    resolve_run(db, "abcd");
    FAIL() << "expected StorageError";
  } catch (const StorageError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("abcd1111-aaaa"), std::string::npos) << message;
    EXPECT_NE(message.find("abcd2222-bbbb"), std::string::npos) << message;
  }
  try {
    resolve_run(db, "9999");
    FAIL() << "expected StorageError";
  } catch (const StorageError& e) {
    EXPECT_NE(std::string(e.what()).find("9999"), std::string::npos) << e.what();
  }
  EXPECT_THROW(resolve_run(db, "ef0"), StorageError);  // fewer than 4 characters
  EXPECT_THROW(resolve_run(db, ""), StorageError);
}

TEST_F(StorageTest, StorageViewsAnswerCommonQuestions) {
  Database db(db_path());
  const std::string uuid = "eeee0001";
  db.begin_run(make_run(uuid, "2024-05-01T10:00:00Z"));
  // Medians by hand: {0.5, 0.1, 0.3} → 0.3; {8, 2, 1, 4} → (2 + 4) / 2 = 3; {} → NULL; {7} → 7.
  const int64_t odd =
      db.store_trial(uuid, make_spec(uuid, 0, "off"), make_result("ok", {0.5, 0.1, 0.3}));
  const int64_t even =
      db.store_trial(uuid, make_spec(uuid, 1, "on"), make_result("invalid", {8.0, 2.0, 1.0, 4.0}));
  const int64_t failed = db.store_trial(uuid, make_spec(uuid, 2, "on"), make_result("failed", {}));
  db.store_trial(uuid, make_spec(uuid, 3, "off"), make_result("ok", {7.0}));
  db.begin_run(make_run("eeee0002", "2024-05-02T10:00:00Z"));  // no trials yet

  SQLite::Statement medians(db.connection(),
                            "SELECT trial_id, status, n_samples, median_seconds, items_per_second, "
                            "peak_rss_bytes, arm, host FROM v_trial_medians WHERE run_uuid = ? "
                            "ORDER BY sequence");
  medians.bind(1, uuid);
  ASSERT_TRUE(medians.executeStep());
  EXPECT_EQ(medians.getColumn(0).getInt64(), odd);
  EXPECT_EQ(medians.getColumn(1).getString(), "ok");
  EXPECT_EQ(medians.getColumn(2).getInt(), 3);
  EXPECT_DOUBLE_EQ(medians.getColumn(3).getDouble(), 0.3);
  EXPECT_DOUBLE_EQ(medians.getColumn(4).getDouble(), 321.25);
  EXPECT_EQ(medians.getColumn(5).getInt64(), 123456789);
  EXPECT_EQ(medians.getColumn(6).getString(), "off");
  EXPECT_EQ(medians.getColumn(7).getString(), "bench-1");
  ASSERT_TRUE(medians.executeStep());
  EXPECT_EQ(medians.getColumn(0).getInt64(), even);
  EXPECT_EQ(medians.getColumn(1).getString(), "invalid");
  EXPECT_EQ(medians.getColumn(2).getInt(), 4);
  EXPECT_DOUBLE_EQ(medians.getColumn(3).getDouble(), 3.0);
  ASSERT_TRUE(medians.executeStep());
  EXPECT_EQ(medians.getColumn(0).getInt64(), failed);
  EXPECT_EQ(medians.getColumn(2).getInt(), 0);
  EXPECT_TRUE(medians.getColumn(3).isNull());
  ASSERT_TRUE(medians.executeStep());
  EXPECT_DOUBLE_EQ(medians.getColumn(3).getDouble(), 7.0);
  EXPECT_FALSE(medians.executeStep());

  SQLite::Statement runs(db.connection(),
                         "SELECT uuid, cpu_model, libtorch_version, trials_ok, trials_invalid, "
                         "trials_failed, status FROM v_runs ORDER BY started_at");
  ASSERT_TRUE(runs.executeStep());
  EXPECT_EQ(runs.getColumn(0).getString(), uuid);
  EXPECT_EQ(runs.getColumn(1).getString(), "Test CPU @ 3.0GHz");
  EXPECT_EQ(runs.getColumn(2).getString(), "1.13.1");
  EXPECT_EQ(runs.getColumn(3).getInt(), 2);
  EXPECT_EQ(runs.getColumn(4).getInt(), 1);
  EXPECT_EQ(runs.getColumn(5).getInt(), 1);
  EXPECT_EQ(runs.getColumn(6).getString(), "running");
  ASSERT_TRUE(runs.executeStep());
  EXPECT_EQ(runs.getColumn(0).getString(), "eeee0002");
  EXPECT_EQ(runs.getColumn(3).getInt(), 0);
  EXPECT_EQ(runs.getColumn(4).getInt(), 0);
  EXPECT_EQ(runs.getColumn(5).getInt(), 0);
  EXPECT_FALSE(runs.executeStep());

  // One row per sample, in order, with the trial's context beside it.
  SQLite::Statement samples(db.connection(),
                            "SELECT sample_index, seconds, experiment, knob, arm, model, preset, "
                            "mode, batch, label, host, process_index FROM v_samples "
                            "WHERE trial_id = ? ORDER BY sample_index");
  samples.bind(1, odd);
  std::vector<double> seconds;
  while (samples.executeStep()) {
    EXPECT_EQ(samples.getColumn(0).getInt(), static_cast<int>(seconds.size()));
    seconds.push_back(samples.getColumn(1).getDouble());
    EXPECT_EQ(samples.getColumn(3).getString(), "no_grad");
    EXPECT_EQ(samples.getColumn(5).getString(), "resnet50");
    EXPECT_EQ(samples.getColumn(6).getString(), "tiny");
    EXPECT_EQ(samples.getColumn(7).getString(), "infer");
    EXPECT_EQ(samples.getColumn(8).getInt(), 4);
    EXPECT_EQ(samples.getColumn(9).getString(), "nightly");
    EXPECT_EQ(samples.getColumn(10).getString(), "bench-1");
  }
  EXPECT_EQ(seconds, (std::vector<double>{0.5, 0.1, 0.3}));
  EXPECT_EQ(count(db, "v_samples"), 8);
}

// A column added to the list appears in CREATE, INSERT and SELECT, and round-trips through a
// table made from the list: nothing else has to change.
TEST_F(StorageTest, StorageTrialColumnListDrivesCreateInsertSelect) {
  std::vector<TrialColumn> columns = trial_columns();
  EXPECT_EQ(columns.size(), 31u);
  columns.push_back({"energy_joules", "REAL", 7,
                     [](SQLite::Statement& st, const char* p, const TrialRow& row) {
                       st.bind(p, row.result.evidence.value("energy_joules", 0.0));
                     },
                     [](const SQLite::Column& c, Database::StoredTrial& t) {
                       t.result.evidence["energy_joules"] = c.getDouble();
                     }});
  EXPECT_EQ(trials_create_sql(columns, 6).find("energy_joules"), std::string::npos);
  const std::string create = trials_create_sql(columns, 7);
  EXPECT_NE(create.find("  energy_joules REAL,\n"), std::string::npos) << create;
  EXPECT_EQ(trials_add_columns_sql(columns, 7),
            "ALTER TABLE trials ADD COLUMN energy_joules REAL;\n");
  const std::string insert = trials_insert_sql(columns);
  EXPECT_NE(insert.find(", energy_joules)"), std::string::npos) << insert;
  EXPECT_NE(insert.find(", :energy_joules)"), std::string::npos) << insert;
  EXPECT_NE(trials_select_sql(columns).find(", energy_joules FROM trials"), std::string::npos);

  SQLite::Database raw(":memory:", SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
  raw.exec(create);
  const std::string uuid = "cccc0001-0000-4000-8000-000000000001";
  const TrialSpec spec = make_spec(uuid, 3, "on");
  TrialResult result = make_result("ok", {});
  result.evidence["energy_joules"] = 12.5;
  SQLite::Statement st(raw, insert);
  bind_trial(st, columns, {uuid, spec, result});
  st.exec();
  SQLite::Statement select(raw, trials_select_sql(columns));
  select.bind(":run_uuid", uuid);
  ASSERT_TRUE(select.executeStep());
  const Database::StoredTrial back = read_trial(select, columns);
  EXPECT_EQ(back.result.evidence["energy_joules"], 12.5);
  EXPECT_EQ(to_json(back.spec), to_json(spec));
  EXPECT_EQ(back.result.status, "ok");
  EXPECT_EQ(back.result.peak_rss_bytes, result.peak_rss_bytes);
  // The database's own table has exactly the list's columns, in order, after its id.
  Database db(db_path());
  SQLite::Statement info(db.connection(), "PRAGMA table_info(trials)");
  std::vector<std::string> names;
  while (info.executeStep()) names.push_back(info.getColumn(1).getString());
  ASSERT_EQ(names.size(), trial_columns().size() + 1);
  EXPECT_EQ(names[0], "id");
  for (size_t i = 0; i < trial_columns().size(); ++i)
    EXPECT_EQ(names[i + 1], trial_columns()[i].name);
}

// The effects table is made from its list as the trials table is: a new column is one entry, and
// the store writes and reads it back with nothing else changed; the database's own effects table
// has exactly the list's columns, in order (so do the other listed tables).
TEST_F(StorageTest, StorageEffectColumnListDrivesCreateInsertSelect) {
  std::vector<EffectColumn> columns = effect_columns();
  columns.push_back({"resample_seconds", "REAL", 9,
                     [](SQLite::Statement& st, const char* p, const EffectRow& row) {
                       st.bind(p, row.effect.confidence * 10);
                     },
                     [](const SQLite::Column& c, Database::StoredEffect& e) {
                       e.note = "took " + std::to_string(c.getInt()) + " s";
                     }});
  EXPECT_EQ(create_table_sql("effects", columns, 8).find("resample_seconds"), std::string::npos);
  const std::string create = create_table_sql("effects", columns, 9, "", "PRIMARY KEY (x)");
  EXPECT_NE(create.find("  resample_seconds REAL,\n  PRIMARY KEY (x)\n);"), std::string::npos)
      << create;
  EXPECT_EQ(add_columns_sql("effects", columns, 9),
            "ALTER TABLE effects ADD COLUMN resample_seconds REAL;\n");
  SQLite::Database raw(":memory:", SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
  raw.exec("CREATE TABLE runs (uuid TEXT PRIMARY KEY);");
  raw.exec(create_table_sql("effects", columns, 9, "", "PRIMARY KEY (run_uuid, position)"));
  Database::StoredEffect effect{"no_grad", "effect", "time", "on vs off",
                                0.8,       0.75,     0.85,   0.95,
                                2000,      "helps",  "",     "0.80x [0.75, 0.85] helps"};
  SQLite::Statement insert(raw, insert_sql("effects", columns));
  bind_row(insert, columns, EffectRow{"r1", 0, effect});
  insert.exec();
  SQLite::Statement select(raw, "SELECT " + column_names(columns) + " FROM effects");
  ASSERT_TRUE(select.executeStep());
  Database::StoredEffect back;
  read_row(select, columns, back);
  EXPECT_EQ(back.note, "took 9 s");
  EXPECT_EQ(back.text, effect.text);
  EXPECT_DOUBLE_EQ(back.lo, 0.75);

  Database db(db_path());
  auto names_of = [&](const std::string& table) {
    SQLite::Statement info(db.connection(), "SELECT name FROM pragma_table_info(?) ORDER BY cid");
    info.bind(1, table);
    std::vector<std::string> names;
    while (info.executeStep()) names.push_back(info.getColumn(0).getString());
    return names;
  };
  auto listed = [](const auto& list) {
    std::vector<std::string> names;
    for (const auto& c : list) names.push_back(c.name);
    return names;
  };
  EXPECT_EQ(names_of("effects"), listed(effect_columns()));
  EXPECT_EQ(names_of("arm_summaries"), listed(arm_columns()));
  EXPECT_EQ(names_of("noise_floors"), listed(floor_columns()));
  EXPECT_EQ(names_of("runs"), listed(run_columns()));
  auto findings = listed(finding_columns());
  findings.insert(findings.begin(), "id");
  EXPECT_EQ(names_of("regressions"), findings);
}

// Merge copies the columns both files have, whatever wrote the other file: a column only the
// other file has is left there, one only this file has takes its default, and every run, trial,
// sample, finding and floor comes across.
TEST_F(StorageTest, StorageMergeCopiesTheColumnsBothFilesHave) {
  const std::string other_path = db_path("other.sqlite");
  const RunRecord run =
      make_run("ffff0001-0000-4000-8000-000000000001", "2024-05-01T12:00:00Z", "bench-2");
  {
    Database other(other_path);
    other.begin_run(run);
    for (int t = 0; t < 4; ++t) {
      other.store_trial(run.uuid, make_spec(run.uuid, t, t % 2 ? "on" : "off"),
                        make_result("ok", {0.1 * (t + 1), 0.2 * (t + 1)}));
    }
    other.finish_run(run.uuid, "completed", "2024-05-01T12:05:00Z");
    Database::Finding f{"x", "on", "regression", 1.2, 1.1, 1.3, "slower"};
    other.store_findings(run.uuid, {}, 0.05, "2024-05-02T00:00:00Z", {f});
    Database::NoiseFloor floor;
    floor.experiment = "x";
    floor.arm = "on";
    floor.run_uuids = {run.uuid};
    floor.sigma_log = 0.01;
    floor.min_detectable = 0.03;
    floor.calibrated_at = "2024-05-02T00:00:00Z";
    other.store_noise_floors(run.uuid, {floor});
  }
  {
    // Columns a later tunebench might have added there, and one this file has that is gone there.
    SQLite::Database raw(other_path, SQLite::OPEN_READWRITE);
    for (const char* table : {"runs", "trials", "samples", "regressions", "noise_floors"})
      raw.exec(std::string("ALTER TABLE ") + table + " ADD COLUMN later_column TEXT DEFAULT 'x'");
    raw.exec("ALTER TABLE trials DROP COLUMN check_value");
  }
  Database here(db_path("here.sqlite"));
  const auto result = here.merge_from(other_path);
  EXPECT_EQ(result.imported, std::vector<std::string>{run.uuid});
  EXPECT_EQ(here.run(run.uuid).status, "completed");
  const auto trials = here.trials(run.uuid);
  ASSERT_EQ(trials.size(), 4u);
  EXPECT_EQ(trials[3].result.sample_seconds, (std::vector<double>{0.4, 0.8}));
  EXPECT_EQ(trials[3].result.check_value, 0);  // NULL: the other file no longer had it
  EXPECT_EQ(trials[3].result.peak_rss_bytes, make_result("ok", {}).peak_rss_bytes);
  EXPECT_EQ(here.findings(run.uuid).size(), 1u);
  EXPECT_EQ(here.noise_floors(run.uuid).size(), 1u);
  EXPECT_EQ(count(here, "samples"), 8);
}

void store_two_arms(Database& db, const RunRecord& run, const json& orchestrator = json()) {
  db.begin_run(run, orchestrator);
  for (int t = 0; t < 6; ++t) {
    const bool on = t % 2;
    const double base = on ? 0.5 : 1.0;
    db.store_trial(
        run.uuid, make_spec(run.uuid, t, on ? "on" : "off"),
        make_result("ok", {base * (1 + 0.01 * t), base * (1.02 + 0.01 * t), base * 0.99}));
  }
}

// Runs of a version-2 file get their effects when it is migrated to version 3, after a backup
// copy of the file as it was.
// A paired experiment: each worker's two arms are stored together with every sample's
// block, position and contamination figures, and the stored effect is the paired estimator's.
// Synthetic samples: the host drifts by ±20 % from pair to pair (both arms of a pair alike), each
// worker has its own offset, and ON is `ratio` × OFF inside every pair (±0.3 % between workers).
std::vector<std::pair<TrialSpec, TrialResult>> paired_worker(const std::string& run_uuid,
                                                             int worker, double ratio) {
  const int blocks = 8, block_samples = 3;
  std::pair<TrialSpec, TrialResult> off{make_spec(run_uuid, 2 * worker, "off"),
                                        make_result("ok", {})};
  std::pair<TrialSpec, TrialResult> on{make_spec(run_uuid, 2 * worker + 1, "on"),
                                       make_result("ok", {})};
  for (auto* arm : {&off, &on}) {
    arm->first.experiment = "no_grad.paired";
    arm->first.mode = Mode::infer;
    arm->first.batch = 4;
    arm->first.process_index = worker;
    arm->first.pairing = {blocks, block_samples, worker % 2 == 1};
  }
  const std::vector<bool> order = abba_order(blocks, worker % 2 == 1);
  const double worker_ratio = ratio * (1 + 0.003 * (worker - 1.5));
  for (int b = 0; b < blocks; ++b) {
    const double host = 0.1 * (1 + 0.2 * std::sin(b / 2)) * (1 + 0.05 * worker);
    for (int p = 0; p < block_samples; ++p) {
      PairedSample s;
      s.on = order[size_t(b)];
      s.block = b;
      s.position = p;
      s.seconds = host * (s.on ? worker_ratio : 1.0) * (p == 0 ? 1.3 : 1.0);  // carry-over
      s.cpu_seconds = 2 * s.seconds;
      s.wait_seconds = 1e-4 * (b + 1);
      s.involuntary_switches = b;
      s.start_ns = 1000000 * (b * block_samples + p);
      s.cpu_pressure = s.on ? 0.25 : 0.05;  // the ON arm's samples under more host pressure
      auto& result = (s.on ? on : off).second;
      result.sample_seconds.push_back(s.seconds);
      result.paired_samples.push_back(s);
    }
  }
  return {off, on};
}

// Version 3 → 4: the samples of old trials keep their times (no blocks: they ran alone), and the
// file then takes paired trials.
TEST_F(StorageTest, StorageMigratesVersion3AndThenKeepsPairedTrials) {
  const std::string path = db_path("v3.sqlite");
  const RunRecord old = make_run("dddd0003-0000-4000-8000-000000000001", "2024-05-01T10:00:00Z");
  {
    Database db(path);
    store_two_arms(db, old);
    db.finish_run(old.uuid, "completed", "2024-05-01T10:05:00Z");
  }
  downgrade_to_v3(path);
  Database db(path);
  EXPECT_EQ(db.schema_version(), kSchemaVersion);
  EXPECT_EQ(db.migrated_from(), 3);
  EXPECT_TRUE(fs::exists(path + ".schema-v3.bak"));
  const auto trials = db.trials(old.uuid);
  ASSERT_EQ(trials.size(), 6u);
  for (const auto& t : trials) {
    EXPECT_EQ(t.result.sample_seconds.size(), 3u);
    EXPECT_TRUE(t.result.paired_samples.empty());
    EXPECT_FALSE(t.spec.pairing.paired());
  }
  const RunRecord paired = make_run("dddd0003-0000-4000-8000-000000000002", "2024-05-02T10:00:00Z");
  db.begin_run(paired);
  db.store_trials(paired.uuid, paired_worker(paired.uuid, 0, 1.1));
  EXPECT_EQ(db.trials(paired.uuid)[1].result.paired_samples.size(), 12u);
}

// One experiment's trials, for a run loop that samples one experiment on without reading the
// whole run again.
TEST_F(StorageTest, StorageGivesTheTrialsOfOneExperimentOfARun) {
  Database db(db_path());
  const RunRecord run = make_run("aaaa0005-0000-4000-8000-000000000001", "2026-12-01T10:00:00Z");
  store_two_arms(db, run);  // six trials of another experiment, sequences 0-5
  auto worker = paired_worker(run.uuid, 0, 1.1);
  for (auto& [spec, result] : worker) spec.sequence += 6;
  db.store_trials(run.uuid, worker);
  ASSERT_EQ(db.trials(run.uuid).size(), 8u);
  const auto paired = db.trials(run.uuid, "no_grad.paired");
  ASSERT_EQ(paired.size(), 2u);
  for (const auto& t : paired) {
    EXPECT_EQ(t.spec.experiment, "no_grad.paired");
    EXPECT_EQ(t.result.paired_samples.size(), 12u);  // samples filled in as for the whole run
  }
  EXPECT_TRUE(db.trials(run.uuid, "no such experiment").empty());
}

// Version 4 → 5: paired samples stored before keep their blocks and have no CPU pressure (−1, and
// no pressure in the effect's note); samples stored after keep theirs.
TEST_F(StorageTest, StorageMigratesVersion4AndThenKeepsEachSamplesCpuPressure) {
  const std::string path = db_path("v4.sqlite");
  const RunRecord old = make_run("dddd0004-0000-4000-8000-000000000001", "2024-05-01T10:00:00Z");
  {
    Database db(path);
    db.begin_run(old);
    for (int w = 0; w < 3; ++w) db.store_trials(old.uuid, paired_worker(old.uuid, w, 1.1));
    db.finish_run(old.uuid, "completed", "2024-05-01T10:05:00Z");
  }
  downgrade_to_v4(path);
  Database db(path);
  EXPECT_EQ(db.schema_version(), kSchemaVersion);
  EXPECT_EQ(db.migrated_from(), 4);
  EXPECT_TRUE(fs::exists(path + ".schema-v4.bak"));
  for (const auto& t : db.trials(old.uuid)) {
    ASSERT_EQ(t.result.paired_samples.size(), 12u);
    for (const auto& s : t.result.paired_samples) EXPECT_EQ(s.cpu_pressure, -1);
  }
  const RunRecord now = make_run("dddd0004-0000-4000-8000-000000000002", "2024-05-02T10:00:00Z");
  db.begin_run(now);
  db.store_trials(now.uuid, paired_worker(now.uuid, 0, 1.1));
  EXPECT_EQ(db.trials(now.uuid)[1].result.paired_samples.front().cpu_pressure, 0.25);
}

// Version 6: trials keep their reference-kernel times and floors their relative
// noise; a version-5 file's trials and floors come through without either.
TEST_F(StorageTest, StorageMigratesVersion5AndThenKeepsReferenceTimesAndRelativeNoise) {
  const std::string path = db_path("v5.sqlite");
  const RunRecord old = make_run("dddd0005-0000-4000-8000-000000000001", "2024-05-01T10:00:00Z");
  Database::NoiseFloor floor;
  floor.experiment = "e";
  floor.arm = "off";
  floor.run_uuids = {old.uuid};
  floor.sigma_log = 0.2;
  floor.min_detectable = 0.5;
  floor.sigma_log_relative = 0.004;
  {
    Database db(path);
    db.begin_run(old);
    db.store_trial(old.uuid, make_spec(old.uuid, 0, "off"), make_result("ok", {0.5, 0.25}));
    db.finish_run(old.uuid, "completed", "2024-05-01T10:05:00Z");
    db.store_noise_floors(old.uuid, {floor});
    EXPECT_DOUBLE_EQ(db.noise_floors(old.uuid)[0].sigma_log_relative, 0.004);
  }
  downgrade_to_v5(path);
  const std::string copy = db_path("v5-copy.sqlite");
  fs::copy_file(path, copy);
  {
    // Merged as it is: the floor comes along without relative noise.
    Database merged(db_path("merged.sqlite"));
    merged.merge_from(copy);
    ASSERT_EQ(merged.noise_floors(old.uuid).size(), 1u);
    EXPECT_TRUE(std::isnan(merged.noise_floors(old.uuid)[0].sigma_log_relative));
    EXPECT_DOUBLE_EQ(merged.noise_floors(old.uuid)[0].sigma_log, 0.2);
  }
  Database db(path);
  EXPECT_EQ(db.migrated_from(), 5);
  EXPECT_TRUE(db.trials(old.uuid)[0].result.reference_seconds.empty());
  EXPECT_TRUE(std::isnan(db.noise_floors(old.uuid)[0].sigma_log_relative));
  const RunRecord now = make_run("dddd0005-0000-4000-8000-000000000002", "2024-05-02T10:00:00Z");
  db.begin_run(now);
  TrialResult result = make_result("ok", {0.5, 0.25});
  result.reference_seconds = {0.011, 0.0105, 0.0121};
  db.store_trial(now.uuid, make_spec(now.uuid, 0, "off"), result);
  EXPECT_EQ(db.trials(now.uuid)[0].result.reference_seconds, result.reference_seconds);
}

// A pid that ran and is gone: a child that exited and was reaped.
int64_t dead_pid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
}

// A record of an orchestrator on this machine: this process, or a dead one.
json orchestrator_here(bool alive) {
  liveness::Orchestrator o = liveness::this_process();
  if (!alive) o.pid = dead_pid();
  return liveness::to_json(o);
}

json orchestrator_on(const std::string& hostname) {
  liveness::Orchestrator o = liveness::this_process();
  o.hostname = hostname;
  return liveness::to_json(o);
}

// Version 6 runs have no orchestrator: after the migration they read as null (a "running" one
// stays running, said as unrecorded), a merge of a version-6 file skips its running runs as
// before, and new runs keep their record.
TEST_F(StorageTest, StorageMigratesVersion6AndThenRecordsOrchestrators) {
  const std::string path = db_path("v6.sqlite");
  const RunRecord done = make_run("dddd0006-0000-4000-8000-000000000001", "2024-05-01T10:00:00Z");
  const RunRecord running =
      make_run("dddd0006-0000-4000-8000-000000000002", "2024-05-01T11:00:00Z");
  {
    Database db(path);
    db.begin_run(done, orchestrator_here(false));
    db.finish_run(done.uuid, "completed", "2024-05-01T10:05:00Z");
    db.begin_run(running, orchestrator_here(false));
  }
  downgrade_to_v6(path);
  const std::string copy = db_path("v6-copy.sqlite");
  fs::copy_file(path, copy);
  {
    Database merged(db_path("merged.sqlite"));
    const auto result = merged.merge_from(copy);
    EXPECT_EQ(result.imported, std::vector<std::string>{done.uuid});
    EXPECT_EQ(result.still_running, std::vector<std::string>{running.uuid});
    EXPECT_TRUE(result.interrupted.empty());
    EXPECT_TRUE(merged.run(done.uuid).orchestrator.is_null());
  }
  Database db(path);
  EXPECT_EQ(db.migrated_from(), 6);
  EXPECT_EQ(db.backup_path(), path + ".schema-v6.bak");
  EXPECT_EQ(db.schema_version(), kSchemaVersion);
  EXPECT_TRUE(db.run(running.uuid).orchestrator.is_null());
  // Without a record a writer leaves it as it was.
  EXPECT_TRUE(db.interrupt_gone_runs().empty());
  EXPECT_EQ(db.run(running.uuid).status, "running");
  const RunRecord now = make_run("dddd0006-0000-4000-8000-000000000003", "2024-05-02T10:00:00Z");
  const json who = orchestrator_here(true);
  db.begin_run(now, who);
  EXPECT_EQ(db.run(now.uuid).orchestrator, who);
}

// A writer marks interrupted exactly the runs whose orchestrator it can tell is gone.
TEST_F(StorageTest, StorageMarksRunsWhoseOrchestratorIsGoneInterrupted) {
  Database db(db_path());
  const RunRecord dead = make_run("ffff0001-0000-4000-8000-000000000001", "2024-05-01T10:00:00Z");
  const json dead_who = orchestrator_here(false);
  store_two_arms(db, dead, dead_who);
  const RunRecord rebooted =
      make_run("ffff0002-0000-4000-8000-000000000001", "2024-05-01T10:01:00Z");
  json before_reboot = orchestrator_here(true);
  before_reboot["boot_id"] = "00000000-0000-4000-8000-000000000000";
  db.begin_run(rebooted, before_reboot);
  const RunRecord alive = make_run("ffff0003-0000-4000-8000-000000000001", "2024-05-01T10:02:00Z");
  db.begin_run(alive, orchestrator_here(true));
  const RunRecord elsewhere =
      make_run("ffff0004-0000-4000-8000-000000000001", "2024-05-01T10:03:00Z");
  db.begin_run(elsewhere, orchestrator_on("node7.elsewhere"));
  const RunRecord finished =
      make_run("ffff0005-0000-4000-8000-000000000001", "2024-05-01T10:04:00Z");
  db.begin_run(finished, orchestrator_here(false));
  db.finish_run(finished.uuid, "completed", "2024-05-01T10:05:00Z");

  EXPECT_EQ(db.interrupt_gone_runs(), (std::vector<std::string>{dead.uuid, rebooted.uuid}));
  const auto marked = db.run(dead.uuid);
  EXPECT_EQ(marked.status, "interrupted");
  EXPECT_EQ(marked.ended_at, "");  // when it died is not known
  EXPECT_EQ(marked.orchestrator["pid"], dead_who["pid"]);
  EXPECT_NE(marked.orchestrator["gone"]["why"].get<std::string>().find("is no longer running"),
            std::string::npos);
  EXPECT_FALSE(db.effects(dead.uuid).empty());  // as a run interrupted by a signal
  EXPECT_EQ(db.run(rebooted.uuid).status, "interrupted");
  EXPECT_EQ(db.run(alive.uuid).status, "running");
  EXPECT_EQ(db.run(elsewhere.uuid).status, "running");
  EXPECT_EQ(db.run(finished.uuid).status, "completed");
  EXPECT_TRUE(db.interrupt_gone_runs().empty());  // once
}

// --resume reopens a run whose orchestrator is gone, with itself as the orchestrator, and refuses
// one whose orchestrator is alive here: two orchestrators would write one run.
TEST_F(StorageTest, StorageReopensARunOnlyWhenItsOrchestratorIsNotAliveHere) {
  Database db(db_path());
  const RunRecord alive = make_run("ffff0011-0000-4000-8000-000000000001", "2024-05-01T10:00:00Z");
  const json alive_who = orchestrator_here(true);
  db.begin_run(alive, alive_who);
  const RunRecord dead = make_run("ffff0012-0000-4000-8000-000000000001", "2024-05-01T10:01:00Z");
  db.begin_run(dead, orchestrator_here(false));
  const json resumer = orchestrator_here(true);
  try {
    db.reopen_run(alive.uuid, resumer);
    FAIL() << "a run whose orchestrator is alive here was reopened";
  } catch (const StorageError& e) {
    EXPECT_NE(std::string(e.what()).find("is still running here (its orchestrator, pid " +
                                         std::to_string(getpid())),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("two orchestrators"), std::string::npos) << e.what();
  }
  EXPECT_EQ(db.run(alive.uuid).orchestrator, alive_who);  // unchanged
  db.reopen_run(dead.uuid, resumer);
  EXPECT_EQ(db.run(dead.uuid).status, "running");
  EXPECT_EQ(db.run(dead.uuid).orchestrator, resumer);
  // Now it is alive (this process): a second resume is refused.
  EXPECT_THROW(db.reopen_run(dead.uuid, resumer), StorageError);
  // An interrupted run is reopened whoever ran it.
  db.finish_run(alive.uuid, "interrupted", "2024-05-01T10:05:00Z");
  db.reopen_run(alive.uuid, resumer);
  EXPECT_EQ(db.run(alive.uuid).status, "running");
}

// merge imports a run "running" in the other file whose orchestrator is gone as interrupted
// (resumable here); one on another host is still skipped: it cannot be checked from here.
TEST_F(StorageTest, StorageMergeImportsARunWhoseOrchestratorIsGoneAsInterrupted) {
  const std::string other_path = db_path("other.sqlite");
  const RunRecord dead = make_run("ffff0021-0000-4000-8000-000000000001", "2024-05-01T10:00:00Z");
  const RunRecord elsewhere =
      make_run("ffff0022-0000-4000-8000-000000000001", "2024-05-01T10:01:00Z");
  {
    Database other(other_path);
    store_two_arms(other, dead, orchestrator_here(false));
    other.begin_run(elsewhere, orchestrator_on("node7.elsewhere"));
  }
  const std::string other_bytes = read_bytes(other_path);
  Database here(db_path());
  const auto result = here.merge_from(other_path);
  EXPECT_EQ(result.imported, std::vector<std::string>{dead.uuid});
  EXPECT_EQ(result.interrupted, std::vector<std::string>{dead.uuid});
  EXPECT_EQ(result.still_running, std::vector<std::string>{elsewhere.uuid});
  EXPECT_EQ(read_bytes(other_path), other_bytes);
  const auto imported = here.run(dead.uuid);
  EXPECT_EQ(imported.status, "interrupted");
  EXPECT_TRUE(imported.orchestrator.contains("gone"));
  EXPECT_EQ(here.trials(dead.uuid).size(), 6u);
  EXPECT_FALSE(here.effects(dead.uuid).empty());
}

TEST_F(StorageTest, StorageMigratesVersion2WithEffectsOfOldRuns) {
  const std::string path = db_path("v2.sqlite");
  const RunRecord done = make_run("dddd0001-0000-4000-8000-000000000001", "2024-05-01T10:00:00Z");
  const RunRecord running =
      make_run("dddd0002-0000-4000-8000-000000000001", "2024-05-02T10:00:00Z");
  {
    Database db(path);
    store_two_arms(db, done);
    db.finish_run(done.uuid, "completed", "2024-05-01T10:05:00Z");
    store_two_arms(db, running);
  }
  downgrade_to_v2(path);
  {
    Database db(path);
    EXPECT_EQ(db.schema_version(), kSchemaVersion);
    EXPECT_EQ(db.migrated_from(), 2);
    EXPECT_EQ(db.backup_path(), path + ".schema-v2.bak");
    const auto stored = db.effects(done.uuid);
    ASSERT_EQ(stored.arms.size(), 2u);
    ASSERT_EQ(stored.effects.size(), 2u);  // no_grad: time, and peak memory (a memory knob)
    const auto expected = analysis::to_stored(analysis::compute_report(db, done.uuid));
    ASSERT_EQ(expected.effects.size(), stored.effects.size());
    EXPECT_EQ(stored.effects[0].compared, "on vs off");
    EXPECT_EQ(stored.effects[0].kind, "effect");
    EXPECT_DOUBLE_EQ(stored.effects[0].ratio, expected.effects[0].ratio);
    EXPECT_DOUBLE_EQ(stored.effects[0].lo, expected.effects[0].lo);
    EXPECT_DOUBLE_EQ(stored.effects[0].hi, expected.effects[0].hi);
    EXPECT_EQ(stored.effects[0].verdict, "helps");
    EXPECT_EQ(stored.arms[0].arm, "off");
    EXPECT_EQ(stored.arms[0].ok, 3);
    EXPECT_EQ(stored.arms[0].samples, 9);
    EXPECT_DOUBLE_EQ(stored.arms[1].median_seconds, expected.arms[1].median_seconds);
    // A run still running has none stored until it finishes.
    EXPECT_TRUE(db.effects(running.uuid).empty());
    db.finish_run(running.uuid, "interrupted", "2024-05-02T10:05:00Z");
    EXPECT_EQ(db.effects(running.uuid).effects.size(), 2u);
    db.reopen_run(running.uuid);
    EXPECT_TRUE(db.effects(running.uuid).empty());
  }
  SQLite::Database backup(path + ".schema-v2.bak", SQLite::OPEN_READONLY);
  EXPECT_EQ(backup.execAndGet("PRAGMA user_version").getInt(), 2);
  EXPECT_FALSE(has_table(backup, "effects"));
  EXPECT_EQ(backup.execAndGet("SELECT COUNT(*) FROM trials").getInt(), 12);
}

// Version 1 migrates through 2 to 3, and its finished runs get effects too.
TEST_F(StorageTest, StorageMigratesVersion1ThroughVersion2WithEffects) {
  const std::string path = db_path("v1-effects.sqlite");
  const RunRecord done = make_run("dddd0003-0000-4000-8000-000000000001", "2024-05-01T10:00:00Z");
  {
    Database db(path);
    store_two_arms(db, done);
    db.finish_run(done.uuid, "completed", "2024-05-01T10:05:00Z");
  }
  downgrade_to_v1(path);
  Database db(path);
  EXPECT_EQ(db.migrated_from(), 1);
  EXPECT_TRUE(fs::exists(path + ".schema-v1.bak"));
  EXPECT_TRUE(has_table(db.connection(), "noise_floors"));
  EXPECT_EQ(db.effects(done.uuid).arms.size(), 2u);
  EXPECT_EQ(db.effects(done.uuid).effects.size(), 2u);
}

// A factorial run stores its main effects and interaction (known answer: zero spread in every
// cell, so each contrast is exact and its interval collapses onto it).
TEST_F(StorageTest, StorageKeepsFactorialContrastsOfARun) {
  Database db(db_path());
  const RunRecord run = make_run("ffff0001-0000-4000-8000-000000000001", "2024-05-01T10:00:00Z");
  db.begin_run(run);
  const std::vector<std::pair<std::string, double>> cells{
      {"a=off,b=off", 100}, {"a=off,b=on", 80}, {"a=on,b=off", 50}, {"a=on,b=on", 25}};
  int sequence = 0;
  for (int process = 0; process < 2; ++process) {
    for (const auto& [arm, m] : cells) {
      TrialSpec spec = make_spec(run.uuid, sequence++, arm);
      spec.experiment = "a+b";
      spec.knob = "factorial";
      spec.timeout_s = 3600;  // samples of up to 100 s per iteration
      db.store_trial(run.uuid, spec, make_result("ok", {m, m, m}));
    }
  }
  db.finish_run(run.uuid, "completed", "2024-05-01T10:05:00Z");
  std::map<std::string, Database::StoredEffect> by_compared;
  for (const auto& e : db.effects(run.uuid).effects) by_compared[e.compared] = e;
  ASSERT_TRUE(by_compared.count("main effect of a"));
  ASSERT_TRUE(by_compared.count("main effect of b"));
  ASSERT_TRUE(by_compared.count("interaction a x b"));
  EXPECT_EQ(by_compared["main effect of a"].kind, "main effect");
  EXPECT_NEAR(by_compared["main effect of a"].ratio, std::sqrt(0.5 * 25.0 / 80.0), 1e-12);
  EXPECT_NEAR(by_compared["main effect of b"].ratio, std::sqrt(0.8 * 0.5), 1e-12);
  EXPECT_EQ(by_compared["interaction a x b"].kind, "interaction");
  EXPECT_NEAR(by_compared["interaction a x b"].ratio, 25.0 * 100 / (50.0 * 80), 1e-12);
  EXPECT_NEAR(by_compared["interaction a x b"].lo, 0.625, 1e-12);
  EXPECT_EQ(by_compared["interaction a x b"].verdict, "helps");
  EXPECT_NEAR(by_compared["a=on,b=on vs a=off,b=off"].ratio, 0.25, 1e-12);
  // show reads these rows: the same numbers.
  const auto report = analysis::analyze(db, run.uuid);
  ASSERT_EQ(report.experiments.size(), 1u);
  EXPECT_EQ(report.experiments[0].effects.size(), by_compared.size());
}

// `tunebench import`: run records become finished runs with their effects; a bad line is refused
// with its number.
TEST_F(StorageTest, StorageImportsRunRecordsAsFinishedRuns) {
  Database db(db_path());
  const RunRecord run = make_run("abab0001-0000-4000-8000-000000000001", "2024-05-01T10:00:00Z");
  json trials = json::array();
  for (int t = 0; t < 4; ++t) {
    trials.push_back({{"spec", to_json(make_spec(run.uuid, t, t % 2 ? "on" : "off"))},
                      {"result", to_json(make_result("ok", {0.1 * (t % 2 + 1), 0.11 * (t % 2 + 1),
                                                            0.12 * (t % 2 + 1)}))}});
  }
  const json record = {{"run",
                        {{"uuid", run.uuid},
                         {"suite_name", run.suite_name},
                         {"suite_hash", run.suite_hash},
                         {"suite", run.suite},
                         {"label", run.label},
                         {"git_revision", run.git_revision},
                         {"command_line", run.command_line},
                         {"started_at", run.started_at},
                         {"host", run.host},
                         {"software", run.software},
                         {"host_state", run.host_state},
                         {"host_quiet", run.host_quiet}}},
                       {"status", "completed"},
                       {"ended_at", "2024-05-01T10:05:00Z"},
                       {"trials", trials}};
  std::istringstream lines(record.dump() + "\n\n");
  EXPECT_EQ(import_records(db, lines, "records").merged.imported.size(), 1u);
  EXPECT_EQ(db.run(run.uuid).status, "completed");
  EXPECT_EQ(db.run(run.uuid).record.host, run.host);
  ASSERT_EQ(db.trials(run.uuid).size(), 4u);
  EXPECT_EQ(db.trials(run.uuid)[3].result.sample_seconds, (std::vector<double>{0.2, 0.22, 0.24}));
  EXPECT_EQ(db.effects(run.uuid).arms.size(), 2u);
  EXPECT_FALSE(db.effects(run.uuid).effects.empty());
  std::istringstream bad("\n{\"run\": {}}\n");
  try {
    import_records(db, bad, "records");
    FAIL() << "a malformed record was stored";
  } catch (const StorageError& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
  EXPECT_EQ(count(db, "runs"), 1);
}

// export --format records, then import into another file: every run comes back whole — its
// record (host and software fingerprints included), status, trials with their samples, and the
// same effects; importing the file again adds nothing. A file from a newer tunebench, or with a
// malformed line after good ones, stores nothing.
TEST_F(StorageTest, RunRecordsRoundTripWholeAndABadFileStoresNothing) {
  Database db(db_path());
  std::vector<std::string> uuids;
  for (int r = 0; r < 3; ++r) {
    RunRecord run =
        make_run(fmt::format("cdcd000{}-0000-4000-8000-000000000001", r),
                 fmt::format("2024-05-0{}T10:00:00Z", r + 1), r == 2 ? "bench-2" : "bench-1");
    run.host["hardware"] = {{"cpu", {{"family", 25}, {"flags", {"avx2"}}}}, {"cores", 2}};
    db.begin_run(run);
    for (int t = 0; t < 4; ++t) {
      db.store_trial(run.uuid, make_spec(run.uuid, t, t % 2 ? "on" : "off"),
                     make_result("ok", {0.1 * (t % 2 + 1) + 0.001 * r, 0.11 * (t % 2 + 1),
                                        0.12 * (t % 2 + 1)}));
    }
    db.finish_run(run.uuid, r == 1 ? "completed with failures" : "completed",
                  fmt::format("2024-05-0{}T10:05:00Z", r + 1));
    uuids.push_back(run.uuid);
  }
  RunRecord running = make_run("cdcd0009-0000-4000-8000-000000000001", "2024-05-09T10:00:00Z");
  db.begin_run(running);
  std::ostringstream text;
  EXPECT_EQ(write_records(db, db.run_uuids(), text), 3);  // the running one is left out

  Database copy(db_path("copy.sqlite"));
  std::istringstream in(text.str());
  const auto result = import_records(copy, in, "records.jsonl");
  EXPECT_EQ(result.records, 3);
  EXPECT_EQ(result.merged.imported, uuids);
  EXPECT_EQ(result.merged.hosts_added, 2);
  for (const auto& uuid : uuids) {
    EXPECT_EQ(run_record(copy, uuid), run_record(db, uuid)) << uuid;  // record, status, trials
    const auto a = db.effects(uuid), b = copy.effects(uuid);
    ASSERT_EQ(a.effects.size(), b.effects.size());
    ASSERT_FALSE(a.effects.empty());
    for (size_t i = 0; i < a.effects.size(); ++i) {
      EXPECT_EQ(a.effects[i].experiment, b.effects[i].experiment);
      EXPECT_EQ(a.effects[i].text, b.effects[i].text);
      EXPECT_DOUBLE_EQ(a.effects[i].ratio, b.effects[i].ratio);
      EXPECT_DOUBLE_EQ(a.effects[i].lo, b.effects[i].lo);
      EXPECT_DOUBLE_EQ(a.effects[i].hi, b.effects[i].hi);
    }
  }
  std::istringstream again(text.str());
  const auto second = import_records(copy, again, "records.jsonl");
  EXPECT_TRUE(second.merged.imported.empty());
  EXPECT_EQ(second.merged.already_here.size(), 3u);
  EXPECT_EQ(count(copy, "runs"), 3);

  Database empty(db_path("empty.sqlite"));
  auto refused = [&](const std::string& records, const std::string& expected) {
    std::istringstream lines(records);
    try {
      import_records(empty, lines, "in.jsonl");
      ADD_FAILURE() << "stored: " << expected;
    } catch (const StorageError& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
    EXPECT_EQ(count(empty, "runs"), 0);
    EXPECT_EQ(count(empty, "hosts"), 0);
  };
  json newer = json::parse(text.str().substr(0, text.str().find('\n')));
  newer["tunebench_records"]["schema_version"] = kSchemaVersion + 1;
  newer["tunebench_records"]["tunebench"] = "9.0.0";
  refused(newer.dump() + "\n" + text.str().substr(text.str().find('\n') + 1),
          fmt::format("in.jsonl: written by a newer tunebench (9.0.0 with records version 1, "
                      "schema {}); this build reads records version 1 and schema {} at most",
                      kSchemaVersion + 1, kSchemaVersion));
  refused(text.str() + "{\"run\": {\"uuid\": \"x\"}}\n", "in.jsonl: line 5: not a run record");
  refused(text.str() + "{not json\n", "in.jsonl: line 5: not JSON");
}

// A run whose samples the statistics refuse (an off arm with a zero median) still finishes, and a
// file holding one still migrates: that run keeps no stored numbers.
// An off arm whose samples are 0 (no worker measures that): the run still finishes, and its
// stored numbers leave that trial out (the effect says an arm has no trials), also after a
// migration computes them again.
TEST_F(StorageTest, StorageFinishesARunWhoseEffectsCannotBeComputed) {
  const std::string path = db_path("zero.sqlite");
  const RunRecord run = make_run("abab0002-0000-4000-8000-000000000001", "2024-05-01T10:00:00Z");
  const auto no_effect = [&](const Database& db) {
    const auto effects = db.effects(run.uuid).effects;
    ASSERT_EQ(effects.size(), 1u);
    EXPECT_EQ(effects[0].kind, "none");
    EXPECT_NE(effects[0].note.find("an arm has no trials"), std::string::npos) << effects[0].note;
  };
  testing::internal::CaptureStderr();
  {
    Database db(path);
    db.begin_run(run);
    db.store_trial(run.uuid, make_spec(run.uuid, 0, "off"), make_result("ok", {0.0, 0.0}));
    db.store_trial(run.uuid, make_spec(run.uuid, 1, "on"), make_result("ok", {0.1, 0.2}));
    EXPECT_NO_THROW(db.finish_run(run.uuid, "completed", "2024-05-01T10:05:00Z"));
    EXPECT_EQ(db.run(run.uuid).status, "completed");
    no_effect(db);
  }
  downgrade_to_v2(path);
  Database db(path);
  EXPECT_EQ(db.migrated_from(), 2);
  no_effect(db);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("trial 1 ("), std::string::npos);
}

// A stored "ok" trial whose samples no worker measures (an older version's, or an UPDATE by
// hand): show, compare and check leave it out, name it once on stderr, and compute the others.
TEST_F(StorageTest, ReadersNameAStoredTrialNoWorkerMeasuresAndGoOnWithTheOthers) {
  const std::string path = db_path("impossible.sqlite");
  const RunRecord run = make_run("abab0003-0000-4000-8000-000000000001", "2024-05-01T10:00:00Z");
  int64_t bad_id = 0;
  {
    Database db(path);
    db.begin_run(run);
    int sequence = 0;
    for (const std::string experiment : {"good.exp", "bad.exp"}) {
      for (const std::string arm : {"off", "on", "off", "on"}) {
        TrialSpec spec = make_spec(run.uuid, sequence, arm);
        spec.experiment = experiment;
        spec.mode = Mode::infer;
        spec.batch = 4;
        const double base = arm == "on" ? 0.05 : 0.1;
        const int64_t id =
            db.store_trial(run.uuid, spec, make_result("ok", {base, base * 1.01, base * 0.99}));
        if (experiment == "bad.exp" && sequence == 6) bad_id = id;  // its second off trial
        ++sequence;
      }
    }
  }
  {
    SQLite::Database raw(path, SQLite::OPEN_READWRITE);
    raw.exec(fmt::format(
        "UPDATE samples SET seconds = CASE idx WHEN 0 THEN 1e300 WHEN 1 THEN -1 ELSE 0 END "
        "WHERE trial_id = {}",
        bad_id));
    SQLite::Statement first(raw, "SELECT id FROM trials WHERE run_uuid = ? AND sequence = 4");
    first.bind(1, run.uuid);
    ASSERT_TRUE(first.executeStep());
    raw.exec(fmt::format(
        "UPDATE samples SET seconds = CASE idx WHEN 0 THEN 1e300 WHEN 1 THEN -1 ELSE 0 END "
        "WHERE trial_id = {}",
        first.getColumn(0).getInt64()));
  }
  Database db(path);
  testing::internal::CaptureStderr();
  db.finish_run(run.uuid, "completed", "2024-05-01T10:05:00Z");
  analysis::RunReport report;
  ASSERT_NO_THROW(report = analysis::analyze(db, run.uuid));
  const std::string shown =
      reporters::reporter("table", reporters::Output::run).run(analysis::analyze(db, run.uuid));
  const std::string warned = testing::internal::GetCapturedStderr();
  ASSERT_EQ(report.experiments.size(), 2u);
  const auto& good = report.experiments[0];
  EXPECT_EQ(good.name, "good.exp");
  ASSERT_FALSE(good.effects.empty()) << shown;
  EXPECT_EQ(good.effects[0].metric, "time");
  EXPECT_NEAR(good.effects[0].effect.ratio, 0.5, 1e-9);
  // The bad experiment lost both off trials: it says an arm has none, as for any missing arm.
  const auto& bad = report.experiments[1];
  EXPECT_EQ(bad.name, "bad.exp");
  EXPECT_TRUE(bad.effects.empty() || !std::isfinite(bad.effects[0].effect.ratio)) << shown;
  EXPECT_NE(shown.find("an arm has no trials"), std::string::npos) << shown;
  // Named once each (the file, run, experiment, arm, trial from 1, trials row id), however often
  // the run is read.
  const std::string named =
      fmt::format("{}: run {}, trial 7 (bad.exp [off], trials row id {})", path, run.uuid, bad_id);
  EXPECT_NE(warned.find(named), std::string::npos) << warned;
  EXPECT_EQ(warned.find(named), warned.rfind(named)) << warned;
  EXPECT_NE(warned.find("trial 5 (bad.exp [off]"), std::string::npos) << warned;
  EXPECT_NE(warned.find("its sample 1 is 1e+300 s per iteration"), std::string::npos) << warned;
  EXPECT_EQ(warned.find("good.exp"), std::string::npos) << warned;
}

TEST_F(StorageTest, StoragePairedTrialsKeepTheirBlocksAndGiveThePairedEffect) {
  Database db(db_path());
  const RunRecord run = make_run("aaaa0004-0000-4000-8000-000000000001", "2026-12-01T10:00:00Z");
  db.begin_run(run);
  for (int w = 0; w < 4; ++w) db.store_trials(run.uuid, paired_worker(run.uuid, w, 1.10));
  db.finish_run(run.uuid, "completed", "2026-12-01T10:05:00Z");

  const auto trials = db.trials(run.uuid);
  ASSERT_EQ(trials.size(), 8u);
  const auto expected = paired_worker(run.uuid, 1, 1.10);
  const auto& back = trials[3];  // worker 1's ON arm
  EXPECT_EQ(back.spec.pairing, expected[1].first.pairing);
  EXPECT_TRUE(back.spec.pairing.on_first);
  ASSERT_EQ(back.result.paired_samples.size(), expected[1].second.paired_samples.size());
  for (size_t i = 0; i < back.result.paired_samples.size(); ++i) {
    const PairedSample& got = back.result.paired_samples[i];
    const PairedSample& want = expected[1].second.paired_samples[i];
    EXPECT_TRUE(got.on);
    EXPECT_EQ(got.block, want.block);
    EXPECT_EQ(got.position, want.position);
    EXPECT_DOUBLE_EQ(got.seconds, want.seconds);
    EXPECT_DOUBLE_EQ(got.cpu_seconds, want.cpu_seconds);
    EXPECT_DOUBLE_EQ(got.wait_seconds, want.wait_seconds);
    EXPECT_EQ(got.involuntary_switches, want.involuntary_switches);
    EXPECT_EQ(got.start_ns, want.start_ns);
    EXPECT_DOUBLE_EQ(got.cpu_pressure, want.cpu_pressure);
  }

  const auto effects = db.effects(run.uuid).effects;
  ASSERT_FALSE(effects.empty());
  const auto& time = effects.front();
  EXPECT_EQ(time.metric, "time");
  // The geometric mean of the workers' ratios; drift and carry-over cancel out of the pairs.
  EXPECT_NEAR(time.ratio, 1.10, 1e-3);
  EXPECT_LT(time.lo, 1.10);
  EXPECT_GT(time.hi, 1.10);
  EXPECT_LT(time.hi / time.lo, 1.02);
  EXPECT_EQ(time.verdict, "hurts");
  EXPECT_EQ(time.resamples, 0);  // a t interval, not a bootstrap
  EXPECT_EQ(time.note.rfind("paired: 4 workers, 16 pairs of blocks kept, 0 dropped", 0), 0u)
      << time.note;
  // Each arm's host CPU pressure beside the effect: the mean share of its samples.
  EXPECT_NE(time.note.find("host CPU pressure while sampling: off 5.0%, on 25.0% of the time"),
            std::string::npos)
      << time.note;
  // Peak RSS is one process's for both arms: no RSS effect from a paired experiment.
  for (const auto& e : effects) EXPECT_NE(e.metric, "peak RSS");
}

TEST_F(StorageTest, StoragePairedAAControlIsNoEffectBeyondTheMargin) {
  Database db(db_path());
  const RunRecord run = make_run("aaaa0004-0000-4000-8000-000000000002", "2026-12-01T10:00:00Z");
  db.begin_run(run);
  for (int w = 0; w < 4; ++w) db.store_trials(run.uuid, paired_worker(run.uuid, w, 1.0));
  db.finish_run(run.uuid, "completed", "2026-12-01T10:05:00Z");
  const auto time = db.effects(run.uuid).effects.front();
  EXPECT_NEAR(time.ratio, 1.0, 1e-3);
  EXPECT_EQ(time.verdict, "no effect beyond ±2%");
  EXPECT_NE(time.text.find("no effect beyond ±2%"), std::string::npos) << time.text;
}

// A confounder beside the effect: arms whose page faults per step differ by
// more than 2× say that the effect runs through the allocator; small or similar counts do not.
TEST_F(StorageTest, StorageTimeEffectNamesTheAllocatorWhenTheArmsFaultsDifferTwofold) {
  Database db(db_path());
  const auto note_for = [&](const std::string& uuid, double faults_off, double faults_on) {
    const RunRecord run = make_run(uuid, "2026-12-01T10:00:00Z");
    db.begin_run(run);
    for (int w = 0; w < 4; ++w) {
      auto arms = paired_worker(run.uuid, w, 1.10);
      arms[0].second.page_faults_per_iteration = faults_off;
      arms[1].second.page_faults_per_iteration = faults_on;
      db.store_trials(run.uuid, arms);
    }
    db.finish_run(run.uuid, "completed", "2026-12-01T10:05:00Z");
    return db.effects(run.uuid).effects.front().note;
  };
  // ResNet-50 at 224, batch 8, grad against no-grad under glibc.
  const std::string big = note_for("aaaa0004-0000-4000-8000-000000000011", 135000, 38000);
  EXPECT_NE(big.find("page faults per step differ 3.6x: off 135000, on 38000; the effect runs "
                     "partly through the allocator"),
            std::string::npos)
      << big;
  EXPECT_EQ(note_for("aaaa0004-0000-4000-8000-000000000012", 135000, 90000).find("page faults"),
            std::string::npos);
  EXPECT_EQ(note_for("aaaa0004-0000-4000-8000-000000000013", 400, 0).find("page faults"),
            std::string::npos);
  const std::string from_none = note_for("aaaa0004-0000-4000-8000-000000000014", 0, 68064);
  EXPECT_NE(from_none.find("page faults per step differ by more than 2x: off 0, on 68064"),
            std::string::npos)
      << from_none;
}

// On a GPU a memory knob's "peak memory" is the device's: the caching allocator's allocated peak,
// or for empty_cache its reserved peak (emptyCache() never changes allocated bytes), not the
// host's tensor peak or RSS (docs/cuda-review.md, finding 5).
TEST_F(StorageTest, StorageCudaMemoryEffectsCompareTheDevicesPeak) {
  Database db(db_path());
  const auto memory_effect = [&](const std::string& uuid, const std::string& knob) {
    const RunRecord run = make_run(uuid, "2026-12-02T10:00:00Z");
    db.begin_run(run);
    for (int t = 0; t < 6; ++t) {
      const bool on = t % 2;
      TrialSpec spec = make_spec(run.uuid, t, on ? "on" : "off");
      spec.experiment = knob + ".resnet50-tiny-train";
      spec.knob = knob;
      spec.settings = {{knob, on}, {"device", "cuda"}};
      TrialResult r = make_result("ok", {0.01, 0.0101, 0.0099});
      r.evidence["tensor_peak_bytes"] = 1000;                // host scalars: the same in both arms
      r.device_peak_bytes = on ? 400'000'000 : 800'000'000;  // allocated: halved by ON
      r.evidence["device_reserved_peak_bytes"] = on ? 500'000'000 : 2'000'000'000;  // a quarter
      db.store_trial(run.uuid, spec, r);
    }
    db.finish_run(run.uuid, "completed", "2026-12-02T10:05:00Z");
    const auto report = analysis::compute_report(db, run.uuid);
    for (const auto& e : report.experiments.front().effects) {
      if (e.metric == "peak memory") return e.effect;
    }
    ADD_FAILURE() << knob << ": no peak memory effect";
    return stats::Effect{};
  };
  const stats::Effect allocated = memory_effect("cccc0005-0000-4000-8000-000000000001", "no_grad");
  EXPECT_DOUBLE_EQ(allocated.ratio, 0.5);
  EXPECT_NE(allocated.note.find("allocated bytes"), std::string::npos) << allocated.note;
  const stats::Effect reserved =
      memory_effect("cccc0005-0000-4000-8000-000000000002", "empty_cache");
  EXPECT_DOUBLE_EQ(reserved.ratio, 0.25);
  EXPECT_NE(reserved.note.find("reserved"), std::string::npos) << reserved.note;
}

TEST_F(StorageTest, StoragePairedTrialIsBothArmsOrNeither) {
  Database db(db_path());
  const RunRecord run = make_run("aaaa0004-0000-4000-8000-000000000003", "2026-12-01T10:00:00Z");
  db.begin_run(run);
  auto pair = paired_worker(run.uuid, 0, 1.0);
  pair[1].second.paired_samples.pop_back();  // the ON arm's samples no longer match its times
  EXPECT_THROW(db.store_trials(run.uuid, pair), StorageError);
  EXPECT_EQ(count(db, "trials"), 0);
  EXPECT_EQ(count(db, "samples"), 0);
}

// `export --format gbench`: cpu_time is the process CPU time each sample measured, not its wall
// time again; a run without it says that its cpu_time is wall time.
TEST_F(StorageTest, StorageGbenchExportGivesTheMeasuredCpuTime) {
  Database db(db_path());
  const RunRecord run = make_run("eeee0004-0000-4000-8000-000000000001", "2026-12-01T10:00:00Z");
  db.begin_run(run);
  TrialResult measured = make_result("ok", {0.1, 0.2});
  measured.sample_cpu_seconds = {0.19, 0.41};  // two threads busy most of the time
  db.store_trial(run.uuid, make_spec(run.uuid, 0, "off"), measured);
  db.finish_run(run.uuid, "completed", "2026-12-01T10:05:00Z");
  EXPECT_EQ(db.trials(run.uuid).front().result.sample_cpu_seconds, measured.sample_cpu_seconds);
  const json out = json::parse(exporter::export_run(db, run.uuid, "gbench"));
  ASSERT_EQ(out["benchmarks"].size(), 2u);
  EXPECT_DOUBLE_EQ(out["benchmarks"][0]["real_time"].get<double>(), 0.1e9);
  EXPECT_DOUBLE_EQ(out["benchmarks"][0]["cpu_time"].get<double>(), 0.19e9);
  EXPECT_DOUBLE_EQ(out["benchmarks"][1]["cpu_time"].get<double>(), 0.41e9);
  EXPECT_EQ(out["context"]["tunebench_cpu_time"], "process CPU time per iteration, all threads");

  const RunRecord old = make_run("eeee0004-0000-4000-8000-000000000002", "2026-12-01T11:00:00Z");
  db.begin_run(old);
  db.store_trial(old.uuid, make_spec(old.uuid, 0, "off"), make_result("ok", {0.1, 0.2}));
  db.finish_run(old.uuid, "completed", "2026-12-01T11:05:00Z");
  const json wall = json::parse(exporter::export_run(db, old.uuid, "gbench"));
  EXPECT_DOUBLE_EQ(wall["benchmarks"][0]["cpu_time"].get<double>(), 0.1e9);
  EXPECT_NE(wall["context"]["tunebench_cpu_time"].get<std::string>().find("wall time"),
            std::string::npos);
  TrialResult broken = make_result("ok", {0.1, 0.2});
  broken.sample_cpu_seconds = {0.2};
  EXPECT_THROW(db.store_trial(old.uuid, make_spec(old.uuid, 1, "on"), broken), StorageError);
}

// --- storage faults: a full disk, a damaged file, a file that can only be read, merging a run
// again once it finished ---

// A run of `trials` ok trials (of store_two_arms' kind), left "interrupted" unless `finish`.
void store_run_of(Database& db, const RunRecord& run, int first, int last, bool begin) {
  if (begin) db.begin_run(run);
  for (int t = first; t < last; ++t) {
    const bool on = t % 2;
    db.store_trial(run.uuid, make_spec(run.uuid, t, on ? "on" : "off"),
                   make_result("ok", {on ? 0.5 : 1.0, on ? 0.51 : 1.01, on ? 0.49 : 0.99}));
  }
}

// A checkpoint that ran out of space leaves page 1 (with the new page count) written and the file
// short of it, the pages still in the -wal file: the file opens, with every row.
TEST_F(StorageTest, StorageOpensAFileWhosePagesAreStillInItsWal) {
  const std::string path = db_path("wal.sqlite"), copy = db_path("copy.sqlite");
  {
    Database db(path);
    const_cast<SQLite::Database&>(db.connection()).exec("PRAGMA wal_autocheckpoint = 0");
    const RunRecord run = make_run("aaaa0101-0000-4000-8000-000000000001", "2024-05-01T10:00:00Z");
    db.begin_run(run);
    for (int t = 0; t < 8; ++t) {
      db.store_trial(run.uuid, make_spec(run.uuid, t, t % 2 ? "on" : "off"),
                     make_result("ok", std::vector<double>(200, 0.001 * (t + 1))));
    }
    // The file and its log as a full disk leaves them: copied while the connection holds them.
    fs::copy_file(path, copy);
    fs::copy_file(path + "-wal", copy + "-wal");
  }
  const uint32_t pages = internal::wal_pages(copy);
  ASSERT_GT(uint64_t(pages) * 4096, fs::file_size(copy));
  {
    std::fstream f(copy, std::ios::in | std::ios::out | std::ios::binary);
    const unsigned char be[4] = {uint8_t(pages >> 24), uint8_t(pages >> 16), uint8_t(pages >> 8),
                                 uint8_t(pages)};
    f.seekp(28);
    f.write(reinterpret_cast<const char*>(be), 4);
  }
  Database db(copy);
  EXPECT_EQ(db.trials("aaaa0101-0000-4000-8000-000000000001").size(), 8u);
  // Without its log the same file has lost its end: refused as truncated.
  fs::remove(copy + "-wal");
  fs::remove(copy + "-shm");
  EXPECT_THROW(internal::check_header(copy), StorageError);
}

// SQLITE_FULL (here max_page_count, as a full device) says what, where and how to resume, and
// stores nothing of the trial.
TEST_F(StorageTest, StorageSaysNoSpaceLeftAndHowToResume) {
  const std::string path = db_path();
  Database db(path);
  const RunRecord run = make_run("aaaa0102-0000-4000-8000-000000000001", "2024-05-01T10:00:00Z");
  store_run_of(db, run, 0, 2, true);
  auto& connection = const_cast<SQLite::Database&>(db.connection());
  const int64_t pages = connection.execAndGet("PRAGMA page_count").getInt64();
  connection.exec(fmt::format("PRAGMA max_page_count = {}", pages + 2));
  try {
    db.store_trial(run.uuid, make_spec(run.uuid, 2, "off"),
                   make_result("ok", std::vector<double>(20000, 0.5)));
    FAIL() << "expected StorageError";
  } catch (const StorageError& e) {
    const std::string message = e.what();
    EXPECT_TRUE(e.no_space()) << message;
    EXPECT_NE(message.find("cannot store trial 3 of run " + run.uuid), std::string::npos);
    EXPECT_NE(message.find("no space left on the device holding " + path), std::string::npos)
        << message;
    EXPECT_NE(message.find("resume with: tunebench run --resume " + run.uuid + " --db " + path),
              std::string::npos)
        << message;
  }
  EXPECT_EQ(db.trials(run.uuid).size(), 2u);
}

// Flips 16 bytes in the page header of the trials table's first leaf page.
void damage_a_btree_page(const std::string& path) {
  int64_t page = 0;
  {
    SQLite::Database raw(path, SQLite::OPEN_READONLY);
    page = raw.execAndGet("SELECT MAX(pageno) FROM dbstat WHERE name = 'samples'").getInt64();
  }
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp((page - 1) * 4096);
  const std::string junk(16, '\xA5');
  f.write(junk.data(), 16);
}

TEST_F(StorageTest, StorageRefusesToWriteADamagedFileNamingItsBackups) {
  const std::string path = db_path();
  const RunRecord run = make_run("aaaa0103-0000-4000-8000-000000000001", "2024-05-01T10:00:00Z");
  {
    Database db(path);
    store_run_of(db, run, 0, 12, true);
    db.finish_run(run.uuid, "completed", "2024-05-01T10:05:00Z");
  }
  std::ofstream(path + ".schema-v6.bak") << "a backup";
  damage_a_btree_page(path);
  const std::string before = read_bytes(path);
  try {
    Database db(path);
    FAIL() << "expected StorageError";
  } catch (const StorageError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(path + " is damaged: SQLite's quick_check says: "), std::string::npos)
        << message;
    EXPECT_NE(message.find("Nothing was written to it: restore it from a backup (beside it: " +
                           path + ".schema-v6.bak)"),
              std::string::npos)
        << message;
  }
  EXPECT_EQ(read_bytes(path), before);
  EXPECT_FALSE(fs::exists(path + "-wal"));
}

// A row whose JSON does not parse names the file, the run and the trial; merge imports the
// other runs and reports that one, and leaves no trace of it.
TEST_F(StorageTest, StorageNamesARowWhoseJsonIsDamagedAndMergeImportsTheOthers) {
  const std::string other_path = db_path("other.sqlite");
  const RunRecord good = make_run("aaaa0104-0000-4000-8000-000000000001", "2024-05-01T10:00:00Z");
  const RunRecord bad = make_run("aaaa0105-0000-4000-8000-000000000001", "2024-05-01T11:00:00Z");
  {
    Database other(other_path);
    for (const auto* run : {&good, &bad}) {
      store_run_of(other, *run, 0, 4, true);
      other.finish_run(run->uuid, "completed", "2024-05-01T12:00:00Z");
    }
  }
  {
    SQLite::Database raw(other_path, SQLite::OPEN_READWRITE);
    SQLite::Statement flip(raw,
                           "UPDATE trials SET evidence = CAST(X'7B226E6F7465223A22FF227D' AS TEXT) "
                           "WHERE run_uuid = ? AND sequence = 3");
    flip.bind(1, bad.uuid);
    ASSERT_EQ(flip.exec(), 1);
  }
  try {
    Database(other_path, Database::Access::kRead).trials(bad.uuid);
    FAIL() << "expected StorageError";
  } catch (const StorageError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(other_path + ": run " + bad.uuid + ", trial 4 (trials row id "),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("its evidence is not valid JSON"), std::string::npos) << message;
  }
  Database here(db_path());
  const auto result = here.merge_from(other_path);
  EXPECT_EQ(result.imported, std::vector<std::string>{good.uuid});
  ASSERT_EQ(result.damaged.size(), 1u);
  EXPECT_EQ(result.damaged[0].first, bad.uuid);
  EXPECT_NE(result.damaged[0].second.find("trial 4"), std::string::npos);
  EXPECT_EQ(here.run_uuids(), std::vector<std::string>{good.uuid});
  EXPECT_EQ(count(here, "trials"), 4);
}

// An interrupted copy merged, then the finished copy: the run gains its missing trials and the
// finished status; a less complete copy merged afterwards changes nothing.
TEST_F(StorageTest, StorageMergeCompletesARunItHeldUnfinished) {
  const RunRecord run = make_run("aaaa0106-0000-4000-8000-000000000001", "2024-05-01T10:00:00Z");
  const std::string source = db_path("source.sqlite"), partial = db_path("partial.sqlite");
  {
    Database db(source);
    store_run_of(db, run, 0, 6, true);
    db.finish_run(run.uuid, "interrupted", "2024-05-01T10:02:00Z");
  }
  fs::copy_file(source, partial);
  Database here(db_path());
  auto result = here.merge_from(source);
  EXPECT_EQ(result.imported, std::vector<std::string>{run.uuid});
  {
    Database db(source);
    db.reopen_run(run.uuid);
    store_run_of(db, run, 6, 16, false);
    db.finish_run(run.uuid, "completed", "2024-05-01T10:09:00Z");
  }
  result = here.merge_from(source);
  EXPECT_TRUE(result.imported.empty());
  EXPECT_EQ(result.completed, std::vector<std::string>{run.uuid});
  EXPECT_EQ(here.trials(run.uuid).size(), 16u);
  EXPECT_EQ(count(here, "samples"), 48);
  EXPECT_EQ(here.run(run.uuid).status, "completed");
  EXPECT_EQ(here.run(run.uuid).ended_at, "2024-05-01T10:09:00Z");
  EXPECT_FALSE(here.effects(run.uuid).empty());
  // The interrupted copy again: the completed run stays as it is.
  result = here.merge_from(partial);
  EXPECT_EQ(result.already_here, std::vector<std::string>{run.uuid});
  EXPECT_EQ(here.trials(run.uuid).size(), 16u);
  EXPECT_EQ(here.run(run.uuid).status, "completed");
}

// Reading opens the file to read only: no -wal or -shm left beside it, nothing written; an older
// schema version is read through a migrated copy, the file left at its version.
TEST_F(StorageTest, StorageReadsWithoutWritingOrLeavingFiles) {
  const std::string path = db_path();
  const RunRecord run = make_run("aaaa0107-0000-4000-8000-000000000001", "2024-05-01T10:00:00Z");
  {
    Database db(path);
    store_run_of(db, run, 0, 4, true);
    db.finish_run(run.uuid, "completed", "2024-05-01T10:05:00Z");
  }
  downgrade_to_v6(path);
  const std::string before = read_bytes(path);
  {
    const Database db(path, Database::Access::kRead);
    EXPECT_EQ(db.schema_version(), kSchemaVersion);  // its copy's
    EXPECT_EQ(db.trials(run.uuid).size(), 4u);
    EXPECT_EQ(db.run(run.uuid).status, "completed");
    EXPECT_EQ(db.migrated_from(), 0);
  }
  EXPECT_EQ(read_bytes(path), before);
  for (const auto& entry : fs::directory_iterator(dir_)) {
    EXPECT_EQ(entry.path().filename(), "results.sqlite") << "left behind: " << entry.path();
  }
  // A file of this version: read through query_only, still no file left.
  { Database upgraded(path); }
  {
    const Database db(path, Database::Access::kRead);
    EXPECT_THROW(const_cast<SQLite::Database&>(db.connection()).exec("DELETE FROM samples"),
                 SQLite::Exception);
  }
  EXPECT_FALSE(fs::exists(path + "-wal"));
  EXPECT_FALSE(fs::exists(path + "-shm"));
  EXPECT_THROW(Database(db_path("missing.sqlite"), Database::Access::kRead), StorageError);
  EXPECT_FALSE(fs::exists(db_path("missing.sqlite")));
}

// What tune recommends is stored (schema version 8), read back whole, survives a v7 file's
// migration, and comes along in a merge, once.
TEST_F(StorageTest, StorageKeepsRecommendationsAndMergesThemOnce) {
  const std::string path = db_path("tunings.sqlite");
  const json recommendation = {{"settings", {{"amp", true}}},
                               {"vs_default", {{"time", {{"ratio", 0.7}, {"lo", 0.69}}}}}};
  {
    Database db(path);
    db.begin_run(make_run("cccc0008-0000-4000-8000-000000000001", "2024-05-01T10:00:00Z"));
    db.store_tuning({"tttt0001", "2024-05-01T10:30:00Z", "model.pt", recommendation});
    EXPECT_THROW(db.store_tuning({"tttt0001", "2024-05-01T10:31:00Z", "model.pt", {}}),
                 StorageError);  // one row per uuid
    ASSERT_EQ(db.tunings().size(), 1u);
    EXPECT_EQ(db.tunings()[0].recommendation, recommendation);
    EXPECT_EQ(db.tunings()[0].model, "model.pt");
  }
  Database here(db_path("here.sqlite"));
  EXPECT_TRUE(here.tunings().empty());
  here.merge_from(path);
  here.merge_from(path);
  ASSERT_EQ(here.tunings().size(), 1u);
  EXPECT_EQ(here.tunings()[0].recommendation, recommendation);

  const std::string old = db_path("v7.sqlite");
  {
    Database db(old);
    db.begin_run(make_run("cccc0008-0000-4000-8000-000000000002", "2024-05-01T10:00:00Z"));
  }
  downgrade_to_v7(old);
  Database migrated(old);
  EXPECT_EQ(migrated.migrated_from(), 7);
  EXPECT_TRUE(migrated.tunings().empty());
  migrated.store_tuning({"tttt0002", "2024-05-02T10:00:00Z", "resnet50 (preset tiny)", {}});
  EXPECT_EQ(migrated.tunings().size(), 1u);
}

}  // namespace
}  // namespace tunebench::storage
