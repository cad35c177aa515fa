// The multi-rail transport: messages to ranks on other nodes over UCX, one
// worker per rail. A message up to rail_stripe_min_bytes travels on its
// lane's rail (lane mod rails: the node-aware plans give each local rank's
// inter-node phase its own lane); a larger one is cut over every rail in
// proportion to the rails' weights. Both sides of a message compute the
// same cut from the same agreed weights, so receives need no header.
//
// Failover: with a transport below (the PML or MPI, which reaches every
// rank), the receiver of every rail message tells its sender, once and over
// that transport, which pieces did not arrive on the rails; the sender keeps
// its buffer until told and sends those pieces again below. A piece counts as
// lost when its rail failed here: an error, or nothing from its sender on
// that rail for rail_stall_ms beyond the time the piece should take while
// its other rails delivered (kSilentSenderStalls times that when the sender
// is silent on every rail: stuck behind someone else's stall). A failed
// rail is never progressed again on this rank (operations abandoned on it
// may point at reused buffers); the ranks agree at a periodic point to leave
// it out of later plans, and bring it back on a fresh worker once its
// interfaces are up and a handshake crosses it.
#pragma once
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "transport/transport.hpp"
#include "transport/ucx/rail_weights.hpp"
#include "transport/ucx/rail_workers.hpp"

namespace loom {

struct UcxPeers {
    // Per communicator rank: whether it is on another node (carried here),
    // and its endpoint on each rail's worker (null for ranks on this node).
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

// A rail's change of state, for the stats and the log.
struct RailEvent {
    uint64_t unix_ms;  // wall clock
    int rail;
    bool up;
    std::string why;
};

class UcxTransport;
Status make_ucx_transport(std::shared_ptr<RailWorkers> workers, int rank, int size, UcxPeers peers,
                          const UcxOptions &options, std::unique_ptr<UcxTransport> *out);

class UcxTransport final : public Transport {
  public:
    static constexpr int kMaxRails = 8;
    // Tags: communicator id (16 bits), sender (24), Loom's tag (24).
    static constexpr uint32_t kMaxTag = (1u << 24) - 1;
    // The communicator cycles its tags below this: the failover's messages
    // below carry the tag in 12 bits.
    static constexpr uint32_t kCallTags = 1u << 12;
    // The failover's tags below: a kind (the answer, or piece k) and the
    // message's number among its pair's messages of that tag, above every
    // tag the communicator uses.
    static constexpr uint32_t kBelowTagFirst = 1u << 24;
    static constexpr uint32_t kBelowTagEnd = kBelowTagFirst + ((kMaxRails + 1) * 256u << 12);
    // A sender silent on every rail fails a rail after this many stall times.
    static constexpr int kSilentSenderStalls = 5;

    UcxTransport(std::shared_ptr<RailWorkers> workers, int rank, int size, UcxPeers peers, const UcxOptions &options);
    ~UcxTransport() override;
    int rank() const override { return rank_; }
    int size() const override { return size_; }
    const char *name() const override { return "ucx"; }
    uint32_t max_tag() const override { return kCallTags - 1; }
    // Both sides know a message's size, so leaving small ones out is decided
    // alike; so is a plan made after every rail was left out.
    // A plan for the progress thread sends small messages here too: the
    // thread may not drive the PML.
    int carries(int peer, size_t bytes, const Route &route) const override {
        return peers_.remote[static_cast<size_t>(peer)] && (bytes >= min_bytes_ || threaded_plans_.count(route.plan)) &&
                       route.plan >= first_plan_ && !weights_for(route.plan).live.empty()
                   ? 0
                   : -1;
    }
    Status post_send(const void *buf, size_t bytes, int peer, uint32_t tag, const Route &route,
                     TransportHandle *h) override;
    Status post_recv(void *buf, size_t bytes, int peer, uint32_t tag, const Route &route, TransportHandle *h) override;
    Status test_many(TransportHandle *const *hs, size_t n, unsigned char *done, bool *moved) override;
    // Detached sends (below): their calls finish once they are answered.
    size_t background_operations() const override { return detached_.size(); }
    Status progress_background() override;
    bool withdraw(TransportHandle *h, bool receive) override;
    bool oversubscribed() const override { return false; }
    // Plans tell which collective a message belongs to, for the per-collective counts.
    bool follows_plans() const override { return true; }
    void plan_added(uint32_t id, uint32_t key, const CollArgs &args, bool for_progress_thread) override;
    void plan_removed(uint32_t id) override {
        plan_collective_.erase(id);
        threaded_plans_.erase(id);
    }
    // The progress thread may drive the rails (their workers under
    // rails_mutex). With failover on, what goes below (answers, the
    // receives for them, pieces moved) is the caller's: the thread leaves
    // it owed, and caller_turn() posts it.
    bool progress_thread_safe() const override { return true; }
    Status caller_turn() override;
    bool drives_progress_engine() const override { return below_ && below_->drives_progress_engine(); }
    Status idle() override { return below_ && !t_on_progress_thread ? below_->idle() : LOOM_SUCCESS; }
    uint64_t data_movements() const override { return movements_; }
    void extra_counters(std::vector<std::pair<std::string, uint64_t>> *out) const override;
    int arm_wakeup(std::vector<int> *fds) override;
    void rail_split(size_t bytes, const Route &route, std::vector<std::pair<int, size_t>> *out) const override {
        cut(bytes, route.lane, out, route.plan);
    }

    size_t rails() const { return workers_->count(); }
    uint32_t comm_id() const { return comm_id_; }
    const std::shared_ptr<RailWorkers> &workers() const { return workers_; }
    // Rail r's share in the last weights set with every rail in.
    double given_weight(int r) const { return given_weights_[static_cast<size_t>(r)]; }
    static uint64_t tag_of(uint32_t comm_id, int sender, uint32_t tag) {
        return (static_cast<uint64_t>(comm_id & 0xffff) << 48) | (static_cast<uint64_t>(sender & 0xffffff) << 24) |
               (tag & kMaxTag);
    }

    // Failover on: every rail message from now on is answered over `below`
    // (which must reach every rank and carry tags up to kBelowTagEnd).
    // Every rank must turn it on at the same point (the rails' set-up does,
    // after its own handshake, which must not fail over). `stall_ns`: how
    // long a sender may stay silent on a rail beyond a piece's expected time.
    Status fail_over_through(Transport *below, uint64_t stall_ns);
    bool fails_over() const { return below_ != nullptr; }
    // Marks rail `r` failed on this rank (also used by tests); logged once.
    void rail_failed(int r, const std::string &why);
    // Per rail: whether it failed here (since its worker was last renewed).
    bool rail_down(int r) const { return worker_[static_cast<size_t>(r)]->down; }
    // Per rail: whether the newest plans leave it out.
    bool rail_left_out(int r) const;
    // Puts `worker` (a fresh one, endpoints from `endpoints` per rank) in
    // place of rail r's, for plans from the next one made on.
    void rail_renewed(int r, std::shared_ptr<RailWorker> worker, const std::vector<ucp_ep_h> &endpoints);
    const std::shared_ptr<RailWorker> &worker(int r) const { return worker_[static_cast<size_t>(r)]; }
    const std::vector<RailEvent> &rail_events() const { return events_; }
    void rail_came_back(int r, const std::string &why);
    // Set-up: while on, no message is striped, so that each rides its
    // lane's rail whatever its size (the probe weighs one rail at a time).
    // Every rank must turn it on and off around the same messages.
    void set_striping(bool on) { striping_ = on; }
    // The weights the newest plans cut with (normalised to sum 1).
    const std::vector<double> &weights() const { return weights_; }
    void set_first_plan(uint32_t id) { first_plan_ = id; }
    // Replaces the newest weights (set-up: before any plan uses them).
    void set_weights(const std::vector<double> &weights);
    // Calls whose plan id is `first_plan` or later cut with `weights`; calls
    // already running keep theirs. Every rank must add the same weights at
    // the same call.
    void add_weights(uint32_t first_plan, const std::vector<double> &weights);
    const std::string &rail_name(int r) const { return workers_->device(static_cast<size_t>(r)); }
    // The pieces a message of `bytes` on `lane` of plan `plan` is cut into:
    // rail and length per piece, in order (empty pieces and rails left out
    // of the plan's weights skipped).
    void cut(size_t bytes, int lane, std::vector<std::pair<int, size_t>> *out, uint32_t plan = Route::kNoPlan) const;
    // Per rail, the bytes of striped pieces this rank received and the
    // seconds they took from their posted receive, since the last take
    // (one reading for the periodic agreement on the weights); starts the
    // next. Under rails_mutex: the progress thread may be sampling.
    void take_samples(std::vector<double> *bytes, std::vector<double> *seconds);
    // The periodic agreement's decisions on the weights, reading by reading.
    RailReweighing &reweighing() { return reweighing_; }

  private:
    // The op a handle names (post() writes its index there).
    static uint32_t op_index(const TransportHandle *h) {
        uint32_t i;
        std::memcpy(&i, h->bytes, sizeof i);
        return i;
    }
    struct Op {
        void *requests[kMaxRails];   // the rail's request per piece; null once finished or given up
        size_t expected[kMaxRails];  // the piece's length, to catch short messages
        size_t offset[kMaxRails];
        int rail[kMaxRails];
        RailWorker *worker[kMaxRails];      // the rail's worker when posted (a revival brings a new one)
        TransportHandle around[kMaxRails];  // a piece moved below
        TransportHandle answer;             // the receiver's answer below
        char *buf = nullptr;
        uint64_t posted_ns = 0;
        uint32_t tag = 0;
        uint32_t answer_word = 0;
        int pieces = 0;
        int peer = 0;
        uint8_t number = 0;      // among this pair's messages of this tag
        uint8_t arrived = 0;     // pieces finished on their rails (bit per piece)
        uint8_t moved = 0;       // pieces that travel below
        uint8_t moved_done = 0;  // of those, finished
        bool send = false;
        bool striped = false;
        bool answered = false;        // receiver: answer posted (or owed); sender: answer read
        bool answer_posted = false;   // sender: the receive for the answer is posted below
        bool answer_arrived = false;  // sender: the answer is in answer_word
        std::vector<char> retained;   // a detached send's copy of its message
    };
    struct WeightSet {
        uint32_t first_plan;
        std::vector<uint64_t> cumulative;  // integer weights' running sums, 0 for a rail left out
        std::vector<int> live;             // the rails it uses
    };
    // An answer on its way below, kept until the transport below is done with it.
    struct Answer {
        TransportHandle h;
        uint32_t word;
    };
    Status post(bool send, void *buf, size_t bytes, int peer, uint32_t tag, const Route &route, TransportHandle *h);
    // Polling an op: its rail requests, then (all ops' at once) what waits
    // below, then what follows; *finished once every piece is in place
    // (receiver) or known to have arrived (sender).
    Status advance_rails(Op &op);
    Status poll_everything_below(TransportHandle *const *hs, size_t n);
    void gather_below(Op &op, uint32_t index);
    Status settle(Op &op, bool *finished);
    Status advance_receiver(Op &op);
    Status advance_sender(Op &op);
    bool detach(Op &op, uint32_t index);
    static constexpr uint32_t kNoOp = 0xffffffffu;
    void cancel(Op &op);
    // Fails piece k's worker: the rail, or an older worker of it.
    void fail_worker(Op &op, int k, const std::string &why);
    void free_op(uint32_t index);
    const WeightSet &weights_for(uint32_t plan) const {
        size_t s = weight_sets_.size() - 1;
        while (s > 0 && weight_sets_[s].first_plan > plan) --s;
        return weight_sets_[s];
    }
    uint64_t ucx_tag(int sender, uint32_t tag) const { return tag_of(comm_id_, sender, tag); }
    static uint32_t below_tag(int kind, uint8_t number, uint32_t tag) {
        return kBelowTagFirst + ((static_cast<uint32_t>(kind) * 256u + number) << 12 | (tag & (kCallTags - 1)));
    }
    uint8_t next_number(bool send, int peer, uint32_t tag);

    std::shared_ptr<RailWorkers> workers_;
    std::vector<std::shared_ptr<RailWorker>> worker_;  // per rail, this communicator's
    int rank_, size_;
    UcxPeers peers_;
    uint32_t comm_id_;
    std::vector<double> weights_;         // the newest, normalised, 0 for a rail left out
    std::vector<double> given_weights_;   // the last ones set with every rail in
    std::vector<WeightSet> weight_sets_;  // by the first plan id that uses them (oldest first)
    std::vector<double> rates_;           // bytes per second per rail, moving estimate (the failover timer's)
    std::vector<double> sampled_bytes_, sampled_seconds_;
    RailReweighing reweighing_;
    bool yield_when_idle_ = false;
    size_t stripe_min_, min_bytes_;
    bool striping_ = true;
    uint32_t first_plan_;
    std::deque<Op> ops_;  // stable addresses: the answers below are received into them
    std::vector<uint32_t> free_ops_;
    std::vector<std::pair<int, size_t>> pieces_;  // scratch for cut()
    uint64_t movements_ = 0;

    // Failover.
    Transport *below_ = nullptr;
    uint64_t stall_ns_ = 0;
    std::vector<std::vector<uint8_t>> send_numbers_, receive_numbers_;  // per peer, per tag
    std::vector<std::vector<uint64_t>> last_arrival_ns_;                // per peer and rail
    std::vector<std::unique_ptr<Answer>> answers_;                      // answers still being sent
    std::vector<std::unique_ptr<Answer>> spare_answers_;                // sent, kept for reuse
    // What the progress thread left for the caller to post below: answers
    // (with their peer and tag) and the senders' receives for theirs.
    struct OwedAnswer {
        std::unique_ptr<Answer> answer;
        int peer;
        uint32_t tag;
    };
    std::vector<OwedAnswer> answers_owed_;
    std::vector<uint32_t> answer_receives_owed_;  // op indices
    Status post_answer_receive(Op &op);
    Status send_answer(std::unique_ptr<Answer> answer, int peer, uint32_t tag);
    std::vector<uint32_t> detached_;                      // sends reported done, kept (with a copy) until answered
    std::vector<TransportHandle *> below_handles_;        // scratch for one test below
    std::vector<std::pair<uint32_t, int>> below_owners_;  // op (kNoOp: an answer) and piece (-1: the answer)
    std::vector<unsigned char> below_done_;
    static constexpr unsigned kBelowPollEvery = 16;
    static constexpr size_t kRetainMaxBytes = size_t{64} << 20;
    size_t retained_bytes_ = 0;
    size_t retained_capacity_ = 0;  // the detached copies' room, kept or in use
    unsigned polls_since_below_ = 0;
    std::vector<RailEvent> events_;

    struct RailCounts {
        uint64_t sent_messages = 0, sent_bytes = 0, received_messages = 0, received_bytes = 0;
        uint64_t failures = 0, revivals = 0, pieces_sent_below = 0, pieces_received_below = 0;
    };
    std::vector<RailCounts> counts_;
    std::unordered_map<uint32_t, int> plan_collective_;  // plan id -> Collective
    std::unordered_set<uint32_t> threaded_plans_;        // plans for the progress thread
    // Messages and bytes sent per collective and rail (messages of known plans).
    std::vector<std::vector<uint64_t>> collective_bytes_, collective_messages_;
};

}  // namespace loom
