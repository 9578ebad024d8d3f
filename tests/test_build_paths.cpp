// The source root that core/ derives for this build (core/build_paths.h): the checkout whose
// reports/, suites/, models/python/ and .venv the binary uses at run time. The pipeline's folders
// live one level down (harness/), so a root taken one folder too shallow or too deep fails here.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "core/build_paths.h"

namespace fs = std::filesystem;
using tunebench::build_paths::source_dir;

TEST(BuildPaths, TheSourceRootHoldsWhatTheBinaryReadsAtRunTime) {
  const fs::path root = source_dir();
  for (const char* relative : {"CMakeLists.txt", "reports/render.py", "suites/smoke.json",
                               "models/python/worker.py", "harness/core/build_paths.h"}) {
    EXPECT_TRUE(fs::exists(root / relative)) << (root / relative) << " is missing";
  }
  EXPECT_FALSE(fs::exists(root / "harness" / "harness")) << root << " is the harness folder";
}

TEST(BuildPaths, TheSourceRootHoldsThePythonEnvironment) {
  // ci/setup.sh links .venv into the checkout, unless told to build without one.
  const char* no_venv = std::getenv("TUNEBENCH_NO_VENV");
  if (no_venv != nullptr && std::string(no_venv) == "1") GTEST_SKIP() << "TUNEBENCH_NO_VENV=1";
  const fs::path python = fs::path(source_dir()) / ".venv" / "bin" / "python";
  EXPECT_TRUE(fs::exists(python)) << python << " is missing: run ci/setup.sh";
}
