// How a call runs on its path (algorithms/call_path.hpp). The communicator
// checks, selects and counts a call, then hands it to its path's runner; a
// Request advances, withdraws and describes its call through the same
// runner. One runner per path, each in its own file under runtime/paths/.
// Device buffers enter through runtime/device_call.hpp, which picks CUDA IPC
// or staging through host memory (a host path then runs the call).
#pragma once
#include <vector>

#include "algorithms/call_path.hpp"
#include "core/status.hpp"

namespace loom {

class Communicator;
class Request;
class Execution;
struct CollArgs;
struct CallData;
struct CachedPlan;

class PathRunner {
  public:
    virtual ~PathRunner() = default;
    // Starts the call on `req`: args completed, the call counted on the
    // communicator. `blocking`: the caller waits for it at once.
    virtual Status start(Communicator &comm, Request &req, const CollArgs &args, const CallData &call,
                         const CachedPlan &plan, bool blocking) const = 0;
    // A blocking call from start to finish. By default: started on the
    // communicator's reusable request, then waited for.
    virtual Status run(Communicator &comm, const CollArgs &args, const CallData &call, const CachedPlan &plan) const;
    // Moves the call on; finishes the request when the call is done.
    virtual Status advance(Request &req) const = 0;
    // An early end (an error, hang_abort): what the call posted is
    // withdrawn, so that nothing lands in the caller's buffers afterwards.
    virtual void withdraw(Request &req) const = 0;
    // At a persistent init: the storage its starts would otherwise grow.
    virtual void reserve(Request &req, const CollArgs &args, const CachedPlan &plan) const = 0;
    // For a hang report: the node group's ranks (by index in the group)
    // whose slots the call waits for, and the plan it runs now, if any.
    virtual void slots_waited(const Request &req, std::vector<int> *local) const = 0;
    virtual const Execution *running_plan(const Request &req) const = 0;
    // Waits between unfinished looks poll the node's shared memory
    // (Communicator::wait_for_slots) instead of following the sleep rules.
    virtual bool polls_shared_memory() const = 0;
};

// The runner of each path.
const PathRunner &runner_for(CallPath path);
const PathRunner &plan_path_runner();
const PathRunner &shared_slots_path_runner();
const PathRunner &node_slots_path_runner();
const PathRunner &cuda_ipc_path_runner();
// Not an algorithm's path: a nonblocking alltoallv's first stage, which
// learns the counts its plan needs (Communicator::start_after_counts).
const PathRunner &counts_first_path_runner();

}  // namespace loom
