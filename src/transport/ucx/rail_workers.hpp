// One UCP context per rail, restricted to that rail's network device, and
// its workers, shared by every communicator of the process that uses the
// same rails (messages carry a communicator id in their tag). Endpoints are
// made once per remote worker address and worker.
//
// A rail that failed keeps its worker for good but never progresses it
// again: operations abandoned on it may still point at buffers their
// owners have reused, and stale messages may sit in its queues. A rail that
// comes back gets a fresh worker in the same context.
#pragma once
#include <ucp/api/ucp.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.hpp"

namespace loom {

// Every UCX call on the rails' workers holds this lock: the progress thread
// and the caller may drive the shared workers at once, through different
// communicators. It is never held while calling anything but UCX (the PML
// may run callbacks that enter Loom). The workers are made
// UCS_THREAD_MODE_SERIALIZED accordingly.
std::recursive_mutex &rails_mutex();
using RailsLock = std::lock_guard<std::recursive_mutex>;

struct RailWorker {
    ucp_worker_h handle = nullptr;
    std::string address;  // this worker's UCP address, to hand to peers
    std::map<std::string, ucp_ep_h> endpoints;  // by the remote worker's address
    int efd = -1;  // readable when the worker has news, once armed (ucp_worker_arm); -1: none
    // Set once the rail failed on this worker: nobody progresses it again.
    // Atomic: the progress thread may fail a worker that another
    // communicator's caller reads.
    std::atomic<bool> down{false};
};

struct Rail {
    std::string device;  // "rail0", "eth1", "lo"
    ucp_context_h context = nullptr;
    std::shared_ptr<RailWorker> current;           // what new communicators use
    std::vector<std::shared_ptr<RailWorker>> all;  // every worker made, destroyed with the context
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
    const std::string &device(size_t rail) const { return rails_[rail].device; }
    const std::shared_ptr<RailWorker> &current(size_t rail) const { return rails_[rail].current; }
    // A fresh worker for `rail`, which becomes its current one.
    Status renew(size_t rail, std::shared_ptr<RailWorker> *out);
    // The endpoint from `worker` (of `rail`) to the remote worker `remote_address`.
    Status endpoint(size_t rail, RailWorker &worker, const std::string &remote_address, ucp_ep_h *out);

    // Communicator ids in tags: a process never reuses one while its
    // workers live. `candidate` is this process's next free id; the
    // communicator agrees on the largest and reserves it everywhere.
    static uint32_t next_comm_id();
    static void reserve_comm_id(uint32_t id);

  private:
    RailWorkers() = default;
    std::vector<Rail> rails_;
};

}  // namespace loom
