#include "communicator.hpp"

#include <sched.h>

#include <cstdio>
#include <algorithm>
#include <cstring>

namespace loom {

Request::~Request() {
    if (!comm_) return;
    auto &active = comm_->active_;
    active.erase(std::remove(active.begin(), active.end(), this), active.end());
}

Status Request::advance() {
    if (finished_) return error_;
    bool complete = false;
    error_ = execution_->progress(&complete);
    finished_ = complete || error_ != LOOM_SUCCESS;
    if (finished_) {
        auto &active = comm_->active_;
        active.erase(std::remove(active.begin(), active.end(), this), active.end());
    }
    return error_;
}

Status Request::test(bool *done) {
    if (!finished_) {
        Status others = comm_->progress_all();
        (void)others;  // another request's error is reported by that request
    }
    *done = finished_;
    return error_;
}

Status Request::wait() {
    bool done = false;
    for (;;) {
        LOOM_RETURN_IF_ERROR(test(&done));
        if (done) return LOOM_SUCCESS;
        // Ranks usually outnumber cores here: give the core away between polls.
        comm_->transport().progress();
        sched_yield();
    }
}

Status Communicator::progress_all() {
    Status first_error = LOOM_SUCCESS;
    // advance() removes a finished request from active_: walk backwards so
    // removals never skip one.
    for (size_t i = active_.size(); i-- > 0;) {
        if (i >= active_.size()) continue;
        Status st = active_[i]->advance();
        if (st != LOOM_SUCCESS && first_error == LOOM_SUCCESS) first_error = st;
    }
    return first_error;
}

Communicator::Communicator(std::unique_ptr<Transport> transport, Config config)
    : transport_(std::move(transport)), config_(std::move(config)) {}

std::shared_ptr<const Program> Communicator::program_for(const AlgorithmInfo &algo, const CollArgs &a) {
    std::string key;
    key.reserve(96);
    key += algo.name;
    key += '/';
    key += collective_name(a.collective);
    auto append = [&key](unsigned long long v) {
        key += ':';
        key += std::to_string(v);
    };
    append(a.count);
    append(a.elem_size);
    append(a.in_place);
    append(a.segment_bytes);
    append(static_cast<unsigned>(a.radix));
    append(static_cast<unsigned>(a.max_outstanding));
    for (size_t c : a.recv_counts) append(c);

    const size_t capacity = static_cast<size_t>(config_.integer(kParamPlanCacheEntries));
    auto hit = cache_.find(key);
    if (hit != cache_.end()) {
        lru_.splice(lru_.begin(), lru_, hit->second);
        return hit->second->second;
    }
    ++plan_builds_;
    auto program = std::make_shared<const Program>(build_program(algo, a, rank()));
    if (capacity == 0) return program;
    lru_.emplace_front(key, program);
    cache_[key] = lru_.begin();
    while (lru_.size() > capacity) {
        cache_.erase(lru_.back().first);
        lru_.pop_back();
    }
    return program;
}

Status Communicator::start(CollArgs args, const CallData &call, std::unique_ptr<Request> *out) {
    const DatatypeInfo *type = datatype_info(call.type);
    args.nranks = size();
    args.elem_size = type->size;
    args.in_place = call.in_place;
    args.segment_bytes = static_cast<size_t>(config_.integer(kParamSegmentSize));
    args.radix = static_cast<int>(config_.integer(kParamKnomialRadix));
    args.max_outstanding = static_cast<int>(config_.integer(kParamAlltoallMaxOutstanding));

    Selection sel;
    LOOM_RETURN_IF_ERROR(select_algorithm(config_, args, &sel));
    const int ci = static_cast<int>(args.collective);
    last_algorithm_[ci] = sel.algorithm->name;
    const long long verbose = config_.integer(kParamVerbose);
    if (verbose >= 2 || (verbose >= 1 && !reported_[ci] && rank() == 0)) {
        std::fprintf(stderr, "loom[%d]: %s -> %s (%s)\n", rank(), args.describe().c_str(), sel.algorithm->name,
                     sel.why.c_str());
        reported_[ci] = true;
    }

    auto req = std::make_unique<Request>();
    req->comm_ = this;
    std::shared_ptr<const Program> program = program_for(*sel.algorithm, args);
    ExecutionBuffers eb;
    eb.output = call.recvbuf;
    eb.elem_size = args.elem_size;
    if (args.collective == Collective::allreduce || args.collective == Collective::reduce_scatter ||
        args.collective == Collective::reduce_scatter_block)
        eb.reduce = reduction_kernel(call.type, call.op);
    const size_t in_bytes = args.input_count() * args.elem_size;
    if (!args.in_place) {
        eb.input = call.sendbuf;
    } else {
        const unsigned char *at =
            static_cast<const unsigned char *>(call.recvbuf) + args.in_place_input_offset(rank()) * args.elem_size;
        if (sel.algorithm->in_place_aliasing_safe) {
            eb.input = at;
        } else {
            req->snapshot_.assign(at, at + in_bytes);
            eb.input = req->snapshot_.data();
        }
    }
    req->scratch_.resize(program->scratch_count * args.elem_size);
    eb.scratch = req->scratch_.data();
    const uint32_t tag = next_tag_;
    next_tag_ = next_tag_ >= transport_->max_tag() ? 0 : next_tag_ + 1;
    req->execution_ = std::make_unique<Execution>(std::move(program), *transport_, tag, eb);
    LOOM_RETURN_IF_ERROR(req->execution_->start());
    active_.push_back(req.get());
    *out = std::move(req);
    return LOOM_SUCCESS;
}

Status Communicator::run(const CollArgs &args, const CallData &call) {
    std::unique_ptr<Request> req;
    LOOM_RETURN_IF_ERROR(start(args, call, &req));
    return req->wait();
}

}  // namespace loom
