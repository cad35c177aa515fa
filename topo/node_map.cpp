#include "node_map.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <sstream>

namespace loom {
namespace {

// The rank count is known only to the communicator: the form is checked
// here, against the fewest ranks it allows (a label each, or one per node):
// coll/loom sets it on every communicator.
Status check_topology(const ParamSpec &spec, const std::string &value) {
    if (value.empty()) return LOOM_SUCCESS;
    const size_t nodes_at = value.find("nodes=");
    size_t ranks = nodes_at == std::string::npos ? static_cast<size_t>(std::count(value.begin(), value.end(), ',') + 1)
                                                 : std::strtoul(value.c_str() + nodes_at + 6, nullptr, 10);
    ranks = std::min(std::max<size_t>(ranks, 1), size_t{1} << 20);
    NodeMap m;
    return NodeMap::parse(value, static_cast<int>(ranks), &m) == LOOM_SUCCESS ? LOOM_SUCCESS : invalid_value_of(spec);
}

}  // namespace

const ParamId kParamTopology = declare_param(
    ParamSection::topology,
    {"topology", ParamType::topology, "", 4,
     "Emulated topology: \"nodes=N[,rails=R]\" (consecutive ranks per node) or a node label per rank "
     "(\"0,0,1,1,1,2;rails=2\"); empty for the machine's own. Node-aware algorithms and the selector follow it, "
     "and shared memory links only ranks of one emulated node (read when the communicator is created)",
     0, 0, Collective::allreduce, nullptr, check_topology});

int NodeMap::max_ranks_per_node() const {
    int m = 0;
    for (const auto &ranks : members) m = std::max(m, static_cast<int>(ranks.size()));
    return m;
}

bool NodeMap::uniform() const {
    for (const auto &ranks : members)
        if (ranks.size() != members.front().size()) return false;
    return true;
}

std::string NodeMap::describe() const {
    std::ostringstream o;
    o << nodes() << (nodes() == 1 ? " node:" : " nodes:");
    for (const auto &ranks : members) {
        o << " [";
        for (size_t i = 0; i < ranks.size(); ++i) o << (i ? " " : "") << ranks[i];
        o << "]";
    }
    if (rails > 1) o << ", " << rails << " rails";
    if (emulated) o << " (emulated)";
    return o.str();
}

NodeMap NodeMap::from_labels(const std::vector<int> &labels, int rails) {
    NodeMap m;
    m.rails = rails;
    std::map<int, int> number;  // label -> node number, by first appearance
    for (size_t r = 0; r < labels.size(); ++r) {
        auto it = number.find(labels[r]);
        if (it == number.end()) {
            it = number.emplace(labels[r], static_cast<int>(m.members.size())).first;
            m.members.emplace_back();
        }
        m.node_of.push_back(it->second);
        m.local_index.push_back(static_cast<int>(m.members[it->second].size()));
        m.members[it->second].push_back(static_cast<int>(r));
    }
    return m;
}

NodeMap NodeMap::single_node(int nranks) { return from_labels(std::vector<int>(nranks, 0)); }

namespace {

bool parse_int(const std::string &text, int *out) {
    if (text.empty() || text.size() > 9 || !std::all_of(text.begin(), text.end(), ::isdigit)) return false;
    *out = std::stoi(text);
    return true;
}

}  // namespace

Status NodeMap::parse(const std::string &spec, int nranks, NodeMap *out) {
    auto bad = [&](const std::string &why) {
        return fail(LOOM_ERR_INVALID_ARGUMENT, "topology '" + spec + "': " + why +
                                                   " (use \"nodes=N[,rails=R]\" or a node label per rank, "
                                                   "e.g. \"0,0,1,1,1,2;rails=2\")");
    };
    if (spec.empty()) {
        *out = single_node(nranks);
        return LOOM_SUCCESS;
    }
    std::string body = spec;
    int rails = 1;
    // Optional rail count: ",rails=R" after nodes=N, or ";rails=R" after a label list.
    const size_t rails_at = body.find("rails=");
    if (rails_at != std::string::npos) {
        if (!parse_int(body.substr(rails_at + 6), &rails) || rails < 1 || rails > 64)
            return bad("rails must be an integer from 1 to 64");
        body = body.substr(0, rails_at);
        if (!body.empty() && (body.back() == ',' || body.back() == ';')) body.pop_back();
        if (body.empty()) body = "nodes=1";
    }
    std::vector<int> labels;
    if (body.compare(0, 6, "nodes=") == 0) {
        int nodes = 0;
        if (!parse_int(body.substr(6), &nodes) || nodes < 1) return bad("nodes must be a positive integer");
        if (nodes > nranks)
            return bad(std::to_string(nodes) + " nodes for " + std::to_string(nranks) + " ranks leaves a node empty");
        for (int n = 0; n < nodes; ++n) {
            const int count = nranks / nodes + (n < nranks % nodes ? 1 : 0);
            labels.insert(labels.end(), count, n);
        }
    } else {
        std::stringstream in(body);
        std::string item;
        while (std::getline(in, item, ',')) {
            int label = 0;
            if (!parse_int(item, &label)) return bad("'" + item + "' is not a node number");
            labels.push_back(label);
        }
        if (static_cast<int>(labels.size()) != nranks)
            return bad("it gives " + std::to_string(labels.size()) + " node labels for " + std::to_string(nranks) +
                       " ranks");
    }
    *out = from_labels(labels, rails);
    out->emulated = true;
    return LOOM_SUCCESS;
}

}  // namespace loom
