#pragma once
// Where this binary was built from. Kept out of compile definitions on purpose: a definition that
// names the checkout differs between clones and would change every translation unit's flags
// (ccache could then reuse nothing from an earlier clone); here only one tiny generated file,
// core/build_paths.cpp.in, names it.
#include <string>

namespace tunebench::build_paths {

// The source tree of this build: its suites/, reports/, .venv and .git.
const std::string& source_dir();

// The Python whose torch is the LibTorch this binary links (the pypi build's environment, where
// the compile knob exports and compiles models); empty when the LibTorch is no wheel's.
const std::string& torch_python();

}  // namespace tunebench::build_paths
