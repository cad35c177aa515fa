// What a transport's set-up and upkeep may ask of the communicator it joins:
// its ranks, node layout and parameters, small collectives over the
// transports it has so far, and the places to attach to. The runtime's
// Communicator provides it; transports include this, never the runtime.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/params.hpp"
#include "core/status.hpp"
#include "node_map.hpp"
#include "transport/router.hpp"
#include "transport/shm/shm.hpp"

namespace loom {

class SetupContext {
  public:
    virtual int rank() const = 0;
    virtual int size() const = 0;
    virtual const NodeMap &nodes() const = 0;
    virtual const Config &config() const = 0;
    // The transports attached so far, behind the router.
    virtual Router &transport() = 0;

    // Collectives over the transports attached so far, for set-ups and
    // upkeep: every rank calls them in the same order.
    virtual Status allgather_bytes(const void *mine, size_t bytes, void *all) = 0;
    virtual Status allreduce_int64(int64_t *values, size_t n, loom_op_t op) = 0;

    // Sends messages to ranks of this node through shared memory. Only
    // before the first collective.
    virtual Status attach_shared_memory(SharedMemoryNode node) = 0;
    // Adds the inter-node rails (any time, between calls): calls already
    // running keep their transports; `state` describes the rails.
    virtual Status attach_rails(std::unique_ptr<Transport> rails, int count, std::string state) = 0;
    // The rails' state for the stats: a rail left out or back, or why the
    // rails were left out altogether.
    virtual void rails_changed(const std::string &event) = 0;
    virtual void rails_left_out(std::string why) = 0;
    // Retires every cached plan (a transport's policy changed); the id the
    // next plan will get.
    virtual uint32_t retire_plans() = 0;

    // An agreement among the ranks (the rails' weights), run at the start of
    // every `every`-th blocking collective of at least `min_bytes`: a point
    // every rank reaches at the same call.
    using Upkeep = void (*)(SetupContext &context, void *state);
    virtual void every_blocking_call(uint64_t every, size_t min_bytes, Upkeep upkeep, void *state) = 0;

  protected:
    ~SetupContext() = default;
};

// A set-up that needs its ranks to talk, where the communicator was made
// without communication (coll/loom): run at its first collective.
using DeferredSetup = void (*)(SetupContext &context);

}  // namespace loom
