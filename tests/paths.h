#pragma once
// Where the tests find what they run: the tunebench binary is built beside the test executables
// (the build directory's root), the suites in the source tree.
#include <filesystem>
#include <string>

#include "core/build_paths.h"

namespace tunebench::test_paths {

inline std::string tunebench_binary() {
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "tunebench").string();
}

inline std::string source_file(const std::string& relative) {
  return build_paths::source_dir() + "/" + relative;
}

}  // namespace tunebench::test_paths
