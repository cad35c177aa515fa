// Fuzz target: the rails and rail_weights parameters (parse_rail_names,
// parse_rail_weights). The first byte gives the rail count the weights
// must match (1 to 64), the rest is the list. Names taken are interface
// names (no commas, spaces or '/', shorter than IF_NAMESIZE); weights
// taken are positive and finite, one per rail; anything else is refused
// with a message naming the parameter.
#include <net/if.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "transport/ucx/setup.hpp"

using namespace loom;

namespace {
bool refused_with(Status st, const char *parameter) {
    return st == LOOM_ERR_INVALID_PARAMETER_VALUE &&
           std::strncmp(last_error_message(), parameter, std::strlen(parameter)) == 0;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    const size_t rails = 1 + data[0] % 64;
    std::string text(reinterpret_cast<const char *>(data) + 1, size - 1);
    text.resize(std::strlen(text.c_str()));  // a C string, as parameters are
    std::vector<std::string> names;
    Status st = parse_rail_names(text, &names);
    if (st == LOOM_SUCCESS) {
        if (names.empty()) std::abort();
        for (const std::string &n : names)
            if (n.empty() || n.size() >= IF_NAMESIZE || n.find_first_of(", /") != std::string::npos) std::abort();
    } else if (!refused_with(st, "rails = '")) {
        std::abort();
    }
    std::vector<double> weights;
    st = parse_rail_weights(text, rails, &weights);
    if (st == LOOM_SUCCESS) {
        if (weights.size() != rails) std::abort();
        for (double w : weights)
            if (!(w > 0) || !std::isfinite(w)) std::abort();
    } else if (!refused_with(st, "rail_weights = '")) {
        std::abort();
    }
    return 0;
}
