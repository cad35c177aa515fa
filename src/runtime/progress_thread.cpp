#include "runtime/progress_thread.hpp"

#include <pthread.h>

#include "transport/router.hpp"
#include "transport/transport.hpp"

namespace loom {

const ParamId kParamProgressThread = declare_param(
    ParamSection::progress,
    {"progress_thread", ParamType::choice, "off", 3,
     "A thread that progresses nonblocking and persistent collectives between the caller's MPI calls: off; on; "
     "auto, on where every rank of the node has a core to spare for it. It drives only calls whose messages all "
     "go through Loom's shared memory (which then carries them at any size); the others progress in the "
     "caller's calls. Read at the communicator's first nonblocking or persistent call",
     0, 0, Collective::allreduce, "off,on,auto"});

namespace {
// Passes without progress before the thread sleeps: a short spin catches
// the answer to what it just sent without a sleep and a wake, and stays
// short because on shared cores it takes the computing caller's time.
constexpr unsigned kSpinPasses = 16;
// Sleeps are bounded: a peer whose thread is off does not ring, and a
// communicator that was locked by its caller is looked at again soon.
constexpr uint64_t kDoorbellSleepNs = 5'000'000;
constexpr uint64_t kPollSleepNs = 200'000;
constexpr uint64_t kLockedOutSleepNs = 1'000'000;
enum Asleep : uint32_t { awake = 0, on_own_word = 1, on_doorbell = 2 };
}  // namespace

ProgressThread &ProgressThread::instance() {
    // Never destroyed: a communicator freed during exit still detaches.
    static ProgressThread *thread = new ProgressThread;
    return *thread;
}

ProgressThread::~ProgressThread() = default;

void ProgressThread::attach(ThreadDriven *comm) {
    std::unique_lock<std::mutex> g(mutex_);
    // One thread at a time: a stopping one is joined before another starts.
    passed_.wait(g, [&] { return !stopping_; });
    comms_.push_back(comm);
    if (!thread_.joinable()) {
        stop_ = false;
        thread_ = std::thread([this] { loop(); });
    }
}

void ProgressThread::detach(ThreadDriven *comm) {
    std::thread finished;
    uint64_t seen = 0;
    {
        std::unique_lock<std::mutex> g(mutex_);
        bool found = false;
        for (size_t i = 0; i < comms_.size(); ++i)
            if (comms_[i] == comm) {
                comms_.erase(comms_.begin() + static_cast<std::ptrdiff_t>(i));
                found = true;
                break;
            }
        if (!found) return;
        seen = passes_;  // a pass begun after this one starts from the list without comm
        if (comms_.empty()) {
            stop_ = true;
            stopping_ = true;
            finished = std::move(thread_);
        }
    }
    wake();
    if (finished.joinable()) {
        finished.join();
        std::lock_guard<std::mutex> g(mutex_);
        stopping_ = false;
        passed_.notify_all();
        return;
    }
    // The pass in flight may hold the communicator: wait for the next one,
    // which starts from the list without it.
    std::unique_lock<std::mutex> g(mutex_);
    passed_.wait(g, [&] { return passes_ > seen; });
}

bool ProgressThread::running() {
    std::lock_guard<std::mutex> g(mutex_);
    return thread_.joinable();
}

void ProgressThread::wake() {
    generation_.fetch_add(1, std::memory_order_seq_cst);
    const uint32_t asleep = asleep_.load(std::memory_order_seq_cst);
    if (asleep == on_own_word) futex_wake_all(&generation_);
    if (asleep != on_doorbell) return;
    std::lock_guard<std::mutex> g(mutex_);
    if (!sleeping_on_) return;
    sleeping_on_.word->fetch_add(1, std::memory_order_release);
    futex_wake_all(sleeping_on_.word);
}

bool ProgressThread::pass(const std::vector<ThreadDriven *> &comms, ThreadDriven **busy, size_t *busy_count,
                          bool *moved, bool *locked_out) {
    *busy_count = 0;
    for (ThreadDriven *c : comms) {
        bool pending = false;
        if (!c->progress_from_thread(&pending, moved)) {
            *locked_out = true;  // its caller is in a call, progressing it
            continue;
        }
        if (pending) {
            *busy = c;
            ++*busy_count;
        }
    }
    return *busy_count > 0 || *locked_out;
}

void ProgressThread::loop() {
    t_on_progress_thread = true;
    pthread_setname_np(pthread_self(), "loom-progress");  // as ps and /proc/PID/task/*/comm show it
    std::vector<ThreadDriven *> comms;
    // Room made now: the copy below must not allocate inside a caller's
    // call (tests/mpi/test_persistent counts allocations in MPI_Start).
    comms.reserve(16);
    wake_fds_.reserve(16);
    unsigned idle_passes = 0;
    for (;;) {
        uint32_t generation = 0;
        bool stopping = false;
        {
            std::lock_guard<std::mutex> g(mutex_);
            ++passes_;  // also on the way out: a detach() waiting for a pass returns
            stopping = stop_;
            comms = comms_;
            generation = generation_.load(std::memory_order_seq_cst);
        }
        passed_.notify_all();
        if (stopping) return;
        ThreadDriven *busy = nullptr;
        size_t busy_count = 0;
        bool moved = false, locked_out = false;
        const bool work = pass(comms, &busy, &busy_count, &moved, &locked_out);
        if (moved) {
            idle_passes = 0;
            continue;
        }
        if (locked_out) {
            // The caller holds a communicator: it wakes the thread when it lets go.
            idle_passes = 0;
            sleep_on_own_word(generation, kLockedOutSleepNs);
            continue;
        }
        if (work && ++idle_passes < kSpinPasses) continue;
        idle_passes = 0;
        if (!work) {
            sleep_on_own_word(generation, 0);  // until a call starts
            continue;
        }
        // One communicator waiting for its peers, and a doorbell they ring:
        // sleep on it. Otherwise look again shortly.
        Doorbell bell = busy_count == 1 && !locked_out ? busy->doorbell() : Doorbell{};
        if (!bell) {
            // The rails' messages wake the thread through their event
            // descriptors; the others' (the node's shared memory, rung on a
            // futex that cannot be polled) are looked at after the same time.
            if (busy_count == 1 && busy->arm_for_thread_sleep(&wake_fds_)) {
                Router::sleep_on(wake_fds_, static_cast<int>(kPollSleepNs / 1000));
                continue;
            }
            sleep_on_own_word(generation, kPollSleepNs);
            continue;
        }
        {
            std::lock_guard<std::mutex> g(mutex_);
            sleeping_on_ = bell;
        }
        asleep_.store(on_doorbell, std::memory_order_seq_cst);
        bell.sleepers->fetch_add(1, std::memory_order_acq_rel);
        const uint32_t seen = bell.word->load(std::memory_order_seq_cst);
        // A last look, now that peers ring: what arrived before they could
        // see us asleep is found here.
        moved = locked_out = false;
        if (generation_.load(std::memory_order_seq_cst) == generation) {
            pass(comms, &busy, &busy_count, &moved, &locked_out);
            if (!moved && !locked_out) futex_wait(bell.word, seen, kDoorbellSleepNs);
        }
        bell.sleepers->fetch_sub(1, std::memory_order_seq_cst);
        asleep_.store(awake, std::memory_order_seq_cst);
        std::lock_guard<std::mutex> g(mutex_);
        sleeping_on_ = {};
    }
}

void ProgressThread::sleep_on_own_word(uint32_t generation, uint64_t timeout_ns) {
    asleep_.store(on_own_word, std::memory_order_seq_cst);
    futex_wait(&generation_, generation, timeout_ns);
    asleep_.store(awake, std::memory_order_seq_cst);
}

}  // namespace loom
