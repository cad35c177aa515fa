// The cost model: alpha-beta-gamma prices per link class, applied to the very
// programs the executor runs. predict_time() builds every rank's program for
// a call and plays them against each other in a discrete-event simulation:
// a step starts when its dependencies are done and its peer-order gate is
// open, a message takes alpha + bytes * beta on its link once the link is
// free (across nodes: the sender's node's rail out and the receiver's in),
// and copies and reductions take bytes * their cost on the
// rank's core. The prediction is when the last rank finishes.
#pragma once
#include <string>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "core/status.hpp"

namespace loom {

extern const ParamId kParamCostModel;

struct LinkCost {
    double alpha_us = 0;     // per message, in flight
    double us_per_byte = 0;  // 1 / bandwidth
    // Per message, the time the sending and the receiving rank's core are
    // busy with it (LogP's o): what makes p-1 messages at once cost more
    // than one, above all through TCP on oversubscribed cores.
    double overhead_us = 0;
};

struct CostModel {
    // Defaults sane on a laptop or a small cluster node: shared-memory rings
    // ~1 us and 8 GB/s, the point-to-point path within a node (single copy)
    // 3 us and 10 GB/s, a network rail 5 us and 10 Gb/s; a core spends
    // 0.1 us per ring message, 0.3 us per single-copy one and 0.5 us per
    // network one.
    LinkCost shared_memory{1.0, 1.0 / 8000, 0.1};
    LinkCost intra_node{3.0, 1.0 / 10000, 0.3};
    LinkCost network{5.0, 1.0 / 1250, 0.5};
    // Copies between device and pinned host memory (the staging of device
    // buffers): 10 us and 25 GB/s, a PCIe 4/5 x16 link's order; the device
    // check measures the real one.
    LinkCost pcie{10.0, 1.0 / 25000, 0};
    // A message between nodes below rail_min_bytes (the rails'
    // rail_min_bytes) goes through MPI's own point-to-point (the PML), on
    // this link, all of a node's on one rail; rail_min 0 (the default):
    // every message takes the rails.
    LinkCost pml{5.0, 1.0 / 1250, 0.5};
    size_t rail_min_bytes = 0;
    double reduce_us_per_byte = 1.0 / 8000;  // gamma
    double copy_us_per_byte = 1.0 / 16000;
    // Messages up to this size between ranks of one node take the rings.
    size_t shm_max_bytes = 128 * 1024;
    // Across nodes on several rails, a message of at least this size is cut
    // over every rail in proportion to the rails' rates, as the UCX rails
    // stripe it (their rail_stripe_min_bytes); a smaller one takes its
    // lane's rail.
    size_t stripe_min_bytes = 64 * 1024;
    // Each rail's rate as a multiple of `network`'s (rails beyond the list:
    // 1), for rails of unequal speed; empty: all equal.
    std::vector<double> rail_rates;
    double rail_rate(int rail) const {
        return static_cast<size_t>(rail) < rail_rates.size() ? rail_rates[static_cast<size_t>(rail)] : 1.0;
    }
    // Nodes that differ: each node's speed as a multiple (its rails' ways
    // out and in, its ranks' copies, reductions and time per message;
    // nodes beyond the list: 1), and the rails that are down. A rail down
    // on any node is left out on all, as failover leaves it; lanes map onto
    // the rails left, and with none left every message goes through the
    // PML. Either keeps the simulation to every rank.
    std::vector<double> node_speeds;
    std::vector<int> rails_down;
    // Nodes are numbered as the communicator's nodes are (node_map.hpp).
    // Of a call's `rails` (numbered from 0), those not down, in order.
    std::vector<int> live_rails(int rails) const;
    double node_speed(int node) const {
        return static_cast<size_t>(node) < node_speeds.size() ? node_speeds[static_cast<size_t>(node)] : 1.0;
    }

    // "shm=1us:8GB/s:0.1us,intra=3us:10GB/s,net=5us:1.25GB/s:0.5us,pcie=10us:25GB/s,reduce=8GB/s,copy=16GB/s,shm_max=128KiB"
    // (also pml=LINK,rail_min=SIZE, rail_rates=1:0.5, node_speeds=1:1:0.5,
    // rails_down=1)
    // (a link is LATENCY:BANDWIDTH[:OVERHEAD], the overhead kept when left out):
    // any subset, in any order; errors name the key and the value.
    static Status parse(const std::string &text, CostModel *out);
    std::string describe() const;  // the same form parse() reads
};

// Up to this many ranks predict_time() simulates every rank's program;
// above, node 0's ranks stand for every node where the plans are symmetric
// (node_symmetry.hpp), and predict_time() declines where they are not:
// selection then keeps to its rules. Where the nodes differ (node_speeds,
// rails_down) it simulates every rank up to kModelMaxRanksEveryRank.
constexpr int kModelMaxRanks = 256;
// The most ranks a simulation of every rank is asked to cover (tests and
// `loom-plan --check` compare the two ways up to it).
constexpr int kModelMaxRanksEveryRank = 4096;
// Segmented plans have steps for every segment of every rank: above this
// many segments (of the larger buffer) times simulated ranks, predict_time() declines
// too (in 256 KiB segments: above 512 MiB on 8 ranks, 16 MiB on 256), where
// building and playing the plans takes too long (docs/design.md, "Selection
// and the cost model").
constexpr double kModelMaxSegmentSteps = 1 << 14;
// And above this many steps in all (simulated ranks times a rank's plan
// steps), checked on the first rank's plan as it is built: a flat plan's
// steps grow with the ranks, and at a million ranks building and playing
// them would take minutes and gigabytes. A process may lower it (the fuzz
// target does, where a sanitized build runs twenty times slower).
constexpr size_t kModelMaxSimulatedSteps = size_t{1} << 20;
void set_model_max_simulated_steps(size_t steps);
size_t model_max_simulated_steps();

// How a plan is simulated: `automatic` as kModelMaxRanks says; the tests and
// loom-plan's check ask for one way.
enum class SimulationScope { automatic, every_rank, node_symmetry };

// Predicted microseconds for `algo` on `args` (which must be applicable).
// Ranks share a node per args.nodes (none: one node). Errors when the
// programs do not complete against each other (a plan bug), or the
// communicator is too large for the scope.
Status predict_time(const AlgorithmInfo &algo, const CollArgs &args, const PlanKnobs &knobs, const CostModel &model,
                    SimulationScope scope, double *us);
inline Status predict_time(const AlgorithmInfo &algo, const CollArgs &args, const PlanKnobs &knobs,
                           const CostModel &model, double *us) {
    return predict_time(algo, args, knobs, model, SimulationScope::automatic, us);
}
// The same with the default knobs.
inline Status predict_time(const AlgorithmInfo &algo, const CollArgs &args, const CostModel &model, double *us) {
    return predict_time(algo, args, PlanKnobs(), model, us);
}

// A pipelined staging of `bytes` in chunks of `chunk` bytes, each chunk's
// collective taking `chunk_us`: the copies to and from the device on the
// pcie link (one stream: in and out in turn) overlap the collectives, so the
// slower of the two sets the pace.
double staged_pipeline_time(size_t bytes, size_t chunk, double chunk_us, const CostModel &model);

}  // namespace loom
