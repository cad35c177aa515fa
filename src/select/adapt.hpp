// Online adaptation (parameter adapt): per collective and size class, the
// selector's choice and its runners-up are timed on the blocking calls that
// run anyway, a few calls explore the others, and the class switches when
// one is faster by more than the measured noise. Every rank takes the same
// choice on the same call: what a call runs depends only on the class's
// call count and on times every rank agreed on (the communicator combines
// each rank's summary with a maximum at the points agreement_due names).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "core/params.hpp"

namespace loom {

extern const ParamId kParamAdapt;

// The calls one choice is learnt for: a collective, in place or not, and a
// power-of-two class of message_bytes.
struct AdaptClass {
    Collective collective = Collective::allreduce;
    bool in_place = false;
    int log2_bytes = 0;  // floor(log2(bytes))
    bool operator<(const AdaptClass &o) const {
        return std::tie(collective, in_place, log2_bytes) < std::tie(o.collective, o.in_place, o.log2_bytes);
    }
    static AdaptClass of(Collective c, bool in_place, size_t bytes);
    // "allreduce 1-2 MiB (in place)"
    std::string text() const;
    size_t min_bytes() const { return size_t(1) << log2_bytes; }
    size_t max_bytes() const { return (size_t(2) << log2_bytes) - 1; }
};

struct AdaptLimits {
    size_t candidates = 4;        // the selector's choice and at most three runners-up
    int first_rounds = 4;         // each candidate in turn, the first round a warm-up (plans built)
    uint64_t min_window = 64;     // steady state: one call in a window explores (at most 1/64 of calls)
    uint64_t max_window = 1024;   // a window without a switch doubles, up to here
    double min_margin = 0.05;     // a switch needs at least this much, or twice the measured spread
    double cost_budget = 0.02;    // an exploration may cost at most this share of its window's time
    size_t kept_samples = 8;      // the most recent times kept per candidate: the choice's median is of these,
    size_t explored_samples = 3;  // a runner-up's of its latest explorations (it may have changed since)
};

class AdaptiveChoice {
  public:
    explicit AdaptiveChoice(AdaptLimits limits = AdaptLimits()) : limits_(limits) {}

    // What one call of a class runs: `candidate` indexes candidates(cls),
    // the algorithm, and whether its time counts.
    struct Turn {
        AdaptClass cls;
        size_t candidate = 0;
        const AlgorithmInfo *algorithm = nullptr;
        bool exploring = false;
    };
    // Whether the class has its candidates yet (set_candidates once, on its
    // first call: the selector's choice first).
    bool knows(const AdaptClass &cls) const { return classes_.count(cls) != 0; }
    void set_candidates(const AdaptClass &cls, std::vector<const AlgorithmInfo *> candidates);
    // The next call of the class (the class must be known).
    Turn next(const AdaptClass &cls);
    // The call's time on this rank (a call that ran something else: not
    // counted, measured = false). True when every rank must now agree
    // (summary, then agree) before the class's next call.
    bool finished(const Turn &turn, uint64_t ns, bool measured = true);
    // This rank's view, to be combined with every rank's by maximum.
    // `rails_changes`: how often this rank saw a rail leave or come back.
    std::vector<int64_t> summary(const AdaptClass &cls, int64_t rails_changes) const;
    // The combined summaries: the same on every rank, so is the decision.
    // `rails_matter`: the class's messages cross the rails, so a change of
    // the rails forgets what was learnt for it.
    void agree(const AdaptClass &cls, const std::vector<int64_t> &combined, bool rails_matter);

    // What was learnt, a line per class: the candidates' agreed times, the
    // choice and since when, calls, explorations, switches.
    std::string describe() const;
    // The choices as a loom-rules(5) document for a communicator of this shape.
    std::string rules_json(int comm_size, int nodes, int ppn) const;
    // Counts over every class.
    uint64_t explored_calls() const;
    uint64_t switches() const;
    const AlgorithmInfo *current(const AdaptClass &cls) const;
    void clear() { classes_.clear(); }

  private:
    struct Candidate {
        const AlgorithmInfo *algorithm = nullptr;
        std::vector<uint64_t> recent;  // ring of the latest times, ns
        size_t next_slot = 0;
        double agreed_ns = -1;  // every rank's median combined, at the last agreement
        void add(uint64_t ns, size_t keep);
        // Of the `last` most recent times (0: all kept).
        double median(size_t last = 0) const;
        double spread() const;  // the middle half's width over the median
    };
    struct Class {
        std::vector<Candidate> candidates;
        size_t current = 0;
        uint64_t calls = 0;            // calls of the class so far (the same count on every rank)
        bool learning = true;          // the first rounds,
        uint64_t learning_from = 0;    // from this call
        uint64_t window = 0;           // steady state: its length,
        uint64_t window_end = 0;       // the call that ends it,
        uint64_t explore_at = 0;       // the call that explores (UINT64_MAX: none),
        size_t explore_candidate = 0;  // which candidate it explores,
        size_t explore_next = 1;       // and whose turn is next
        uint64_t explored = 0, switches = 0;
        int64_t rails_changes = 0;
        std::string last_decision;
    };
    // " hier_split 35.04 ms, ring 41.2 ms": each candidate and its agreed time.
    static std::string timed_text(const Class &c);
    void start_window(Class &c, uint64_t window);
    void begin_learning(Class &c);
    AdaptLimits limits_;
    std::map<AdaptClass, Class> classes_;
};

}  // namespace loom
