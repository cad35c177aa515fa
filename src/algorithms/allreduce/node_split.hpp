// The three phases of a node-split allreduce over one range of the vector,
// shared by hier_split (the whole vector at once) and hier_pipelined (the
// vector in chunks, each phase of every chunk in turn): (1) the node's
// vectors reduced onto the owners of the range's pieces (intra-node
// reduce-scatter), (2) each piece allreduced among its owners, one per
// node, each local rank on its own lane, (3) the pieces gathered back
// within the node. The range is cut into as many pieces as the largest
// node has ranks; local ranks own consecutive runs of pieces, so nodes of
// 3, 1 and 2 ranks all work.
#pragma once
#include "algorithms/compose.hpp"

namespace loom {

class NodeSplitRange {
  public:
    // The range [offset, offset + count) of the vector; the phases' scratch
    // (this rank's node sums) is reserved here.
    NodeSplitRange(const CollArgs &a, int rank, size_t offset, size_t count, ProgramBuilder &b);
    void reduce_within_node(ProgramBuilder &b) const;
    void allreduce_across_nodes(ProgramBuilder &b) const;
    void gather_within_node(ProgramBuilder &b) const;

  private:
    // First piece owned by local rank j of a node of k ranks.
    size_t first_piece(size_t j, size_t k) const { return j * pieces_ / k; }
    std::pair<size_t, size_t> owner_range(int node, size_t j) const;

    const CollArgs &a_;
    NodeView v_;
    size_t offset_, count_, pieces_;
    BlockLayout layout_;  // the range's pieces, offsets from the range's start
    size_t mine_first_, mine_last_, mine_offset_, mine_count_;
    Slice node_sum_;
};

}  // namespace loom
