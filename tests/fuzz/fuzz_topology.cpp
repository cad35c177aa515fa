// Fuzz target: the topology string (loom_topology_parse, the topology
// parameter's syntax). The first two bytes give the rank count (1 to
// 4096), the rest is the string. It parses into a label per rank (nodes
// numbered from 0 by first appearance) and 1 to 64 rails, or is refused
// with LOOM_ERR_INVALID_PARAMETER_VALUE and a message quoting it.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "loom.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    const int nranks = 1 + ((data[0] << 8 | data[1]) % 4096);
    std::string spec(reinterpret_cast<const char *>(data) + 2, size - 2);
    spec.resize(std::strlen(spec.c_str()));  // a C string
    std::vector<int> labels(static_cast<size_t>(nranks), -1);
    int rails = 0;
    const int st = loom_topology_parse(spec.c_str(), nranks, labels.data(), &rails);
    if (st != LOOM_SUCCESS) {
        if (st != LOOM_ERR_INVALID_PARAMETER_VALUE || std::strstr(loom_last_error(), "topology '") == nullptr)
            std::abort();
        return 0;
    }
    if (rails < 1 || rails > 64) std::abort();
    int next_node = 0;  // a label is a node seen before, or the next new one
    for (int label : labels) {
        if (label < 0 || label > next_node) std::abort();
        if (label == next_node) ++next_node;
    }
    return 0;
}
