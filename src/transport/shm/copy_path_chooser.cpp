#include "transport/shm/copy_path_chooser.hpp"

#include <algorithm>

namespace loom {

namespace {
// A call cut by a context switch (milliseconds on shared cores) counts as at
// most this many times the estimate.
constexpr double kOutlierCap = 8;
// The first calls of a plan warm it up (page faults, first touches): their
// minimum seeds the estimate, then a moving mean over about 16 calls.
constexpr uint32_t kSeedCalls = 8;
constexpr double kMeanWeight = 1.0 / 16;
}  // namespace

void CopyPathChooser::record(Path path, uint64_t ns) {
    const double sample = static_cast<double>(ns);
    if (path != best_) {
        // A try of the other path: its calls' mean replaces its estimate.
        const double cap = estimate_[best_] > 0 ? kOutlierCap * estimate_[best_] : sample;
        episode_sum_ += std::min(sample, cap);
        if (++episode_calls_ == kExploreCalls) {
            estimate_[path] = episode_sum_ / episode_calls_;
            ++samples_[path];
            episode_sum_ = 0;
            episode_calls_ = 0;
            decide();
        }
        return;
    }
    double &e = estimate_[path];
    if (samples_[path]++ < kSeedCalls) e = e == 0 ? sample : std::min(e, sample);
    else e += (std::min(sample, kOutlierCap * e) - e) * kMeanWeight;
    decide();
}

void CopyPathChooser::decide() {
    const Path other = best_ == ring ? single_copy : ring;
    if (samples_[best_] >= kSeedCalls && estimate_[other] > 0 && estimate_[other] * kSwitchMargin < estimate_[best_]) {
        best_ = other;
        samples_[best_] = kSeedCalls;  // its estimate is a mean already: keep averaging from it
    }
}

void CopyPathChooser::adopt(Path best) {
    if (best == best_ || exploring_ > 0) return;  // a try under way finishes first
    best_ = best;
    samples_[best_] = std::max(samples_[best_], kSeedCalls);
}

CopyPathChooser::Path CopyPathChooser::next() {
    const Path other = best_ == ring ? single_copy : ring;
    if (exploring_ > 0) {
        --exploring_;
        return other;
    }
    if (++since_explore_ >= kExploreEvery) {
        since_explore_ = 0;
        exploring_ = kExploreCalls - 1;
        episode_sum_ = 0;
        episode_calls_ = 0;
        return other;
    }
    return best_;
}

}  // namespace loom
