// The rails' failover (see ucx.hpp): sequence numbers per peer and tag, a
// rail that stalls or errs marked failed, the receiver's answer naming the
// pieces it lacks, and those pieces sent again through the transport below.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "core/clock.hpp"
#include "transport/ucx/ucx.hpp"

namespace loom {

Status UcxTransport::fail_over_through(Transport *below, uint64_t stall_ns) {
    if (below->max_tag() < kBelowTagEnd - 1)
        return fail(LOOM_ERR_TRANSPORT, std::string("rails: the ") + below->name() + " transport carries tags up to " +
                                            std::to_string(below->max_tag()) + ", too few to fail over through it");
    below_ = below;
    stall_ns_ = stall_ns;
    send_numbers_.assign(static_cast<size_t>(size_), {});
    receive_numbers_.assign(static_cast<size_t>(size_), {});
    last_arrival_ns_.assign(static_cast<size_t>(size_), std::vector<uint64_t>(workers_->count(), 0));
    return LOOM_SUCCESS;
}

uint8_t UcxTransport::next_number(bool send, int peer, uint32_t tag) {
    std::vector<uint8_t> &numbers = (send ? send_numbers_ : receive_numbers_)[static_cast<size_t>(peer)];
    if (numbers.empty()) numbers.assign(kCallTags, 0);
    return numbers[tag & (kCallTags - 1)]++;
}

void UcxTransport::rail_failed(int r, const std::string &why) {
    RailWorker &w = *worker_[static_cast<size_t>(r)];
    if (w.down) return;
    w.down = true;
    ++counts_[static_cast<size_t>(r)].failures;
    events_.push_back({wall_ms(), r, false, why});
    std::fprintf(stderr, "loom: rank %d: rail %s failed at %s: %s; its messages go through the %s until it is back\n",
                 rank_, rail_name(r).c_str(), format_wall_ms(events_.back().unix_ms).c_str(), why.c_str(),
                 below_ ? below_->name() : "other rails");
}

void UcxTransport::fail_worker(Op &op, int k, const std::string &why) {
    if (op.worker[k] == worker_[static_cast<size_t>(op.rail[k])].get()) rail_failed(op.rail[k], why);
    else op.worker[k]->down = true;  // an older worker of a rail since renewed
}

void UcxTransport::rail_came_back(int r, const std::string &why) {
    ++counts_[static_cast<size_t>(r)].revivals;
    events_.push_back({wall_ms(), r, true, why});
}

void UcxTransport::rail_renewed(int r, std::shared_ptr<RailWorker> worker, const std::vector<ucp_ep_h> &endpoints) {
    worker_[static_cast<size_t>(r)] = std::move(worker);
    for (size_t q = 0; q < peers_.endpoints.size(); ++q) peers_.endpoints[q][static_cast<size_t>(r)] = endpoints[q];
    for (auto &last : last_arrival_ns_) last[static_cast<size_t>(r)] = 0;
}

Status UcxTransport::post_answer_receive(Op &op) {
    LOOM_RETURN_IF_ERROR(below_->post_recv(&op.answer_word, sizeof op.answer_word, op.peer,
                                           below_tag(0, op.number, op.tag), Route{}, &op.answer));
    op.answer_posted = true;
    return LOOM_SUCCESS;
}

Status UcxTransport::caller_turn() {
    if (t_on_progress_thread || (answer_receives_owed_.empty() && answers_owed_.empty())) return LOOM_SUCCESS;
    Status st = LOOM_SUCCESS;
    size_t done = 0;
    for (; done < answer_receives_owed_.size() && st == LOOM_SUCCESS; ++done) {
        Op &op = ops_[answer_receives_owed_[done]];
        // Finished meanwhile (a failed call) or reused by the caller's own post.
        if (op.pieces == 0 || !op.send || op.answer_posted) continue;
        st = post_answer_receive(op);
    }
    answer_receives_owed_.erase(answer_receives_owed_.begin(), answer_receives_owed_.begin() + done);
    LOOM_RETURN_IF_ERROR(st);
    for (done = 0; done < answers_owed_.size() && st == LOOM_SUCCESS; ++done) {
        OwedAnswer &o = answers_owed_[done];
        st = send_answer(std::move(o.answer), o.peer, o.tag);
    }
    answers_owed_.erase(answers_owed_.begin(), answers_owed_.begin() + done);
    return st;
}

Status UcxTransport::send_answer(std::unique_ptr<Answer> answer, int peer, uint32_t tag) {
    LOOM_RETURN_IF_ERROR(below_->post_send(&answer->word, sizeof answer->word, peer, tag, Route{}, &answer->h));
    answers_.push_back(std::move(answer));  // polled below until sent
    return LOOM_SUCCESS;
}

Status UcxTransport::advance_receiver(Op &op) {
    if (!op.answered) {
        // A piece still out on a live rail past its deadline fails that rail.
        // A sender silent on every rail is more likely stuck behind another
        // stall than cut off: its deadline is kSilentSenderStalls stalls, so
        // that the rank whose rail died (which sees the sender's other rails
        // deliver) fails it first and the others are spared a false alarm.
        const uint64_t now = now_ns();
        const std::vector<uint64_t> &last = last_arrival_ns_[static_cast<size_t>(op.peer)];
        for (int k = 0; k < op.pieces; ++k) {
            const size_t r = static_cast<size_t>(op.rail[k]);
            if ((op.arrived >> k & 1) || op.worker[k]->down) continue;
            const uint64_t since = std::max(op.posted_ns, last[r]);
            uint64_t elsewhere = 0;  // the sender's latest delivery on another live rail
            for (size_t other = 0; other < last.size(); ++other)
                if (other != r && !worker_[other]->down) elsewhere = std::max(elsewhere, last[other]);
            const double rate = rates_[r] > 0 ? rates_[r] : 1e6;  // unmeasured: as if 1 MB/s
            const uint64_t expected = static_cast<uint64_t>(static_cast<double>(op.expected[k]) / rate * 1e9);
            const bool alive = elsewhere > since;
            const uint64_t from = alive ? elsewhere : since;
            if (now > from + (alive ? 1 : kSilentSenderStalls) * stall_ns_ + expected)
                fail_worker(op, k,
                            "nothing from rank " + std::to_string(op.peer) + " on it for " +
                                std::to_string((now - since) / 1000000) + " ms" +
                                (alive ? " while its other rails delivered" : ", nor on any other rail") +
                                " (rail_stall_ms = " + std::to_string(stall_ns_ / 1000000) + ")");
        }
        // Answered once, when every piece either arrived or is on a failed rail.
        uint8_t missing = 0;
        for (int k = 0; k < op.pieces; ++k) {
            if (op.arrived >> k & 1) continue;
            if (!op.worker[k]->down) return LOOM_SUCCESS;
            missing |= static_cast<uint8_t>(1u << k);
        }
        // Receiving pieces below is the caller's: the message waits for its next test.
        if (missing && t_on_progress_thread) return LOOM_SUCCESS;
        for (int k = 0; k < op.pieces; ++k)
            if (missing >> k & 1) {
                // Never written again: its worker is not progressed any more.
                if (op.requests[k]) {
                    RailsLock lock(rails_mutex());
                    ucp_request_free(op.requests[k]);
                }
                op.requests[k] = nullptr;
                LOOM_RETURN_IF_ERROR(below_->post_recv(op.buf + op.offset[k], op.expected[k], op.peer,
                                                       below_tag(1 + k, op.number, op.tag), Route{}, &op.around[k]));
                ++counts_[static_cast<size_t>(op.rail[k])].pieces_received_below;
            }
        // From the spares: every rail message is answered, and the hot path allocates nothing.
        std::unique_ptr<Answer> answer;
        if (spare_answers_.empty()) {
            answer = std::make_unique<Answer>();
        } else {
            answer = std::move(spare_answers_.back());
            spare_answers_.pop_back();
        }
        answer->word =
            (op.tag & (kCallTags - 1)) | static_cast<uint32_t>(op.number) << 12 | static_cast<uint32_t>(missing) << 20;
        const uint32_t tag = below_tag(0, op.number, op.tag);
        if (t_on_progress_thread) {
            // Everything arrived: the message is complete; the answer is owed.
            answers_owed_.push_back(OwedAnswer{std::move(answer), op.peer, tag});
        } else {
            LOOM_RETURN_IF_ERROR(send_answer(std::move(answer), op.peer, tag));
        }
        op.moved = missing;
        op.answered = true;
    }
    return LOOM_SUCCESS;
}

Status UcxTransport::advance_sender(Op &op) {
    if (!op.answered) {
        if (!op.answer_arrived) return LOOM_SUCCESS;
        const uint32_t w = op.answer_word;
        if ((w & (kCallTags - 1)) != (op.tag & (kCallTags - 1)) || (w >> 12 & 0xff) != op.number ||
            (w >> 20) >> op.pieces)
            return fail(LOOM_ERR_TRANSPORT, "rails: rank " + std::to_string(op.peer) +
                                                " answered a message with an answer that belongs to another");
        op.answered = true;
        op.moved = static_cast<uint8_t>(w >> 20);
        for (int k = 0; k < op.pieces; ++k) {
            const size_t r = static_cast<size_t>(op.rail[k]);
            if (op.requests[k]) {
                // Arrived (not moved): UCX no longer needs the buffer. Moved while
                // UCX may still read it: that worker must never run again.
                if ((op.moved >> k & 1) && !op.worker[k]->down)
                    fail_worker(op, k, "rank " + std::to_string(op.peer) + " did not receive a piece on it");
                RailsLock lock(rails_mutex());
                ucp_request_free(op.requests[k]);
                op.requests[k] = nullptr;
            }
            if (!(op.moved >> k & 1)) continue;
            LOOM_RETURN_IF_ERROR(below_->post_send(op.buf + op.offset[k], op.expected[k], op.peer,
                                                   below_tag(1 + k, op.number, op.tag), Route{}, &op.around[k]));
            ++counts_[r].pieces_sent_below;
        }
    }
    return LOOM_SUCCESS;
}

Status UcxTransport::settle(Op &op, bool *finished) {
    const uint8_t all = static_cast<uint8_t>((1u << op.pieces) - 1);
    if (!below_) {
        *finished = op.arrived == all;
        return LOOM_SUCCESS;
    }
    LOOM_RETURN_IF_ERROR(op.send ? advance_sender(op) : advance_receiver(op));
    *finished = op.answered && op.moved_done == op.moved;
    return LOOM_SUCCESS;
}

void UcxTransport::gather_below(Op &op, uint32_t index) {
    if (op.send && op.answer_posted && !op.answered && !op.answer_arrived) {
        below_handles_.push_back(&op.answer);
        below_owners_.emplace_back(index, -1);
    }
    for (int k = 0; k < op.pieces; ++k)
        if ((op.moved >> k & 1) && !(op.moved_done >> k & 1)) {
            below_handles_.push_back(&op.around[k]);
            below_owners_.emplace_back(index, k);
        }
}

// One test below for every answer and piece there, so that a poll drives
// the PML or MPI once however many messages wait on it.
Status UcxTransport::poll_everything_below(TransportHandle *const *hs, size_t n) {
    below_handles_.clear();
    below_owners_.clear();
    for (size_t i = 0; i < n; ++i) gather_below(ops_[op_index(hs[i])], op_index(hs[i]));
    for (uint32_t index : detached_) gather_below(ops_[index], index);
    for (auto &a : answers_) {
        below_handles_.push_back(&a->h);
        below_owners_.emplace_back(kNoOp, -1);
    }
    if (below_handles_.empty()) return LOOM_SUCCESS;
    below_done_.assign(below_handles_.size(), 0);
    LOOM_RETURN_IF_ERROR(below_->test_many(below_handles_.data(), below_handles_.size(), below_done_.data(), nullptr));
    bool answers_done = false;
    for (size_t j = 0; j < below_handles_.size(); ++j) {
        if (!below_done_[j]) continue;
        const uint32_t index = below_owners_[j].first;
        const int k = below_owners_[j].second;
        if (index == kNoOp) {
            answers_done = true;
        } else if (k < 0) {
            ops_[index].answer_arrived = true;
        } else {
            ops_[index].moved_done |= static_cast<uint8_t>(1u << k);
        }
    }
    if (answers_done) {
        // Their handles come last, in order.
        const size_t first = below_handles_.size() - answers_.size();
        size_t kept = 0;
        for (size_t a = 0; a < answers_.size(); ++a) {
            if (below_done_[first + a]) spare_answers_.push_back(std::move(answers_[a]));
            else answers_[kept++] = std::move(answers_[a]);
        }
        answers_.resize(kept);
    }
    return LOOM_SUCCESS;
}

// A send whose rail pieces all left needs no more of the caller's buffer:
// a copy answers for it until the receiver has, and the caller moves on
// without waiting for the answer, which may queue behind bulk data on a
// busy link. The copies in flight are bounded (kRetainMaxBytes); beyond
// that a send waits for its answer.
bool UcxTransport::detach(Op &op, uint32_t index) {
    const uint8_t all = static_cast<uint8_t>((1u << op.pieces) - 1);
    if (!op.send || op.answered || op.arrived != all) return false;
    size_t bytes = 0;
    for (int k = 0; k < op.pieces; ++k) bytes += op.expected[k];
    if (retained_bytes_ + bytes > kRetainMaxBytes) return false;
    const size_t room = op.retained.capacity();
    op.retained.assign(op.buf, op.buf + bytes);
    retained_capacity_ += op.retained.capacity() - room;
    op.buf = op.retained.data();
    retained_bytes_ += bytes;
    detached_.push_back(index);
    background_operations_anywhere().fetch_add(1, std::memory_order_relaxed);
    return true;
}

}  // namespace loom
