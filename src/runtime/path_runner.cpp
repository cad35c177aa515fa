#include "runtime/path_runner.hpp"

namespace loom {

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
