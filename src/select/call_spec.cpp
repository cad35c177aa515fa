#include "select/call_spec.hpp"

#include <cstring>
#include <sstream>
#include <vector>

#include "core/datatype.hpp"
#include "select/rules.hpp"
#include "transport/shm/params.hpp"
#include "transport/shm/shm.hpp"

namespace loom {
namespace {

// The most ranks a description may give, by np= or by nodes= times ppn=.
constexpr long long kMaxRanks = 1 << 20;
// alltoallv's: its count matrix of 4096 x 4096 takes 128 MiB.
constexpr long long kMaxAlltoallvRanks = 4096;

bool read_int(const std::string &v, long long lo, long long hi, long long *out) {
    char *end = nullptr;
    const long long n = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end || n < lo || n > hi) return false;
    *out = n;
    return true;
}

// Element sizes by the names loom-info -d prints (int8 ... double).
bool element_size(const std::string &name, size_t *out) {
    for (int t = 0; t < LOOM_DATATYPE_COUNT; ++t) {
        const DatatypeInfo *info = datatype_info(static_cast<loom_datatype_t>(t));
        if (info && name == info->name) {
            *out = info->size;
            return true;
        }
    }
    return false;
}

}  // namespace

void knobs_from_config(const Config &config, PlanKnobs *k) {
    k->segment_bytes = static_cast<size_t>(config.integer(kParamSegmentSize));
    k->radix = static_cast<int>(config.integer(kParamKnomialRadix));
    k->max_outstanding = static_cast<int>(config.integer(kParamAlltoallMaxOutstanding));
}

size_t alltoall_ring_piece_bytes(const CollArgs &a, const Config &config, size_t ring_message_max, size_t ring_bytes) {
    if (a.collective != Collective::alltoall || !a.single_node) return 0;
    const size_t block = a.count * a.elem_size;
    const size_t piece = ring_message_max;
    // Whole-ring blocks only: with more, the sender waits for the receiver
    // to drain the ring, a scheduler slice when they share a core
    // (docs/design.md, "The shared-memory path").
    if (piece == 0 || block <= piece || block > ring_bytes ||
        block > static_cast<size_t>(config.integer(kParamAlltoallShmMaxBytes)))
        return 0;
    return piece;
}

Status parse_call_spec(const std::string &text, const Config &config, CallSpec *out) {
    std::istringstream words(text);
    std::string coll_word, size_word, w;
    words >> coll_word >> size_word;
    CallSpec spec;
    CollArgs &a = spec.args;
    if (!collective_from_name(coll_word, &a.collective))
        return fail(LOOM_ERR_INVALID_ARGUMENT, "explain: '" + coll_word +
                                                   "' is not a collective (allreduce, reduce_scatter, "
                                                   "reduce_scatter_block, allgather, alltoall)");
    long long bytes = 0;
    if (!parse_size(size_word, &bytes) || bytes < 0)
        return fail(LOOM_ERR_INVALID_ARGUMENT, "explain: '" + size_word + "' is not a message size (e.g. 1MiB)");
    long long nodes = 1, ppn = 0, np = 0, rails = 1, skew = 1;
    size_t elem = 4;
    std::string type_name = "float";
    while (words >> w) {
        const size_t eq = w.find('=');
        const std::string key = w.substr(0, eq), value = eq == std::string::npos ? "" : w.substr(eq + 1);
        bool ok = true;
        if (w == "in_place") a.in_place = true;
        else if (key == "nodes") ok = read_int(value, 1, 1 << 16, &nodes);
        else if (key == "ppn") ok = read_int(value, 1, 1 << 12, &ppn);
        else if (key == "np") ok = read_int(value, 1, kMaxRanks, &np);
        else if (key == "rails") ok = read_int(value, 1, 64, &rails);
        else if (key == "skew") ok = read_int(value, 1, kMaxRanks, &skew);
        else if (key == "type") ok = element_size(value, &elem), type_name = value;
        else if (key == "memory") ok = memory_type_from_name(value, &a.memory);
        else
            return fail(LOOM_ERR_INVALID_ARGUMENT, "explain: unknown word '" + w +
                                                       "' (known: nodes=N ppn=N np=N rails=N type=NAME "
                                                       "memory=host|cuda|cuda_managed in_place skew=S)");
        if (!ok)
            return fail(LOOM_ERR_INVALID_ARGUMENT, "explain: bad value in '" + w + "'" +
                                                       (key == "type" ? " (a datatype name as loom-info -d lists them)"
                                                        : key == "memory" ? " (host, cuda or cuda_managed)"
                                                                          : " (a positive integer)"));
    }
    if (np == 0) np = nodes * (ppn ? ppn : (nodes == 1 ? 4 : 1));
    if (np > kMaxRanks)  // nodes=65536 ppn=4096: a node map of 2^28 ranks would take minutes and gigabytes
        return fail(LOOM_ERR_INVALID_ARGUMENT,
                    "explain: nodes=" + std::to_string(nodes) + " ppn=" + std::to_string(ppn) + " makes " +
                        std::to_string(np) + " ranks, more than the " + std::to_string(kMaxRanks) + " np= allows");
    if (ppn == 0) ppn = (np + nodes - 1) / nodes;
    if (np > nodes * ppn || np < nodes)
        return fail(LOOM_ERR_INVALID_ARGUMENT, "explain: np=" + std::to_string(np) + " does not fit nodes=" +
                                                   std::to_string(nodes) + " ppn=" + std::to_string(ppn));
    // Every rank's alltoallv counts, np x np, are what the model and the rules read.
    if (a.collective == Collective::alltoallv && np > kMaxAlltoallvRanks)
        return fail(LOOM_ERR_INVALID_ARGUMENT,
                    "explain: alltoallv on " + std::to_string(np) +
                        " ranks: every rank's counts (np x np) would take " +
                        std::to_string(np * np * static_cast<long long>(sizeof(size_t)) >> 20) + " MiB; at most " +
                        std::to_string(kMaxAlltoallvRanks) + " ranks");
    a.nranks = static_cast<int>(np);
    a.elem_size = elem;
    const size_t elems = static_cast<size_t>(bytes) / elem;
    switch (a.collective) {
        case Collective::allreduce:
        case Collective::allgather:
        case Collective::alltoall: a.count = elems; break;
        case Collective::reduce_scatter_block: a.count = elems / static_cast<size_t>(np); break;
        case Collective::reduce_scatter:
            a.recv_counts.assign(static_cast<size_t>(np), elems / static_cast<size_t>(np));
            break;
        case Collective::alltoallv:
        case Collective::allgatherv: set_skewed_blocks(a, elems, static_cast<size_t>(skew)); break;
    }
    if (skew > 1 && a.collective != Collective::alltoallv && a.collective != Collective::allgatherv)
        return fail(LOOM_ERR_INVALID_ARGUMENT, "explain: skew= describes alltoallv and allgatherv counts only");
    if (skew > np)
        return fail(LOOM_ERR_INVALID_ARGUMENT, "explain: skew=" + std::to_string(skew) + " is more than the " +
                                                   std::to_string(np) +
                                                   " ranks (skew is the largest block over the mean)");
    // An alltoallv learns the others' counts only across nodes (alltoallv_gather_counts auto);
    // skewed counts on one node keep them, for the model to price every rank's own blocks.
    if (nodes < 2 && skew == 1) a.count_matrix.clear();
    std::vector<int> labels(static_cast<size_t>(np));
    for (long long r = 0; r < np; ++r) labels[static_cast<size_t>(r)] = static_cast<int>(r / ppn);
    spec.nodes = std::make_unique<NodeMap>(NodeMap::from_labels(labels, static_cast<int>(rails)));
    a.nodes = spec.nodes.get();
    a.single_node = nodes == 1 && np > 1;
    knobs_from_config(config, &spec.knobs);
    // The rings a communicator of this shape would attach.
    const ShmGeometry rings = shm_geometry_for(static_cast<size_t>(ppn));
    spec.knobs.ring_piece_bytes = alltoall_ring_piece_bytes(
        a, config, shm_ring_message_limit(rings, static_cast<size_t>(config.integer(kParamShmMaxBytes))),
        rings.ring_bytes());
    *out = std::move(spec);
    return LOOM_SUCCESS;
}

}  // namespace loom
