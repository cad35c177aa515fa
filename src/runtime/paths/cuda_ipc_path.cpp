// The CUDA IPC path's runner on the host side. Its calls never reach a
// Request: device buffers enter through runtime/device_call.hpp, which runs
// them blocking in runtime/cuda_ipc_call.cpp (every rank agreeing first) or
// stages them through host memory onto a host path. A call that arrives here
// was selected for device memory without that entry: an internal error, not
// a crash.
#include "runtime/communicator.hpp"
#include "runtime/path_runner.hpp"

namespace loom {

class CudaIpcPath final : public PathRunner {
  public:
    Status start(Communicator &, Request &, const CollArgs &args, const CallData &, const CachedPlan &plan,
                 bool) const override {
        return refuse(args, plan);
    }
    Status run(Communicator &, const CollArgs &args, const CallData &, const CachedPlan &plan) const override {
        return refuse(args, plan);
    }
    Status advance(Request &req) const override { return req.error_; }
    void withdraw(Request &) const override {}
    void reserve(Request &, const CollArgs &, const CachedPlan &) const override {}
    void slots_waited(const Request &, std::vector<int> *) const override {}
    const Execution *running_plan(const Request &) const override { return nullptr; }
    bool polls_shared_memory() const override { return false; }

  private:
    static Status refuse(const CollArgs &args, const CachedPlan &plan) {
        return fail(LOOM_ERR_INTERNAL, std::string("the CUDA IPC algorithm ") + plan.algorithm->name +
                                           " was chosen for " + args.describe() +
                                           " outside the device-call entry (runtime/device_call)");
    }
};

const PathRunner &cuda_ipc_path_runner() {
    static const CudaIpcPath runner;
    return runner;
}

}  // namespace loom
