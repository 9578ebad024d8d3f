// The documents the catalog's claims come from, by name: each claim ends with the names of its
// sources in parentheses ("faster and less memory (PyTorch Performance Tuning Guide)"), and
// `tunebench list --format md` lists them with what each claims. No torch.
#pragma once

#include <string>
#include <vector>

namespace tunebench::knobs {

struct Source {
  std::string name;    // as claims cite it
  std::string title;   // the document's own title
  std::string kind;    // official guide, blog post, …
  std::string claims;  // what it claims, in brief
};

// Every source a claim may cite, in the order the project received them.
const std::vector<Source>& sources();

// The source names a claim cites: the ";"-separated names inside its last parentheses that are
// sources' names; empty when it cites none.
std::vector<std::string> cited_sources(const std::string& claim);

}  // namespace tunebench::knobs
