#include "transport/ucx/ucx.hpp"

#include "core/clock.hpp"
#include "core/plan.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <sched.h>

namespace loom {
namespace {

constexpr uint64_t kWeightScale = 1u << 20;  // integer weights: every rank cuts alike

uint32_t op_index(const TransportHandle *h) {
    uint32_t i;
    std::memcpy(&i, h->bytes, sizeof i);
    return i;
}

}  // namespace

UcxTransport::UcxTransport(std::shared_ptr<RailWorkers> workers, int rank, int size, UcxPeers peers,
                           const UcxOptions &options)
    : workers_(std::move(workers)),
      rank_(rank),
      size_(size),
      peers_(std::move(peers)),
      comm_id_(options.comm_id),
      stripe_min_(options.stripe_min_bytes),
      min_bytes_(options.min_bytes),
      first_plan_(options.first_plan),
      counts_(workers_->count()),
      collective_bytes_(kCollectiveCount, std::vector<uint64_t>(workers_->count(), 0)) {
    rates_.assign(workers_->count(), 0.0);
    // As Open MPI does when told its ranks share cores: a poll that finds
    // nothing done gives the core to the rank it waits for.
    const char *yield = std::getenv("OMPI_MCA_mpi_yield_when_idle");
    yield_when_idle_ = yield && std::strcmp(yield, "1") == 0;
    set_weights(options.weights);
}

void UcxTransport::set_weights(const std::vector<double> &weights) {
    weight_sets_.clear();
    add_weights(0, weights);
}

void UcxTransport::add_weights(uint32_t first_plan, const std::vector<double> &weights) {
    double total = 0;
    for (double w : weights) total += w;
    weights_.clear();
    WeightSet set{first_plan, {}};
    uint64_t sum = 0;
    for (double w : weights) {
        weights_.push_back(w / total);
        // At least 1: a rail with a tiny weight still takes a sliver, and no cut divides by zero.
        sum += std::max<uint64_t>(1, static_cast<uint64_t>(w / total * kWeightScale + 0.5));
        set.cumulative.push_back(sum);
    }
    weight_sets_.push_back(std::move(set));
}

UcxTransport::~UcxTransport() {
    // Operations still posted (a failed collective) are cancelled: their
    // buffers belong to the caller, who is going away.
    for (Op &op : ops_) cancel(op);
}

void UcxTransport::cancel(Op &op) {
    for (int k = 0; k < op.pieces; ++k)
        if (op.requests[k]) {
            ucp_request_cancel(workers_->worker(static_cast<size_t>(op.rail[k])), op.requests[k]);
            ucp_request_free(op.requests[k]);
            op.requests[k] = nullptr;
        }
    op.pieces = 0;
}

void UcxTransport::cut(size_t bytes, int lane, std::vector<std::pair<int, size_t>> *out, uint32_t plan) const {
    out->clear();
    const int rails = static_cast<int>(workers_->count());
    if (rails == 1 || bytes < stripe_min_) {
        out->emplace_back((lane < 0 ? 0 : lane) % rails, bytes);
        return;
    }
    // The newest weights that were in force when the plan was made.
    size_t s = weight_sets_.size() - 1;
    while (s > 0 && weight_sets_[s].first_plan > plan) --s;
    const std::vector<uint64_t> &cumulative = weight_sets_[s].cumulative;
    const uint64_t total = cumulative.back();
    size_t start = 0;
    for (int r = 0; r < rails; ++r) {
        const size_t end = static_cast<size_t>(static_cast<unsigned __int128>(bytes) * cumulative[r] / total);
        if (end > start) out->emplace_back(r, end - start);
        start = end;
    }
}

Status UcxTransport::post(bool send, void *buf, size_t bytes, int peer, uint32_t tag, const Route &route,
                          TransportHandle *h) {
    uint32_t index;
    if (!free_ops_.empty()) {
        index = free_ops_.back();
        free_ops_.pop_back();
    } else {
        index = static_cast<uint32_t>(ops_.size());
        ops_.emplace_back();
    }
    std::memcpy(h->bytes, &index, sizeof index);
    Op &op = ops_[index];
    op.send = send;
    op.peer = peer;
    op.pieces = 0;
    cut(bytes, route.lane, &pieces_, route.plan);
    op.striped = !send && pieces_.size() > 1;
    // Sends of a known plan count per collective too.
    uint64_t *per_collective = nullptr;
    if (send) {
        auto known = plan_collective_.find(route.plan);
        if (known != plan_collective_.end())
            per_collective = collective_bytes_[static_cast<size_t>(known->second)].data();
    }
    if (op.striped) op.posted_ns = now_ns();
    ucp_request_param_t param = {};
    char *at = static_cast<char *>(buf);
    for (const auto &piece : pieces_) {
        const int r = piece.first;
        void *req;
        if (send) {
            req = ucp_tag_send_nbx(peers_.endpoints[static_cast<size_t>(peer)][static_cast<size_t>(r)], at,
                                   piece.second, ucx_tag(rank_, tag), &param);
            ++counts_[r].sent_messages;
            counts_[r].sent_bytes += piece.second;
            if (per_collective) per_collective[r] += piece.second;
        } else {
            req = ucp_tag_recv_nbx(workers_->worker(static_cast<size_t>(r)), at, piece.second, ucx_tag(peer, tag),
                                   ~uint64_t{0}, &param);
            ++counts_[r].received_messages;
            counts_[r].received_bytes += piece.second;
        }
        if (UCS_PTR_IS_ERR(req)) {
            cancel(op);
            free_ops_.push_back(index);
            return fail(LOOM_ERR_TRANSPORT, std::string(send ? "send to" : "receive from") + " rank " +
                                                std::to_string(peer) + " on rail " + workers_->rail(r).device +
                                                " failed: " + ucs_status_string(UCS_PTR_STATUS(req)));
        }
        op.requests[op.pieces] = req;  // null: finished already
        op.expected[op.pieces] = piece.second;
        op.rail[op.pieces] = r;
        ++op.pieces;
        at += piece.second;
    }
    return LOOM_SUCCESS;
}

Status UcxTransport::post_send(const void *buf, size_t bytes, int peer, uint32_t tag, const Route &route,
                               TransportHandle *h) {
    return post(true, const_cast<void *>(buf), bytes, peer, tag, route, h);
}

Status UcxTransport::post_recv(void *buf, size_t bytes, int peer, uint32_t tag, const Route &route,
                               TransportHandle *h) {
    return post(false, buf, bytes, peer, tag, route, h);
}

Status UcxTransport::check(Op &op, bool *finished) {
    *finished = true;
    for (int k = 0; k < op.pieces; ++k) {
        void *req = op.requests[k];
        if (!req) continue;
        ucs_status_t s;
        size_t length = op.expected[k];
        if (op.send) {
            s = ucp_request_check_status(req);
        } else {
            ucp_tag_recv_info_t info;
            s = ucp_tag_recv_request_test(req, &info);
            if (s == UCS_OK) length = info.length;
        }
        if (s == UCS_INPROGRESS) {
            *finished = false;
            continue;
        }
        ucp_request_free(req);
        op.requests[k] = nullptr;
        if (op.striped && s == UCS_OK) {
            // How fast this rail delivered its piece, all pieces having left together.
            const double seconds = static_cast<double>(now_ns() - op.posted_ns) * 1e-9;
            const double rate = static_cast<double>(length) / std::max(seconds, 1e-6);
            double &estimate = rates_[static_cast<size_t>(op.rail[k])];
            estimate = estimate == 0 ? rate : 0.75 * estimate + 0.25 * rate;
        }
        if (s != UCS_OK)
            return fail(LOOM_ERR_TRANSPORT, std::string(op.send ? "send to" : "receive from") + " rank " +
                                                std::to_string(op.peer) + " failed: " + ucs_status_string(s));
        if (length != op.expected[k])
            return fail(LOOM_ERR_TRANSPORT, "a message from rank " + std::to_string(op.peer) + " was " +
                                                std::to_string(length) + " bytes where " +
                                                std::to_string(op.expected[k]) + " were expected");
    }
    return LOOM_SUCCESS;
}

Status UcxTransport::test_many(TransportHandle *const *hs, size_t n, unsigned char *done, bool *moved) {
    // With nothing posted here, no poll: driving a TCP worker costs system
    // calls, and whatever arrives meanwhile waits for the receive that will
    // be posted for it (which then drives the workers).
    if (n == 0 && free_ops_.size() == ops_.size()) {
        if (moved) *moved = false;
        return LOOM_SUCCESS;
    }
    // Every poll drives the workers, also for messages of calls not tested here.
    const unsigned events = workers_->progress();
    movements_ += events;
    bool any = false;
    for (size_t i = 0; i < n; ++i) {
        const uint32_t index = op_index(hs[i]);
        bool finished = false;
        const Status st = check(ops_[index], &finished);
        if (st != LOOM_SUCCESS) {
            cancel(ops_[index]);
            free_ops_.push_back(index);
            return st;
        }
        done[i] = finished;
        if (finished) {
            ops_[index].pieces = 0;
            free_ops_.push_back(index);
            any = true;
        }
    }
    if (moved) *moved = events > 0 || any;
    if (n > 0 && !any && yield_when_idle_) sched_yield();
    return LOOM_SUCCESS;
}

void UcxTransport::plan_added(uint32_t id, uint32_t, const CollArgs &args) {
    plan_collective_[id] = static_cast<int>(args.collective);
}

void UcxTransport::extra_counters(std::vector<std::pair<std::string, uint64_t>> *out) const {
    // Per collective that used the rails: the bytes it sent on each.
    for (int c = 0; c < kCollectiveCount; ++c)
        for (size_t r = 0; r < counts_.size(); ++r)
            if (collective_bytes_[static_cast<size_t>(c)][r])
                out->emplace_back(std::string(collective_name(static_cast<Collective>(c))) + "_rail" +
                                      std::to_string(r) + "_sent_bytes",
                                  collective_bytes_[static_cast<size_t>(c)][r]);
    for (size_t r = 0; r < counts_.size(); ++r) {
        const std::string rail = "rail" + std::to_string(r) + "_";
        out->emplace_back(rail + "sent_messages", counts_[r].sent_messages);
        out->emplace_back(rail + "sent_bytes", counts_[r].sent_bytes);
        out->emplace_back(rail + "received_messages", counts_[r].received_messages);
        out->emplace_back(rail + "received_bytes", counts_[r].received_bytes);
    }
}

Status make_ucx_transport(std::shared_ptr<RailWorkers> workers, int rank, int size, UcxPeers peers,
                          const UcxOptions &options, std::unique_ptr<UcxTransport> *out) {
    const size_t rails = workers->count();
    if (rails == 0 || rails > UcxTransport::kMaxRails)
        return fail(
            LOOM_ERR_INVALID_PARAMETER_VALUE,
            "rails: between 1 and " + std::to_string(UcxTransport::kMaxRails) + " rails, not " + std::to_string(rails));
    if (options.weights.size() != rails)
        return fail(LOOM_ERR_INVALID_PARAMETER_VALUE, "rail_weights: " + std::to_string(options.weights.size()) +
                                                          " weights for " + std::to_string(rails) + " rails");
    if (options.comm_id > 0xffff)
        return fail(LOOM_ERR_TRANSPORT, "more than 65535 communicators used the rails in this process");
    *out = std::make_unique<UcxTransport>(std::move(workers), rank, size, std::move(peers), options);
    return LOOM_SUCCESS;
}

}  // namespace loom
