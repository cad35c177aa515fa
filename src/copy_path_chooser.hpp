// Chooses, for the messages one sender sends to this rank through shared
// memory, between the rings (the sender copies into a ring, the receiver out
// of it) and single copy (the receiver reads the send buffer straight from
// the sender's memory with process_vm_readv). The better one depends on how
// dear it is to move written cache lines between the two cores, which a
// virtual machine's host changes under us: on this project's 2-vCPU machine
// a 32 KiB handoff between the vCPUs cost 0.7, 1.7 or 4.2 us depending on
// where the host had placed them, and in some periods 128 KiB ring alltoalls
// took 5x their usual time. Single copy pays a system call (about 2 us) but
// moves each line once instead of twice. So both are measured as messages
// go, in ns per KiB, and the cheaper one is used, trying the other now and
// then to notice when things change.
#pragma once
#include <cstdint>

namespace loom {

class CopyPathChooser {
  public:
    enum Path { ring = 0, single_copy = 1 };
    // Single copy is taken only at under 1/kSingleCopyMargin of the ring's
    // cost: the sender also waits for its receiver's read (a rendezvous),
    // which the measured copy times leave out.
    static constexpr double kSingleCopyMargin = 2.0;
    // Every kExploreEvery messages, kExploreMessages on the path not in use.
    static constexpr uint32_t kExploreEvery = 64, kExploreMessages = 2;

    // A message of `bytes` took `ns` on `path` (copy time of both sides).
    void record(Path path, uint64_t ns, uint64_t bytes);
    // Called after each message: the path the sender should use next.
    Path next();
    // The current estimate of a path in ns per KiB; 0 before any sample.
    double estimate(Path path) const { return estimate_[path]; }
    Path best() const { return best_; }

  private:
    double estimate_[2] = {0, 0};
    Path best_ = ring;
    uint32_t since_explore_ = kExploreEvery - 8;  // the first try comes early
    uint32_t exploring_ = 0;
};

}  // namespace loom
