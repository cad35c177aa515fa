#include "select/cost_model.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <map>
#include <memory>
#include <queue>
#include <sstream>

#include "core/fifo.hpp"
#include "core/params.hpp"
#include "node_map.hpp"
#include "select/node_symmetry.hpp"
#include "select/phase_prediction.hpp"
#include "select/program_builds.hpp"

namespace loom {
namespace {

Status check_cost_model(const ParamSpec &spec, const std::string &value) {
    CostModel m;
    return CostModel::parse(value, &m) == LOOM_SUCCESS ? LOOM_SUCCESS : invalid_value_of(spec);
}

}  // namespace

const ParamId kParamCostModel = declare_param(
    ParamSection::selection,
    {"cost_model", ParamType::cost_model, "", 5,
     "Cost model parameters, e.g. \"shm=1us:8GB/s:0.1us,intra=3us:10GB/s:0.3us,net=5us:1.25GB/s:0.5us,"
     "reduce=8GB/s,copy=16GB/s,shm_max=128KiB,stripe_min=64KiB\": per link latency:bandwidth[:core time per "
     "message], a net message from stripe_min cut over every rail, rail_rates=1:0.5 for unequal rails, pml=LINK for net "
     "messages below rail_min=SIZE, node_speeds=1:0.5 and rails_down=1 for nodes that differ (any subset; "
     "empty: the rules file's model, else these defaults). Used by explain and where no rule decides",
     0, 0, Collective::allreduce, nullptr, check_cost_model});

namespace {

// "5us", "800ns", "0.002ms" -> microseconds.
bool parse_latency(const std::string &text, double *us) {
    char *end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (end == text.c_str() || v < 0 || !std::isfinite(v)) return false;
    const std::string unit = end;
    double scaled;
    if (unit == "us") scaled = v;
    else if (unit == "ns") scaled = v / 1000;
    else if (unit == "ms") scaled = v * 1000;
    else return false;
    if (!std::isfinite(scaled)) return false;  // "1e306ms"
    *us = scaled;
    return true;
}

// "8GB/s", "100Gb/s", "900MB/s" -> microseconds per byte.
bool parse_bandwidth(const std::string &text, double *us_per_byte) {
    char *end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (end == text.c_str() || v <= 0 || !std::isfinite(v)) return false;
    const std::string unit = end;
    double bytes_per_us;
    if (unit == "GB/s") bytes_per_us = v * 1000;
    else if (unit == "MB/s") bytes_per_us = v;
    else if (unit == "Gb/s") bytes_per_us = v * 1000 / 8;
    else return false;
    // "1e306GB/s", "1e-320GB/s": a rate or a cost per byte past a double's
    // normal range (infinite, or 0), which no time can be computed from.
    if (!std::isnormal(bytes_per_us) || !std::isnormal(1.0 / bytes_per_us)) return false;
    *us_per_byte = 1.0 / bytes_per_us;
    return true;
}

std::string bandwidth_text(double us_per_byte) {
    char b[32];
    std::snprintf(b, sizeof b, "%gGB/s", 1.0 / us_per_byte / 1000);
    return b;
}

// The shortest text that reads back as `v`.
std::string exact_text(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.15g", v);
    if (std::strtod(b, nullptr) != v) std::snprintf(b, sizeof b, "%.17g", v);
    return b;
}

std::string link_text(const LinkCost &l) {
    char b[32], o[32];
    std::snprintf(b, sizeof b, "%gus:", l.alpha_us);
    std::snprintf(o, sizeof o, ":%gus", l.overhead_us);
    return b + bandwidth_text(l.us_per_byte) + o;
}

// Which link a message takes.
enum LinkClass { kSharedMemory, kIntraNode, kNetwork, kPml };

// "1:0.5:2": each item through `item` (false: not one); false where an
// item is empty or refused, or the list is empty or ends in ':'.
template <class Item>
bool parse_list(const std::string &value, const Item &item) {
    std::stringstream list(value);
    std::string text;
    bool any = false;
    while (std::getline(list, text, ':')) {
        if (text.empty() || !item(text)) return false;
        any = true;
    }
    return any && value.back() != ':';
}

}  // namespace

Status CostModel::parse(const std::string &text, CostModel *out) {
    CostModel m = *out;
    std::stringstream items(text);
    std::string item;
    while (std::getline(items, item, ',')) {
        if (item.empty()) continue;
        const size_t eq = item.find('=');
        if (eq == std::string::npos)
            return fail(LOOM_ERR_INVALID_ARGUMENT, "cost model: '" + item + "' is not key=value");
        const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
        const auto bad = [&](const char *expected) {
            return fail(LOOM_ERR_INVALID_ARGUMENT, "cost model: " + key + "='" + value + "' is not " + expected);
        };
        LinkCost *link = key == "shm"     ? &m.shared_memory
                         : key == "intra" ? &m.intra_node
                         : key == "net"   ? &m.network
                         : key == "pcie"  ? &m.pcie
                         : key == "pml"   ? &m.pml
                                          : nullptr;
        if (link) {
            const size_t colon = value.find(':');
            const size_t second = colon == std::string::npos ? colon : value.find(':', colon + 1);
            const std::string bandwidth =
                colon == std::string::npos
                    ? ""
                    : value.substr(colon + 1, second == std::string::npos ? second : second - colon - 1);
            if (colon == std::string::npos || !parse_latency(value.substr(0, colon), &link->alpha_us) ||
                !parse_bandwidth(bandwidth, &link->us_per_byte) ||
                (second != std::string::npos && !parse_latency(value.substr(second + 1), &link->overhead_us)))
                return bad("LATENCY:BANDWIDTH[:OVERHEAD] (e.g. 2us:10GB/s or 2us:10GB/s:0.5us)");
        } else if (key == "reduce") {
            if (!parse_bandwidth(value, &m.reduce_us_per_byte)) return bad("a bandwidth (e.g. 8GB/s)");
        } else if (key == "copy") {
            if (!parse_bandwidth(value, &m.copy_us_per_byte)) return bad("a bandwidth (e.g. 16GB/s)");
        } else if (key == "shm_max" || key == "stripe_min" || key == "rail_min") {
            long long bytes = 0;
            if (!parse_size(value, &bytes) || bytes < 0) return bad("a size (e.g. 64KiB)");
            (key == "shm_max"      ? m.shm_max_bytes
             : key == "stripe_min" ? m.stripe_min_bytes
                                   : m.rail_min_bytes) = static_cast<size_t>(bytes);
        } else if (key == "rail_rates" || key == "node_speeds") {
            const bool rails = key == "rail_rates";
            const size_t most = rails ? 64 : 65536;
            const char *expected = rails ? "up to 64 positive rates relative to net, ':'-separated (e.g. 1:0.5)"
                                         : "up to 65536 positive speeds, one per node, ':'-separated (e.g. 1:1:0.5)";
            std::vector<double> rates;
            const bool ok = parse_list(value, [&](const std::string &rate) {
                char *end = nullptr;
                const double v = std::strtod(rate.c_str(), &end);
                if (*end != '\0' || !(v > 0) || !std::isnormal(v) || rates.size() >= most) return false;
                rates.push_back(v);
                return true;
            });
            if (!ok) return bad(expected);
            (rails ? m.rail_rates : m.node_speeds) = rates;
        } else if (key == "rails_down") {
            const char *expected = "rail numbers from 0 to 63, ':'-separated (e.g. 1 or 0:2)";
            std::vector<int> down;
            const bool ok = parse_list(value, [&](const std::string &rail) {
                char *end = nullptr;
                const long v = std::strtol(rail.c_str(), &end, 10);
                if (*end != '\0' || v < 0 || v > 63) return false;
                if (std::find(down.begin(), down.end(), static_cast<int>(v)) == down.end())
                    down.push_back(static_cast<int>(v));
                return true;
            });
            if (!ok) return bad(expected);
            m.rails_down = down;
        } else {
            return fail(
                LOOM_ERR_INVALID_ARGUMENT,
                "cost model: unknown key '" + key +
                    "' (known: shm, intra, net, pcie, pml, reduce, copy, shm_max, stripe_min, rail_min, rail_rates, node_speeds, "
                    "rails_down)");
        }
    }
    *out = m;
    return LOOM_SUCCESS;
}

std::vector<int> CostModel::live_rails(int rails) const {
    std::vector<int> live;
    for (int rail = 0; rail < rails; ++rail)
        if (std::find(rails_down.begin(), rails_down.end(), rail) == rails_down.end()) live.push_back(rail);
    return live;
}

std::string CostModel::describe() const {
    std::string text = "shm=" + link_text(shared_memory) + ",intra=" + link_text(intra_node) +
                       ",net=" + link_text(network) + ",pcie=" + link_text(pcie) +
                       ",reduce=" + bandwidth_text(reduce_us_per_byte) + ",copy=" + bandwidth_text(copy_us_per_byte) +
                       ",shm_max=" + std::to_string(shm_max_bytes) + ",stripe_min=" + std::to_string(stripe_min_bytes);
    // The pml link where some message takes it.
    if (rail_min_bytes > 0 || !rails_down.empty()) text += ",pml=" + link_text(pml);
    if (rail_min_bytes > 0) text += ",rail_min=" + std::to_string(rail_min_bytes);
    for (size_t r = 0; r < rail_rates.size(); ++r) text += (r ? ":" : ",rail_rates=") + exact_text(rail_rates[r]);
    for (size_t n = 0; n < node_speeds.size(); ++n) text += (n ? ":" : ",node_speeds=") + exact_text(node_speeds[n]);
    for (size_t r = 0; r < rails_down.size(); ++r) text += (r ? ":" : ",rails_down=") + std::to_string(rails_down[r]);
    return text;
}

namespace {

// What an event does to its step.
enum class Phase { start, take_in, finish };

struct Event {
    double time;
    int rank;
    StepId step;
    Phase phase;         // start: the step becomes ready; take_in: a receive's data is there; finish
    double overhead_us;  // take_in: the receiving core's time for the message
    uint64_t order;      // ties broken by insertion, so runs are deterministic
    bool operator>(const Event &o) const { return time != o.time ? time > o.time : order > o.order; }
};

// Plays the programs against each other: every rank's (programs[r] is rank
// r's), or with `sym`, node 0's ranks' (programs[i] is local rank i's) with
// every other node's taken as their image (node_symmetry.hpp).
class Simulation {
  public:
    Simulation(const std::vector<std::unique_ptr<Program>> &programs, const CollArgs &args, const CostModel &m,
               const NodeSymmetry *sym = nullptr)
        : programs_(programs),
          args_(args),
          m_(m),
          sym_(sym),
          p_(static_cast<int>(programs.size())),
          rails_(args.nodes ? std::max(1, args.nodes->rails) : 1) {
        unmet_.resize(p_);
        live_rails_ = m_.live_rails(rails_);
        for (int rail : live_rails_) rail_rate_sum_ += m_.rail_rate(rail);
        // Sized once: rail_free() hands out references into it.
        rail_free_.assign(args_.nodes ? std::max<size_t>(1, args_.nodes->members.size()) * rails_ * 2 : 2, 0.0);
        finish_.assign(p_, 0);
        cpu_free_.assign(p_, 0);
        left_.assign(p_, 0);
        for (int r = 0; r < p_; ++r) {
            unmet_[r] = programs_[r]->initial_unmet;
            left_[r] = programs_[r]->size();
            for (StepId s : programs_[r]->initial_ready) push(0, r, s, Phase::start);
        }
    }

    // Where asked, each phase's first start and last end (phase_prediction.hpp).
    void track_phases(std::map<std::string, std::pair<double, double>> *spans) { spans_ = spans; }

    Status run(double *us) {
        while (!events_.empty() && !interleaved_) {
            const Event e = events_.top();
            events_.pop();
            if (e.phase == Phase::finish) complete(e);
            else if (e.phase == Phase::take_in) take_in(e);
            else start(e);
        }
        if (interleaved_)
            return fail(LOOM_ERR_INVALID_ARGUMENT,
                        "cost model: one node cannot stand for all: messages to or from several nodes queue at once "
                        "(on a rail or a core), and the order they take on the other nodes is not node 0's");
        // With symmetry, a rank the check did not sample may differ from
        // node 0's image of it: its messages then do not match.
        const Status unmatched = sym_ ? LOOM_ERR_INVALID_ARGUMENT : LOOM_ERR_INTERNAL;
        const std::string beyond = sym_ ? " (one node cannot stand for all: the plans differ from node to node)" : "";
        for (int r = 0; r < p_; ++r)
            if (left_[r] != 0)
                return fail(unmatched, "cost model: rank " + std::to_string(rank_at(r)) + " of " + args_.describe() +
                                           " never finishes (" + std::to_string(left_[r]) +
                                           " steps left): its sends and receives do not match" + beyond);
        for (const auto &[pair, ch] : channels_)
            if (!ch.arrivals.empty() || !ch.recvs.empty())
                return fail(unmatched, "cost model: " + std::to_string(ch.arrivals.size() + ch.recvs.size()) +
                                           " message(s) from rank " + std::to_string(pair.first) + " to rank " +
                                           std::to_string(pair.second) + " of " + args_.describe() +
                                           " never find their other side" + beyond);
        *us = p_ ? *std::max_element(finish_.begin(), finish_.end()) : 0;
        return LOOM_SUCCESS;
    }

  private:
    struct PendingRecv {
        double posted;
        StepId step;
    };
    struct Arrival {
        double time;  // when the data is there
        double overhead_us;
    };
    // Messages from one rank to another, matched in order. Fifo allocates
    // nothing until used, where a deque allocates on construction: an
    // alltoall on 16384 ranks has 131072 channels.
    struct Channel {
        Fifo<Arrival> arrivals;  // sends not yet matched
        Fifo<PendingRecv> recvs;
    };

    // With symmetry every node's way in is node 0's way out, and a core
    // takes in the images of what node 0's ranks receive. That holds while
    // a rank's messages queue only behind its own to (or from) the same
    // node: where one rank has messages to several nodes queued at once,
    // the simulation of every rank interleaves them with the other nodes'
    // on each way in, in an order that is not node 0's.
    struct Message {
        int node;  // where it went, or came from
        double end;
    };
    // A message to or from `node`, ready at `ready`, done at `end`, on the
    // rail or core whose last message `last` holds.
    template <class Key>
    void note_queue(std::map<Key, Message> &last, const Key &key, int node, double ready, double end) {
        const auto [it, first] = last.try_emplace(key, Message{node, end});
        if (!first && it->second.end > ready && it->second.node != node) interleaved_ = true;
        it->second = Message{node, end};
    }

    void push(double t, int r, StepId s, Phase phase, double overhead_us = 0) {
        events_.push(Event{t, r, s, phase, overhead_us, order_++});
    }

    // A matched message whose data is there at `ready`: without overhead the
    // receive is done then; with it, the receiving core takes it in once
    // free, decided at `ready` so work the core does before is not delayed.
    void received(int r, StepId s, double ready, double overhead_us) {
        if (overhead_us <= 0) return push(ready, r, s, Phase::finish);
        push(ready, r, s, Phase::take_in, overhead_us);
    }

    void take_in(const Event &e) {
        const double end = std::max(e.time, cpu_free_[e.rank]) + e.overhead_us / m_.node_speed(node(rank_at(e.rank)));
        if (sym_) note_queue(last_take_in_, e.rank, node(programs_[e.rank]->steps[e.step].peer), e.time, end);
        cpu_free_[e.rank] = end;
        push(cpu_free_[e.rank], e.rank, e.step, Phase::finish);
    }

    // When a node's rail is free going out (way 0) or coming in (way 1).
    double &rail_free(int node, int rail, int way) {
        const size_t at = (static_cast<size_t>(node) * static_cast<size_t>(rails_) + static_cast<size_t>(rail)) * 2 +
                          static_cast<size_t>(way);
        return rail_free_[at];
    }

    int node(int r) const { return args_.nodes && args_.nodes->nranks() == args_.nranks ? args_.nodes->node_of[r] : 0; }
    // Simulated positions and communicator ranks.
    int rank_at(int position) const { return sym_ ? sym_->nodes->members[0][position] : position; }
    int position_of(int rank) const { return sym_ ? sym_->nodes->local_index[rank] : rank; }
    // The channel of a message from `from` to `to` as the simulation holds
    // it: with symmetry, its image whose receiver is on node 0.
    std::pair<int, int> channel_of(int from, int to) const {
        if (!sym_) return {from, to};
        return {sym_->moved_rank(from, sym_->to_origin(node(to))), sym_->representative(to)};
    }

    LinkClass link(int from, int to, size_t bytes) const {
        if (node(from) != node(to)) return bytes < m_.rail_min_bytes || live_rails_.empty() ? kPml : kNetwork;
        return bytes <= m_.shm_max_bytes ? kSharedMemory : kIntraNode;
    }

    const LinkCost &cost(LinkClass c) const {
        return c == kSharedMemory ? m_.shared_memory
               : c == kIntraNode  ? m_.intra_node
               : c == kPml        ? m_.pml
                                  : m_.network;
    }

    // Posting a send or receive opens the gate of the next one to that peer.
    void posted(int r, StepId s, double t) {
        const StepId next = programs_[r]->next_in_peer_order[s];
        if (next != Program::kNoStep && --unmet_[r][next] == 0) push(t, r, next, Phase::start);
    }

    void start(const Event &e) {
        const Program &prog = *programs_[e.rank];
        const Step &s = prog.steps[e.step];
        if (spans_) {
            const auto [it, first] = spans_->try_emplace(prog.phase_of(e.step), e.time, e.time);
            if (!first) it->second.first = std::min(it->second.first, e.time);
        }
        const int me = rank_at(e.rank);
        const double es = static_cast<double>(args_.elem_size);
        switch (s.kind) {
            case StepKind::join: push(e.time, e.rank, e.step, Phase::finish); break;
            case StepKind::copy:
            case StepKind::reduce: {
                const double per_byte = s.kind == StepKind::copy ? m_.copy_us_per_byte : m_.reduce_us_per_byte;
                const double begin = std::max(e.time, cpu_free_[e.rank]);
                cpu_free_[e.rank] = begin + s.dst.count * es * per_byte / m_.node_speed(node(me));
                push(cpu_free_[e.rank], e.rank, e.step, Phase::finish);
                break;
            }
            case StepKind::send: {
                posted(e.rank, e.step, e.time);
                const size_t bytes = s.src.count * args_.elem_size;
                const LinkClass c = link(me, s.peer, bytes);
                const LinkCost &l = cost(c);
                // The sender's core hands the message over first.
                double handed = e.time;
                const double speed_out = m_.node_speed(node(me)), speed_in = m_.node_speed(node(s.peer));
                if (l.overhead_us > 0)
                    handed = cpu_free_[e.rank] = std::max(e.time, cpu_free_[e.rank]) + l.overhead_us / speed_out;
                // Messages queue on their link: a rank's own copies within a
                // node; across nodes, the rail (lane modulo the rails) of
                // the sending node going out and of the receiving node coming
                // in, each shared by all ranks of its node, so that many
                // nodes sending to one (a gather to a leader) queue at it.
                // With symmetry, every node's way in is node 0's.
                // A message of at least stripe_min is cut over every rail
                // in proportion to their rates, so that all its pieces take
                // the same time on an idle network.
                const double wire = bytes * l.us_per_byte;
                double arrival;
                if (c == kNetwork || c == kPml) {
                    // Through the PML a node's messages move at one rail's
                    // rate whatever their lanes (docs/performance.md): the
                    // first rail left, at the pml link's own rate.
                    const int live = static_cast<int>(live_rails_.size());
                    const bool striped = c == kNetwork && live > 1 && bytes >= m_.stripe_min_bytes;
                    const int first = striped || c == kPml ? 0 : s.lane % live, last = striped ? live - 1 : first;
                    // The way out and the way in queue apart: flows share
                    // a link rather than wait their turn, so a sender is
                    // not held by a receiver busy with another node's
                    // message, and the way in takes a message from when it
                    // was handed over (or is free), not when the way out
                    // reaches it. It is in once both ways have carried it.
                    double done = handed;
                    for (int k = first; k <= last; ++k) {
                        const int rail = live ? live_rails_[static_cast<size_t>(k)] : 0;
                        const double piece = striped     ? wire / rail_rate_sum_
                                             : c == kPml ? wire
                                                         : wire / m_.rail_rate(rail);
                        double &out = rail_free(node(me), rail, 0);
                        double &in = rail_free(sym_ ? 0 : node(s.peer), rail, 1);
                        out = std::max(handed, out) + piece / speed_out;
                        if (sym_) note_queue(last_send_, {e.rank, rail}, node(s.peer), handed, out);
                        in = std::max(handed, in) + piece / speed_in;
                        done = std::max({done, out, in});
                    }
                    arrival = done + l.alpha_us;
                } else {
                    double &link_free = link_free_[{me, c}];
                    const double begin = std::max(handed, link_free);
                    link_free = begin + wire / speed_out;
                    arrival = link_free + l.alpha_us;
                }
                push(arrival, e.rank, e.step, Phase::finish);
                const std::pair<int, int> key = channel_of(me, s.peer);
                Channel &ch = channels_[key];
                if (!ch.recvs.empty()) {
                    const PendingRecv r = ch.recvs.front();
                    ch.recvs.pop_front();
                    received(position_of(key.second), r.step, std::max(r.posted, arrival), l.overhead_us);
                } else {
                    ch.arrivals.push_back(Arrival{arrival, l.overhead_us});
                }
                break;
            }
            case StepKind::recv: {
                posted(e.rank, e.step, e.time);
                Channel &ch = channels_[channel_of(s.peer, me)];
                if (!ch.arrivals.empty()) {
                    const Arrival a = ch.arrivals.front();
                    ch.arrivals.pop_front();
                    received(e.rank, e.step, std::max(e.time, a.time), a.overhead_us);
                } else {
                    ch.recvs.push_back(PendingRecv{e.time, e.step});
                }
                break;
            }
        }
    }

    void complete(const Event &e) {
        const Program &prog = *programs_[e.rank];
        finish_[e.rank] = std::max(finish_[e.rank], e.time);
        if (spans_) {
            auto &span = (*spans_)[prog.phase_of(e.step)];
            span.second = std::max(span.second, e.time);
        }
        --left_[e.rank];
        for (uint32_t i = prog.dependents_begin[e.step]; i < prog.dependents_begin[e.step + 1]; ++i) {
            const StepId d = prog.dependents[i];
            if (--unmet_[e.rank][d] == 0) push(e.time, e.rank, d, Phase::start);
        }
    }

    const std::vector<std::unique_ptr<Program>> &programs_;
    const CollArgs &args_;
    const CostModel &m_;
    std::map<std::string, std::pair<double, double>> *spans_ = nullptr;
    const NodeSymmetry *sym_;
    const int p_;
    const int rails_;           // network rails per node
    std::vector<int> live_rails_;  // those not down
    double rail_rate_sum_ = 0;     // the live rails' rates together, relative to net
    std::vector<std::vector<uint32_t>> unmet_;
    std::vector<double> finish_, cpu_free_;
    std::vector<size_t> left_;
    std::map<std::pair<int, int>, double> link_free_;   // per (rank, link class) within a node
    std::vector<double> rail_free_;                     // per (node, rail, way out or in)
    std::map<std::pair<int, int>, Message> last_send_;  // per (position, rail): the last message sent on it
    std::map<int, Message> last_take_in_;               // per position: its core's last message taken in
    bool interleaved_ = false;
    std::map<std::pair<int, int>, Channel> channels_;
    std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
    uint64_t order_ = 0;
};

// The shared slots: the input copied into the slot, one wait on the
// shared-memory link, then every rank's slot read: whole and reduced
// (allreduce), its block reduced (reduce_scatter), or copied.
double shared_slots_time(const CollArgs &a, const CostModel &model) {
    const double p = a.nranks;
    const double input = static_cast<double>(a.input_count() * a.elem_size);
    double read = 0;
    switch (a.collective) {
        case Collective::allreduce:
            read = (p - 1) * input * model.reduce_us_per_byte + input * model.copy_us_per_byte;
            break;
        case Collective::reduce_scatter:
        case Collective::reduce_scatter_block: read = input * model.reduce_us_per_byte; break;
        case Collective::allgather: read = p * input * model.copy_us_per_byte; break;
        case Collective::alltoall: read = input * model.copy_us_per_byte; break;
        case Collective::alltoallv:
        case Collective::allgatherv: break;  // the slots do not run them
    }
    const double sync = a.nranks > 1 ? model.shared_memory.alpha_us : 0;
    return (input * model.copy_us_per_byte + read) / model.node_speed(0) + sync;
}

// The node slots' phases around the leaders' plan: the inputs copied into
// the slots, a wait, the leader combining its node's, then the result's
// wait and each rank's copy of its part.
double node_slots_phases_time(const CollArgs &a, const CostModel &model) {
    const double k = a.nodes ? a.nodes->max_ranks_per_node() : 1;
    const double input = static_cast<double>(a.input_count() * a.elem_size);
    const bool reduces = a.collective != Collective::allgather;
    const double combine = (k - 1) * input * (reduces ? model.reduce_us_per_byte : model.copy_us_per_byte);
    const double result = a.collective == Collective::allgather   ? input * a.nranks
                          : a.collective == Collective::allreduce ? input
                                                                  : input / a.nranks;
    const double waits = k > 1 ? 2 * model.shared_memory.alpha_us : 0;
    // Every node runs them; the slowest sets the pace.
    double slowest = model.node_speed(0);
    for (int n = 1; a.nodes && n < a.nodes->nodes(); ++n) slowest = std::min(slowest, model.node_speed(n));
    return (input * model.copy_us_per_byte + combine + result * model.copy_us_per_byte) / slowest + waits;
}

}  // namespace

double staged_pipeline_time(size_t bytes, size_t chunk, double chunk_us, const CostModel &model) {
    if (bytes == 0 || chunk == 0) return 0;
    const size_t chunks = (bytes + chunk - 1) / chunk;
    const double copy_us = model.pcie.alpha_us + static_cast<double>(std::min(bytes, chunk)) * model.pcie.us_per_byte;
    // Fill (a copy in), the steady stages, drain (a copy out). A chunk's
    // copies in and out share Loom's one stream.
    return 2 * copy_us + static_cast<double>(chunks) * std::max(2 * copy_us, chunk_us);
}

namespace {

std::atomic<size_t> max_simulated_steps{kModelMaxSimulatedSteps};

// Whether the call's nodes differ: a node of its own with a speed other
// than 1, or one of its rails down.
bool nodes_differ(const CostModel &model, const CollArgs &args) {
    if (!args.nodes || args.nodes->nranks() != args.nranks) return false;
    for (int rail : model.rails_down)
        if (rail < std::max(1, args.nodes->rails)) return true;
    for (int n = 0; n < args.nodes->nodes(); ++n)
        if (model.node_speed(n) != 1.0) return true;
    return false;
}

// A plan's price; with `spans`, its phases' too.
Status price_plan_phases(const AlgorithmInfo &algo, const CollArgs &args, const PlanKnobs &knobs,
                         const CostModel &model, SimulationScope scope, double *us,
                         std::map<std::string, std::pair<double, double>> *spans) {
    // Nodes that differ cannot be one node's images: up to the most a
    // simulation of every rank covers, it simulates them all.
    const bool differ = nodes_differ(model, args);
    const int automatic_limit = differ ? kModelMaxRanksEveryRank : kModelMaxRanks;
    const bool every_rank =
        scope == SimulationScope::every_rank || (scope == SimulationScope::automatic && args.nranks <= automatic_limit);
    if (every_rank && args.nranks > kModelMaxRanksEveryRank)
        return fail(LOOM_ERR_INVALID_ARGUMENT, "cost model: " + std::to_string(args.nranks) + " ranks is above the " +
                                                   std::to_string(kModelMaxRanksEveryRank) +
                                                   " a simulation of every rank covers");
    const int per_node = args.nodes && args.nodes->nranks() == args.nranks ? args.nodes->max_ranks_per_node() : 1;
    const int simulated = every_rank ? args.nranks : per_node;
    // The larger buffer: allgather's output, every other collective's input.
    const double elements = args.collective == Collective::allgather ? static_cast<double>(args.count) * args.nranks
                                                                     : static_cast<double>(args.input_count());
    const double bytes = elements * static_cast<double>(args.elem_size);
    const double segments = knobs.segment_bytes ? std::ceil(bytes / static_cast<double>(knobs.segment_bytes)) : 1;
    if (segments * simulated > kModelMaxSegmentSteps)
        return fail(LOOM_ERR_INVALID_ARGUMENT,
                    "cost model: " + args.describe() + " in segments of " + std::to_string(knobs.segment_bytes) +
                        " bytes is more segments times simulated ranks than the " +
                        std::to_string(static_cast<long>(kModelMaxSegmentSteps)) + " the simulation covers");
    // Where the caller left the choice, why every rank was not simulated.
    const std::string above = every_rank || scope != SimulationScope::automatic
                                  ? ""
                                  : " (" + std::to_string(args.nranks) + " ranks: above the " +
                                        std::to_string(automatic_limit) + " a simulation of every rank covers)";
    if (!every_rank && (!args.nodes || args.nodes->nranks() != args.nranks || args.nodes->nodes() < 2))
        return fail(LOOM_ERR_INVALID_ARGUMENT, "cost model: one node cannot stand for all: one node" + above);
    if (!every_rank && differ)
        return fail(LOOM_ERR_INVALID_ARGUMENT,
                    "cost model: one node cannot stand for all: the nodes differ (node_speeds, rails_down)" + above);
    const size_t budget = model_max_simulated_steps();
    const size_t step_limit = std::max<size_t>(1, budget / static_cast<size_t>(simulated));
    const auto truncated = [](const std::vector<std::unique_ptr<Program>> &some) {
        return std::any_of(some.begin(), some.end(), [](const auto &p) { return p->truncated; });
    };
    const auto too_many_steps = [&] {
        return fail(LOOM_ERR_INVALID_ARGUMENT, "cost model: " + args.describe() + ": a rank's plan has more than " +
                                                   std::to_string(step_limit) + " steps, which times " +
                                                   std::to_string(simulated) + " simulated ranks is more than the " +
                                                   std::to_string(budget) + " steps the simulation covers" + above);
    };
    // One rank's program first (rank 0; node 0's first rank for one node
    // standing for all): a plan too large for the budget is found before
    // the others are built.
    const int first_rank = every_rank ? 0 : args.nodes->members[0].front();
    std::vector<std::unique_ptr<Program>> programs = programs_of(algo, args, knobs, {first_rank}, step_limit);
    if (truncated(programs)) return too_many_steps();
    const auto add_programs = [&](std::vector<int> ranks, size_t at) {
        std::vector<std::unique_ptr<Program>> more = programs_of(algo, args, knobs, ranks, step_limit);
        const bool cut = truncated(more);
        programs.insert(programs.begin() + static_cast<std::ptrdiff_t>(at), std::make_move_iterator(more.begin()),
                        std::make_move_iterator(more.end()));
        return !cut;
    };
    if (every_rank) {
        std::vector<int> ranks;
        for (int r = 1; r < args.nranks; ++r) ranks.push_back(r);
        if (!add_programs(ranks, 1)) return too_many_steps();
        Simulation sim(programs, args, model);
        sim.track_phases(spans);
        return sim.run(us);
    }
    // Node 0's last rank next: the check needs only it and the first.
    const std::vector<int> &origin = args.nodes->members[0];
    if (origin.size() > 1 && !add_programs({origin.back()}, 1)) return too_many_steps();
    NodeSymmetry sym;
    std::string why;
    if (!find_node_symmetry(algo, args, knobs, *programs.front(), *programs.back(), &sym, &why))
        return fail(LOOM_ERR_INVALID_ARGUMENT, "cost model: one node cannot stand for all: " + why + above);
    if (origin.size() > 2 && !add_programs(std::vector<int>(origin.begin() + 1, origin.end() - 1), 1))
        return too_many_steps();
    Simulation sim(programs, args, model, &sym);
    sim.track_phases(spans);
    const Status st = sim.run(us);
    if (st != LOOM_SUCCESS && !above.empty()) return fail(st, last_error_message() + above);
    return st;
}

// Each call path's price (algorithms/call_path.hpp): the cost model asks the path.
Status price_plan(const AlgorithmInfo &algo, const CollArgs &args, const PlanKnobs &knobs, const CostModel &model,
                  SimulationScope scope, double *us) {
    return price_plan_phases(algo, args, knobs, model, scope, us, nullptr);
}

Status price_shared_slots(const AlgorithmInfo &, const CollArgs &args, const PlanKnobs &, const CostModel &model,
                          SimulationScope, double *us) {
    *us = shared_slots_time(args, model);
    return LOOM_SUCCESS;
}

// The leaders' plan, simulated, and the node's phases around it.
Status price_node_slots(const AlgorithmInfo &algo, const CollArgs &args, const PlanKnobs &knobs, const CostModel &model,
                        SimulationScope scope, double *us) {
    LOOM_RETURN_IF_ERROR(price_plan(algo, args, knobs, model, scope, us));
    *us += node_slots_phases_time(args, model);
    return LOOM_SUCCESS;
}

Status price_cuda_ipc(const AlgorithmInfo &, const CollArgs &, const PlanKnobs &, const CostModel &, SimulationScope,
                      double *) {
    return fail(LOOM_ERR_INVALID_ARGUMENT, "the cost model has no prices for device memory yet");
}

using PathPrice = Status (*)(const AlgorithmInfo &, const CollArgs &, const PlanKnobs &, const CostModel &,
                             SimulationScope, double *);
constexpr PathPrice kPathPrices[kCallPathCount] = {price_plan, price_shared_slots, price_node_slots, price_cuda_ipc};

}  // namespace

Status predict_phases(const AlgorithmInfo &algo, const CollArgs &args, const PlanKnobs &knobs, const CostModel &model,
                      std::vector<PhaseSpan> *phases, double *us) {
    if (algo.path != CallPath::plan)
        return fail(LOOM_ERR_INVALID_ARGUMENT, "cost model: " + std::string(algo.name) + " runs no plan: no phases");
    std::map<std::string, std::pair<double, double>> spans;
    LOOM_RETURN_IF_ERROR(price_plan_phases(algo, args, knobs, model, SimulationScope::automatic, us, &spans));
    phases->clear();
    for (const auto &[name, span] : spans)
        phases->push_back({name.empty() ? std::string(algo.name) + " (own steps)" : name, span.first, span.second});
    std::sort(phases->begin(), phases->end(),
              [](const PhaseSpan &a, const PhaseSpan &b) { return a.start_us < b.start_us; });
    return LOOM_SUCCESS;
}

void set_model_max_simulated_steps(size_t steps) { max_simulated_steps = std::max<size_t>(1, steps); }
size_t model_max_simulated_steps() { return max_simulated_steps.load(std::memory_order_relaxed); }

Status predict_time(const AlgorithmInfo &algo, const CollArgs &args, const PlanKnobs &knobs, const CostModel &model,
                    SimulationScope scope, double *us) {
    return kPathPrices[static_cast<int>(algo.path)](algo, args, knobs, model, scope, us);
}

}  // namespace loom
