#include "copy_path_chooser.hpp"

#include <algorithm>

namespace loom {

void CopyPathChooser::record(Path path, uint64_t ns, uint64_t bytes) {
    if (bytes == 0) return;
    const double sample = static_cast<double>(ns) * 1024.0 / static_cast<double>(bytes);
    double &e = estimate_[path];
    // Falls at once, rises by an eighth of a sample capped at 4x: a copy cut
    // by a context switch (milliseconds on shared cores) barely moves it, a
    // lasting slowdown takes a handful of messages to show.
    if (e == 0 || sample < e)
        e = sample;
    else
        e += (std::min(sample, 4 * e) - e) / 8;
    if (estimate_[ring] > 0 && estimate_[single_copy] > 0)
        best_ = estimate_[single_copy] * kSingleCopyMargin < estimate_[ring] ? single_copy : ring;
}

CopyPathChooser::Path CopyPathChooser::next() {
    const Path other = best_ == ring ? single_copy : ring;
    if (exploring_ > 0) {
        --exploring_;
        return other;
    }
    if (++since_explore_ >= kExploreEvery) {
        since_explore_ = 0;
        exploring_ = kExploreMessages - 1;
        return other;
    }
    return best_;
}

}  // namespace loom
