#include "select/adapt.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "select/selector.hpp"

namespace loom {

const ParamId kParamAdapt = declare_param(
    ParamSection::selection,
    {"adapt", ParamType::integer, "0", 3,
     "1: blocking calls time the chosen algorithm and its runners-up per collective and power-of-two size "
     "class, explore at most one call in 64 (fewer as the choice holds), and switch, on every rank at the same "
     "call, when another is faster by more than the measured spread (at least 5 %); a rail leaving or coming back "
     "forgets what was learnt for the sizes the rails carry",
     0, 1, Collective::allreduce});

namespace {

std::string time_text(double ns) {
    char s[32];
    if (ns < 0) return "not yet timed";
    if (ns >= 1e6) std::snprintf(s, sizeof s, "%.2f ms", ns / 1e6);
    else std::snprintf(s, sizeof s, "%.1f us", ns / 1e3);
    return s;
}

constexpr int64_t kSpreadScale = 1000000;

}  // namespace

AdaptClass AdaptClass::of(Collective c, bool in_place, size_t bytes) {
    AdaptClass k;
    k.collective = c;
    k.in_place = in_place;
    int l = 0;
    while (bytes > 1) {
        bytes >>= 1;
        ++l;
    }
    k.log2_bytes = l;
    return k;
}

std::string AdaptClass::text() const {
    return std::string(collective_name(collective)) + " " + bytes_text(min_bytes()) + "-" +
           bytes_text(size_t(2) << log2_bytes) + (in_place ? " (in place)" : "");
}

void AdaptiveChoice::Candidate::add(uint64_t ns, size_t keep) {
    if (recent.size() < keep) recent.push_back(ns);
    else recent[next_slot] = ns;
    next_slot = (next_slot + 1) % keep;
}

double AdaptiveChoice::Candidate::median(size_t last) const {
    if (recent.empty()) return -1;
    std::vector<uint64_t> s;
    const size_t n_all = recent.size();
    const size_t take = last == 0 || last > n_all ? n_all : last;
    for (size_t i = 0; i < take; ++i) s.push_back(recent[(next_slot + n_all - 1 - i) % n_all]);
    std::sort(s.begin(), s.end());
    const size_t n = s.size();
    return n % 2 ? double(s[n / 2]) : (double(s[n / 2 - 1]) + double(s[n / 2])) / 2;
}

double AdaptiveChoice::Candidate::spread() const {
    if (recent.size() < 4) return 0;
    std::vector<uint64_t> s = recent;
    std::sort(s.begin(), s.end());
    const size_t n = s.size();
    const double m = median();
    return m > 0 ? (double(s[n - 1 - n / 4]) - double(s[n / 4])) / m : 0;
}

void AdaptiveChoice::set_candidates(const AdaptClass &cls, std::vector<const AlgorithmInfo *> candidates) {
    Class &c = classes_[cls];
    c.candidates.clear();
    for (const AlgorithmInfo *a : candidates) {
        if (c.candidates.size() >= std::max<size_t>(limits_.candidates, 1)) break;
        Candidate k;
        k.algorithm = a;
        c.candidates.push_back(std::move(k));
    }
    c.current = 0;
    begin_learning(c);
}

void AdaptiveChoice::begin_learning(Class &c) {
    for (Candidate &k : c.candidates) {
        k.recent.clear();
        k.next_slot = 0;
        k.agreed_ns = -1;
    }
    c.learning = c.candidates.size() > 1;
    c.learning_from = c.calls;
    c.window_end = c.calls + c.candidates.size() * static_cast<uint64_t>(limits_.first_rounds);
    c.explore_at = UINT64_MAX;
    c.explore_next = 1;
}

AdaptiveChoice::Turn AdaptiveChoice::next(const AdaptClass &cls) {
    Class &c = classes_.at(cls);
    Turn t;
    t.cls = cls;
    t.candidate = c.current;
    if (c.learning) {
        // Every candidate in turn, so slow phases of the machine hit them alike;
        // every other round backwards, so that no candidate always follows the
        // same one (a call that starts while the last one's messages drain is slower).
        const size_t n = c.candidates.size();
        const uint64_t i = c.calls - c.learning_from;
        const size_t j = static_cast<size_t>(i % n);
        t.candidate = (i / n) % 2 == 0 ? j : n - 1 - j;
        t.exploring = t.candidate != c.current;
    } else if (c.calls == c.explore_at) {
        t.candidate = c.explore_candidate;
        t.exploring = true;
    }
    t.algorithm = c.candidates.empty() ? nullptr : c.candidates[t.candidate].algorithm;
    return t;
}

bool AdaptiveChoice::finished(const Turn &turn, uint64_t ns, bool measured) {
    Class &c = classes_.at(turn.cls);
    if (c.candidates.empty()) return false;
    const uint64_t call = c.calls++;
    if (turn.exploring) ++c.explored;
    const bool warm_up = c.learning && call - c.learning_from < c.candidates.size();  // plans built, caches cold
    if (measured && !warm_up) c.candidates[turn.candidate].add(ns, limits_.kept_samples);
    if (c.candidates.size() < 2) return false;  // nothing to choose between
    return c.calls >= c.window_end;
}

std::vector<int64_t> AdaptiveChoice::summary(const AdaptClass &cls, int64_t rails_changes) const {
    const Class &c = classes_.at(cls);
    std::vector<int64_t> s;
    s.push_back(rails_changes);
    for (size_t k = 0; k < c.candidates.size(); ++k) {
        const Candidate &x = c.candidates[k];
        const size_t last = k == c.current || c.learning ? 0 : limits_.explored_samples;
        s.push_back(x.recent.empty() ? 0 : std::llround(x.median(last)));
    }
    s.push_back(std::llround(c.candidates[c.current].spread() * kSpreadScale));
    return s;
}

void AdaptiveChoice::start_window(Class &c, uint64_t window) {
    c.window = window;
    c.window_end = c.calls + window;
    c.explore_at = UINT64_MAX;
    const size_t n = c.candidates.size();
    const double now_ns = c.candidates[c.current].agreed_ns;
    // The next candidate in turn whose exploration fits the window's budget.
    for (size_t step = 0; step < n && now_ns > 0; ++step) {
        const size_t k = (c.explore_next + step) % n;
        if (k == c.current || c.candidates[k].agreed_ns <= 0) continue;
        const double extra = c.candidates[k].agreed_ns / now_ns - 1;
        if (extra > limits_.cost_budget * double(window)) continue;
        c.explore_at = c.calls + window / 2;
        c.explore_candidate = k;
        c.explore_next = (k + 1) % n;
        return;
    }
}

void AdaptiveChoice::agree(const AdaptClass &cls, const std::vector<int64_t> &combined, bool rails_matter) {
    Class &c = classes_.at(cls);
    const size_t n = c.candidates.size();
    if (combined.size() != n + 2) {  // not this class's summary: move on unchanged
        c.learning = false;
        start_window(c, limits_.min_window);
        return;
    }
    if (combined[0] > c.rails_changes) {
        c.rails_changes = combined[0];
        if (rails_matter) {
            c.last_decision = "forgotten at call " + std::to_string(c.calls) + ": a rail left or came back";
            begin_learning(c);
            return;
        }
    }
    for (size_t k = 0; k < n; ++k)
        if (combined[1 + k] > 0) c.candidates[k].agreed_ns = double(combined[1 + k]);
    const double spread = double(combined[n + 1]) / kSpreadScale;
    const double margin = std::max(limits_.min_margin, 2 * spread);
    size_t best = c.current;
    for (size_t k = 0; k < n; ++k)
        if (c.candidates[k].agreed_ns > 0 &&
            (c.candidates[best].agreed_ns <= 0 || c.candidates[k].agreed_ns < c.candidates[best].agreed_ns))
            best = k;
    const double now_ns = c.candidates[c.current].agreed_ns;
    const bool was_learning = c.learning;
    c.learning = false;
    if (best != c.current && now_ns > 0 && c.candidates[best].agreed_ns < now_ns * (1 - margin)) {
        c.last_decision = std::string("switched at call ") + std::to_string(c.calls) + " from " +
                          c.candidates[c.current].algorithm->name + " (" + time_text(now_ns) + ")";
        c.current = best;
        ++c.switches;
        start_window(c, limits_.min_window);
        return;
    }
    start_window(c, was_learning ? limits_.min_window : std::min(2 * c.window, limits_.max_window));
}

const AlgorithmInfo *AdaptiveChoice::current(const AdaptClass &cls) const {
    auto it = classes_.find(cls);
    if (it == classes_.end() || it->second.candidates.empty()) return nullptr;
    return it->second.candidates[it->second.current].algorithm;
}

uint64_t AdaptiveChoice::explored_calls() const {
    uint64_t n = 0;
    for (const auto &e : classes_) n += e.second.explored;
    return n;
}

uint64_t AdaptiveChoice::switches() const {
    uint64_t n = 0;
    for (const auto &e : classes_) n += e.second.switches;
    return n;
}

std::string AdaptiveChoice::timed_text(const Class &c) {
    std::string s;
    for (size_t k = 0; k < c.candidates.size(); ++k)
        s += std::string(k ? "," : "") + " " + c.candidates[k].algorithm->name + " " +
             time_text(c.candidates[k].agreed_ns);
    return s;
}

std::string AdaptiveChoice::describe() const {
    std::string s;
    for (const auto &[cls, c] : classes_) {
        if (c.candidates.empty()) continue;
        s += cls.text() + ": " + c.candidates[c.current].algorithm->name + (c.learning ? " (still learning)" : "");
        s += "; timed:" + timed_text(c);
        s += "; " + std::to_string(c.calls) + " calls, " + std::to_string(c.explored) + " explored, " +
             std::to_string(c.switches) + (c.switches == 1 ? " switch" : " switches");
        if (!c.last_decision.empty()) s += "; " + c.last_decision;
        s += "\n";
    }
    return s.empty() ? "nothing learnt yet\n" : s;
}

std::string AdaptiveChoice::rules_json(int comm_size, int nodes, int ppn) const {
    nlohmann::json rules = nlohmann::json::array();
    std::set<std::pair<Collective, int>> written;  // in place and out of place: the first learnt
    for (const auto &[cls, c] : classes_) {
        if (c.candidates.empty() || c.learning || !written.insert({cls.collective, cls.log2_bytes}).second) continue;
        nlohmann::json r;
        r["collective"] = collective_name(cls.collective);
        r["comm_size"] = comm_size;
        r["nodes"] = nodes;
        if (ppn > 0) r["ppn"] = ppn;
        r["bytes"] = {cls.min_bytes(), cls.max_bytes()};
        r["algorithm"] = c.candidates[c.current].algorithm->name;
        r["note"] = "learnt by adapt over " + std::to_string(c.calls) + " calls:" + timed_text(c);
        rules.push_back(r);
    }
    nlohmann::json doc;
    doc["comment"] = "what adapt learnt (loom-rules(5)); in place and out of place share a size class here";
    doc["rules"] = rules;
    return doc.dump(2) + "\n";
}

}  // namespace loom
