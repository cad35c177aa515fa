// A Loom communicator: a transport, its parameters, the plan cache and the
// running tag. Every collective is nonblocking underneath: start() returns a
// Request, blocking calls are start + wait.
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.hpp"
#include "core/params.hpp"
#include "node_map.hpp"
#include "runtime/buffer_pool.hpp"
#include "runtime/count_exchange.hpp"
#include "runtime/executor.hpp"
#include "runtime/hang_watch.hpp"
#include "runtime/path_runner.hpp"
#include "runtime/path_state.hpp"
#include "runtime/plan_cache.hpp"
#include "runtime/progress_thread.hpp"
#include "runtime/trace.hpp"
#include "select/adapt.hpp"
#include "select/selector.hpp"
#include "transport/router.hpp"
#include "transport/setup_context.hpp"
#include "transport/shm/shm.hpp"

namespace loom {

extern const ParamId kParamHangTimeout;
extern const ParamId kParamHangAbort;

extern const ParamId kParamSlotsWait;
extern const ParamId kParamWait;
extern const ParamId kParamWaitSpinUs;
// The slots_wait parameter's values, by index.
enum SlotsWaitMode { kSlotsWaitAuto = 0, kSlotsWaitSpin = 1, kSlotsWaitYield = 2 };
// The wait parameter's values, by index.
enum WaitMode { kWaitAuto = 0, kWaitSpin = 1, kWaitSleep = 2 };

class Communicator;

struct CallData {
    const void *sendbuf = nullptr;
    bool in_place = false;  // input is in recvbuf (sendbuf ignored)
    void *recvbuf = nullptr;
    loom_datatype_t type = LOOM_BYTE;
    loom_op_t op = LOOM_SUM;  // ignored without reduction

    // A call's buffers (sendbuf dropped in place), type and op.
    static CallData of(const void *sendbuf, bool in_place, void *recvbuf, loom_datatype_t type, loom_op_t op) {
        CallData d;
        d.sendbuf = in_place ? nullptr : sendbuf;
        d.in_place = in_place;
        d.recvbuf = recvbuf;
        d.type = type;
        d.op = op;
        return d;
    }
};

// A started collective. Testing or waiting on one request progresses every
// active request of its communicator: otherwise two ranks waiting on
// different requests, each needing the other's progress, would deadlock.
class Request {
  public:
    ~Request();
    Status test(bool *done);
    Status wait();
    // Persistent requests (Communicator::init): start() runs the call again
    // with everything resolved at init; it allocates nothing.
    bool persistent() const { return persistent_; }
    // Started and not finished, as far as it has been progressed: unlike
    // test(), it progresses nothing (with the progress thread on, it tells
    // whether the thread finished the request).
    bool running();
    Status start();
    // The algorithm of its call; read once the call is done (the progress
    // thread may still be choosing it before).
    const char *algorithm() const { return algorithm_; }

  private:
    friend class Communicator;
    Status advance();  // progresses this request only
    // Paths run and advance their calls on the request (path_runner.hpp).
    friend class PathRunner;
    friend class PlanPath;
    friend class SharedSlotsPath;
    friend class NodeSlotsPath;
    friend class CudaIpcPath;
    friend class CountsFirstPath;
    // Re-armed for a new call on `comm`: running, no error, on `path`.
    void arm(Communicator *comm, const PathRunner *path) {
        comm_ = comm;
        finished_ = false;
        error_ = LOOM_SUCCESS;
        path_ = path;
        hang_.reset();
        revoke_looks_ = 0;
    }
    // The call is over (its error_ set): out of the active list, its timeline written.
    void finish();
    Status result() const;  // error_ and its message, in the calling thread's last error
    // Ends the call with `error`: its posted operations are withdrawn, so
    // that nothing lands in the caller's buffers after it has returned.
    void end_with(Status error, std::string message);
    // A plan or slots that found the ranks' calls differ (LOOM_ERR_MISMATCH):
    // the communicator is revoked and the peers told.
    void mismatched();
    // test(), and so wait(), progresses the other communicators every
    // kTestsPerWalk looks that find this request unfinished.
    static constexpr uint32_t kTestsPerWalk = 64;
    // A sleeping wait's longest sleep: the transports that cannot wake it are polled this often.
    static constexpr int kSleepUs = 1000;
    // What test() saw moved (steps completed + data moved) for wait()'s sleeping rule; kNoNews: do not sleep.
    static constexpr uint64_t kNoNews = UINT64_MAX;
    uint64_t news_seen_ = kNoNews;
    // Whether wait() polls shared memory between looks, as test() read it
    // under the lock (the progress thread may move the call to another path).
    bool polls_slots_ = false;
    uint32_t unfinished_tests_ = 0;
    Communicator *comm_ = nullptr;  // null once the communicator is freed
    bool thread_driven_ = false;    // the progress thread advances it too
    std::string error_message_;     // error_'s: the thread that found it may not be the caller
    bool persistent_ = false;
    CollArgs args_;  // a persistent request's call
    CallData call_;
    CachedPlan plan_;  // its plan, kept: evicting it from the cache does not change the request
    std::shared_ptr<const Program> program_;
    std::unique_ptr<Execution> execution_;  // kept across reuse: its vectors keep their capacity
    std::vector<unsigned char> scratch_;
    std::vector<unsigned char> snapshot_;  // in-place input, when the algorithm needs one
    // The path its call runs on; null before its first call.
    const PathRunner *path_ = nullptr;
    // What the call keeps on that path; made anew when a call takes another path.
    PathState path_state_;
    template <class State>
    State &path_state() {
        if (State *s = std::get_if<State>(&path_state_)) return *s;
        return path_state_.template emplace<State>();
    }
    template <class State>
    const State *path_state_if() const {
        return std::get_if<State>(&path_state_);
    }
    // The state start() made for the running call; null, with the call
    // ended by an internal error, where another path's is found.
    template <class State>
    State *started_state() {
        if (State *s = std::get_if<State>(&path_state_)) return s;
        end_with(LOOM_ERR_INTERNAL, "a call advanced on a path it did not start on");
        return nullptr;
    }
    // The step timeline of this call (when the communicator traces) and how its waits went.
    bool traced_ = false;
    CallRecord trace_call_;
    StepTimes trace_times_;
    const Program *trace_program_ = nullptr;  // kept alive by program_ while the call runs
    size_t trace_elem_size_ = 1;
    WaitCounts waits_;
    // For a hang report: the call's number on the communicator (the same on
    // every rank), its shape and algorithm, and how long it has waited.
    uint64_t call_number_ = 0;
    Collective collective_ = Collective::allreduce;
    size_t count_ = 0, elem_size_ = 0;
    const char *algorithm_ = "";
    HangWatch hang_;
    uint32_t revoke_looks_ = 0;  // looks since the peers' revokes were last read
    bool finished_ = false;
    Status error_ = LOOM_SUCCESS;
};

class Communicator final : public SetupContext, public ThreadDriven {
  public:
    // `transport` carries everything no preferred transport takes (the
    // PML, MPI point-to-point); the router starts with it alone.
    Communicator(std::unique_ptr<Transport> transport, Config config);
    ~Communicator();
    // Kept: a transport's rank and size never change (wrapping it in shared
    // memory keeps them), and every call asks several times.
    int rank() const override { return rank_; }
    int size() const override { return size_; }
    Config &config() { return config_; }
    Router &transport() override { return *router_; }
    const Router &transport() const { return *router_; }

    // Validates nothing about user input (the C API does); args.nranks and the
    // algorithm knobs are filled in here. args.memory says where the buffers
    // live (host unless the caller found otherwise).
    Status start(CollArgs args, const CallData &call, std::unique_ptr<Request> *out);
    // A nonblocking alltoallv whose plan needs what `exchange` learns of
    // the other ranks' counts (CollArgs::node_counts): the exchange starts
    // now, and the alltoallv is planned and started when it finishes, on
    // the tag it took here. Its start never waits for the other ranks, so
    // that nonblocking calls on several communicators may start in any order.
    Status start_after_counts(CollArgs args, const CallData &call, CountExchange exchange,
                              std::unique_ptr<Request> *out);
    // A persistent request for the call, inactive: the plan, scratch and the
    // execution's storage are resolved now, so that Request::start allocates nothing.
    Status init(CollArgs args, const CallData &call, std::unique_ptr<Request> *out);
    // `args`: the caller's, completed in place.
    Status run(CollArgs &args, const CallData &call);
    // A blocking call of the same shape (collective, counts, type, op, in
    // place) as the last blocking call that ran on the shared slots, run
    // again without checking, selecting or a request: that call was checked
    // and selected, and parameters unchanged since. True when it ran
    // (*status its result); false: the caller takes the general path.
    // `counts`: reduce_scatter's, else null.
    bool repeat_slots(Collective c, bool in_place, const void *sendbuf, void *recvbuf, size_t count,
                      const int64_t *counts, loom_datatype_t type, loom_op_t op, Status *status);
    // Selects and builds (caches) the plan without running it.
    Status prepare(CollArgs args, loom_datatype_t type, bool in_place, const char **algorithm);

    // Sends messages to ranks of this node through shared memory (up to the
    // shm_max_bytes parameter). Only before the first collective: executions
    // keep a reference to the transport.
    Status attach_shared_memory(SharedMemoryNode node) override;

    // Adds the inter-node rails transport (any time, between calls): calls
    // already running keep their transports; the plan cache starts afresh,
    // because the node map now counts `rails` rails. `state` describes them
    // for the stats and loom-info.
    Status attach_rails(std::unique_ptr<Transport> rails, int count, std::string state) override;
    // Retires every cached plan; the id the next plan will get.
    uint32_t retire_plans() override;
    // The rails' state: "" (none asked for), what attach_rails was told, or
    // why they were left out (each such communicator counts one fallback).
    const std::string &rails_state() const { return rails_state_; }
    // A rail left out or back, with its time, after the rails' description.
    void rails_changed(const std::string &event) override {
        rails_state_ += "; " + event;
        rails_changes_.fetch_add(1, std::memory_order_relaxed);
    }
    void rails_left_out(std::string why) override {
        rails_state_ = "off: " + std::move(why);
        rails_changes_.fetch_add(1, std::memory_order_relaxed);
        ++rails_fallbacks_;
    }
    uint64_t rails_fallbacks() const { return rails_fallbacks_; }

    // A set-up that needs its ranks to talk (the rails' address exchange)
    // where the communicator was made without communication (coll/loom):
    // it runs at the start of the communicator's first collective, blocking,
    // nonblocking or persistent, which every rank calls in the same order.
    void defer(DeferredSetup set_up) { deferred_.push_back(set_up); }
    // A transport's agreement among the ranks (the rails' weights), run at
    // the start of every `every`-th blocking collective of at least
    // `min_bytes` (OSU's message size, equal on every rank): a point every
    // rank reaches at the same call.
    void every_blocking_call(uint64_t every, size_t min_bytes, Upkeep fn, void *context) override {
        periodic_.push_back({every, min_bytes, fn, context, 0});
    }
    // Collectives over this communicator's present transports, for set-ups
    // and the vector collectives' checks: Loom's own calls (CollArgs::internal).
    Status allgather_bytes(const void *mine, size_t bytes, void *all) override;
    Status allreduce_int64(int64_t *values, size_t n, loom_op_t op) override;
    Status alltoall_int64(const int64_t *mine, int64_t *theirs, size_t per_peer);
    void run_deferred();  // the deferred set-ups, once
    // One of Loom's own calls (those above, the alltoallv count exchange's):
    // `a` (collective and sizes) over `in` and `out`.
    Status run_internal(CollArgs a, const void *in, void *out, loom_datatype_t type);

    // Which node each rank is on. Only before the first collective; plans
    // of node-aware algorithms depend on it.
    Status set_nodes(NodeMap nodes);
    const NodeMap &nodes() const override { return nodes_; }
    // Keeps the node_slots algorithms off: set-ups that find some node
    // without the shared slots say so on every rank (before the first collective).
    void forbid_node_slots() {
        node_slots_allowed_ = false;
        decide_node_slots();
    }
    bool node_slots_ready() const { return node_slots_ready_; }

    // Progresses every active request once.
    Status progress_all();
    // Progresses every active request of every other communicator whose
    // last nonblocking or persistent call this thread started (MPI's
    // progress rule: a rank blocked on one communicator's call still moves
    // its calls on the others, which its peers may be waiting for; another
    // thread's communicators are that thread's to move). Not from inside
    // another walk.
    static void progress_other_communicators(const Communicator *except);

    // The progress thread's entry: advances the requests it drives, unless
    // another thread is inside this communicator (false then). *pending:
    // some are still running; *moved: something completed or moved.
    bool progress_from_thread(bool *pending, bool *moved) override;
    // Where the thread may sleep for this communicator's peers (its shared-memory inbox).
    // None once the rails are attached: their messages ring no doorbell, so
    // the thread polls rather than sleep on one.
    Doorbell doorbell() const override {
        return rails_attached_.load(std::memory_order_acquire) ? Doorbell{} : doorbell_;
    }
    // With the rails attached: arms them for the thread's sleep (their
    // event descriptors into *fds); false when one has news now, none
    // can wake a sleeper, or a caller is inside the communicator.
    bool arm_for_thread_sleep(std::vector<int> *fds) override;
    // "off", or "on: N calls driven by the thread, M by the caller (why)".
    std::string progress_state() const;
    // What adapt learnt, a line per size class ("off" when off), and the
    // same as a loom-rules(5) document (empty when off).
    std::string adapt_state();
    std::string adapt_rules();
    // Keeps the progress thread out while the caller reads the
    // communicator's state (its counters) from outside a call.
    std::unique_lock<std::recursive_mutex> hold() {
        return threaded_ ? std::unique_lock<std::recursive_mutex>(mutex_) : std::unique_lock<std::recursive_mutex>();
    }

    // Every unfinished call's wait, a line each, or "idle" (loom_comm_state).
    std::string state() const;

    const char *last_algorithm(Collective c) const { return last_algorithm_[static_cast<int>(c)]; }
    // The cost model's time for `args` (a host call) with the algorithm the
    // selector would take; false where it cannot tell (too many ranks).
    bool predicted_time(CollArgs args, loom_datatype_t type, double *us) const;
    const Config &config() const override { return config_; }
    // For calls run outside the communicator (device buffers through CUDA IPC).
    void set_last_algorithm(Collective c, const char *name) { last_algorithm_[static_cast<int>(c)] = name; }
    size_t cached_plans() const { return plans_.size(); }
    uint64_t plan_builds() const { return plan_builds_; }

  private:
    // The thread that started this communicator's last nonblocking or
    // persistent call: the one whose waits may progress it.
    std::atomic<std::thread::id> caller_thread_{};
    void note_caller_thread() { caller_thread_.store(std::this_thread::get_id(), std::memory_order_relaxed); }
    std::unique_ptr<Router> router_;
    int rank_ = 0, size_ = 1;
    Config config_;
    uint32_t next_tag_ = 0;
    const char *last_algorithm_[kCollectiveCount] = {};
    std::set<std::pair<int, int>> explained_;  // (collective, size bucket) already explained
    void explain_once(const CollArgs &args, const CachedPlan &plan);
    // verbose >= 1: explain_once on rank 0; >= 2: a line for every call.
    void say_choice(const CollArgs &args, const CachedPlan &plan, long long verbose);
    // Collectives still running when the communicator is freed: finished if
    // they can be within a while, else abandoned with an error.
    void finish_active();
    // The selection and the plan for one key, made once. `id` names it to
    // the transports (never reused, so a request still running an evicted
    // plan keeps its transports' policy for it).
    // Fills what every call needs besides its shape: rank count, element
    // size, in-place, the node layout.
    void complete_args(CollArgs &args, loom_datatype_t type, bool in_place) const;
    // Tells the router of evicted plans no request runs any more.
    void forget_retired_plans();
    // What only choosing and building a plan reads besides the call's
    // shape: the parameters' knobs and the alltoall piece size. Plans are
    // cached under the parameters' generation, so a call whose plan is
    // cached needs none.
    PlanKnobs knobs_for(const CollArgs &args) const;
    // The plan for `args`; `for_thread`: for calls the progress thread may drive.
    // `adapted`: the algorithm adaptation chose instead of the selector.
    Status plan_for(const CollArgs &args, bool for_thread, const CachedPlan **out,
                    const AlgorithmInfo *adapted = nullptr);
    Status lookup_plan(const CollArgs &args, bool for_thread, const CachedPlan **out,
                       const AlgorithmInfo *adapted = nullptr);
    // plan_for, then say_choice as the verbose parameter asks.
    Status choose_plan(const CollArgs &args, bool for_thread, const CachedPlan **out,
                       const AlgorithmInfo *adapted = nullptr);

    // Online adaptation (parameter adapt, select/adapt.hpp): blocking calls
    // learn; nonblocking and persistent ones take what was learnt so far,
    // which changes only inside blocking calls, on every rank alike.
    bool adapting() {
        if (adapt_seen_.changed(config_)) decide_adapt();
        return adapt_ != nullptr;
    }
    void decide_adapt();
    bool adaptable(const CollArgs &args) const;
    const AlgorithmInfo *adapted_choice(const CollArgs &args);
    std::vector<const AlgorithmInfo *> adapt_candidates(const CollArgs &args);
    Status run_adapted(CollArgs &args, const CallData &call);
    // A repeated shared-slots call that is the class's turn: run and timed on the fast path.
    bool repeat_slots_adapted(const void *sendbuf, bool in_place, void *recvbuf, loom_datatype_t type, loom_op_t op,
                              Status *status);
    // Counts a call's time; where the class's agreement is due, runs it.
    Status adapted_call_done(const AdaptiveChoice::Turn &turn, uint64_t ns, bool measured);
    std::unique_ptr<AdaptiveChoice> adapt_;
    ParamsSeen adapt_seen_;
    uint64_t adapt_fingerprint_ = 0;  // of the parameters that steer the choice, when learning began
    std::atomic<int64_t> rails_changes_{0};
    // Completes args in place (they are the caller's scratch) and starts the
    // plan; a blocking call may be timed (timed_plan_).
    Status start_into(Request &req, CollArgs &args, const CallData &call, bool blocking = false);
    // Counts the call and hands it to its path's runner, on `req` (args completed).
    Status launch(Request &req, const CollArgs &args, const CallData &call, const CachedPlan &plan, bool blocking);
    friend class PathRunner;
    friend class PlanPath;
    friend class SharedSlotsPath;
    friend class NodeSlotsPath;
    friend class CudaIpcPath;
    friend class CountsFirstPath;
    // The second stage of start_after_counts, on `req` (its args_ and call_
    // complete): selects, plans and starts the call on `tag`. On the
    // progress thread, a plan the thread may not drive is left to the
    // caller: the request stays in its first stage, no longer thread-driven.
    Status start_planned(Request &req, uint32_t tag);
    // Waits for a blocking call started on `req`; the time goes to the
    // transport that asked for it (the rails' weights).
    Status wait_blocking(Request &req) {
        if (timed_plan_ == Route::kNoPlan) return req.wait();
        const uint32_t timed = timed_plan_;
        const Status st = req.wait();
        if (st == LOOM_SUCCESS) router_->call_ends(timed, now_ns() - timed_start_ns_);
        return st;
    }
    // The next call's tag, the same on every rank.
    uint32_t take_tag() {
        const uint32_t tag = next_tag_;
        next_tag_ = next_tag_ >= router_->max_tag() ? 0 : next_tag_ + 1;
        return tag;
    }
    // The shared slots are there for a call chosen to run on them.
    Status check_slots(const CollArgs &args) const {
        if (size_ > 1 && (!slots_ || slots_->size() != size_)) return slots_missing(args);
        return LOOM_SUCCESS;
    }
    Status slots_missing(const CollArgs &args) const;
    // What every call does before its path starts it: refused on a closed
    // communicator, counted, named.
    Status begin_call(Request &req, const CollArgs &args, const CachedPlan &plan) {
        LOOM_RETURN_IF_ERROR(closed());
        started_any_ = true;
        last_algorithm_[static_cast<int>(args.collective)] = plan.algorithm->name;
        req.call_number_ = enter_call();
        req.collective_ = args.collective;
        req.count_ = args.count;
        req.elem_size_ = args.elem_size;
        req.algorithm_ = plan.algorithm->name;
        return LOOM_SUCCESS;
    }
    // A shared-slots call whose peer published another call's signature.
    std::string slot_mismatch(const CollArgs &args, int peer) const;
    // Between two polls of a shared-slots call that found a peer not
    // there yet: spin on our core, or give it away where ranks share cores
    // (true then).
    bool wait_for_slots(uint32_t polls);
    // Whether a wait may sleep in the kernel (parameter wait), and after how
    // long without news; re-read when the parameters change.
    bool sleeping_waits() {
        if (sleep_seen_.changed(config_)) decide_sleeping_waits();
        return sleeping_waits_;
    }
    void decide_sleeping_waits();
    bool sleeping_waits_ = false;
    uint64_t wait_spin_ns_ = 0;
    ParamsSeen sleep_seen_;

    // The step timeline (parameter trace): the file, this communicator's
    // number in it and its calls so far; re-read when the parameters change.
    std::shared_ptr<TraceFile> trace_file_;
    uint32_t trace_comm_ = 0;
    uint64_t trace_calls_ = 0;
    ParamsSeen trace_seen_;
    bool tracing() {
        if (trace_seen_.changed(config_)) refresh_trace();
        return trace_file_ != nullptr;
    }
    void refresh_trace();
    // Arms the request's record for a call of `plan` (steps: with a program).
    void trace_begin(Request &req, const CollArgs &args, const char *algorithm, uint32_t plan, const char *kind,
                     const Program *program);
    void trace_end(Request &req);

    PlanCache plans_;
    std::unique_ptr<Request> blocking_;  // reused by run(): blocking calls allocate nothing
    // The blocking call a transport asked to be timed (kNoPlan: none).
    uint32_t timed_plan_ = Route::kNoPlan;
    uint64_t timed_start_ns_ = 0;
    uint64_t plan_builds_ = 0;
    std::vector<Request *> active_;
    std::vector<Request *> live_;  // every request not yet destroyed: freeing the communicator detaches them
    BufferPool spare_buffers_;     // scratch and snapshots of destroyed requests
    // A request of this communicator, registered (freeing the communicator detaches it).
    std::unique_ptr<Request> make_request();
    bool progressing_ = false;
    // The progress thread. While it is attached, every entry point holds
    // mutex_ (recursive: a transport may run a progress engine that calls
    // back into Loom), and the thread takes it only when it is free.
    std::recursive_mutex mutex_;
    bool threaded_ = false;  // attached; changed by the caller only, before the thread sees the communicator
    bool thread_progressing_ = false;  // the thread is advancing the requests (progress_from_thread)
    bool thread_decided_ = false;
    int lock_depth_ = 0;        // Guards held (by the holder of mutex_)
    bool wake_thread_ = false;  // a call for the thread started: wake it when the last Guard goes
    std::atomic<bool> thread_locked_out_{false};
    Doorbell doorbell_;
    std::atomic<bool> rails_attached_{false};
    uint64_t thread_driven_calls_ = 0, caller_driven_calls_ = 0;
    std::string caller_driven_why_;                // why auto left the thread off
    const char *caller_driven_blocker_ = nullptr;  // the transport of the last call the thread could not drive
    // Attaches the thread if the progress_thread parameter asks for it, before a nonblocking or persistent call.
    void use_progress_thread();
    // Whether this rank may spin: it has a core of its own (topo/placement.hpp).
    bool core_per_local_rank(bool trust_yield_hint = true) const;
    class Guard;
    friend class Guard;
    bool started_any_ = false;
    size_t persistent_requests_ = 0;  // alive: active_ keeps room for all of them
    int shared_memory_ranks_ = 1;
    // The slots of this rank's node group (the whole communicator's when
    // the node holds it); the generations this rank started and finished;
    // whether a wait for them yields the core (this node's ranks share
    // cores, or Open MPI says so).
    std::unique_ptr<SharedSlots> slots_;
    std::vector<int> slot_group_;  // the node group's communicator ranks
    bool node_slots_allowed_ = true;
    bool node_slots_ready_ = false;  // CollArgs::node_slots
    void decide_node_slots();
    uint64_t slots_started_ = 0, slots_finished_ = 0;
    bool slots_yield_ = false;
    bool engine_yields_ = false;                   // the progress engine below yields by itself (Request::wait's rule)
    ParamsSeen slots_wait_seen_;                   // what slots_yield_ and engine_yields_ were decided under
    // A blocking shared-slots call to completion on this thread (earlier
    // nonblocking ones are progressed while it waits for them).
    Status run_slots(const CollArgs &args, const CallData &call, ReduceFn reduce, uint64_t signature);
    static ReduceFn slot_reduction(Collective c, const CallData &call);  // null for movements
    // The shape repeat_slots recognises: the last blocking shared-slots call's.
    struct SlotShape {
        bool valid = false;
        CollArgs args;  // completed
        loom_datatype_t type = LOOM_BYTE;
        loom_op_t op = LOOM_SUM;
        ReduceFn reduce = nullptr;
        uint64_t generation = 0;  // the parameters'
        uint64_t signature = 0;   // SlotCall::call_signature
        bool has_input = false;   // a nonzero count: the buffers must be there
        const char *name = nullptr;
    };
    SlotShape slot_shape_;
    // The attached rings: the largest message they carry (fixed when they
    // were attached, as the transport's) and their size; alltoall pieces fit them.
    size_t ring_message_max_ = 0;
    size_t ring_bytes_ = 0;
    std::string rails_state_;
    uint64_t rails_fallbacks_ = 0;
    std::vector<DeferredSetup> deferred_;
    struct Periodic {
        uint64_t every;
        size_t min_bytes;
        Upkeep fn;
        void *context;
        uint64_t calls;
    };
    std::vector<Periodic> periodic_;
    void run_periodic(CollArgs &args, const CallData &call);
    // Hang reports (parameters hang_timeout, hang_abort). Every call counts
    // itself on entry, in this rank's inbox too, where the node's other
    // ranks read it; a call abandoned under hang_abort leaves its message
    // here and every later call fails with it.
    uint64_t calls_entered_ = 0;
    uint64_t enter_call() {
        ++calls_entered_;
        if (slots_) slots_->set_calls_entered(calls_entered_);
        return calls_entered_;
    }
    std::string abandoned_;
    // Calls whose ranks disagree (LOOM_ERR_MISMATCH): the communicator is
    // revoked, as ULFM revokes one. The rank that finds it tells its peers
    // through the transports; ranks waiting in that call or a later one read
    // it every kLooksPerRevokeCheck looks and fail too. Every later call
    // fails with `revoked_`.
    std::string revoked_;
    uint64_t untold_revoke_ = 0;  // found on the progress thread: the caller's next test tells the peers
    static constexpr uint32_t kLooksPerRevokeCheck = 256;
    void revoke(uint64_t call, const std::string &why, bool tell_peers);
    // This rank found `collective` #call mismatched (`what`): revokes and
    // tells the peers; the error the call fails with.
    const std::string &revoke_found(Collective collective, uint64_t call, const std::string &what);
    // Whether a peer revoked collective `call` or an earlier one; if so this
    // rank revokes too (revoked_ names that peer).
    bool revoked_by_peer(uint64_t call);
    // The error of a call on an abandoned or revoked communicator (LOOM_SUCCESS: neither).
    Status closed() const;
    uint64_t hang_timeout_ns() const {
        return static_cast<uint64_t>(config_.integer(kParamHangTimeout)) * 1000000000ULL;
    }
    // One call's wait as text; *missing: the ranks it names as missing (this
    // node's that have not entered it, else those it waits for).
    struct Waiting {
        Collective collective;
        size_t count, elem_size;
        const char *algorithm;
        uint64_t call;
        double waited_s;
    };
    std::string describe_wait(const Waiting &w, const Request *req, const SlotCall *slot,
                              std::vector<int> *missing) const;
    // Prints the report once; under hang_abort returns the error the call
    // fails with (LOOM_SUCCESS: it goes on waiting).
    Status report_hang(const Waiting &w, const Request *req, const SlotCall *slot);
    NodeMap nodes_;  // one node until told otherwise  // ranks of this one's node group once shared memory is attached
    friend class Request;
};

}  // namespace loom
