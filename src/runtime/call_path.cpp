#include "runtime/call_path.hpp"

#include "runtime/communicator.hpp"

namespace loom {

Status PathRunner::run(Communicator &comm, const CollArgs &args, const CallData &call, const CachedPlan &plan) const {
    Request &req = *comm.blocking_;
    LOOM_RETURN_IF_ERROR(comm.launch(req, args, call, plan, /*blocking=*/true));
    return comm.wait_blocking(req);
}

const PathRunner &runner_for(CallPath path) {
    switch (path) {
        case CallPath::plan: return plan_path_runner();
        case CallPath::shared_slots: return shared_slots_path_runner();
        case CallPath::node_slots: return node_slots_path_runner();
        case CallPath::cuda_ipc: return cuda_ipc_path_runner();
    }
    return plan_path_runner();
}

}  // namespace loom
