#include "select/builtin_rules.hpp"

#include <cstdio>

namespace loom {

// Within a collective the order is the precedence: several nodes, then one
// node, then any communicator. Each rule names an algorithm that runs every
// call its conditions admit (no restriction, or one they imply), so the
// first matching rule decides; only the node slots' rules name one alone
// that may not run (a node without Loom's shared memory): the next rule
// then does. The device-memory rules come last: host algorithms never run
// device buffers, so a device call passes every earlier rule; where CUDA IPC
// cannot run the call either, Loom stages it through host memory. Rule
// indices are cited by docs/selection-defaults.md and
// tests/unit/test_selector.cpp: renumbering means updating them.
const char *builtin_rules_text() {
    return R"json({
  "comment": "Loom's built-in selection rules (loom-rules(5)); docs/selection-defaults.md cites them by index",
  "rules": [
    {"collective": "allreduce", "nodes": [2, null], "ppn": [2, null], "bytes": [0, 512],
     "algorithm": ["node_slots"],
     "note": "vector <= 512 B on several nodes: hier_leader with its node phases on the shared slots"},
    {"collective": "allreduce", "nodes": [2, null], "ppn": [2, null], "bytes": [0, "256KiB"],
     "algorithm": ["hier_leader", "recursive_doubling"],
     "note": "vector <= 256 KiB on several nodes: one leader per node on the network"},
    {"collective": "allreduce", "nodes": [2, null], "ppn": [2, null],
     "algorithm": ["hier_split", "rabenseifner"],
     "note": "vector > 256 KiB on several nodes: every local rank on the network"},
    {"collective": "allreduce", "single_node": true, "comm_size": [1, 8], "bytes": [0, "8KiB"],
     "algorithm": ["direct", "recursive_doubling"],
     "note": "vector <= 8 KiB on one node of <= 8 ranks: one round"},
    {"collective": "allreduce", "single_node": true, "comm_size": [1, 8],
     "algorithm": ["hier_split", "rabenseifner"],
     "note": "vector > 8 KiB on one node of <= 8 ranks: reduce-scatter, then allgather"},
    {"collective": "allreduce", "bytes": [0, "16KiB"],
     "algorithm": ["recursive_doubling", "ring"],
     "note": "vector <= 16 KiB: latency-bound"},
    {"collective": "allreduce", "bytes": [0, "512KiB"],
     "algorithm": ["rabenseifner", "ring"],
     "note": "vector <= 512 KiB: a ring's bytes in lg p rounds"},
    {"collective": "allreduce", "comm_size": [1, 2],
     "algorithm": ["rabenseifner", "ring"],
     "note": "vector > 512 KiB on 2 ranks (two nodes, or the inter-node phase of hier_split over 2): one exchange of halves each way, where a ring cuts it into segments"},
    {"collective": "allreduce", "comm_size": [1, 8],
     "algorithm": ["ring", "rabenseifner"],
     "note": "vector > 512 KiB across nodes on <= 8 ranks: a ring keeps every link streaming, where the halving exchange waits for its slowest pair at every step"},
    {"collective": "allreduce", "elements_per_rank": [0, 3],
     "algorithm": ["rabenseifner", "ring"],
     "note": "fewer than 4 elements per rank: too few for the ring's pieces"},
    {"collective": "allreduce",
     "algorithm": ["ring", "rabenseifner"],
     "note": "vector > 512 KiB on > 8 ranks: bandwidth-bound"},

    {"collective": "reduce_scatter", "nodes": [2, null], "ppn": [2, null], "bytes": [0, "2KiB"],
     "algorithm": ["recursive_halving", "hierarchical"],
     "note": "input <= 2 KiB on several nodes: lg p rounds"},
    {"collective": "reduce_scatter", "nodes": [2, null], "ppn": [2, null], "bytes": ["1MiB", null],
     "algorithm": ["rail_ring", "hierarchical"],
     "note": "input >= 1 MiB on several nodes: one stream per local rank and rail, one neighbour at a time"},
    {"collective": "reduce_scatter", "nodes": [2, null], "ppn": [2, null],
     "algorithm": ["hierarchical", "ring"],
     "note": "input > 2 KiB on several nodes: node-sums cross the network once"},
    {"collective": "reduce_scatter", "single_node": true, "comm_size": [1, 8],
     "algorithm": ["pairwise", "recursive_halving"],
     "note": "one node of <= 8 ranks: contributions go straight to their owners"},
    {"collective": "reduce_scatter", "bytes": [0, "64KiB"],
     "algorithm": ["recursive_halving", "ring"],
     "note": "input <= 64 KiB: lg p rounds"},
    {"collective": "reduce_scatter",
     "algorithm": ["ring", "pairwise"],
     "note": "input > 64 KiB: bandwidth-bound"},

    {"collective": "reduce_scatter_block", "nodes": [2, null], "ppn": [2, null], "bytes": [0, "2KiB"],
     "algorithm": ["recursive_halving", "hierarchical"],
     "note": "input <= 2 KiB on several nodes: lg p rounds"},
    {"collective": "reduce_scatter_block", "nodes": [2, null], "ppn": [2, null], "bytes": ["1MiB", null],
     "algorithm": ["rail_ring", "hierarchical"],
     "note": "input >= 1 MiB on several nodes: one stream per local rank and rail, one neighbour at a time"},
    {"collective": "reduce_scatter_block", "nodes": [2, null], "ppn": [2, null],
     "algorithm": ["hierarchical", "ring"],
     "note": "input > 2 KiB on several nodes: node-sums cross the network once"},
    {"collective": "reduce_scatter_block", "single_node": true, "comm_size": [1, 8],
     "algorithm": ["pairwise", "recursive_halving"],
     "note": "one node of <= 8 ranks: contributions go straight to their owners"},
    {"collective": "reduce_scatter_block", "bytes": [0, "64KiB"],
     "algorithm": ["recursive_halving", "ring"],
     "note": "input <= 64 KiB: lg p rounds"},
    {"collective": "reduce_scatter_block",
     "algorithm": ["ring", "pairwise"],
     "note": "input > 64 KiB: bandwidth-bound"},

    {"collective": "allgather", "nodes": [2, null], "ppn": [2, null], "bytes": [0, 256],
     "algorithm": ["node_slots"],
     "note": "blocks <= 256 B on several nodes: the node's blocks on the shared slots, one message per leader pair"},
    {"collective": "allgather", "nodes": [2, null], "ppn": [2, null], "bytes": [0, 256], "power_of_two": true,
     "algorithm": ["recursive_doubling", "hierarchical"],
     "note": "blocks <= 256 B on several nodes, power-of-two size: lg p rounds"},
    {"collective": "allgather", "nodes": [2, null], "ppn": [2, null], "bytes": [262145, null],
     "algorithm": ["rail_ring", "hierarchical"],
     "note": "blocks > 256 KiB on several nodes: one stream per local rank and rail, one neighbour at a time"},
    {"collective": "allgather", "nodes": [2, null], "ppn": [2, null],
     "algorithm": ["hierarchical", "ring"],
     "note": "several nodes: within nodes first, then one fetch per remote node"},
    {"collective": "allgather", "single_node": true, "comm_size": [1, 8],
     "algorithm": ["direct", "recursive_doubling"],
     "note": "one node of <= 8 ranks: one round"},
    {"collective": "allgather", "comm_size": [1, 8], "power_of_two": true, "total_bytes": [0, "16MiB"],
     "algorithm": ["recursive_doubling", "ring"],
     "note": "result <= 16 MiB on a power-of-two size <= 8: lg p rounds"},
    {"collective": "allgather", "total_bytes": [0, "64KiB"], "power_of_two": true,
     "algorithm": ["recursive_doubling", "bruck"],
     "note": "result <= 64 KiB on a power-of-two size: lg p rounds"},
    {"collective": "allgather", "total_bytes": [0, "64KiB"], "power_of_two": false,
     "algorithm": ["bruck", "ring"],
     "note": "result <= 64 KiB: ceil(lg p) rounds"},
    {"collective": "allgather",
     "algorithm": ["ring", "bruck"],
     "note": "result > 64 KiB: bandwidth-bound"},

    {"collective": "alltoall", "nodes": [2, null], "ppn": [2, null], "bytes": [0, "64KiB"],
     "algorithm": ["node_aggregation", "bruck"],
     "note": "blocks <= 64 KiB on several nodes: one message per node pair"},
    {"collective": "alltoall", "nodes": [2, null], "ppn": [2, null],
     "algorithm": ["pairwise", "scattered"],
     "note": "blocks > 64 KiB on several nodes: one exchange at a time"},
    {"collective": "alltoall", "comm_size": [5, null], "bytes": [0, 256],
     "algorithm": ["bruck", "scattered"],
     "note": "blocks <= 256 B on > 4 ranks: ceil(lg p) rounds"},
    {"collective": "alltoall", "bytes": [0, "256KiB"],
     "algorithm": ["scattered", "pairwise"],
     "note": "blocks <= 256 KiB: every peer at once, a window in flight"},
    {"collective": "alltoall", "single_node": true, "comm_size": [1, 8],
     "algorithm": ["scattered", "pairwise"],
     "note": "blocks > 256 KiB on one node of <= 8 ranks: every peer at once"},
    {"collective": "alltoall",
     "algorithm": ["pairwise", "scattered"],
     "note": "blocks > 256 KiB: one exchange at a time"},

    {"collective": "allreduce", "memory": "device", "bytes": [0, "64KiB"],
     "algorithm": ["cuda_ipc_one_shot"],
     "note": "device vector <= 64 KiB on one node: one kernel reads every peer's vector (not yet measured on a GPU)"},
    {"collective": "allreduce", "memory": "device",
     "algorithm": ["cuda_ipc_reduce_scatter_allgather"],
     "note": "device vector > 64 KiB on one node: each rank reads about twice the vector"},
    {"collective": "reduce_scatter", "memory": "device", "algorithm": ["cuda_ipc_direct"],
     "note": "device buffers on one node: each rank reads its block of every input"},
    {"collective": "reduce_scatter_block", "memory": "device", "algorithm": ["cuda_ipc_direct"],
     "note": "device buffers on one node: each rank reads its block of every input"},
    {"collective": "allgather", "memory": "device", "algorithm": ["cuda_ipc_direct"],
     "note": "device buffers on one node: each rank copies every block"},
    {"collective": "alltoall", "memory": "device", "algorithm": ["cuda_ipc_direct"],
     "note": "device buffers on one node: each rank copies its block of every send buffer"},

    {"collective": "alltoallv", "nodes": [2, null], "ppn": [2, null], "bytes": [0, "64KiB"],
     "algorithm": ["node_aggregation", "scattered"],
     "note": "mean block <= 64 KiB on several nodes (the totals of every rank's counts learnt): one aggregated message per node pair, its agents spread over the local ranks' rails"},
    {"collective": "alltoallv", "nodes": [2, null], "ppn": [2, null], "bytes": ["64KiB", null], "skew": [2, null],
     "algorithm": ["scattered", "pairwise"],
     "note": "mean block > 64 KiB on several nodes, the largest block at least twice the mean (the totals of every rank's counts learnt): every peer at once, so the busiest receiver's link never waits for a round"},
    {"collective": "alltoallv", "nodes": [2, null], "ppn": [2, null], "bytes": ["64KiB", null],
     "algorithm": ["pairwise", "scattered"],
     "note": "mean block > 64 KiB on several nodes (the totals of every rank's counts learnt): one exchange at a time, as alltoall"},
    {"collective": "alltoallv",
     "algorithm": ["scattered", "pairwise"],
     "note": "every peer at once, a window in flight (a rank knows only its own counts, so no size decides)"},
    {"collective": "allgatherv", "nodes": [2, null], "ppn": [2, null], "bytes": [0, "4KiB"],
     "algorithm": ["hierarchical", "ring"],
     "note": "mean shard <= 4 KiB on several nodes: within nodes first, then each node's shards in one round to every other node, spread over its rails"},
    {"collective": "allgatherv", "nodes": [2, null], "ppn": [2, null],
     "algorithm": ["node_ring", "hierarchical"],
     "note": "mean shard > 4 KiB on several nodes: within nodes first, then a ring of nodes per rail relays equal pieces of every node's shards, so no node sends more than it must receive"},
    {"collective": "allgatherv", "single_node": true, "comm_size": [1, 8],
     "algorithm": ["direct", "ring"],
     "note": "one node of <= 8 ranks: one round"},
    {"collective": "allgatherv", "total_bytes": [0, "64KiB"],
     "algorithm": ["bruck", "ring"],
     "note": "result <= 64 KiB: ceil(lg p) rounds"},
    {"collective": "allgatherv",
     "algorithm": ["ring", "bruck"],
     "note": "result > 64 KiB: bandwidth-bound"}
  ]
})json";
}

const RuleSet &builtin_rules() {
    static const RuleSet rules = [] {
        RuleSet set;
        // Only an edit to the text above can fail this; a unit test parses it.
        if (parse_rules(builtin_rules_text(), "built-in rules", &set) != LOOM_SUCCESS) {
            std::fprintf(stderr, "loom: ignoring the built-in rules: %s\n", last_error_message());
            set = RuleSet{};
            set.path = "built-in rules";
        }
        return set;
    }();
    return rules;
}

}  // namespace loom
