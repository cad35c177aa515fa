// What a call keeps on its path, one path's at a time (Request::path_state_).
// The plan path keeps nothing here: its run is the request's Execution, which
// the request keeps across calls so that its vectors keep their capacity, and
// which the node slots' leaders' plan runs in too.
#pragma once
#include <cstdint>
#include <memory>
#include <variant>
#include <vector>

#include "runtime/count_exchange.hpp"
#include "runtime/node_slot_call.hpp"
#include "runtime/slot_call.hpp"

namespace loom {

class Request;

// The node slots' path: the node's slot phases; once `exchanging`, the node
// leaders' plan (plan_id, with the tag every rank took) in the request's
// Execution.
struct NodeSlotsState {
    NodeSlotCall slots;
    bool exchanging = false;
    uint32_t tag = 0, plan_id = 0;
    ReduceFn reduce = nullptr;
};

// A nonblocking alltoallv that learns the other ranks' counts before it is
// planned (runtime/paths/counts_first_path.cpp): the exchange's internal
// calls, running, and the tag every rank took for the alltoallv at its start.
// Once they finish, the call runs on the plan path.
struct CountsFirstState {
    CountExchange exchange;
    std::vector<std::unique_ptr<Request>> calls;
    uint32_t tag = 0;
};

// monostate: the plan path's calls, or no call yet; SlotCall: the shared
// slots' path.
using PathState = std::variant<std::monostate, SlotCall, NodeSlotsState, CountsFirstState>;

}  // namespace loom
