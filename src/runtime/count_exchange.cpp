#include "runtime/count_exchange.hpp"

#include <algorithm>

#include "algorithms/compose.hpp"

namespace loom {

const ParamId kParamAlltoallvCountsWaitUs = declare_param(
    ParamSection::algorithms,
    {"alltoallv_counts_wait_us", ParamType::integer, "1000", 5,
     "With the progress thread on, how long the start of a nonblocking alltoallv that learns the other ranks' "
     "counts (alltoallv_gather_counts) moves that exchange itself where the thread may not (its messages go "
     "through MPI's point-to-point), in microseconds: where the ranks start together, the alltoallv's plan starts "
     "within it and the thread drives it; past it, the caller's next test or wait starts the plan. 0: never",
     0, 1LL << 30, Collective::alltoallv});

CountExchange::CountExchange(const CollArgs &a, int rank, const NodeMap &nodes, bool whole_matrix)
    : whole_matrix_(whole_matrix), rank_(rank), nodes_(&nodes), p_(a.send_counts.size()) {
    if (whole_matrix_) {
        mine_.assign(a.send_counts.begin(), a.send_counts.end());
        every_.resize(p_ * p_);
        return;
    }
    mine_ = {0, 0};
    for (size_t block : a.send_counts) {
        mine_[0] += static_cast<int64_t>(block);
        mine_[1] = std::max(mine_[1], static_cast<int64_t>(block));
    }
    every_.resize(2 * p_);
    // Each of the node's ranks sends every one of them (itself too) its send
    // counts, then its receive counts: one block read by all.
    const std::vector<int> &members = this->members();
    const size_t k = members.size();
    out_.assign(a.send_counts.begin(), a.send_counts.end());
    out_.insert(out_.end(), a.recv_counts.begin(), a.recv_counts.end());
    in_.resize(2 * p_ * k);
    counts_.assign(p_, 0);
    displs_.assign(p_, 0);
    for (size_t i = 0; i < k; ++i) {
        counts_[static_cast<size_t>(members[i])] = 2 * p_;
        displs_[static_cast<size_t>(members[i])] = i * 2 * p_;
    }
}

std::vector<CountExchange::Call> CountExchange::calls() {
    std::vector<Call> calls(whole_matrix_ ? 1 : 2);
    Call &gather = calls[0];
    gather.args.collective = Collective::allgather;
    gather.args.count = mine_.size() * sizeof(int64_t);
    gather.in = mine_.data();
    gather.out = every_.data();
    gather.type = LOOM_BYTE;
    if (whole_matrix_) return calls;
    Call &node = calls[1];
    node.args.collective = Collective::alltoallv;
    node.args.send_counts = counts_;
    node.args.send_displs.assign(p_, 0);  // every member gets the same block
    node.args.recv_counts = counts_;
    node.args.recv_displs = displs_;
    node.in = out_.data();
    node.out = in_.data();
    node.type = LOOM_INT64;
    return calls;
}

NodeCounts CountExchange::result() const {
    if (whole_matrix_) return node_counts_of(every_.data(), static_cast<int>(p_), nodes_, rank_);
    NodeCounts n;
    n.node = nodes_->node_of[rank_];
    n.ranks = p_;
    for (size_t r = 0; r < p_; ++r) {
        n.total += static_cast<size_t>(every_[2 * r]);
        n.largest = std::max(n.largest, static_cast<size_t>(every_[2 * r + 1]));
    }
    const size_t k = members().size();
    n.counts.resize(2 * k * p_);
    for (size_t i = 0; i < k; ++i) {
        const int64_t *theirs = in_.data() + i * 2 * p_;
        std::copy(theirs, theirs + p_, n.counts.begin() + static_cast<ptrdiff_t>(i * p_));
        std::copy(theirs + p_, theirs + 2 * p_, n.counts.begin() + static_cast<ptrdiff_t>((k + i) * p_));
    }
    return n;
}

}  // namespace loom
