// hier_split in chunks, so that the network never waits for the node: the
// vector is cut into chunks and each chunk runs hier_split's three phases,
// but the program states every chunk's node reduce-scatter first, then
// every chunk's inter-node allreduce, then every chunk's node allgather.
// Dependencies follow the data, and messages to one peer are posted in
// program order, so chunk c crosses the network while chunk c+1 is summed
// on the node and chunk c-1 gathered there; the inter-node allreduces run
// back to back. Only the first chunk's node phase and the last one's
// gather are not hidden behind the network.
//
// A chunk's piece (per local rank) is four segments of the ring inside
// (segment_size), so the ring still pipelines within a chunk; at most
// kMaxChunks chunks. Without segmentation (segment_size 0), one chunk:
// hier_split itself.
#include <algorithm>

#include "algorithms/allreduce/node_split.hpp"

namespace loom {
namespace {

constexpr size_t kSegmentsPerPiece = 4;
constexpr size_t kMaxChunks = 8;

size_t chunks_for(const CollArgs &a, size_t segment_bytes) {
    if (segment_bytes == 0 || a.count == 0) return 1;
    const size_t pieces = static_cast<size_t>(a.nodes->max_ranks_per_node());
    const size_t chunk_bytes = kSegmentsPerPiece * segment_bytes * pieces;
    const size_t chunks = a.count * a.elem_size / chunk_bytes;
    return std::clamp<size_t>(chunks, 1, std::min(kMaxChunks, a.count));
}

void build(const CollArgs &a, int rank, ProgramBuilder &b) {
    const BlockLayout chunks(a.count, chunks_for(a, b.knobs().segment_bytes));
    std::vector<NodeSplitRange> ranges;
    ranges.reserve(chunks.blocks());
    for (size_t c = 0; c < chunks.blocks(); ++c) ranges.emplace_back(a, rank, chunks.offset(c), chunks.count(c), b);
    for (const NodeSplitRange &r : ranges) r.reduce_within_node(b);
    for (const NodeSplitRange &r : ranges) r.allreduce_across_nodes(b);
    for (const NodeSplitRange &r : ranges) r.gather_within_node(b);
}

}  // namespace

extern const AlgorithmInfo kAllreduceHierPipelined = {
    Collective::allreduce,
    "hier_pipelined",
    "hier_split in chunks: a chunk crosses the network while the next is summed on the node and the last gathered",
    "a node map (any ranks per node, any rank order)",
    needs_node_map,
    build,
    /*in_place_aliasing_safe=*/false};

}  // namespace loom
