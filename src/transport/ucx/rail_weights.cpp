#include "transport/ucx/rail_weights.hpp"

#include <algorithm>
#include <cmath>

namespace loom {
namespace {

bool moves_over_a_tenth(const std::vector<double> &from, const std::vector<double> &to) {
    for (size_t r = 0; r < from.size(); ++r)
        if (std::fabs(to[r] - from[r]) > 0.1 * from[r]) return true;
    return false;
}

std::vector<double> normalised(std::vector<double> w) {
    double total = 0;
    for (double x : w) total += x;
    for (double &x : w) x /= total;
    return w;
}

}  // namespace

std::vector<double> damped_rail_weights(const std::vector<double> &current, const std::vector<double> &rates) {
    double current_total = 0, rate_total = 0;
    for (size_t r = 0; r < current.size(); ++r) {
        if (r >= rates.size() || !(rates[r] > 0) || !(current[r] > 0)) return current;
        current_total += current[r];
        rate_total += rates[r];
    }
    if (!(current_total > 0) || !(rate_total > 0)) return current;
    std::vector<double> next(current.size());
    for (size_t r = 0; r < current.size(); ++r) {
        const double now = current[r] / current_total, seen = rates[r] / rate_total;
        next[r] = std::clamp(std::sqrt(now * seen), now / kRailWeightStep, now * kRailWeightStep);
    }
    return normalised(std::move(next));
}

bool RailReweighing::read(const std::vector<double> &current, const std::vector<double> &rates,
                          std::vector<double> *adopt) {
    std::vector<double> seen = rates;
    for (size_t r = 0; r < current.size(); ++r)
        if (r >= seen.size() || !(seen[r] > 0)) {
            pending_.clear();
            return false;
        }
    seen.resize(current.size());
    if (!moves_over_a_tenth(current, normalised(seen))) {
        pending_.clear();
        return false;
    }
    std::vector<double> next = damped_rail_weights(current, rates);
    const bool confirmed = pending_.size() == next.size() && !moves_over_a_tenth(pending_, next);
    pending_ = confirmed ? std::vector<double>() : next;
    if (!confirmed) return false;
    if (before_last_move_.size() == next.size() && !moves_over_a_tenth(before_last_move_, next)) return false;
    before_last_move_ = current;
    *adopt = std::move(next);
    return true;
}

void RailReweighing::forget() {
    pending_.clear();
    before_last_move_.clear();
}

}  // namespace loom
