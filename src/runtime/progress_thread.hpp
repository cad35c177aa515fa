// The progress thread: one per process, shared by the communicators that
// use it (parameter progress_thread). Between the caller's calls it advances
// their nonblocking and persistent collectives whose every message goes
// through a transport that allows it (shared memory), under each
// communicator's lock, taken only when free. It never enters MPI or the
// PML: below MPI_THREAD_MULTIPLE Open MPI takes no locks. It marks requests
// done; the caller completes them (loom_test, coll/loom's progress callback).
// With nothing to drive it sleeps on a futex: a peer that hands it work
// rings the doorbell in this rank's shared-memory inbox, a caller that
// starts a call rings the thread's own word.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "core/futex.hpp"
#include "core/params.hpp"

namespace loom {

extern const ParamId kParamProgressThread;
// The progress_thread parameter's values, by index.
enum ProgressThreadMode { kProgressThreadOff = 0, kProgressThreadOn = 1, kProgressThreadAuto = 2 };

// What the thread drives: a communicator (runtime/communicator.hpp) attaches
// itself as one, so that the thread needs nothing else of it.
class ThreadDriven {
  public:
    // Advances the calls the thread drives, unless another thread is inside
    // (false then). *pending: some are still running; *moved: something
    // completed or moved.
    virtual bool progress_from_thread(bool *pending, bool *moved) = 0;
    // Where the thread may sleep for this one's peers; none: it polls.
    virtual Doorbell doorbell() const = 0;
    // Arms what else can wake the thread (event descriptors into *fds);
    // false when one has news now, none can wake a sleeper, or a caller is inside.
    virtual bool arm_for_thread_sleep(std::vector<int> *fds) = 0;

  protected:
    ~ThreadDriven() = default;
};

class ProgressThread {
  public:
    static ProgressThread &instance();
    // The thread starts with the first communicator attached.
    void attach(ThreadDriven *comm);
    // Returns once the thread no longer touches `comm`; the thread stops
    // (joined) with the last one.
    void detach(ThreadDriven *comm);
    // A call was started: look at the communicators again.
    void wake();
    // Whether the thread is running (tests: none is left after the last detach).
    bool running();

  private:
    ProgressThread() = default;
    ~ProgressThread();
    void loop();
    // One pass over the communicators; false when none has anything to
    // drive. *busy: one with requests still pending, of *busy_count.
    bool pass(const std::vector<ThreadDriven *> &comms, ThreadDriven **busy, size_t *busy_count, bool *moved,
              bool *locked_out);
    // Until wake() or the timeout (0: none).
    void sleep_on_own_word(uint32_t generation, uint64_t timeout_ns);

    std::mutex mutex_;
    std::condition_variable passed_;  // a pass began, or the thread was joined
    std::vector<ThreadDriven *> comms_;
    std::thread thread_;
    bool stop_ = false;
    bool stopping_ = false;                // the last detach() is joining the thread: attach() waits
    uint64_t passes_ = 0;                  // begun, under mutex_
    std::atomic<uint32_t> generation_{0};  // the thread's own word: bumped by wake()
    Doorbell sleeping_on_;                 // a communicator's doorbell the thread sleeps on, under mutex_
    std::vector<int> wake_fds_;            // the thread's: the rails' event descriptors it sleeps on
    std::atomic<uint32_t> asleep_{0};      // where the thread sleeps, if it does: wake() rings only then
};

}  // namespace loom
