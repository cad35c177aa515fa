// The multi-rail transport: messages to ranks on other nodes over UCX, one
// worker per rail. A message up to rail_stripe_min_bytes travels on its
// lane's rail (lane mod rails: the node-aware plans give each local rank's
// inter-node phase its own lane); a larger one is cut over every rail in
// proportion to the rails' weights. Both sides of a message compute the
// same cut from the same agreed weights, so receives need no header.
#pragma once
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "transport/transport.hpp"
#include "transport/ucx/rail_workers.hpp"

namespace loom {

struct UcxPeers {
    // Per communicator rank: whether it is on another node (carried here),
    // and its endpoint on each rail (null for ranks on this node).
    std::vector<char> remote;
    std::vector<std::vector<ucp_ep_h>> endpoints;
};

struct UcxOptions {
    uint32_t comm_id = 0;
    std::vector<double> weights;  // per rail, from the probe or rail_weights
    size_t stripe_min_bytes = 64 << 10;
    // Smaller messages are left to the transports after this one (the PML, MPI).
    size_t min_bytes = 0;
    // Calls whose plan id is below this started before the rails came up:
    // their messages stay on the transports they started with.
    uint32_t first_plan = 0;
};

class UcxTransport;
Status make_ucx_transport(std::shared_ptr<RailWorkers> workers, int rank, int size, UcxPeers peers,
                          const UcxOptions &options, std::unique_ptr<UcxTransport> *out);

class UcxTransport final : public Transport {
  public:
    static constexpr int kMaxRails = 8;
    // Tags: communicator id (16 bits), sender (24), Loom's tag (24).
    static constexpr uint32_t kMaxTag = (1u << 24) - 1;

    UcxTransport(std::shared_ptr<RailWorkers> workers, int rank, int size, UcxPeers peers, const UcxOptions &options);
    ~UcxTransport() override;
    int rank() const override { return rank_; }
    int size() const override { return size_; }
    const char *name() const override { return "ucx"; }
    uint32_t max_tag() const override { return kMaxTag; }
    // Both sides know a message's size, so leaving small ones out is decided alike.
    int carries(int peer, size_t bytes, const Route &route) const override {
        return peers_.remote[static_cast<size_t>(peer)] && bytes >= min_bytes_ && route.plan >= first_plan_ ? 0 : -1;
    }
    Status post_send(const void *buf, size_t bytes, int peer, uint32_t tag, const Route &route,
                     TransportHandle *h) override;
    Status post_recv(void *buf, size_t bytes, int peer, uint32_t tag, const Route &route, TransportHandle *h) override;
    Status test_many(TransportHandle *const *hs, size_t n, unsigned char *done, bool *moved) override;
    bool oversubscribed() const override { return false; }
    // Plans tell which collective a message belongs to, for the per-collective counts.
    bool follows_plans() const override { return true; }
    void plan_added(uint32_t id, uint32_t key, const CollArgs &args) override;
    void plan_removed(uint32_t id) override { plan_collective_.erase(id); }
    uint64_t data_movements() const override { return movements_; }
    void extra_counters(std::vector<std::pair<std::string, uint64_t>> *out) const override;

    size_t rails() const { return workers_->count(); }
    // The weights the newest plans cut with (normalised to sum 1).
    const std::vector<double> &weights() const { return weights_; }
    void set_first_plan(uint32_t id) { first_plan_ = id; }
    // Replaces the newest weights (set-up: before any plan uses them).
    void set_weights(const std::vector<double> &weights);
    // Calls whose plan id is `first_plan` or later cut with `weights`; calls
    // already running keep theirs. Every rank must add the same weights at
    // the same call.
    void add_weights(uint32_t first_plan, const std::vector<double> &weights);
    const std::string &rail_name(int r) const { return workers_->rail(static_cast<size_t>(r)).device; }
    // The pieces a message of `bytes` on `lane` of plan `plan` is cut into:
    // rail and length per piece, in order (empty pieces left out).
    void cut(size_t bytes, int lane, std::vector<std::pair<int, size_t>> *out,
             uint32_t plan = Route::kNoPlan) const;
    // Per rail, the moving estimate of bytes per second that striped
    // messages arrived at on this rank (0: none seen yet).
    std::vector<double> observed_rates() const { return rates_; }

  private:
    struct Op {
        void *requests[kMaxRails];
        size_t expected[kMaxRails];  // the piece's length, to catch short messages
        int rail[kMaxRails];
        uint64_t posted_ns = 0;
        int pieces = 0;
        bool send = false;
        bool striped = false;
        int peer = 0;
    };
    Status post(bool send, void *buf, size_t bytes, int peer, uint32_t tag, const Route &route, TransportHandle *h);
    // Whether op `i` has finished; errors name the peer and the rail.
    Status check(Op &op, bool *finished);
    void cancel(Op &op);
    uint64_t ucx_tag(int sender, uint32_t tag) const {
        return (static_cast<uint64_t>(comm_id_ & 0xffff) << 48) | (static_cast<uint64_t>(sender & 0xffffff) << 24) |
               (tag & kMaxTag);
    }

    std::shared_ptr<RailWorkers> workers_;
    int rank_, size_;
    UcxPeers peers_;
    uint32_t comm_id_;
    std::vector<double> weights_;
    // Integer weights' running sums, for exact cuts alike on every rank,
    // by the first plan id that uses them (oldest first).
    struct WeightSet {
        uint32_t first_plan;
        std::vector<uint64_t> cumulative;
    };
    std::vector<WeightSet> weight_sets_;
    std::vector<double> rates_;  // bytes per second per rail, moving estimate
    bool yield_when_idle_ = false;
    size_t stripe_min_, min_bytes_;
    uint32_t first_plan_;
    std::vector<Op> ops_;
    std::vector<uint32_t> free_ops_;
    std::vector<std::pair<int, size_t>> pieces_;  // scratch for cut()
    uint64_t movements_ = 0;
    struct RailCounts {
        uint64_t sent_messages = 0, sent_bytes = 0, received_messages = 0, received_bytes = 0;
    };
    std::vector<RailCounts> counts_;
    std::unordered_map<uint32_t, int> plan_collective_;  // plan id -> Collective
    // Bytes sent per collective and rail (messages of known plans).
    std::vector<std::vector<uint64_t>> collective_bytes_;
};

}  // namespace loom
