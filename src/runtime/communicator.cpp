#include "runtime/communicator.hpp"

#include "core/clock.hpp"
#include "placement.hpp"
#include "runtime/progress_thread.hpp"
#include "transport/shm/params.hpp"
#include "transport/ucx/params.hpp"

#include "engine/cuda/driver.hpp"
#include "select/call_spec.hpp"
#include "select/rules.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace loom {

const ParamId kParamHangTimeout = declare_param(
    ParamSection::diagnostics,
    {"hang_timeout", ParamType::integer, "0", 3,
     "Seconds a collective may wait before it prints, once, who it waits for: its collective and call number, "
     "the ranks of this node that have not entered it, and the ranks whose messages or shared slots it waits "
     "for (loom_comm_state gives the same text); 0 waits for ever without a word, as MPI does",
     0, 1LL << 30, Collective::allreduce});
const ParamId kParamHangAbort = declare_param(
    ParamSection::diagnostics,
    {"hang_abort", ParamType::integer, "0", 3,
     "1: a collective that has waited hang_timeout seconds fails with an error naming the ranks it waits for, "
     "and every later collective on the communicator fails with it (free the communicator); 0: it goes on "
     "waiting, as MPI does",
     0, 1, Collective::allreduce});

const ParamId kParamSlotsWait = declare_param(
    ParamSection::progress,
    {"slots_wait", ParamType::choice, "auto", 5,
     "How a rank waits for the others in a shared-slots call: spin on their generation words; yield, giving "
     "its core away between looks (through the progress engine below where it yields by itself, as Open MPI's "
     "does with mpi_yield_when_idle); auto, spin where this rank has a core of its own (bound to one core, or as "
     "many cores as ranks on the node) and yield otherwise. coll/loom sets yield where Open MPI's "
     "mpi_yield_when_idle is on (mpirun sets it when it oversubscribes)",
     0, 0, Collective::allreduce, "auto,spin,yield"});
const ParamId kParamWait = declare_param(
    ParamSection::progress,
    {"wait", ParamType::choice, "auto", 4,
     "How a rank waits for a collective's messages: spin, polling without pause; sleep, after wait_spin_us "
     "without news, in the kernel until a transport that can wake it (the rails' UCX workers) has news, at most "
     "a millisecond at a time (the others are polled between sleeps); auto, sleep where this rank shares its "
     "cores with other ranks (bound to fewer cores than one each, or more ranks on the node than cores) and "
     "spin otherwise",
     0, 0, Collective::allreduce, "auto,spin,sleep"});
const ParamId kParamWaitSpinUs = declare_param(
    ParamSection::progress, {"wait_spin_us", ParamType::integer, "50", 5,
                             "How long a wait that may sleep polls without news before it sleeps, in microseconds", 0,
                             1LL << 30, Collective::allreduce});

// Holds the communicator's lock while the progress thread is attached.
// The last one out wakes the thread when it has new work or was locked out.
class Communicator::Guard {
  public:
    explicit Guard(Communicator &c) : comm_(c.threaded_ ? &c : nullptr) {
        if (!comm_) return;
        comm_->mutex_.lock();
        ++comm_->lock_depth_;
    }
    ~Guard() {
        if (!comm_) return;
        const bool last = --comm_->lock_depth_ == 0;
        bool wake = false;
        if (last) {
            wake = comm_->wake_thread_;
            comm_->wake_thread_ = false;
        }
        comm_->mutex_.unlock();
        if (!last) return;
        // The thread marks itself locked out, then tries the lock once more:
        // it either gets it or is seen here.
        if (comm_->thread_locked_out_.exchange(false, std::memory_order_seq_cst)) wake = true;
        if (wake) ProgressThread::instance().wake();
    }
    Guard(const Guard &) = delete;
    Guard &operator=(const Guard &) = delete;

  private:
    Communicator *comm_;
};

namespace {
template <typename T>
void erase_one(std::vector<T> &v, T x) {
    v.erase(std::remove(v.begin(), v.end(), x), v.end());
}

// Every live communicator of the process, for progress_other_communicators.
// Never destroyed: a communicator may be freed after static destructors ran.
std::recursive_mutex &live_communicators_mutex() {
    static auto *m = new std::recursive_mutex;
    return *m;
}
std::vector<Communicator *> &live_communicators() {
    static auto *v = new std::vector<Communicator *>;
    return *v;
}
thread_local bool walking_communicators = false;

// What --explain and verbose say of a nonblocking call's progress with the thread on.
std::string progress_note(const CachedPlan &plan) {
    const CallPathTraits &path = traits_of(plan.algorithm->path);
    if (!path.thread_drivable) return std::string("; progressed by the caller's calls (") + path.name + ")";
    if (plan.thread_drivable) return "; progressed by the progress thread";
    if (plan.thread_blocker)
        return std::string("; progressed by the caller's calls (messages on ") + plan.thread_blocker +
               ", which the progress thread may not drive)";
    return "";
}

}  // namespace

std::string Communicator::slot_mismatch(const CollArgs &args, int peer) const {
    return "shared slots: rank " + std::to_string(peer) +
           " made another call (collective, count, datatype or op) "
           "where rank " +
           std::to_string(rank_) + " made " + args.describe() +
           "; every rank must make the same collective calls in the same order (the output is left untouched)";
}

Status Communicator::slots_missing(const CollArgs &args) const {
    return fail(LOOM_ERR_INTERNAL, "shared slots chosen for " + args.describe() + " without shared memory");
}

Request::~Request() {
    if (!comm_) return;
    // A running request is finished first: Loom never leaves a user buffer
    // half written, nor a transport holding this request's handles.
    if (running()) {
        Status st = wait();
        (void)st;  // nobody is left to tell
    }
    Communicator::Guard g(*comm_);
    erase_one(comm_->active_, this);
    erase_one(comm_->live_, this);
    if (persistent_) --comm_->persistent_requests_;
    comm_->spare_buffers_.keep(std::move(scratch_));
    comm_->spare_buffers_.keep(std::move(snapshot_));
}

std::unique_ptr<Request> Communicator::make_request() {
    auto req = std::make_unique<Request>();
    req->comm_ = this;
    live_.push_back(req.get());
    return req;
}

Status Request::start() {
    if (!persistent_)
        return fail(LOOM_ERR_INVALID_ARGUMENT,
                    "loom_start: not a persistent request (make one with a loom_*_init call)");
    if (!comm_) return result();
    Communicator::Guard g(*comm_);
    if (!finished_)
        return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_start: the request is still active (test or wait for it first)");
    comm_->note_caller_thread();
    return comm_->launch(*this, args_, call_, plan_, false);
}

Status Request::advance() {
    if (finished_) return error_;
    return path_->advance(*this);
}

void Request::finish() {
    finished_ = true;
    erase_one(comm_->active_, this);
    if (traced_) comm_->trace_end(*this);
}

bool Request::running() {
    if (!comm_) return false;
    Communicator::Guard g(*comm_);
    const auto &active = comm_->active_;
    return std::find(active.begin(), active.end(), this) != active.end();
}

Status Request::result() const { return error_ == LOOM_SUCCESS ? LOOM_SUCCESS : fail(error_, error_message_); }

void Request::end_with(Status error, std::string message) {
    error_ = error;
    error_message_ = std::move(message);
    path_->withdraw(*this);
    finish();
}

void Request::mismatched() { error_message_ = comm_->revoke_found(collective_, call_number_, error_message_); }

Status Request::test(bool *done) {
    if (!comm_) {  // its communicator was freed: finished or abandoned then
        *done = true;
        return result();
    }
    Communicator::Guard g(*comm_);
    // What the progress thread left to the caller's thread (the rails'
    // failover answers, which go through the PML).
    LOOM_RETURN_IF_ERROR(comm_->transport().caller_turn());
    if (comm_->untold_revoke_) {
        comm_->transport().revoke(comm_->untold_revoke_);
        comm_->untold_revoke_ = 0;
    }
    if (!finished_) {
        if (comm_->active_.size() == 1 && comm_->active_[0] == this && !comm_->progressing_) {
            advance();  // the only request: skip the walk over the others
        } else {
            Status others = comm_->progress_all();
            (void)others;  // another request's error is reported by that request
        }
        // For wait(): what has moved, read here under the lock (the progress thread moves it too).
        news_seen_ = !finished_ && execution_ && comm_->sleeping_waits()
                         ? execution_->completed_steps() + comm_->transport().data_movements()
                         : kNoNews;
        polls_slots_ = !finished_ && path_->polls_shared_memory();
    }
    if (!finished_ && hang_.due([this] { return comm_->hang_timeout_ns(); })) {
        const Communicator::Waiting w{collective_, count_, elem_size_, algorithm_, call_number_, hang_.waited_s()};
        const Status st = comm_->report_hang(w, this, nullptr);
        if (st != LOOM_SUCCESS) end_with(st, last_error_message());  // hang_abort: the call ends here with the report
    }
    if (!finished_ && ++revoke_looks_ % Communicator::kLooksPerRevokeCheck == 0 && comm_->revoked_by_peer(call_number_))
        end_with(LOOM_ERR_MISMATCH, comm_->revoked_);
    *done = finished_;
    // Now and then the other communicators' calls too, as MPI_Test would:
    // a peer may be waiting for one of them before it can serve this one.
    if (!finished_ && ++unfinished_tests_ % kTestsPerWalk == 0) Communicator::progress_other_communicators(comm_);
    return result();
}

Status Request::wait() {
    bool done = false;
    // Sleeping waits: the news seen last (steps completed, data moved) and since when.
    uint64_t news = UINT64_MAX, quiet_since = 0;
    for (uint32_t polls = 0;; ++polls) {
        LOOM_RETURN_IF_ERROR(test(&done));
        if (done) return LOOM_SUCCESS;  // test() also moves the other communicators now and then
        ++waits_.polls;
        if (!comm_) continue;  // freed meanwhile: the next test reports it
        if (polls_slots_) {
            if (comm_->wait_for_slots(polls)) ++waits_.yields;
            continue;
        }
        if (news_seen_ != kNoNews) {  // test() found sleeping waits on, and what had moved
            const uint64_t now = now_ns();
            if (news_seen_ != news) {
                news = news_seen_;
                quiet_since = now;
            } else if (now - quiet_since >= comm_->wait_spin_ns_) {
                bool armed = false;
                {
                    Communicator::Guard g(*comm_);  // the transports are the progress thread's too
                    armed = comm_->transport().arm_for_sleep();
                }
                if (armed) {
                    comm_->transport().sleep_armed(kSleepUs);
                    ++waits_.sleeps;
                    continue;
                }
            }
        }
        if (comm_->transport().oversubscribed()) {
            sched_yield();  // let the ranks we wait for run
            ++waits_.yields;
        }
    }
}

namespace {
std::string rank_list(const std::vector<int> &ranks) {
    std::string s;
    for (int r : ranks) s += (s.empty() ? "" : " ") + std::to_string(r);
    return s;
}
}  // namespace

std::string Communicator::describe_wait(const Waiting &w, const Request *req, const SlotCall *slot,
                                        std::vector<int> *missing) const {
    // This node's ranks that have (not) entered the call, from their inboxes.
    std::vector<int> absent, present;
    if (slots_)
        for (size_t i = 0; i < slot_group_.size(); ++i) {
            uint64_t entered = 0;
            if (slot_group_[i] == rank_) continue;
            const bool known = slots_->peer_calls_entered(static_cast<int>(i), &entered);
            (known && entered >= w.call ? present : absent).push_back(slot_group_[i]);
        }
    std::vector<int> local, slot_peers, receives_from, sends_to;
    if (slot) slot->unpublished(&local);
    if (req) req->path_->slots_waited(*req, &local);
    for (int i : local) slot_peers.push_back(slot_group_[static_cast<size_t>(i)]);
    const Execution *running_plan = req ? req->path_->running_plan(*req) : nullptr;
    if (running_plan) running_plan->pending_peers(&receives_from, &sends_to);

    char head[160];
    std::snprintf(head, sizeof head, "%s #%llu (count %zu x %zu B, %s) on rank %d of %d has waited %.1f s",
                  collective_name(w.collective), static_cast<unsigned long long>(w.call), w.count, w.elem_size,
                  w.algorithm && *w.algorithm ? w.algorithm : "no algorithm yet", rank_, size_, w.waited_s);
    std::string text = head;
    if (slot_group_.size() > 1) {
        text += "; on this node, ranks that have not entered it: " + (absent.empty() ? "none" : rank_list(absent));
        if (!present.empty()) text += ", that have: " + rank_list(present);
    }
    if (!slot_peers.empty()) text += "; it waits for the shared slots of ranks " + rank_list(slot_peers);
    if (running_plan) {
        text += "; step " + std::to_string(running_plan->completed_steps()) + " of " +
                std::to_string(running_plan->program().size()) + " done";
        if (!receives_from.empty()) text += ", waiting for messages from ranks " + rank_list(receives_from);
        if (!sends_to.empty()) text += ", its messages to ranks " + rank_list(sends_to) + " not yet taken";
    }
    if (missing) {
        if (!absent.empty()) *missing = absent;
        else if (!slot_peers.empty()) *missing = slot_peers;
        else if (!receives_from.empty()) *missing = receives_from;
        else *missing = sends_to;
    }
    return text;
}

Status Communicator::report_hang(const Waiting &w, const Request *req, const SlotCall *slot) {
    std::vector<int> missing;
    const std::string text = describe_wait(w, req, slot, &missing);
    const bool abort = config_.integer(kParamHangAbort) != 0;
    std::fprintf(stderr, "loom[%d]: hang_timeout: %s%s\n", rank_, text.c_str(),
                 abort ? " (hang_abort: the call fails)" : " (it goes on waiting)");
    if (!abort) return LOOM_SUCCESS;
    router_->call_abandoned();
    abandoned_ = "a collective on this communicator was abandoned after hang_timeout (" +
                 std::to_string(config_.integer(kParamHangTimeout)) + " s), waiting for ranks " +
                 (missing.empty() ? std::string("unknown") : rank_list(missing)) + ": " + text +
                 "; every later collective on it fails (free it)";
    return fail(LOOM_ERR_TIMEOUT, abandoned_);
}

void Communicator::revoke(uint64_t call, const std::string &why, bool tell_peers) {
    if (revoked_.empty())
        revoked_ = why + "; the communicator is revoked: every later collective on it fails (free it)";
    router_->call_abandoned();  // messages of the mismatched call may never be received
    if (!tell_peers) return;
    router_->revoke(call);
    if (t_on_progress_thread) untold_revoke_ = call;  // transports that enter MPI are told from the caller's thread
}

const std::string &Communicator::revoke_found(Collective collective, uint64_t call, const std::string &what) {
    char head[96];
    std::snprintf(head, sizeof head, "%s #%llu on rank %d: ", collective_name(collective),
                  static_cast<unsigned long long>(call), rank_);
    revoke(call, head + what, true);
    return revoked_;
}

bool Communicator::revoked_by_peer(uint64_t call) {
    uint64_t revoked = 0;
    int peer = -1;
    if (!router_->revoked_by_peer(&revoked, &peer) || revoked > call) return false;
    revoke(call,
           "rank " + std::to_string(peer) + " found that the ranks called collective #" + std::to_string(revoked) +
               " with different arguments (count, type or op)",
           false);
    return true;
}

Status Communicator::closed() const {
    if (!abandoned_.empty()) return fail(LOOM_ERR_TIMEOUT, abandoned_);
    if (!revoked_.empty()) return fail(LOOM_ERR_MISMATCH, revoked_);
    return LOOM_SUCCESS;
}

std::string Communicator::state() const {
    std::string text;
    for (const Request *r : active_) {
        const Waiting w{r->collective_, r->count_,       r->elem_size_,
                        r->algorithm_,  r->call_number_, r->hang_.waited_s_now()};
        text += (text.empty() ? "" : "\n") + describe_wait(w, r, nullptr, nullptr);
    }
    if (!abandoned_.empty()) text += (text.empty() ? "" : "\n") + abandoned_;
    if (!revoked_.empty()) text += (text.empty() ? "" : "\n") + revoked_;
    return text.empty() ? "idle" : text;
}

void Communicator::decide_sleeping_waits() {
    const long long mode = config_.integer(kParamWait);
    // Counted, not hinted: sleeping on the rails costs bandwidth where a
    // rank could spin (docs/performance.md), and launchers set the hint
    // whether or not the cores are shared.
    sleeping_waits_ = mode == kWaitSleep || (mode == kWaitAuto && !core_per_local_rank(/*trust_yield_hint=*/false));
    wait_spin_ns_ = static_cast<uint64_t>(config_.integer(kParamWaitSpinUs)) * 1000;
}

bool Communicator::wait_for_slots(uint32_t polls) {
    if (slots_wait_seen_.changed(config_)) {  // the parameter, read once per value
        const long long mode = config_.integer(kParamSlotsWait);
        slots_yield_ = mode == kSlotsWaitYield || (mode == kSlotsWaitAuto && !core_per_local_rank());
        engine_yields_ = router_->drives_progress_engine() && !router_->oversubscribed();
    }
    // Messages of other calls still need the progress engine below. Where
    // there is one it decides about yielding, as in Request::wait (Open
    // MPI's yields when mpi_yield_when_idle is on): a second yield per look
    // made an 8-byte allreduce at 4 ranks on 2 cores take 21 us, not 11.
    if (slots_yield_) {
        Status st = router_->idle();
        (void)st;  // the calls whose messages failed report it
        if (!engine_yields_) sched_yield();
        return true;
    }
    if (polls % 256 == 255) {
        Status st = router_->idle();
        (void)st;
    } else {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
    return false;
}

bool Communicator::progress_from_thread(bool *pending, bool *moved) {
    std::unique_lock<std::recursive_mutex> lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock()) {
        // The caller is inside a call: it wakes the thread on leaving, if
        // it sees this mark; if it left before, the second try succeeds.
        thread_locked_out_.store(true, std::memory_order_seq_cst);
        if (!lock.try_lock()) return false;
    }
    const uint64_t movements = router_->data_movements();
    thread_progressing_ = true;
    for (size_t i = active_.size(); i-- > 0;) {
        if (i >= active_.size()) continue;
        Request &r = *active_[i];
        if (!r.thread_driven_) continue;
        // A call learning its counts has no execution until it is planned.
        const PathRunner *path = r.path_;
        const size_t steps = r.execution_ ? r.execution_->completed_steps() : 0;
        r.advance();  // an error stays in the request for its caller
        if (r.finished_ || r.path_ != path || (r.execution_ && r.execution_->completed_steps() != steps)) *moved = true;
        if (!r.finished_) *pending = true;
    }
    thread_progressing_ = false;
    if (router_->data_movements() != movements) *moved = true;
    return true;
}

bool Communicator::arm_for_thread_sleep(std::vector<int> *fds) {
    if (!rails_attached_.load(std::memory_order_acquire)) return false;
    std::unique_lock<std::recursive_mutex> lock(mutex_, std::try_to_lock);
    return lock.owns_lock() && router_->arm_for_sleep(fds);
}

bool Communicator::core_per_local_rank(bool trust_yield_hint) const {
    // Emulated nodes are all on this machine.
    return core_per_rank(nodes_.emulated ? size_ : shared_memory_ranks_, trust_yield_hint);
}

void Communicator::use_progress_thread() {
    if (thread_decided_) return;
    thread_decided_ = true;
    const long long mode = config_.integer(kParamProgressThread);
    if (mode == kProgressThreadOff) return;
    if (mode == kProgressThreadAuto && !spare_core_per_rank(shared_memory_ranks_)) {
        caller_driven_why_ = "auto: no core to spare for it";
        return;
    }
    doorbell_ = router_->doorbell();
    router_->ring_peers();
    threaded_ = true;
    ProgressThread::instance().attach(this);
}

std::string Communicator::progress_state() const {
    if (!threaded_) return caller_driven_why_.empty() ? "off" : "off (" + caller_driven_why_ + ")";
    std::string s = "on: " + std::to_string(thread_driven_calls_) + " calls driven by the thread, " +
                    std::to_string(caller_driven_calls_) + " by the caller";
    if (caller_driven_calls_) s += std::string(" (messages on ") + caller_driven_blocker_ + ")";
    return s;
}

Status Communicator::progress_all() {
    // A transport may run the caller's progress engine, which may call back
    // into Loom (coll/loom's progress callback): never progress one
    // communicator from inside its own progress.
    if (progressing_) return LOOM_SUCCESS;
    Guard g(*this);
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

void Communicator::progress_other_communicators(const Communicator *except) {
    if (walking_communicators) return;  // a transport's progress engine called back into Loom
    walking_communicators = true;
    {
        std::lock_guard<std::recursive_mutex> lock(live_communicators_mutex());
        const std::thread::id me = std::this_thread::get_id();
        for (Communicator *c : live_communicators()) {
            // Only this thread's: another thread may be inside one of its own.
            if (c == except || c->caller_thread_.load(std::memory_order_relaxed) != me) continue;
            // Never wait for another communicator's lock while holding the
            // registry's: where the progress thread is inside, it moves them.
            std::unique_lock<std::recursive_mutex> held;
            if (c->threaded_) {
                held = std::unique_lock<std::recursive_mutex>(c->mutex_, std::try_to_lock);
                if (!held.owns_lock()) continue;
            }
            Status st = c->progress_all();
            (void)st;  // each request keeps its own error
        }
    }
    walking_communicators = false;
}

Communicator::Communicator(std::unique_ptr<Transport> transport, Config config)
    : router_(std::make_unique<Router>(std::move(transport))),
      rank_(router_->rank()),
      size_(router_->size()),
      config_(std::move(config)) {
    nodes_ = NodeMap::single_node(size_);
    std::lock_guard<std::recursive_mutex> lock(live_communicators_mutex());
    live_communicators().push_back(this);
}

Communicator::~Communicator() {
    if (threaded_) ProgressThread::instance().detach(this);
    threaded_ = false;  // only this thread is left
    finish_active();
    {
        std::lock_guard<std::recursive_mutex> lock(live_communicators_mutex());
        erase_one(live_communicators(), this);
    }
    blocking_.reset();  // before active_ goes: the request unregisters itself
    for (Request *r : live_) r->comm_ = nullptr;
}

void Communicator::finish_active() {
    // Every rank frees the communicator (MPI_Comm_free, MPI_Finalize): what
    // was started on all of them finishes here.
    constexpr uint64_t kFinishNs = 10'000'000'000ULL;
    const uint64_t deadline = now_ns() + kFinishNs;
    while (!active_.empty() && now_ns() < deadline) {
        Status st = progress_all();
        (void)st;  // each request keeps its own error
        if (active_.empty()) break;
        progress_other_communicators(this);  // the peers may wait for another communicator's call of ours first
        if (router_->oversubscribed()) sched_yield();
    }
    if (active_.empty()) return;
    std::fprintf(stderr,
                 "loom[%d]: a communicator was freed with %zu collectives still running, unfinished after %llu s "
                 "(did every rank start them?); they are abandoned with an error\n",
                 rank_, active_.size(), static_cast<unsigned long long>(kFinishNs / 1000000000ULL));
    for (Request *r : active_) {
        r->finished_ = true;
        r->error_ = LOOM_ERR_TRANSPORT;
        r->error_message_ = "the communicator was freed while this collective was running";
    }
    active_.clear();
}

Status Communicator::plan_for(const CollArgs &a, bool for_thread, const CachedPlan **out,
                              const AlgorithmInfo *adapted) {
    if ((*out = plans_.last(a, config_.generation(), for_thread, adapted))) return LOOM_SUCCESS;
    LOOM_RETURN_IF_ERROR(lookup_plan(a, for_thread, out, adapted));
    plans_.remember_last(a, config_.generation(), *out, for_thread, adapted);
    return LOOM_SUCCESS;
}

Status Communicator::lookup_plan(const CollArgs &a, bool for_thread, const CachedPlan **out,
                                 const AlgorithmInfo *adapted) {
    PlanKey key = PlanKey::of(a, config_.generation(), for_thread, adapted);
    if ((*out = plans_.find(key))) return LOOM_SUCCESS;
    Selection sel;
    PlanKnobs knobs = knobs_for(a);
    if (adapted) {
        // The selector's own choice keeps its rule's knobs (segment size, radix ...).
        Selection chosen;
        if (select_algorithm(config_, a, &chosen, knobs) == LOOM_SUCCESS && chosen.algorithm == adapted) {
            sel = std::move(chosen);
        } else {
            sel.algorithm = adapted;
            sel.why = "adapt: measured on this communicator";
        }
    } else {
        LOOM_RETURN_IF_ERROR(select_algorithm(config_, a, &sel, knobs));
    }
    ++plan_builds_;
    sel.apply_knobs(&knobs);  // a rule's segment size, radix ...
    Program program = build_program(*sel.algorithm, a, knobs, rank());
    forget_retired_plans();
    // Selection refused memory without an engine; host steps run inline.
    Engine *engine = a.memory == MemoryType::host ? nullptr : engine_for(a.memory);
    CachedPlan plan{sel.algorithm, sel.why, std::make_shared<const Program>(std::move(program)), plans_.take_id(),
                    engine};
    plan.runner = &runner_for(sel.algorithm->path);
    plan.for_progress_thread = for_thread;
    const CallPathTraits &path = traits_of(sel.algorithm->path);
    if (path.builds_plan) router_->plan_added(plan.id, static_cast<uint32_t>(PlanKeyHash{}(key)), a, for_thread);
    if (for_thread && path.thread_drivable) {
        plan.thread_blocker = router_->thread_blocker(*plan.program, plan.id, a.elem_size);
        plan.thread_drivable = plan.thread_blocker == nullptr;
    }
    *out = plans_.insert(std::move(key), std::move(plan), static_cast<size_t>(config_.integer(kParamPlanCacheEntries)));
    return LOOM_SUCCESS;
}

void Communicator::forget_retired_plans() {
    // A request keeps its program alive: only ours is left when none runs it.
    plans_.forget_retired([this](uint32_t id) { router_->plan_removed(id); });
}

bool Communicator::predicted_time(CollArgs args, loom_datatype_t type, double *us) const {
    complete_args(args, type, args.in_place);
    Selection sel;
    PlanKnobs knobs = knobs_for(args);
    if (select_algorithm(config_, args, &sel, knobs) != LOOM_SUCCESS) return false;
    sel.apply_knobs(&knobs);
    return predict_time(*sel.algorithm, args, knobs, model_for(config_), us) == LOOM_SUCCESS;
}

void Communicator::complete_args(CollArgs &args, loom_datatype_t type, bool in_place) const {
    args.nranks = size();
    args.elem_size = datatype_info(type)->size;
    args.in_place = in_place;
    args.single_node = shared_memory_ranks_ == size() && size() > 1 && nodes_.nodes() <= 1;
    args.nodes = &nodes_;
    args.node_slots = node_slots_ready_;
}

PlanKnobs Communicator::knobs_for(const CollArgs &args) const {
    PlanKnobs knobs;
    knobs_from_config(config_, &knobs);
    knobs.ring_piece_bytes = alltoall_ring_piece_bytes(args, config_, ring_message_max_, ring_bytes_);
    return knobs;
}

Status Communicator::set_nodes(NodeMap nodes) {
    if (nodes.nranks() != size())
        return fail(LOOM_ERR_INVALID_ARGUMENT, "node map for " + std::to_string(nodes.nranks()) +
                                                   " ranks on a communicator of " + std::to_string(size()));
    if (started_any_)
        return fail(LOOM_ERR_INVALID_ARGUMENT, "the node map must be set before the communicator's first collective");
    nodes_ = std::move(nodes);
    decide_node_slots();
    return LOOM_SUCCESS;
}

void Communicator::decide_node_slots() {
    node_slots_ready_ = false;
    if (!node_slots_allowed_ || nodes_.nodes() < 2) return;
    const int node = nodes_.node_of[rank_];
    // A node of one rank needs no slots; it agrees with the others as long
    // as the parameter that turns shared memory off everywhere is on.
    if (nodes_.ranks_on(node) == 1) node_slots_ready_ = config_.integer(kParamSharedMemory) != 0;
    else node_slots_ready_ = slots_ && slot_group_ == nodes_.members[node];
}

Status Communicator::prepare(CollArgs args, loom_datatype_t type, bool in_place, const char **algorithm) {
    Guard g(*this);
    started_any_ = true;  // the plan's choice depends on the transport: no attaching after this
    complete_args(args, type, in_place);
    const CachedPlan *plan = nullptr;
    LOOM_RETURN_IF_ERROR(plan_for(args, /*for_thread=*/false, &plan, adapted_choice(args)));
    if (algorithm) *algorithm = plan->algorithm->name;
    return LOOM_SUCCESS;
}

Status Communicator::start(CollArgs args, const CallData &call, std::unique_ptr<Request> *out) {
    use_progress_thread();
    Guard g(*this);
    // The first collective of any kind is a point every rank reaches in the
    // same order: a program that only makes nonblocking calls gets its rails too.
    if (!deferred_.empty() && active_.empty()) run_deferred();
    note_caller_thread();
    std::unique_ptr<Request> req = make_request();
    LOOM_RETURN_IF_ERROR(start_into(*req, args, call));
    *out = std::move(req);
    return LOOM_SUCCESS;
}

Status Communicator::start_after_counts(CollArgs args, const CallData &call, CountExchange exchange,
                                        std::unique_ptr<Request> *out) {
    use_progress_thread();
    Guard g(*this);
    if (!deferred_.empty() && active_.empty()) run_deferred();  // as start()
    LOOM_RETURN_IF_ERROR(closed());
    note_caller_thread();
    started_any_ = true;
    std::unique_ptr<Request> req = make_request();
    req->arm(this, &counts_first_path_runner());
    CountsFirstState &state = req->path_state<CountsFirstState>();
    state.exchange = std::move(exchange);
    for (CountExchange::Call &c : state.exchange.calls()) {
        c.args.internal = true;
        CallData data;
        data.sendbuf = c.in;
        data.recvbuf = c.out;
        data.type = c.type;
        std::unique_ptr<Request> learning = make_request();
        LOOM_RETURN_IF_ERROR(start_into(*learning, c.args, data));
        state.calls.push_back(std::move(learning));
    }
    // The thread advances the exchange only where it may drive all of it.
    bool drivable = threaded_;
    for (const std::unique_ptr<Request> &learning : state.calls) drivable = drivable && learning->thread_driven_;
    // The alltoallv's own tag and number, taken where every rank takes them.
    state.tag = take_tag();
    complete_args(args, call.type, call.in_place);
    req->call_number_ = enter_call();
    req->collective_ = args.collective;
    req->count_ = args.count;
    req->elem_size_ = args.elem_size;
    req->algorithm_ = "(learning the other ranks' counts)";
    req->args_ = std::move(args);
    req->call_ = call;
    req->thread_driven_ = drivable;
    req->traced_ = false;
    active_.push_back(req.get());
    if (req->thread_driven_) wake_thread_ = true;
    // Where the thread is on but may not drive the exchange, the start
    // moves it for a while: where the ranks start together, the plan
    // starts here and the thread drives it. Only for a while: the other
    // ranks may be starting calls on other communicators first.
    if (threaded_ && !drivable) {
        const uint64_t until = now_ns() + static_cast<uint64_t>(config_.integer(kParamAlltoallvCountsWaitUs)) * 1000;
        while (req->path_ == &counts_first_path_runner() && !req->finished_ && now_ns() < until) {
            // As a test would: the transports' progress may call back into Loom.
            Status st = progress_all();
            (void)st;  // each request keeps its own error
            if (router_->oversubscribed()) sched_yield();
        }
    }
    *out = std::move(req);
    return LOOM_SUCCESS;
}

Status Communicator::start_planned(Request &req, uint32_t tag) {
    LOOM_RETURN_IF_ERROR(closed());  // abandoned or revoked while the counts were learnt
    const CachedPlan *plan = nullptr;
    LOOM_RETURN_IF_ERROR(plan_for(req.args_, threaded_, &plan));
    // The only path that takes its order among the calls from the tag alone.
    if (plan->algorithm->path != CallPath::plan)
        return fail(LOOM_ERR_INTERNAL, std::string("the alltoallv that learnt its counts chose ") +
                                           plan->algorithm->name + ", which does not run a plan");
    // A plan the thread may not drive is started by the caller's next test.
    if (thread_progressing_ && !plan->thread_drivable) {
        req.thread_driven_ = false;
        return LOOM_SUCCESS;
    }
    erase_one(active_, &req);  // the plan's start lists it again
    last_algorithm_[static_cast<int>(req.args_.collective)] = plan->algorithm->name;
    req.algorithm_ = plan->algorithm->name;
    const long long verbose = config_.integer(kParamVerbose);
    if (verbose >= 1) say_choice(req.args_, *plan, verbose);
    // Started on the tag taken at the call's start: calls started since
    // have taken the ones after it, on every rank alike.
    const uint32_t next = next_tag_;
    next_tag_ = tag;
    const Status st = plan->runner->start(*this, req, req.args_, req.call_, *plan, /*blocking=*/false);
    next_tag_ = next;
    return st;
}

Status Communicator::init(CollArgs args, const CallData &call, std::unique_ptr<Request> *out) {
    use_progress_thread();
    Guard g(*this);
    if (!deferred_.empty() && active_.empty()) run_deferred();  // as start(): init is collective too
    std::unique_ptr<Request> req = make_request();
    started_any_ = true;
    complete_args(args, call.type, call.in_place);
    const CachedPlan *plan = nullptr;
    LOOM_RETURN_IF_ERROR(plan_for(args, threaded_, &plan, adapted_choice(args)));
    req->persistent_ = true;
    req->finished_ = true;  // inactive until started
    req->plan_ = *plan;
    req->program_ = plan->program;
    req->call_ = call;
    // Storage a start would otherwise grow on its first run.
    req->scratch_.resize(plan->program->scratch_count * args.elem_size);
    plan->runner->reserve(*req, args, *plan);
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
    slot_group_ = node.local_ranks;
    const size_t ring_bytes = node.geometry.ring_bytes();
    ShmOptions options;
    options.max_bytes = shm_ring_message_limit(node.geometry, static_cast<size_t>(config_.integer(kParamShmMaxBytes)));
    options.alltoall_max_bytes = static_cast<size_t>(config_.integer(kParamAlltoallShmMaxBytes));
    options.single_copy.mode = static_cast<SingleCopyPolicy::Mode>(config_.integer(kParamSingleCopy));
    options.single_copy.min_bytes = static_cast<size_t>(config_.integer(kParamSingleCopyMinBytes));
    LOOM_RETURN_IF_ERROR(make_shared_memory_transport(rank_, size_, std::move(node), options, &shm));
    slots_ = make_shared_slots(*shm);
    router_->add_preferred(std::move(shm));
    shared_memory_ranks_ = node_ranks;
    decide_node_slots();
    ring_message_max_ = options.max_bytes;
    ring_bytes_ = ring_bytes;
    return LOOM_SUCCESS;
}

Status Communicator::start_into(Request &req, CollArgs &args, const CallData &call, bool blocking) {
    started_any_ = true;
    complete_args(args, call.type, call.in_place);

    const CachedPlan *plan = nullptr;
    LOOM_RETURN_IF_ERROR(choose_plan(args, threaded_ && !blocking, &plan, adapted_choice(args)));
    return launch(req, args, call, *plan, blocking);
}

Status Communicator::choose_plan(const CollArgs &args, bool for_thread, const CachedPlan **out,
                                 const AlgorithmInfo *adapted) {
    LOOM_RETURN_IF_ERROR(plan_for(args, for_thread, out, adapted));
    const long long verbose = config_.integer(kParamVerbose);
    if (verbose >= 1) say_choice(args, **out, verbose);
    return LOOM_SUCCESS;
}

void Communicator::say_choice(const CollArgs &args, const CachedPlan &plan, long long verbose) {
    if (rank() == 0) explain_once(args, plan);
    if (verbose >= 2)
        std::fprintf(stderr, "loom[%d]: %s -> %s (%s)%s\n", rank(), args.describe().c_str(), plan.algorithm->name,
                     plan.why.c_str(), progress_note(plan).c_str());
}

bool Communicator::repeat_slots(Collective c, bool in_place, const void *sendbuf, void *recvbuf, size_t count,
                                const int64_t *counts, loom_datatype_t type, loom_op_t op, Status *status) {
    const SlotShape &k = slot_shape_;
    if (!k.valid || k.args.collective != c || k.args.count != count || k.type != type || k.op != op ||
        k.args.in_place != in_place || k.generation != config_.generation() || threaded_)
        return false;
    if (counts)
        for (size_t i = 0; i < k.args.recv_counts.size(); ++i)
            if (counts[i] < 0 || k.args.recv_counts[i] != static_cast<size_t>(counts[i])) return false;
    // The buffers are this call's own: the general path's checks on them.
    if (k.has_input && (!recvbuf || (!in_place && (!sendbuf || sendbuf == recvbuf)))) return false;
    // The shape was recorded from host buffers; device ones are staged (the C API's start_call).
    if (cuda_driver_loaded() &&
        (memory_type_of(recvbuf) == MemoryType::cuda || (!in_place && memory_type_of(sendbuf) == MemoryType::cuda)))
        return false;
    if (adapt_ && adaptable(k.args)) return repeat_slots_adapted(sendbuf, in_place, recvbuf, type, op, status);
    last_algorithm_[static_cast<int>(c)] = k.name;
    *status = run_slots(k.args, CallData::of(sendbuf, in_place, recvbuf, type, op), k.reduce, k.signature);
    return true;
}

bool Communicator::repeat_slots_adapted(const void *sendbuf, bool in_place, void *recvbuf, loom_datatype_t type,
                                        loom_op_t op, Status *status) {
    const SlotShape &k = slot_shape_;
    const AdaptClass cls = AdaptClass::of(k.args.collective, in_place, message_bytes(k.args));
    if (!adapt_->knows(cls)) return false;
    // Timed on the path the call takes when it repeats, or the slots would be judged by the general path's cost.
    const AdaptiveChoice::Turn turn = adapt_->next(cls);
    if (!turn.algorithm || std::strcmp(turn.algorithm->name, k.name) != 0) return false;
    last_algorithm_[static_cast<int>(k.args.collective)] = k.name;
    const uint64_t start = now_ns();
    *status = run_slots(k.args, CallData::of(sendbuf, in_place, recvbuf, type, op), k.reduce, k.signature);
    if (*status == LOOM_SUCCESS) *status = adapted_call_done(turn, now_ns() - start, true);
    return true;
}

Status Communicator::run_slots(const CollArgs &args, const CallData &call, ReduceFn reduce, uint64_t signature) {
    LOOM_RETURN_IF_ERROR(check_slots(args));
    LOOM_RETURN_IF_ERROR(closed());
    const uint64_t call_number = enter_call();
    SlotCall slot;
    slot.begin(slots_.get(), slots_ ? ++slots_started_ : 0, args, call.sendbuf, call.recvbuf, reduce, signature);
    HangWatch watch;
    for (uint32_t polls = 0; !slot.advance(&slots_finished_); ++polls) {
        if (watch.due([this] { return hang_timeout_ns(); })) {
            const Waiting w{args.collective, args.count,      args.elem_size, last_algorithm(args.collective),
                            call_number,     watch.waited_s()};
            LOOM_RETURN_IF_ERROR(report_hang(w, nullptr, &slot));
        }
        if (polls % kLooksPerRevokeCheck == kLooksPerRevokeCheck - 1 && revoked_by_peer(call_number))
            return fail(LOOM_ERR_MISMATCH, revoked_);
        if (!active_.empty()) {
            Status st = progress_all();  // earlier nonblocking calls, ours among them
            (void)st;                    // their errors are theirs
        }
        // A peer may wait for our call on another communicator before it comes here.
        if (polls % Request::kTestsPerWalk == Request::kTestsPerWalk - 1) progress_other_communicators(this);
        wait_for_slots(polls);
    }
    if (slot.failed())
        return fail(LOOM_ERR_MISMATCH,
                    revoke_found(args.collective, call_number, slot_mismatch(args, slot.mismatched_rank())));
    return LOOM_SUCCESS;
}

ReduceFn Communicator::slot_reduction(Collective c, const CallData &call) {
    if (c == Collective::allreduce || c == Collective::reduce_scatter || c == Collective::reduce_scatter_block)
        return reduction_kernel(call.type, call.op);
    return nullptr;
}

// The default blocking run of a path (path_runner.hpp): its start on the
// communicator's reusable request, then the wait.
Status PathRunner::run(Communicator &comm, const CollArgs &args, const CallData &call, const CachedPlan &plan) const {
    Request &req = *comm.blocking_;
    LOOM_RETURN_IF_ERROR(comm.launch(req, args, call, plan, /*blocking=*/true));
    return comm.wait_blocking(req);
}

Status Communicator::launch(Request &req, const CollArgs &args, const CallData &call, const CachedPlan &plan,
                            bool blocking) {
    LOOM_RETURN_IF_ERROR(begin_call(req, args, plan));
    return plan.runner->start(*this, req, args, call, plan, blocking);
}

void Communicator::explain_once(const CollArgs &args, const CachedPlan &plan) {
    // One line per collective and power-of-two size bucket: what was chosen,
    // why, what the model predicts for it and for the runners-up.
    const size_t bytes = message_bytes(args);
    int bucket = -1;
    for (size_t b = bytes; b; b >>= 1) ++bucket;
    if (!explained_.insert({static_cast<int>(args.collective), bucket}).second) return;
    Explanation e;
    if (explain_selection(config_, args, &e, knobs_for(args)) == LOOM_SUCCESS)
        std::fprintf(stderr, "loom: %s%s\n", explanation_line(args, e).c_str(), progress_note(plan).c_str());
}

uint32_t Communicator::retire_plans() {
    plans_.retire_all();
    forget_retired_plans();
    return plans_.next_id();
}

Status Communicator::attach_rails(std::unique_ptr<Transport> rails, int count, std::string state) {
    if (rails->rank() != rank_ || rails->size() != size_)
        return fail(LOOM_ERR_INVALID_ARGUMENT, "the rails transport spans another communicator");
    router_->add_preferred(std::move(rails));
    rails_attached_.store(true, std::memory_order_release);
    if (threaded_) router_->ring_peers();
    // Every rank attaches at the same call, so tags stay equal everywhere.
    if (next_tag_ > router_->max_tag()) next_tag_ = 0;
    nodes_.rails = count;
    retire_plans();
    rails_state_ = std::move(state);
    return LOOM_SUCCESS;
}

Status Communicator::run_internal(CollArgs a, const void *in, void *out, loom_datatype_t type) {
    a.internal = true;
    CallData call;
    call.sendbuf = in;
    call.recvbuf = out;
    call.type = type;
    return run(a, call);
}

Status Communicator::allgather_bytes(const void *mine, size_t bytes, void *all) {
    CollArgs a;
    a.collective = Collective::allgather;
    a.count = bytes;
    return run_internal(std::move(a), mine, all, LOOM_BYTE);
}

Status Communicator::alltoall_int64(const int64_t *mine, int64_t *theirs, size_t per_peer) {
    CollArgs a;
    a.collective = Collective::alltoall;
    a.count = per_peer;
    return run_internal(std::move(a), mine, theirs, LOOM_INT64);
}

Status Communicator::allreduce_int64(int64_t *values, size_t n, loom_op_t op) {
    CollArgs a;
    a.collective = Collective::allreduce;
    a.count = n;
    a.internal = true;
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

void Communicator::run_deferred() {
    std::vector<DeferredSetup> now;
    now.swap(deferred_);
    for (auto set_up : now) set_up(*this);
}

Status Communicator::run(CollArgs &args, const CallData &call) {
    Guard g(*this);
    if (!deferred_.empty()) run_deferred();
    if (!periodic_.empty()) run_periodic(args, call);
    // A blocking call cannot overlap another blocking call on this
    // communicator, so one reusable request serves them all.
    if (!blocking_) blocking_ = make_request();
    started_any_ = true;
    complete_args(args, call.type, call.in_place);
    if (adapting() && adaptable(args)) return run_adapted(args, call);
    const CachedPlan *plan = nullptr;
    LOOM_RETURN_IF_ERROR(choose_plan(args, /*for_thread=*/false, &plan));
    return plan->runner->run(*this, args, call, *plan);
}

namespace {

// The values of the parameters that steer a choice: set on one rank only,
// another parameter (a trace path, a hang limit) must not make that rank
// learn again while the others go on, or their calls would part ways.
uint64_t choice_fingerprint(const Config &config) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (const ParamSpec &p : param_table()) {
        if (p.section != ParamSection::algorithms && p.section != ParamSection::knobs &&
            p.section != ParamSection::selection)
            continue;
        for (unsigned char ch : config.raw(p.id)) h = (h ^ ch) * 0x100000001b3ULL;
        h = (h ^ 0xffu) * 0x100000001b3ULL;
    }
    return h;
}

}  // namespace

void Communicator::decide_adapt() {
    if (!config_.integer(kParamAdapt)) {
        adapt_.reset();
        return;
    }
    const uint64_t fingerprint = choice_fingerprint(config_);
    if (!adapt_) adapt_ = std::make_unique<AdaptiveChoice>();
    else if (fingerprint != adapt_fingerprint_) adapt_->clear();  // the choice may differ now: learn again
    adapt_fingerprint_ = fingerprint;
}

bool Communicator::adaptable(const CollArgs &args) const {
    switch (args.collective) {
        case Collective::allreduce:
        case Collective::reduce_scatter:
        case Collective::reduce_scatter_block:
        case Collective::allgather:
        case Collective::alltoall: break;
        default: return false;  // the vector collectives' sizes differ between ranks
    }
    return !args.internal && args.memory == MemoryType::host && size_ > 1 && message_bytes(args) > 0 &&
           forced_algorithm(config_, args.collective) == "auto";
}

const AlgorithmInfo *Communicator::adapted_choice(const CollArgs &args) {
    if (!adapting() || !adaptable(args)) return nullptr;
    const AlgorithmInfo *a = adapt_->current(AdaptClass::of(args.collective, args.in_place, message_bytes(args)));
    return a && why_not_applicable(*a, args).empty() ? a : nullptr;
}

std::vector<const AlgorithmInfo *> Communicator::adapt_candidates(const CollArgs &args) {
    Explanation e;
    std::vector<const AlgorithmInfo *> out;
    if (explain_selection(config_, args, &e, knobs_for(args)) != LOOM_SUCCESS || !e.selection.algorithm) return out;
    out.push_back(e.selection.algorithm);
    for (const Prediction &p : e.candidates)
        if (p.us >= 0 && p.algorithm != e.selection.algorithm) out.push_back(p.algorithm);
    return out;
}

Status Communicator::run_adapted(CollArgs &args, const CallData &call) {
    const AdaptClass cls = AdaptClass::of(args.collective, args.in_place, message_bytes(args));
    if (!adapt_->knows(cls)) adapt_->set_candidates(cls, adapt_candidates(args));
    const AdaptiveChoice::Turn turn = adapt_->next(cls);
    // A candidate of the class that cannot run this count: the selector's choice runs, untimed.
    const bool fits = turn.algorithm && why_not_applicable(*turn.algorithm, args).empty();
    const CachedPlan *plan = nullptr;
    LOOM_RETURN_IF_ERROR(choose_plan(args, /*for_thread=*/false, &plan, fits ? turn.algorithm : nullptr));
    const uint64_t start = now_ns();
    LOOM_RETURN_IF_ERROR(plan->runner->run(*this, args, call, *plan));
    return adapted_call_done(turn, now_ns() - start, fits);
}

Status Communicator::adapted_call_done(const AdaptiveChoice::Turn &turn, uint64_t ns, bool measured) {
    if (!adapt_->finished(turn, ns, measured)) return LOOM_SUCCESS;
    // Every rank reaches this call of the class: agree on the times, then decide alike.
    std::vector<int64_t> summary = adapt_->summary(turn.cls, rails_changes_.load(std::memory_order_relaxed));
    const char *user_call = last_algorithm_[static_cast<int>(Collective::allreduce)];
    const Status st = allreduce_int64(summary.data(), summary.size(), LOOM_MAX);
    last_algorithm_[static_cast<int>(Collective::allreduce)] = user_call;  // what the user's call ran
    if (st != LOOM_SUCCESS) {
        std::fill(summary.begin(), summary.end(), 0);  // nothing learnt: the class moves on unchanged
        adapt_->agree(turn.cls, summary, false);
        return st;
    }
    const bool rails_carry = rails_attached_.load(std::memory_order_acquire) && nodes_.nodes() > 1 &&
                             turn.cls.max_bytes() >= static_cast<size_t>(config_.integer(kParamRailMinBytes));
    adapt_->agree(turn.cls, summary, rails_carry);
    return LOOM_SUCCESS;
}

std::string Communicator::adapt_state() {
    if (!adapting()) return "off";
    return adapt_->describe();
}

std::string Communicator::adapt_rules() {
    if (!adapting()) return {};
    const int ppn = nodes_.uniform() ? nodes_.max_ranks_per_node() : 0;
    return adapt_->rules_json(size_, nodes_.nodes(), ppn);
}

void Communicator::refresh_trace() {
    const std::string &path = config_.raw(kParamTrace);
    if (trace_file_ && trace_file_->path() == path) return;
    trace_file_.reset();
    if (path.empty()) return;
    std::string why;
    trace_file_ = TraceFile::open(path, rank_, &why);
    if (!trace_file_) {
        // Once per process and path: every communicator would say it again.
        static std::mutex said_mutex;
        static std::set<std::string> said;
        std::lock_guard<std::mutex> lock(said_mutex);
        if (said.insert(why).second) std::fprintf(stderr, "loom: trace: %s; the job runs untraced\n", why.c_str());
        return;
    }
    trace_comm_ = trace_file_->new_communicator(rank_, size_);
}

void Communicator::trace_begin(Request &req, const CollArgs &args, const char *algorithm, uint32_t plan,
                               const char *kind, const Program *program) {
    req.traced_ = true;
    CallRecord &c = req.trace_call_;
    c.collective = collective_name(args.collective);
    c.algorithm = algorithm ? algorithm : "";
    c.kind = kind;
    c.bytes = message_bytes(args);
    c.plan = plan;
    c.call = trace_calls_++;
    c.thread_driven = false;
    c.end_ns = 0;
    req.waits_.clear();
    req.trace_program_ = program;
    req.trace_elem_size_ = args.elem_size;
    if (program) req.trace_times_.arm(program->size());
    c.start_ns = trace_clock_ns();
}

void Communicator::trace_end(Request &req) {
    req.traced_ = false;
    if (!trace_file_) return;
    req.trace_call_.end_ns = trace_clock_ns();
    req.trace_call_.wait = req.waits_;
    trace_file_->write_call(trace_comm_, req.trace_call_, req.trace_program_,
                            req.trace_program_ ? &req.trace_times_ : nullptr, router_.get(), req.trace_elem_size_);
}

}  // namespace loom
