// What an alltoallv across nodes learns of the other ranks' counts before
// it is planned (CollArgs::node_counts): the internal collectives that
// learn it, their buffers, and what is read from them once they are done.
// A blocking or persistent alltoallv runs them first; a nonblocking one
// starts them and plans itself when they finish
// (runtime/paths/counts_first_path.cpp), so that its start never waits for
// the other ranks.
#pragma once
#include <cstdint>
#include <vector>

#include "core/params.hpp"
#include "core/plan.hpp"
#include "node_map.hpp"

namespace loom {

extern const ParamId kParamAlltoallvCountsWaitUs;

class CountExchange {
  public:
    CountExchange() = default;
    // For the alltoallv `a` (its send and receive counts) of rank `rank` on
    // `nodes`. `whole_matrix`: every rank's counts, in one allgather of p
    // counts per rank. Otherwise two calls that need no p x p matrix: an
    // allgather of every rank's total and largest block, and an alltoallv
    // among this node's ranks of their send and receive counts.
    CountExchange(const CollArgs &a, int rank, const NodeMap &nodes, bool whole_matrix);

    // One internal collective of the exchange: its shape (`args`: collective
    // and counts) and buffers, in elements of `type`.
    struct Call {
        CollArgs args;
        const void *in = nullptr;
        void *out = nullptr;
        loom_datatype_t type = LOOM_BYTE;
    };
    // Its calls, in the order every rank makes them; valid while it lives
    // and is not moved.
    std::vector<Call> calls();
    // What the finished calls tell: `a`'s node_counts.
    NodeCounts result() const;

  private:
    // This rank's node's ranks.
    const std::vector<int> &members() const { return nodes_->members[nodes_->node_of[rank_]]; }
    bool whole_matrix_ = true;
    int rank_ = 0;
    const NodeMap *nodes_ = nullptr;  // the communicator's, which outlives the exchange
    size_t p_ = 0;
    std::vector<int64_t> mine_, every_;  // the allgather's
    std::vector<int64_t> out_, in_;      // the node's alltoallv's
    std::vector<size_t> counts_, displs_;
};

}  // namespace loom
