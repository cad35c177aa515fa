#include "algorithms/allreduce/node_split.hpp"

namespace loom {

NodeSplitRange::NodeSplitRange(const CollArgs &a, int rank, size_t offset, size_t count, ProgramBuilder &b)
    : a_(a),
      v_(a, rank),
      offset_(offset),
      count_(count),
      pieces_(static_cast<size_t>(v_.map.max_ranks_per_node())),
      layout_(count, pieces_) {
    std::tie(mine_first_, mine_last_) = owner_range(v_.node, static_cast<size_t>(v_.local));
    mine_offset_ = layout_.offset(mine_first_);
    mine_count_ = layout_.span(mine_first_, mine_last_ - mine_first_);
    node_sum_ = b.scratch(mine_count_);
}

std::pair<size_t, size_t> NodeSplitRange::owner_range(int node, size_t j) const {
    const size_t k = v_.map.members[node].size();
    return {first_piece(j, k), first_piece(j + 1, k)};
}

// Each local rank receives the node's sum of its run of pieces, into scratch.
void NodeSplitRange::reduce_within_node(ProgramBuilder &b) const {
    std::vector<size_t> counts(static_cast<size_t>(v_.k));
    for (int j = 0; j < v_.k; ++j) {
        const auto [first, last] = owner_range(v_.node, static_cast<size_t>(j));
        counts[static_cast<size_t>(j)] = layout_.span(first, last - first);
    }
    CollArgs rs = sub_args(a_, Collective::reduce_scatter, v_.k, 0, true);
    rs.recv_counts = counts;
    build_sub_collective(b, rs, v_.members(), v_.local, input_slice(offset_, count_), node_sum_);
}

// Per owned piece, an allreduce among that piece's owners (one per node, in
// node order), on the piece's lane: every owner agrees on it, and with as
// many ranks per node as pieces, local rank j's traffic rides rail j mod rails.
void NodeSplitRange::allreduce_across_nodes(ProgramBuilder &b) const {
    for (size_t piece = mine_first_; piece < mine_last_; ++piece) {
        std::vector<int> owners;
        for (int node = 0; node < v_.map.nodes(); ++node) {
            const size_t k = v_.map.members[node].size();
            size_t j = 0;
            while (first_piece(j + 1, k) <= piece) ++j;
            owners.push_back(v_.map.members[node][j]);
        }
        const size_t off = layout_.offset(piece) - mine_offset_;
        const CollArgs ar =
            sub_args(a_, Collective::allreduce, static_cast<int>(owners.size()), layout_.count(piece), false);
        const Slice in{Buffer::scratch, node_sum_.offset + off, layout_.count(piece)};
        build_sub_collective(b, ar, owners, v_.node, in,
                             output_slice(offset_ + layout_.offset(piece), layout_.count(piece)),
                             static_cast<int>(piece % 256));
    }
}

// The runs gathered within the node (sizes differ: directly).
void NodeSplitRange::gather_within_node(ProgramBuilder &b) const {
    const Slice mine = output_slice(offset_ + mine_offset_, mine_count_);
    for (int i = 1; i < v_.k; ++i) {
        const int from = (v_.local - i + v_.k) % v_.k;
        const auto [first, last] = owner_range(v_.node, static_cast<size_t>(from));
        b.recv(v_.members()[static_cast<size_t>(from)],
               output_slice(offset_ + layout_.offset(first), layout_.span(first, last - first)));
    }
    for (int i = 1; i < v_.k; ++i) b.send(v_.members()[static_cast<size_t>((v_.local + i) % v_.k)], mine);
}

}  // namespace loom
