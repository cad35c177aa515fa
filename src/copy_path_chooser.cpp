#include "copy_path_chooser.hpp"

#include <algorithm>

namespace loom {

void CopyPathChooser::record(Path path, uint64_t ns) {
    const double sample = static_cast<double>(ns);
    double &e = estimate_[path];
    // Falls at once, rises by an eighth of a sample capped at 4x: a call cut
    // by a context switch (milliseconds on shared cores) barely moves it, a
    // lasting slowdown takes a handful of calls to show.
    if (e == 0 || sample < e)
        e = sample;
    else
        e += (std::min(sample, 4 * e) - e) / 8;
    const double r = estimate_[ring], s = estimate_[single_copy];
    if (r > 0 && s > 0) {
        if (best_ == ring && s * kSwitchMargin < r) best_ = single_copy;
        else if (best_ == single_copy && r * kSwitchMargin < s) best_ = ring;
    }
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
        return other;
    }
    return best_;
}

}  // namespace loom
