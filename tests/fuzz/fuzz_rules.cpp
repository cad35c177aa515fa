// Fuzz target: loom-rules(5) files (parse_rules). Every input must parse, or
// fail with a message that names the origin; a parsed file's cost model
// must read back from its own description, and matching must not fail.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "node_map.hpp"
#include "select/rules.hpp"

using namespace loom;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::string text(reinterpret_cast<const char *>(data), size);
    RuleSet set;
    if (parse_rules(text, "fuzz.json", &set) != LOOM_SUCCESS) {
        if (std::strncmp(last_error_message(), "fuzz.json: ", 11) != 0) std::abort();
        return 0;
    }
    if (set.model) {
        CostModel again;
        if (CostModel::parse(set.model->describe(), &again) != LOOM_SUCCESS ||
            again.describe() != set.model->describe())
            std::abort();
    }
    // Every collective on a few shapes, so the parsed ranges are matched too.
    const NodeMap two_nodes = NodeMap::from_labels({0, 0, 1, 1});
    for (int c = 0; c < kCollectiveCount; ++c) {
        CollArgs a;
        a.collective = static_cast<Collective>(c);
        a.nranks = 4;
        a.nodes = &two_nodes;
        a.elem_size = 4;
        a.recv_counts.assign(4, 1000);
        for (size_t count : {size_t{0}, size_t{1} << 10, size_t{1} << 20}) {
            a.count = count;
            if (is_vector_collective(a.collective)) set_uniform_blocks(a, count);
            for (const Rule *r = match_rule(set, a); r; r = match_rule(set, a, r->index + 1))
                if (r->algorithms.empty()) std::abort();
        }
    }
    return 0;
}
