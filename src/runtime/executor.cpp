#include "runtime/executor.hpp"

#include <algorithm>
#include <cstring>

#include "engine/host/host.hpp"

namespace loom {

Execution::Execution(const Program *program, Transport &transport, uint32_t tag, const ExecutionBuffers &buffers)
    : program_(program),
      transport_(transport),
      transport_ranks_(static_cast<size_t>(transport.size())),
      tag_(tag),
      buffers_(buffers) {}

void Execution::reset(const Program *program, uint32_t tag, const ExecutionBuffers &buffers) {
    program_ = program;
    tag_ = tag;
    buffers_ = buffers;
    active_.clear();
    active_local_.clear();
    completed_ = 0;
}

void Execution::reserve() {
    const size_t steps = program_->size();
    unmet_.reserve(steps);
    ready_.reserve(steps);
    active_.reserve(steps);
    active_local_.reserve(steps);
    handles_.reserve(steps);
    done_flags_.reserve(steps);
    in_flight_.reserve(2 * transport_ranks_);
    held_.reserve(2 * transport_ranks_);
    int lanes = 1;
    for (const Step &s : program_->steps) lanes = std::max(lanes, static_cast<int>(s.lane) + 1);
    transport_.reserve(steps, lanes);
}

unsigned char *Execution::address(const Slice &s) const {
    unsigned char *base = nullptr;
    switch (s.buffer) {
        case Buffer::input: base = static_cast<unsigned char *>(const_cast<void *>(buffers_.input)); break;
        case Buffer::output: base = static_cast<unsigned char *>(buffers_.output); break;
        case Buffer::scratch: base = static_cast<unsigned char *>(buffers_.scratch); break;
    }
    return base + s.offset * buffers_.elem_size;
}

Status Execution::start() {
    const Program &p = *program_;
    unmet_ = p.initial_unmet;
    // A run that finished leaves every window counter at 0 and nothing
    // held: only a new or interrupted execution needs them cleared.
    const size_t keys = 2 * transport_ranks_;
    if (!windows_clean_ || in_flight_.size() != keys) {
        in_flight_.assign(keys, 0);
        held_.assign(keys, Program::kNoStep);
    }
    windows_clean_ = false;
    // Popped from the back: the last ready step first, which posts receives
    // (no dependencies) before the copies and sends that wait on them.
    ready_.assign(p.initial_ready.begin(), p.initial_ready.end());
    return run_ready();
}

void Execution::pending_peers(std::vector<int> *receives_from, std::vector<int> *sends_to) const {
    receives_from->clear();
    sends_to->clear();
    for (const Active &a : active_) {
        const Step &s = program_->steps[a.id];
        if (s.kind == StepKind::recv) receives_from->push_back(s.peer);
        else if (s.kind == StepKind::send) sends_to->push_back(s.peer);
    }
    for (std::vector<int> *v : {receives_from, sends_to}) {
        std::sort(v->begin(), v->end());
        v->erase(std::unique(v->begin(), v->end()), v->end());
    }
}

void Execution::withdraw() {
    size_t kept = 0;
    for (Active &a : active_)
        if (!transport_.withdraw(&a.handle, program_->steps[a.id].kind == StepKind::recv)) active_[kept++] = a;
    active_.resize(kept);
    ready_.clear();
}

void Execution::release(StepId id) {
    if (--unmet_[id] == 0) ready_.push_back(id);
}

void Execution::complete(StepId id) {
    const Program &p = *program_;
    ++completed_;
    if (buffers_.trace) buffers_.trace->done[id] = trace_clock_ns();
    for (uint32_t i = p.dependents_begin[id]; i < p.dependents_begin[id + 1]; ++i) release(p.dependents[i]);
}

Status Execution::run_ready() {
    const Program &p = *program_;
    const size_t es = buffers_.elem_size;
    while (!ready_.empty()) {
        const StepId id = ready_.back();
        ready_.pop_back();
        const Step &s = p.steps[id];
        switch (s.kind) {
            case StepKind::join: complete(id); break;
            case StepKind::copy:
            case StepKind::reduce: {
                if (buffers_.trace) buffers_.trace->posted[id] = trace_clock_ns();
                if (!buffers_.engine) {
                    if (s.kind == StepKind::copy) host_copy(address(s.dst), address(s.src), s.dst.count * es);
                    else host_reduce(address(s.dst), address(s.src), s.dst.count, buffers_.reduce);
                    complete(id);
                    break;
                }
                ActiveLocal a{id, {}};
                bool finished = false;
                Engine &engine = *buffers_.engine;
                const Status st = s.kind == StepKind::copy ? engine.copy(address(s.dst), address(s.src),
                                                                         s.dst.count * es, &a.handle, &finished)
                                                           : engine.reduce(address(s.dst), address(s.src), s.dst.count,
                                                                           buffers_.reduce, &a.handle, &finished);
                if (st != LOOM_SUCCESS) return st;
                if (finished) complete(id);
                else active_local_.push_back(a);
                break;
            }
            case StepKind::send:
            case StepKind::recv: {
                const size_t key = 2 * static_cast<size_t>(s.peer) + (s.kind == StepKind::recv ? 1 : 0);
                if (in_flight_[key] >= kPeerWindow) {
                    held_[key] = id;
                    break;
                }
                ++in_flight_[key];
                Active a{id, {}};
                const Route route{buffers_.plan, s.lane};
                Status st =
                    s.kind == StepKind::send
                        ? transport_.post_send(address(s.src), s.src.count * es, s.peer, tag_, route, &a.handle)
                        : transport_.post_recv(address(s.dst), s.dst.count * es, s.peer, tag_, route, &a.handle);
                if (st != LOOM_SUCCESS) return st;
                if (buffers_.trace) {
                    buffers_.trace->posted[id] = trace_clock_ns();
                    buffers_.trace->carrier[id] = a.handle.carrier;
                }
                active_.push_back(a);
                if (p.next_in_peer_order[id] != Program::kNoStep) release(p.next_in_peer_order[id]);
                break;
            }
        }
    }
    return LOOM_SUCCESS;
}

Status Execution::test_local(bool *any) {
    size_t kept = 0;
    for (size_t i = 0; i < active_local_.size(); ++i) {
        bool finished = false;
        LOOM_RETURN_IF_ERROR(buffers_.engine->test(&active_local_[i].handle, &finished));
        if (!finished) {
            active_local_[kept++] = active_local_[i];
            continue;
        }
        complete(active_local_[i].id);
        *any = true;
    }
    active_local_.resize(kept);
    return LOOM_SUCCESS;
}

Status Execution::progress(bool *done) {
    for (;;) {
        LOOM_RETURN_IF_ERROR(run_ready());
        bool any = false;
        if (active_.empty()) {
            if (active_local_.empty()) break;  // run_ready() left nothing ready and nothing in flight
            LOOM_RETURN_IF_ERROR(test_local(&any));
            if (any) continue;  // an engine's completions may have readied steps
            break;
        }
        if (!active_local_.empty()) LOOM_RETURN_IF_ERROR(test_local(&any));
        handles_.clear();
        for (Active &a : active_) handles_.push_back(&a.handle);
        done_flags_.resize(active_.size());
        const Status tested = transport_.test_many(handles_.data(), handles_.size(), done_flags_.data(), nullptr);
        size_t kept = 0;
        const size_t n = active_.size();
        if (tested != LOOM_SUCCESS) {
            // The transport released what it reported done: only the others can be withdrawn.
            for (size_t i = 0; i < n; ++i)
                if (!done_flags_[i]) active_[kept++] = active_[i];
            active_.resize(kept);
            return tested;
        }
        // Retire completed operations, keeping the others in posting order.
        for (size_t i = 0; i < n; ++i) {
            if (!done_flags_[i]) {
                active_[kept++] = active_[i];
                continue;
            }
            const StepId id = active_[i].id;
            const Step &s = program_->steps[id];
            const size_t key = 2 * static_cast<size_t>(s.peer) + (s.kind == StepKind::recv ? 1 : 0);
            --in_flight_[key];
            if (held_[key] != Program::kNoStep) {
                ready_.push_back(held_[key]);
                held_[key] = Program::kNoStep;
            }
            complete(id);
            any = true;
        }
        active_.resize(kept);
        // Completions may have readied new steps; loop until nothing moves.
        if (!any && ready_.empty()) break;
    }
    *done = this->done();
    if (*done) windows_clean_ = true;
    return LOOM_SUCCESS;
}

}  // namespace loom
