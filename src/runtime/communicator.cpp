#include "runtime/communicator.hpp"

#include "core/clock.hpp"

#include "select/call_spec.hpp"
#include "select/rules.hpp"

#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace loom {

Request::~Request() {
    if (!comm_) return;
    auto &active = comm_->active_;
    active.erase(std::remove(active.begin(), active.end(), this), active.end());
    if (persistent_) --comm_->persistent_requests_;
}

Status Request::start() {
    if (!persistent_)
        return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_start: not a persistent request (make one with a loom_*_init call)");
    if (!finished_)
        return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_start: the request is still active (test or wait for it first)");
    return comm_->launch(*this, args_, call_, plan_, false);
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
        if (comm_->active_.size() == 1 && comm_->active_[0] == this && !comm_->progressing_) {
            advance();  // the only request: skip the walk over the others
        } else {
            Status others = comm_->progress_all();
            (void)others;  // another request's error is reported by that request
        }
    }
    *done = finished_;
    return error_;
}

Status Request::wait() {
    bool done = false;
    for (;;) {
        LOOM_RETURN_IF_ERROR(test(&done));
        if (done) return LOOM_SUCCESS;
        if (comm_->transport().oversubscribed()) sched_yield();  // let the ranks we wait for run
    }
}

Status Communicator::progress_all() {
    // A transport may run the caller's progress engine, which may call back
    // into Loom (coll/loom's progress callback): never progress one
    // communicator from inside its own progress.
    if (progressing_) return LOOM_SUCCESS;
    progressing_ = true;
    struct Reset {
        bool &flag;
        ~Reset() { flag = false; }
    } reset{progressing_};
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
    : router_(std::make_unique<Router>(std::move(transport))),
      rank_(router_->rank()),
      size_(router_->size()),
      config_(std::move(config)) {
    nodes_ = NodeMap::single_node(size_);
}

Communicator::~Communicator() {
    blocking_.reset();  // before active_ goes: the request unregisters itself
}

size_t Communicator::PlanKeyHash::operator()(const PlanKey &k) const {
    uint64_t h = 0xcbf29ce484222325ULL;
    auto mix = [&h](uint64_t v) { h = (h ^ v) * 0x100000001b3ULL; };
    mix(static_cast<uint64_t>(k.collective) << 1 | k.in_place);
    mix(static_cast<uint64_t>(k.memory));
    mix(k.count);
    mix(k.elem_size);
    mix(k.config_generation);
    for (size_t c : k.recv_counts) mix(c);
    return static_cast<size_t>(h);
}

Status Communicator::plan_for(const CollArgs &a, const CachedPlan **out) {
    // Loops repeat one call: check the last plan before hashing.
    if (last_plan_ && last_key_.collective == a.collective && last_key_.in_place == a.in_place &&
        last_key_.memory == a.memory && last_key_.count == a.count && last_key_.elem_size == a.elem_size &&
        last_key_.config_generation == config_.generation() && last_key_.recv_counts == a.recv_counts) {
        *out = last_plan_;
        return LOOM_SUCCESS;
    }
    LOOM_RETURN_IF_ERROR(lookup_plan(a, out));
    last_key_ = PlanKey{a.collective, a.in_place, a.memory, a.count, a.elem_size, config_.generation(), a.recv_counts};
    last_plan_ = *out;
    return LOOM_SUCCESS;
}

Status Communicator::lookup_plan(const CollArgs &a, const CachedPlan **out) {
    PlanKey key{a.collective, a.in_place, a.memory, a.count, a.elem_size, config_.generation(), a.recv_counts};
    auto hit = cache_.find(key);
    if (hit != cache_.end()) {
        lru_.splice(lru_.begin(), lru_, hit->second);
        *out = &hit->second->second;
        return LOOM_SUCCESS;
    }
    Selection sel;
    CollArgs tuned = with_knobs(a);
    LOOM_RETURN_IF_ERROR(select_algorithm(config_, tuned, &sel));
    ++plan_builds_;
    sel.apply_knobs(&tuned);  // a rule's segment size, radix ...
    Program program = build_program(*sel.algorithm, tuned, rank());
    forget_retired_plans();
    // Selection refused memory without an engine; host steps run inline.
    Engine *engine = a.memory == MemoryType::host ? nullptr : engine_for(a.memory);
    CachedPlan plan{sel.algorithm, sel.why, std::make_shared<const Program>(std::move(program)), next_plan_id_++,
                    engine};
    router_->plan_added(plan.id, static_cast<uint32_t>(PlanKeyHash{}(key)), tuned);
    lru_.emplace_front(std::move(key), std::move(plan));
    cache_[lru_.front().first] = lru_.begin();
    const size_t capacity = static_cast<size_t>(config_.integer(kParamPlanCacheEntries));
    while (lru_.size() > capacity) {
        if (&lru_.back().second == last_plan_) last_plan_ = nullptr;  // evicted: forget the shortcut
        retired_.emplace_back(lru_.back().second.id, lru_.back().second.program);
        cache_.erase(lru_.back().first);
        lru_.pop_back();
    }
    *out = &lru_.front().second;
    return LOOM_SUCCESS;
}

void Communicator::forget_retired_plans() {
    // A request keeps its program alive: only ours is left when none runs it.
    size_t kept = 0;
    for (auto &r : retired_) {
        if (r.second.use_count() == 1) router_->plan_removed(r.first);
        else retired_[kept++] = std::move(r);
    }
    retired_.resize(kept);
}

void Communicator::complete_args(CollArgs &args, loom_datatype_t type, bool in_place) const {
    args.nranks = size();
    args.elem_size = datatype_info(type)->size;
    args.in_place = in_place;
    args.single_node = shared_memory_ranks_ == size() && size() > 1 && nodes_.nodes() <= 1;
    args.nodes = &nodes_;
}

CollArgs Communicator::with_knobs(const CollArgs &args) const {
    CollArgs full = args;
    knobs_from_config(config_, &full);
    full.ring_piece_bytes = alltoall_ring_piece_bytes(full, config_, ring_message_max_, ring_bytes_);
    return full;
}

Status Communicator::set_nodes(NodeMap nodes) {
    if (nodes.nranks() != size())
        return fail(LOOM_ERR_INVALID_ARGUMENT, "node map for " + std::to_string(nodes.nranks()) +
                                                   " ranks on a communicator of " + std::to_string(size()));
    if (started_any_)
        return fail(LOOM_ERR_INVALID_ARGUMENT, "the node map must be set before the communicator's first collective");
    nodes_ = std::move(nodes);
    return LOOM_SUCCESS;
}

Status Communicator::prepare(CollArgs args, loom_datatype_t type, bool in_place, const char **algorithm) {
    started_any_ = true;  // the plan's choice depends on the transport: no attaching after this
    complete_args(args, type, in_place);
    const CachedPlan *plan = nullptr;
    LOOM_RETURN_IF_ERROR(plan_for(args, &plan));
    if (algorithm) *algorithm = plan->algorithm->name;
    return LOOM_SUCCESS;
}

Status Communicator::start(CollArgs args, const CallData &call, std::unique_ptr<Request> *out) {
    auto req = std::make_unique<Request>();
    LOOM_RETURN_IF_ERROR(start_into(*req, args, call));
    *out = std::move(req);
    return LOOM_SUCCESS;
}

Status Communicator::init(CollArgs args, const CallData &call, std::unique_ptr<Request> *out) {
    auto req = std::make_unique<Request>();
    started_any_ = true;
    complete_args(args, call.type, call.in_place);
    const CachedPlan *plan = nullptr;
    LOOM_RETURN_IF_ERROR(plan_for(args, &plan));
    req->comm_ = this;
    req->persistent_ = true;
    req->finished_ = true;  // inactive until started
    req->plan_ = *plan;
    req->program_ = plan->program;
    req->call_ = call;
    // Storage a start would otherwise grow on its first run.
    req->scratch_.resize(plan->program->scratch_count * args.elem_size);
    if (args.in_place && !plan->algorithm->in_place_aliasing_safe)
        req->snapshot_.reserve(args.input_count() * args.elem_size);
    ExecutionBuffers none;
    req->execution_ = std::make_unique<Execution>(req->program_.get(), *router_, 0, none);
    req->execution_->reserve();
    ++persistent_requests_;
    active_.reserve(active_.size() + persistent_requests_ + 1);
    req->args_ = std::move(args);
    *out = std::move(req);
    return LOOM_SUCCESS;
}

Status Communicator::attach_shared_memory(SharedMemoryNode node) {
    if (started_any_)
        return fail(LOOM_ERR_INVALID_ARGUMENT,
                    "shared memory must be attached before the communicator's first collective");
    std::unique_ptr<Transport> shm;
    const int node_ranks = static_cast<int>(node.local_ranks.size());
    const size_t ring_bytes = node.geometry.ring_bytes();
    ShmOptions options;
    options.max_bytes = shm_ring_message_limit(node.geometry, static_cast<size_t>(config_.integer(kParamShmMaxBytes)));
    options.alltoall_max_bytes = static_cast<size_t>(config_.integer(kParamAlltoallShmMaxBytes));
    options.single_copy.mode = static_cast<SingleCopyPolicy::Mode>(config_.integer(kParamSingleCopy));
    options.single_copy.min_bytes = static_cast<size_t>(config_.integer(kParamSingleCopyMinBytes));
    LOOM_RETURN_IF_ERROR(make_shared_memory_transport(rank_, size_, std::move(node), options, &shm));
    router_->add_preferred(std::move(shm));
    shared_memory_ranks_ = node_ranks;
    ring_message_max_ = options.max_bytes;
    ring_bytes_ = ring_bytes;
    return LOOM_SUCCESS;
}

Status Communicator::start_into(Request &req, CollArgs &args, const CallData &call, bool blocking) {
    started_any_ = true;
    complete_args(args, call.type, call.in_place);

    const CachedPlan *plan = nullptr;
    LOOM_RETURN_IF_ERROR(plan_for(args, &plan));
    const long long verbose = config_.integer(kParamVerbose);
    if (verbose >= 1 && rank() == 0) explain_once(args);
    if (verbose >= 2)
        std::fprintf(stderr, "loom[%d]: %s -> %s (%s)\n", rank(), args.describe().c_str(), plan->algorithm->name,
                     plan->why.c_str());
    return launch(req, args, call, *plan, blocking);
}

Status Communicator::launch(Request &req, const CollArgs &args, const CallData &call, const CachedPlan &planned,
                            bool blocking) {
    const CachedPlan *plan = &planned;
    started_any_ = true;
    last_algorithm_[static_cast<int>(args.collective)] = plan->algorithm->name;
    req.comm_ = this;
    req.finished_ = false;
    req.error_ = LOOM_SUCCESS;
    if (req.program_ != plan->program) req.program_ = plan->program;  // keeps it alive; no refcount churn in loops
    ExecutionBuffers eb;
    eb.plan = plan->id;
    eb.engine = plan->engine;
    eb.output = call.recvbuf;
    eb.elem_size = args.elem_size;
    if (args.collective == Collective::allreduce || args.collective == Collective::reduce_scatter ||
        args.collective == Collective::reduce_scatter_block)
        eb.reduce = reduction_kernel(call.type, call.op);
    if (!args.in_place) {
        eb.input = call.sendbuf;
    } else {
        const unsigned char *at =
            static_cast<const unsigned char *>(call.recvbuf) + args.in_place_input_offset(rank()) * args.elem_size;
        if (plan->algorithm->in_place_aliasing_safe) {
            eb.input = at;
        } else {
            req.snapshot_.assign(at, at + args.input_count() * args.elem_size);
            eb.input = req.snapshot_.data();
        }
    }
    req.scratch_.resize(plan->program->scratch_count * args.elem_size);
    eb.scratch = req.scratch_.data();
    const uint32_t tag = next_tag_;
    next_tag_ = next_tag_ >= router_->max_tag() ? 0 : next_tag_ + 1;
    if (req.execution_) req.execution_->reset(req.program_.get(), tag, eb);
    else req.execution_ = std::make_unique<Execution>(req.program_.get(), *router_, tag, eb);
    timed_plan_ = Route::kNoPlan;
    if (router_->call_starts(plan->id, blocking) && blocking) {
        timed_plan_ = plan->id;
        timed_start_ns_ = now_ns();
    }
    LOOM_RETURN_IF_ERROR(req.execution_->start());
    active_.push_back(&req);
    return LOOM_SUCCESS;
}

void Communicator::explain_once(const CollArgs &args) {
    // One line per collective and power-of-two size bucket: what was chosen,
    // why, what the model predicts for it and for the runners-up.
    const size_t bytes = message_bytes(args);
    int bucket = -1;
    for (size_t b = bytes; b; b >>= 1) ++bucket;
    if (!explained_.insert({static_cast<int>(args.collective), bucket}).second) return;
    Explanation e;
    const CollArgs full = with_knobs(args);
    if (explain_selection(config_, full, &e) == LOOM_SUCCESS)
        std::fprintf(stderr, "loom: %s\n", explanation_line(full, e).c_str());
}

uint32_t Communicator::retire_plans() {
    for (auto &entry : lru_) retired_.emplace_back(entry.second.id, entry.second.program);
    lru_.clear();
    cache_.clear();
    last_plan_ = nullptr;
    forget_retired_plans();
    return next_plan_id_;
}

Status Communicator::attach_rails(std::unique_ptr<Transport> rails, int count, std::string state) {
    if (rails->rank() != rank_ || rails->size() != size_)
        return fail(LOOM_ERR_INVALID_ARGUMENT, "the rails transport spans another communicator");
    router_->add_preferred(std::move(rails));
    // Every rank attaches at the same call, so tags stay equal everywhere.
    if (next_tag_ > router_->max_tag()) next_tag_ = 0;
    nodes_.rails = count;
    retire_plans();
    rails_state_ = std::move(state);
    return LOOM_SUCCESS;
}

Status Communicator::allgather_bytes(const void *mine, size_t bytes, void *all) {
    CollArgs a;
    a.collective = Collective::allgather;
    a.count = bytes;
    CallData call;
    call.sendbuf = mine;
    call.recvbuf = all;
    call.type = LOOM_BYTE;
    return run(a, call);
}

Status Communicator::allreduce_int64(int64_t *values, size_t n, loom_op_t op) {
    CollArgs a;
    a.collective = Collective::allreduce;
    a.count = n;
    CallData call;
    call.in_place = true;
    call.recvbuf = values;
    call.type = LOOM_INT64;
    call.op = op;
    return run(a, call);
}

void Communicator::run_periodic(CollArgs &args, const CallData &call) {
    complete_args(args, call.type, call.in_place);
    const size_t bytes = message_bytes(args);
    // Moved out while they run: they make blocking calls of their own.
    std::vector<Periodic> now;
    now.swap(periodic_);
    for (Periodic &p : now)
        if (bytes >= p.min_bytes && ++p.calls % p.every == 0) p.fn(*this, p.context);
    now.swap(periodic_);
}

Status Communicator::run(CollArgs args, const CallData &call) {
    if (!deferred_.empty()) {
        std::vector<void (*)(Communicator &)> now;
        now.swap(deferred_);
        for (auto set_up : now) set_up(*this);
    }
    if (!periodic_.empty()) run_periodic(args, call);
    // A blocking call cannot overlap another blocking call on this
    // communicator, so one reusable request serves them all.
    if (!blocking_) blocking_ = std::make_unique<Request>();
    LOOM_RETURN_IF_ERROR(start_into(*blocking_, args, call, /*blocking=*/true));
    if (timed_plan_ == Route::kNoPlan) return blocking_->wait();
    const uint32_t plan = timed_plan_;
    const Status st = blocking_->wait();
    if (st == LOOM_SUCCESS) router_->call_ends(plan, now_ns() - timed_start_ns_);
    return st;
}

}  // namespace loom
