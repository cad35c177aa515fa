// How the periodic agreement moves the rails' weights from what striped
// messages showed.
#pragma once
#include <vector>

namespace loom {

// The weights the rails' measured rates (bytes over seconds, summed over
// the ranks, since the last reading) suggest, moved from `current` half way
// on a log scale and each by at most a factor of kRailWeightStep, then
// normalised. A reading is taken from the posted receive, so a wait for a
// late sender lengthens every rail's pieces alike, and a lightly loaded
// rail's pieces can pass before a shaper's bucket runs dry: a single
// reading can say much more than the rails differ, and weights that follow
// it in full swing from one side to the other. Damped, a rail that really
// is slower still reaches its share within a few readings. A rate of 0
// (no sample) leaves the current weights.
constexpr double kRailWeightStep = 1.25;
std::vector<double> damped_rail_weights(const std::vector<double> &current, const std::vector<double> &rates);

// The agreement's decision, reading by reading (every rank holds one and
// feeds it the same sums). A reading whose shares differ from the weights by
// over a tenth of a share proposes damped_rail_weights; two readings in a
// row must propose alike, within a tenth. A move that would take the weights
// back to within a tenth of where the last move started is dropped: readings
// favour the rail that carries less, so on equal rails moves can go back and
// forth for ever, and each move retires the cached plans.
class RailReweighing {
  public:
    // True, with the weights to adopt in *adopt, when this reading (bytes
    // per second per rail) moves `current`.
    bool read(const std::vector<double> &current, const std::vector<double> &rates, std::vector<double> *adopt);
    // The rails changed (one left out or back): earlier readings and moves
    // say nothing of the new ones.
    void forget();

  private:
    std::vector<double> pending_;           // what the last reading proposed, not adopted yet
    std::vector<double> before_last_move_;  // the weights the last adopted move started from
};

}  // namespace loom
