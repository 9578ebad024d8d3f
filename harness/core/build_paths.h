#pragma once
// Where this binary finds what it did not compile in: the suites, the report package and the
// Python worker. Built in a checkout, that is the checkout; installed (`cmake --install`, the
// .deb), it is the prefix's share/tunebench, found beside the binary, so the installed tool needs
// no checkout. The checkout's path is kept out of compile definitions on purpose: a definition
// that names the checkout differs between clones and would change every translation unit's flags
// (ccache could then reuse nothing from an earlier clone); here only one tiny generated file,
// core/build_paths.cpp.in, names it.
#include <string>

namespace tunebench::build_paths {

// The folder that holds suites/, reports/ and models/python/: PREFIX/share/tunebench when this
// binary runs from PREFIX/bin and that folder was installed (it holds the marker
// kInstalledMarker), else the source tree this binary was built from.
const std::string& source_dir();
// Whether source_dir() is an installed prefix's share/tunebench rather than a checkout.
bool installed();
inline constexpr const char* kInstalledMarker = ".tunebench-installed";

// The Python whose torch is the LibTorch this binary links (the pypi build's environment, where
// the compile knob exports and compiles models); empty when the LibTorch is no wheel's.
const std::string& torch_python();

// The Python the report runs with: $TUNEBENCH_PYTHON where set; in a checkout, its .venv
// (ci/setup.sh); installed, the environment .venv pointed to when this binary was configured if
// it still exists (ci/setup.sh keeps it in a cache outside the checkout), else python3.
std::string report_python();

// The checkout's git revision when this binary was configured: what an installed binary, which
// has no .git beside it, records as its revision ("unknown" outside a git checkout).
const std::string& configured_git_revision();

}  // namespace tunebench::build_paths
