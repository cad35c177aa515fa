// A Loom communicator: a transport, its parameters, the plan cache and the
// running tag. Every collective is nonblocking underneath: start() returns a
// Request, blocking calls are start + wait.
#pragma once
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "executor.hpp"
#include "params.hpp"
#include "selector.hpp"
#include "transport.hpp"

namespace loom {

class Communicator;

// A started collective. Testing or waiting on one request progresses every
// active request of its communicator: otherwise two ranks waiting on
// different requests, each needing the other's progress, would deadlock.
class Request {
  public:
    ~Request();
    Status test(bool *done);
    Status wait();
    bool done() const { return finished_; }

  private:
    friend class Communicator;
    Status advance();  // progresses this request only
    Communicator *comm_ = nullptr;
    std::unique_ptr<Execution> execution_;
    std::vector<unsigned char> scratch_;
    std::vector<unsigned char> snapshot_;  // in-place input, when the algorithm needs one
    bool finished_ = false;
    Status error_ = LOOM_SUCCESS;
};

struct CallData {
    const void *sendbuf = nullptr;
    bool in_place = false;  // input is in recvbuf (sendbuf ignored)
    void *recvbuf = nullptr;
    loom_datatype_t type = LOOM_BYTE;
    loom_op_t op = LOOM_SUM;  // ignored without reduction
};

class Communicator {
  public:
    Communicator(std::unique_ptr<Transport> transport, Config config);
    int rank() const { return transport_->rank(); }
    int size() const { return transport_->size(); }
    Config &config() { return config_; }
    Transport &transport() { return *transport_; }

    // Validates nothing about user input (the C API does); args.nranks and the
    // algorithm knobs are filled in here.
    Status start(CollArgs args, const CallData &call, std::unique_ptr<Request> *out);
    Status run(const CollArgs &args, const CallData &call);

    // Progresses every active request once.
    Status progress_all();

    const char *last_algorithm(Collective c) const { return last_algorithm_[static_cast<int>(c)]; }
    size_t cached_plans() const { return cache_.size(); }
    uint64_t plan_builds() const { return plan_builds_; }

  private:
    std::shared_ptr<const Program> program_for(const AlgorithmInfo &algo, const CollArgs &args);

    std::unique_ptr<Transport> transport_;
    Config config_;
    uint32_t next_tag_ = 0;
    const char *last_algorithm_[kCollectiveCount] = {};
    bool reported_[kCollectiveCount] = {};
    // LRU plan cache: most recently used at the front.
    std::list<std::pair<std::string, std::shared_ptr<const Program>>> lru_;
    std::unordered_map<std::string, decltype(lru_)::iterator> cache_;
    uint64_t plan_builds_ = 0;
    std::vector<Request *> active_;
    friend class Request;
};

}  // namespace loom
