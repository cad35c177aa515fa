// One UCP context and worker per rail, restricted to that rail's network
// device, shared by every communicator of the process that uses the same
// rails (messages carry a communicator id in their tag). Endpoints are
// made once per remote worker address.
#pragma once
#include <ucp/api/ucp.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/status.hpp"

namespace loom {

struct RailWorker {
    std::string device;  // "rail0", "eth1", "lo"
    ucp_context_h context = nullptr;
    ucp_worker_h worker = nullptr;
    std::string address;  // this worker's UCP address, to hand to peers
    std::map<std::string, ucp_ep_h> endpoints;  // by the remote worker's address
};

class RailWorkers {
  public:
    // The process's workers for `devices` with UCX transports `tls`, made
    // on first use. Errors name the device and what UCX said.
    // `shared` false: workers of its own (tests run several ranks in one process).
    static Status get(const std::vector<std::string> &devices, const std::string &tls,
                      std::shared_ptr<RailWorkers> *out, bool shared = true);
    ~RailWorkers();
    RailWorkers(const RailWorkers &) = delete;
    RailWorkers &operator=(const RailWorkers &) = delete;

    size_t count() const { return rails_.size(); }
    const RailWorker &rail(size_t i) const { return rails_[i]; }
    ucp_worker_h worker(size_t i) const { return rails_[i].worker; }
    Status endpoint(size_t rail, const std::string &remote_address, ucp_ep_h *out);
    // Progresses every rail's worker once; how many events it handled.
    unsigned progress();

    // Communicator ids in tags: a process never reuses one while its
    // workers live. `candidate` is this process's next free id; the
    // communicator agrees on the largest and reserves it everywhere.
    static uint32_t next_comm_id();
    static void reserve_comm_id(uint32_t id);

  private:
    RailWorkers() = default;
    std::vector<RailWorker> rails_;
};

}  // namespace loom
