// Picks the algorithm for a call: a forced name (parameter) wins; otherwise the
// default rules by collective, message size and communicator size. A forced
// name that does not exist or cannot run the call is an error, never a silent
// substitution.
#pragma once
#include <string>

#include "algorithm.hpp"
#include "params.hpp"

namespace loom {

struct Selection {
    const AlgorithmInfo *algorithm = nullptr;
    std::string why;  // "forced by allreduce_algorithm", "default: 64 B <= 16 KiB", ...
};

Status select_algorithm(const Config &config, const CollArgs &args, Selection *out);

// The choice without a forced name: the default rules' first applicable
// preference, else the first applicable algorithm.
Status default_selection(const CollArgs &args, Selection *out);

// The default rule's preference order for `args` (first applicable wins).
std::vector<const char *> default_preference(const CollArgs &args, std::string *why);

}  // namespace loom
