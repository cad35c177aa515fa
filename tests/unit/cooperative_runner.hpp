// Runs every rank of a plan in one thread, round-robin over the in-process
// transport. Deterministic and cheap: the exhaustive algorithm matrix uses it,
// under both the eager and the rendezvous protocol.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "runtime/executor.hpp"
#include "transport/inprocess/inprocess.hpp"
#include "transport/router.hpp"
#include "transport/shm/shm.hpp"

namespace loom::testing {

struct RankBuffers {
    std::vector<unsigned char> input;   // the rank's send buffer (unused in place)
    std::vector<unsigned char> output;  // the rank's receive buffer
};

// The programs of all ranks for one call, built and validated once and then
// run with many datatypes and ops.
struct PlanSet {
    const AlgorithmInfo *algo = nullptr;
    CollArgs args;
    // The vector collectives' calls differ per rank: rank r's, when not empty.
    std::vector<CollArgs> rank_args;
    const CollArgs &args_of(int rank) const { return rank_args.empty() ? args : rank_args[rank]; }
    std::vector<std::shared_ptr<const Program>> programs;
    std::string error;  // validation failure, if any
};

// `rank_args`, when given, holds each rank's own call (and `args` rank 0's).
inline PlanSet build_plans(const AlgorithmInfo &algo, const CollArgs &args, const PlanKnobs &knobs = PlanKnobs(),
                           std::vector<CollArgs> rank_args = {}) {
    PlanSet set;
    set.algo = &algo;
    set.args = args;
    set.rank_args = std::move(rank_args);
    for (int r = 0; r < args.nranks; ++r) {
        const CollArgs &mine = set.args_of(r);
        auto program = std::make_shared<Program>(build_program(algo, mine, knobs, r));
        std::string bad = program->validate(mine.input_count(), mine.output_count(r));
        if (!bad.empty() && set.error.empty()) set.error = "rank " + std::to_string(r) + ": " + bad;
        set.programs.push_back(std::move(program));
    }
    return set;
}

// The shared-memory path over the in-process fabric: rank r is on emulated
// node r % nodes; messages up to max_bytes between ranks of a node go
// through memfd-backed rings, each rank mapping every inbox of its node;
// how those of single-copy size go is `single_copy`. Each rank's transport
// becomes a router: shared memory first, the fabric for the rest.
struct ShmOptions {
    ShmGeometry geometry;
    size_t max_bytes = 0;
    SingleCopyPolicy single_copy;
    int nodes = 1;
};

// Shared memory cut fine, for the matrices: rings of 4 cells of 24 bytes, so
// messages go in many cells and senders find rings full; those of 100-300
// bytes go by single copy, larger ones by the base transport; rank r on
// emulated node r % nodes.
inline ShmOptions tiny_rings(int nodes) {
    ShmOptions shm;
    shm.geometry.cells = 4;
    shm.geometry.cell_payload = 24;
    shm.max_bytes = 300;
    shm.single_copy.mode = SingleCopyPolicy::always;
    shm.single_copy.min_bytes = 100;
    shm.nodes = nodes;
    return shm;
}

inline std::string wrap_in_shared_memory(const ShmOptions &o, std::vector<std::unique_ptr<Transport>> &transports) {
    const int p = static_cast<int>(transports.size());
    for (int node = 0; node < o.nodes && node < p; ++node) {
        std::vector<int> local;
        for (int r = node; r < p; r += o.nodes) local.push_back(r);
        if (local.size() < 2) continue;
        std::vector<std::unique_ptr<SharedSegment>> inboxes;
        for (size_t i = 0; i < local.size(); ++i) {
            inboxes.push_back(SharedSegment::anonymous(shm_inbox_bytes(local.size(), o.geometry)));
            if (!inboxes.back()) return "memfd_create failed";
            shm_inbox_init(inboxes.back()->data(), local.size(), o.geometry, 42);
        }
        for (size_t i = 0; i < local.size(); ++i) {
            SharedMemoryNode sm;
            sm.local_ranks = local;
            sm.geometry = o.geometry;
            sm.identity = 42;
            sm.own = inboxes[i]->another_mapping();
            sm.peers.resize(local.size());
            for (size_t j = 0; j < local.size(); ++j)
                if (j != i) sm.peers[j] = inboxes[j]->another_mapping();
            loom::ShmOptions options;
            options.max_bytes = o.max_bytes;
            options.single_copy = o.single_copy;
            std::unique_ptr<Transport> shm;
            if (make_shared_memory_transport(local[i], p, std::move(sm), options, &shm) != LOOM_SUCCESS)
                return "shared-memory transport: " + std::string(last_error_message());
            auto router = std::make_unique<Router>(std::move(transports[local[i]]));
            router->add_preferred(std::move(shm));
            transports[local[i]] = std::move(router);
        }
    }
    return {};
}

// The ranks' transports, kept across many calls of one shape as a
// communicator keeps its own: setting shared memory up maps every inbox of
// a node once per rank, which cost the matrices more than the calls.
struct World {
    int p = 0;  // 0: not set up (or dropped after a failed call)
    InProcessProtocol protocol = InProcessProtocol::eager;
    const ShmOptions *shm = nullptr;
    std::unique_ptr<InProcessFabric> fabric;
    std::vector<std::unique_ptr<Transport>> transports;
};

// Sets `w` up for `p` ranks over `shm`, unless it already is.
inline std::string set_up_world(int p, InProcessProtocol protocol, const ShmOptions *shm, World &w) {
    if (w.p == p && w.protocol == protocol && w.shm == shm) return {};
    w.p = 0;
    w.transports.clear();
    w.fabric = std::make_unique<InProcessFabric>(p, protocol);
    for (int r = 0; r < p; ++r) w.transports.push_back(w.fabric->endpoint(r));
    if (shm) {
        std::string err = wrap_in_shared_memory(*shm, w.transports);
        if (!err.empty()) return err;
    }
    w.p = p;
    w.protocol = protocol;
    w.shm = shm;
    return {};
}

// Runs the plans on `world`'s transports; an empty string on success, else
// what went wrong.
inline std::string run_plans_in(const PlanSet &set, ReduceFn reduce, std::vector<RankBuffers> &bufs, World &world) {
    const CollArgs &args = set.args;
    const int p = args.nranks;
    InProcessFabric &fabric = *world.fabric;
    std::vector<std::unique_ptr<Transport>> &transports = world.transports;
    std::vector<std::unique_ptr<Execution>> execs;
    std::vector<std::vector<unsigned char>> scratch(p), snapshot(p);
    for (int r = 0; r < p; ++r) {
        scratch[r].resize(set.programs[r]->scratch_count * args.elem_size + 1);
        ExecutionBuffers eb;
        eb.output = bufs[r].output.data();
        eb.scratch = scratch[r].data();
        eb.elem_size = args.elem_size;
        eb.reduce = reduce;
        const CollArgs &mine = set.args_of(r);
        const unsigned char *in_place_at = bufs[r].output.data() + mine.in_place_input_offset(r) * args.elem_size;
        if (!args.in_place) {
            eb.input = bufs[r].input.data();
        } else if (set.algo->in_place_aliasing_safe) {
            eb.input = in_place_at;
        } else {
            snapshot[r].assign(in_place_at, in_place_at + mine.input_count() * args.elem_size);
            eb.input = snapshot[r].data();
        }
        execs.push_back(std::make_unique<Execution>(set.programs[r].get(), *transports[r], 7, eb));
    }
    for (int r = 0; r < p; ++r)
        if (execs[r]->start() != LOOM_SUCCESS)
            return "start failed on rank " + std::to_string(r) + ": " + last_error_message();
    // A full round in which no rank completes a step means no rank ever will.
    for (;;) {
        bool all_done = true;
        size_t moved = 0;
        for (int r = 0; r < p; ++r) {
            if (execs[r]->done()) continue;
            // A long message moves cell by cell through shared memory
            // before its step completes: that is progress too.
            const size_t before = execs[r]->completed_steps() + transports[r]->data_movements();
            bool done = false;
            if (execs[r]->progress(&done) != LOOM_SUCCESS)
                return "progress failed on rank " + std::to_string(r) + ": " + last_error_message();
            all_done &= done;
            moved += execs[r]->completed_steps() + transports[r]->data_movements() - before;
        }
        if (all_done) break;
        if (moved == 0) {
            std::string stuck;
            for (int r = 0; r < p; ++r)
                if (!execs[r]->done()) stuck += " " + std::to_string(r);
            return "plan deadlocked; ranks not done:" + stuck;
        }
    }
    if (fabric.undelivered() != 0) return std::to_string(fabric.undelivered()) + " messages left unmatched";
    return {};
}

// Runs the plans; returns an empty string on success, else what went wrong.
// With `world`, on its transports (set up for this shape if they are not),
// which the next call reuses; a failed call drops them, so that what it
// left behind cannot reach the next.
inline std::string run_plans(const PlanSet &set, ReduceFn reduce, std::vector<RankBuffers> &bufs,
                             InProcessProtocol protocol = InProcessProtocol::eager, const ShmOptions *shm = nullptr,
                             World *world = nullptr) {
    if (!set.error.empty()) return set.error;
    World own;
    World &w = world ? *world : own;
    std::string err = set_up_world(set.args.nranks, protocol, shm, w);
    if (err.empty()) err = run_plans_in(set, reduce, bufs, w);
    if (!err.empty()) w.p = 0;
    return err;
}

inline std::string run_all_ranks(const AlgorithmInfo &algo, const CollArgs &args, ReduceFn reduce,
                                 std::vector<RankBuffers> &bufs,
                                 InProcessProtocol protocol = InProcessProtocol::eager) {
    return run_plans(build_plans(algo, args), reduce, bufs, protocol);
}

}  // namespace loom::testing
