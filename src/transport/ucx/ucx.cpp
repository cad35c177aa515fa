#include "transport/ucx/ucx.hpp"

#include "core/clock.hpp"
#include "core/plan.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <sched.h>
#include <cstdio>

namespace loom {
namespace {

constexpr uint64_t kWeightScale = 1u << 20;  // integer weights: every rank cuts alike

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
      collective_bytes_(kCollectiveCount, std::vector<uint64_t>(workers_->count(), 0)),
      collective_messages_(kCollectiveCount, std::vector<uint64_t>(workers_->count(), 0)) {
    for (size_t r = 0; r < workers_->count(); ++r) worker_.push_back(workers_->current(r));
    rates_.assign(workers_->count(), 0.0);
    sampled_bytes_.assign(workers_->count(), 0.0);
    sampled_seconds_.assign(workers_->count(), 0.0);
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
    WeightSet set{first_plan, {}, {}};
    uint64_t sum = 0;
    for (size_t r = 0; r < weights.size(); ++r) {
        const double share = total > 0 ? weights[r] / total : 0;
        weights_.push_back(share);
        // At least 1 for a rail in use: a tiny weight still takes a sliver, and no cut divides by zero.
        if (weights[r] > 0) {
            sum += std::max<uint64_t>(1, static_cast<uint64_t>(share * kWeightScale + 0.5));
            set.live.push_back(static_cast<int>(r));
        }
        set.cumulative.push_back(sum);
    }
    if (set.live.size() == weights.size()) given_weights_ = weights_;
    weight_sets_.push_back(std::move(set));
}

void UcxTransport::take_samples(std::vector<double> *bytes, std::vector<double> *seconds) {
    RailsLock lock(rails_mutex());
    *bytes = sampled_bytes_;
    *seconds = sampled_seconds_;
    std::fill(sampled_bytes_.begin(), sampled_bytes_.end(), 0.0);
    std::fill(sampled_seconds_.begin(), sampled_seconds_.end(), 0.0);
}

bool UcxTransport::rail_left_out(int r) const {
    const std::vector<int> &live = weight_sets_.back().live;
    return std::find(live.begin(), live.end(), r) == live.end();
}

UcxTransport::~UcxTransport() {
    // Detached sends may still owe a receiver a piece: their answers are
    // waited for (a receiver answers within its own deadline), so that a
    // rank that frees the communicator right after a call (MPI_Finalize)
    // leaves nobody waiting.
    const uint64_t give_up = now_ns() + (kSilentSenderStalls + 1) * stall_ns_ + 10000000000ull;
    while (below_ && !detached_.empty() && now_ns() < give_up) {
        if (test_many(nullptr, 0, nullptr, nullptr) != LOOM_SUCCESS) break;
        if (!detached_.empty()) below_->idle();
    }
    if (!detached_.empty())
        std::fprintf(stderr, "loom: rank %d: %zu rail messages were never answered by their receivers\n", rank_,
                     detached_.size());
    background_operations_anywhere().fetch_sub(detached_.size(), std::memory_order_relaxed);
    // Operations still posted (a failed collective) are cancelled: their
    // buffers belong to the caller, who is going away.
    for (Op &op : ops_) cancel(op);
}

void UcxTransport::cancel(Op &op) {
    RailsLock lock(rails_mutex());
    for (int k = 0; k < op.pieces; ++k)
        if (op.requests[k]) {
            RailWorker &w = *op.worker[k];
            if (!w.down) ucp_request_cancel(w.handle, op.requests[k]);
            ucp_request_free(op.requests[k]);
            op.requests[k] = nullptr;
        }
    op.pieces = 0;
}

bool UcxTransport::withdraw(TransportHandle *h, bool receive) {
    if (!receive) return false;  // a send may be striped, answered, detached: it finishes as usual
    const uint32_t index = op_index(h);
    if (index == kNoOp || index >= ops_.size()) return true;
    Op &op = ops_[index];
    // Pieces that travel below, or an answer owed, belong to the failover
    // protocol's exchange with the sender: those finish as usual.
    if (op.moved || op.answered) return false;
    cancel(op);
    free_op(index);
    return true;
}

void UcxTransport::free_op(uint32_t index) {
    ops_[index].pieces = 0;
    // Copies' room is kept for the next detached sends (fresh memory costs
    // a page fault per page), up to kRetainMaxBytes in all.
    std::vector<char> &room = ops_[index].retained;
    if (room.capacity() > (size_t{1} << 20) && retained_capacity_ > kRetainMaxBytes) {
        retained_capacity_ -= room.capacity();
        std::vector<char>().swap(room);
    }
    free_ops_.push_back(index);
}

void UcxTransport::cut(size_t bytes, int lane, std::vector<std::pair<int, size_t>> *out, uint32_t plan) const {
    out->clear();
    const WeightSet &set = weights_for(plan);
    const int live = static_cast<int>(set.live.size());
    if (live == 0) return;
    if (live == 1 || bytes < stripe_min_ || !striping_) {
        out->emplace_back(set.live[static_cast<size_t>((lane < 0 ? 0 : lane) % live)], bytes);
        return;
    }
    const uint64_t total = set.cumulative.back();
    size_t start = 0;
    for (int r : set.live) {
        const size_t end =
            static_cast<size_t>(static_cast<unsigned __int128>(bytes) * set.cumulative[static_cast<size_t>(r)] / total);
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
    op.tag = tag;
    op.buf = static_cast<char *>(buf);
    op.pieces = 0;
    op.arrived = op.moved = op.moved_done = 0;
    op.answered = op.answer_arrived = op.answer_posted = false;
    cut(bytes, route.lane, &pieces_, route.plan);
    if (pieces_.empty()) pieces_.emplace_back(0, bytes);  // a plan made before every rail was left out
    op.striped = !send && pieces_.size() > 1;
    // Sends of a known plan count per collective too.
    uint64_t *per_collective = nullptr, *per_collective_messages = nullptr;
    if (send) {
        auto known = plan_collective_.find(route.plan);
        if (known != plan_collective_.end()) {
            per_collective = collective_bytes_[static_cast<size_t>(known->second)].data();
            per_collective_messages = collective_messages_[static_cast<size_t>(known->second)].data();
        }
    }
    op.posted_ns = now_ns();
    if (below_) op.number = next_number(send, peer, tag);
    ucp_request_param_t param = {};
    size_t offset = 0;
    std::unique_lock<std::recursive_mutex> lock(rails_mutex());
    for (const auto &piece : pieces_) {
        const int r = piece.first;
        const int k = op.pieces;
        op.requests[k] = nullptr;
        op.expected[k] = piece.second;
        op.offset[k] = offset;
        op.rail[k] = r;
        op.worker[k] = worker_[static_cast<size_t>(r)].get();
        ++op.pieces;
        offset += piece.second;
        RailWorker &w = *op.worker[k];
        // A rail that failed here takes nothing more: its receiver will find the piece missing.
        if (w.down && below_) continue;
        void *req;
        if (send) {
            req = ucp_tag_send_nbx(peers_.endpoints[static_cast<size_t>(peer)][static_cast<size_t>(r)],
                                   op.buf + op.offset[k], piece.second, ucx_tag(rank_, tag), &param);
            ++counts_[r].sent_messages;
            counts_[r].sent_bytes += piece.second;
            if (per_collective) {
                per_collective[r] += piece.second;
                ++per_collective_messages[r];
            }
        } else {
            req = ucp_tag_recv_nbx(w.handle, op.buf + op.offset[k], piece.second, ucx_tag(peer, tag), ~uint64_t{0},
                                   &param);
            ++counts_[r].received_messages;
            counts_[r].received_bytes += piece.second;
        }
        if (UCS_PTR_IS_ERR(req)) {
            const std::string what = std::string(send ? "send to" : "receive from") + " rank " + std::to_string(peer) +
                                     " on rail " + rail_name(r) + " failed: " + ucs_status_string(UCS_PTR_STATUS(req));
            if (below_) {
                rail_failed(r, what);
                continue;
            }
            lock.unlock();
            cancel(op);
            free_op(index);
            return fail(LOOM_ERR_TRANSPORT, what);
        }
        op.requests[k] = req;
        if (!req) op.arrived |= static_cast<uint8_t>(1u << k);  // finished already
    }
    lock.unlock();  // the transport below may enter Loom again
    if (below_ && send) {
        // The receiver's answer: which pieces to send again below.
        op.answer_word = 0;
        if (t_on_progress_thread) {
            answer_receives_owed_.push_back(index);
        } else {
            const Status st = post_answer_receive(op);
            if (st != LOOM_SUCCESS) {
                cancel(op);
                free_op(index);
                return st;
            }
        }
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

// Finishes what the rails have finished. A rail error ends the call without
// failover; with it, the rail is marked failed and its piece counts as missing.
Status UcxTransport::advance_rails(Op &op) {
    for (int k = 0; k < op.pieces; ++k) {
        void *req = op.requests[k];
        if (!req) continue;
        const size_t r = static_cast<size_t>(op.rail[k]);
        if (op.worker[k]->down) continue;  // never finishes now
        ucs_status_t s;
        size_t length = op.expected[k];
        if (op.send) {
            s = ucp_request_check_status(req);
        } else {
            ucp_tag_recv_info_t info;
            s = ucp_tag_recv_request_test(req, &info);
            if (s == UCS_OK) length = info.length;
        }
        if (s == UCS_INPROGRESS) continue;
        ucp_request_free(req);
        op.requests[k] = nullptr;
        if (s == UCS_ERR_MESSAGE_TRUNCATED)
            return fail(LOOM_ERR_MISMATCH, "a message from rank " + std::to_string(op.peer) +
                                               " was larger than its receive (did every rank pass the same count, "
                                               "type and op?)");
        if (s != UCS_OK) {
            const std::string what = std::string(op.send ? "send to" : "receive from") + " rank " +
                                     std::to_string(op.peer) + " on rail " + rail_name(op.rail[k]) +
                                     " failed: " + ucs_status_string(s);
            if (!below_) return fail(LOOM_ERR_TRANSPORT, what);
            fail_worker(op, k, what);
            continue;
        }
        if (length != op.expected[k])
            return fail(LOOM_ERR_MISMATCH, "a message from rank " + std::to_string(op.peer) + " was " +
                                               std::to_string(length) + " bytes where " +
                                               std::to_string(op.expected[k]) +
                                               " were expected (did every rank pass the same count, type and op?)");
        op.arrived |= static_cast<uint8_t>(1u << k);
        if (!op.send) {
            const uint64_t now = now_ns();
            if (below_) last_arrival_ns_[static_cast<size_t>(op.peer)][r] = now;
            if (op.striped) {
                // How fast this rail delivered its piece, all pieces having left together.
                const double seconds = static_cast<double>(now - op.posted_ns) * 1e-9;
                const double rate = static_cast<double>(length) / std::max(seconds, 1e-6);
                double &estimate = rates_[r];
                estimate = estimate == 0 ? rate : 0.75 * estimate + 0.25 * rate;
                sampled_bytes_[r] += static_cast<double>(length);
                sampled_seconds_[r] += seconds;
            }
        }
    }
    return LOOM_SUCCESS;
}

int UcxTransport::arm_wakeup(std::vector<int> *fds) {
    RailsLock lock(rails_mutex());
    const size_t before = fds->size();
    for (const auto &w : worker_) {
        if (w->down) continue;
        if (w->efd < 0) return -1;
        // Arming fails while events are pending: they are news.
        if (ucp_worker_progress(w->handle) != 0) return 0;
        const ucs_status_t s = ucp_worker_arm(w->handle);
        if (s == UCS_ERR_BUSY) return 0;
        if (s != UCS_OK) return -1;
        fds->push_back(w->efd);
    }
    return fds->size() > before ? 1 : -1;
}

Status UcxTransport::progress_background() {
    if (detached_.empty()) return LOOM_SUCCESS;
    const Status st = test_many(nullptr, 0, nullptr, nullptr);
    if (st == LOOM_SUCCESS && !detached_.empty()) return below_->idle();
    return st;
}

Status UcxTransport::test_many(TransportHandle *const *hs, size_t n, unsigned char *done, bool *moved) {
    // With nothing posted here, no poll: driving a TCP worker costs system
    // calls, and whatever arrives meanwhile waits for the receive that will
    // be posted for it (which then drives the workers).
    LOOM_RETURN_IF_ERROR(caller_turn());  // nothing on the progress thread, or with nothing owed
    if (n == 0 && free_ops_.size() == ops_.size() && answers_.empty()) {  // detached ops are not free
        if (moved) *moved = false;
        return LOOM_SUCCESS;
    }
    // Every poll drives the workers, also for messages of calls not tested
    // here; a failed rail's never again.
    unsigned events = 0;
    {
        RailsLock lock(rails_mutex());  // UCX calls only: released before anything below is polled
        for (const auto &w : worker_)
            if (!w->down) events += ucp_worker_progress(w->handle);
        for (size_t i = 0; i < n; ++i) {
            const uint32_t index = op_index(hs[i]);
            const Status st = advance_rails(ops_[index]);
            if (st != LOOM_SUCCESS) {
                cancel(ops_[index]);
                free_op(index);
                return st;
            }
        }
    }
    movements_ += events;
    bool any = false;
    // What waits below (answers, pieces moved) is polled when the rails were
    // idle, and every kBelowPollEvery polls: testing the PML drives Open
    // MPI's progress engine, which gives the core away when it finds nothing.
    if (below_ && !t_on_progress_thread && (events == 0 || ++polls_since_below_ >= kBelowPollEvery)) {
        polls_since_below_ = 0;
        LOOM_RETURN_IF_ERROR(poll_everything_below(hs, n));
    }
    for (size_t i = 0; i < n; ++i) {
        const uint32_t index = op_index(hs[i]);
        bool finished = false;
        const Status st = settle(ops_[index], &finished);
        if (st != LOOM_SUCCESS) {
            cancel(ops_[index]);
            free_op(index);
            return st;
        }
        done[i] = finished;
        if (finished) {
            free_op(index);
            any = true;
        } else if (below_ && detach(ops_[index], index)) {
            done[i] = 1;
            any = true;
        }
    }
    for (size_t d = 0; d < detached_.size();) {
        const uint32_t index = detached_[d];
        bool finished = false;
        LOOM_RETURN_IF_ERROR(settle(ops_[index], &finished));
        if (finished) {
            retained_bytes_ -= ops_[index].retained.size();
            free_op(index);
            detached_[d] = detached_.back();
            detached_.pop_back();
            background_operations_anywhere().fetch_sub(1, std::memory_order_relaxed);
        } else {
            ++d;
        }
    }
    if (moved) *moved = events > 0 || any;
    if (n > 0 && !any && yield_when_idle_ && !t_on_progress_thread) sched_yield();
    return LOOM_SUCCESS;
}

void UcxTransport::plan_added(uint32_t id, uint32_t, const CollArgs &args, bool for_progress_thread) {
    plan_collective_[id] = static_cast<int>(args.collective);
    if (for_progress_thread) threaded_plans_.insert(id);
}

void UcxTransport::extra_counters(std::vector<std::pair<std::string, uint64_t>> *out) const {
    // Per collective that used the rails: the messages and bytes it sent on each.
    for (int c = 0; c < kCollectiveCount; ++c)
        for (size_t r = 0; r < counts_.size(); ++r)
            if (collective_messages_[static_cast<size_t>(c)][r]) {
                const std::string name =
                    std::string(collective_name(static_cast<Collective>(c))) + "_rail" + std::to_string(r);
                out->emplace_back(name + "_sent_messages", collective_messages_[static_cast<size_t>(c)][r]);
                out->emplace_back(name + "_sent_bytes", collective_bytes_[static_cast<size_t>(c)][r]);
            }
    for (size_t r = 0; r < counts_.size(); ++r) {
        const std::string rail = "rail" + std::to_string(r) + "_";
        out->emplace_back(rail + "sent_messages", counts_[r].sent_messages);
        out->emplace_back(rail + "sent_bytes", counts_[r].sent_bytes);
        out->emplace_back(rail + "received_messages", counts_[r].received_messages);
        out->emplace_back(rail + "received_bytes", counts_[r].received_bytes);
        if (!below_) continue;
        out->emplace_back(rail + "failures", counts_[r].failures);
        out->emplace_back(rail + "revivals", counts_[r].revivals);
        out->emplace_back(rail + "pieces_sent_below", counts_[r].pieces_sent_below);
        out->emplace_back(rail + "pieces_received_below", counts_[r].pieces_received_below);
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
