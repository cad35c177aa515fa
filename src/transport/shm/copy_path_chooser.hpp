// Chooses, for the calls of one cached plan, how its large shared-memory
// messages travel: through the rings (the sender copies into a ring, the
// receiver out of it; eager) or by single copy (the receiver reads the send
// buffer from the sender's memory with process_vm_readv; a system call and a
// rendezvous). Which is faster depends on what moving data between cores
// costs at the moment, which on a virtual machine the host changes, and the
// copy times alone do not show it: so whole blocking calls are timed, the
// path with the lower mean call time used, the other tried now and then.
// Means, not minimums: a slow period raises the mean, not the fastest calls
// (docs/design.md, "Single copy").
//
// Every rank runs the same calls in the same order, so all take their tries
// on the same calls; each decides alone, and a message arrives either way.
#pragma once
#include <cstdint>

namespace loom {

class CopyPathChooser {
  public:
    enum Path { ring = 0, single_copy = 1 };
    // The other path takes over only when under 1/kSwitchMargin of the
    // cost of the one in use, so that noise does not flip the choice.
    static constexpr double kSwitchMargin = 1.1;
    // Every kExploreEvery calls, kExploreCalls on the path not in use; their
    // mean becomes that path's estimate.
    static constexpr uint32_t kExploreEvery = 64, kExploreCalls = 3;

    // Takes another chooser's choice (the node's first rank's) as the path in use.
    void adopt(Path best);
    // The path for the next call; exploring when due.
    Path next();
    // That call took `ns`.
    void record(Path path, uint64_t ns);
    // The current estimate of a path's mean call time in ns; 0 before any sample.
    double estimate(Path path) const { return estimate_[path]; }
    Path best() const { return best_; }

  private:
    void decide();

    double estimate_[2] = {0, 0};
    uint32_t samples_[2] = {0, 0};
    Path best_ = ring;
    uint32_t since_explore_ = kExploreEvery - 8;  // the first try comes early
    uint32_t exploring_ = 0;
    double episode_sum_ = 0;  // the calls of the current try
    uint32_t episode_calls_ = 0;
};

}  // namespace loom
