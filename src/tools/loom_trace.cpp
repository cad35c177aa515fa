// loom-trace: merges the step timelines that the `trace` parameter writes
// (one Chrome trace-event file per rank) onto one clock, summarises each
// call (time per phase, each rail's busy share per direction, bytes per
// rail, idle gaps, the critical path) and draws a call's timeline as a PNG
// (gnuplot). See loom-trace(1).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using nlohmann::json;

namespace {

struct Event {
    int rank = 0;
    std::string host;
    std::string track;  // the row's name in the file ("ucx rail0 send 2")
    std::string cat;    // call, send, recv, copy, reduce
    std::string name;
    double ts = 0, dur = 0;  // us
    json args;
    double end() const { return ts + dur; }
};

struct Call {
    int comm = 0;
    long long number = 0;
    std::string collective, algorithm;
    long long bytes = 0;
    std::vector<const Event *> calls;  // one per rank
    std::vector<const Event *> steps;
};

void usage(FILE *to) {
    std::fputs(
        "usage: loom-trace [options] FILE...\n"
        "  FILE...        the ranks' trace files (coll_loom_trace / LOOM_TRACE, e.g. /tmp/loom-%r.json)\n"
        "  -o OUT.json    also write them merged into one Chrome trace (Perfetto, chrome://tracing)\n"
        "  --png OUT.png  draw one call's timeline (ranks as rows, rails coloured; needs gnuplot)\n"
        "  --call N       summarise (and draw) only call N of its communicator (default: every call;\n"
        "                 the PNG: the longest call)\n"
        "  --comm C       the communicator of --call (default 0)\n"
        "  --collective NAME   only calls of this collective\n"
        "  -q             no per-call summary (with -o or --png)\n"
        "  --check        check that every call's steps are all there on every rank, and print the bytes\n"
        "                 each transport and rail carried over the whole run (exit 1 when some are missing)\n",
        to);
}

std::string bytes_text(double b) {
    char t[32];
    if (b >= 1 << 20) std::snprintf(t, sizeof t, "%.1f MiB", b / (1 << 20));
    else if (b >= 1024) std::snprintf(t, sizeof t, "%.1f KiB", b / 1024);
    else std::snprintf(t, sizeof t, "%.0f B", b);
    return t;
}

std::string ms(double us) {
    char t[32];
    std::snprintf(t, sizeof t, "%.3f ms", us / 1000);
    return t;
}

// Reads one rank's file; a file cut short (a crashed run) is read up to its last whole event.
bool read_file(const std::string &path, std::vector<Event> *out, std::string *why) {
    std::ifstream in(path);
    if (!in) {
        *why = "cannot read '" + path + "'";
        return false;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    json doc = json::parse(text, nullptr, false);
    if (doc.is_discarded()) {
        // Unterminated array: keep the events up to the last complete line.
        size_t cut = text.rfind("}\n");
        while (cut != std::string::npos) {
            std::string attempt = text.substr(0, cut + 1) + "\n]";
            doc = json::parse(attempt, nullptr, false);
            if (!doc.is_discarded()) break;
            cut = cut == 0 ? std::string::npos : text.rfind("}\n", cut - 1);
        }
    }
    if (doc.is_discarded() || !doc.is_array()) {
        *why = "'" + path + "' is not a Chrome trace-event array (written by Loom's trace parameter?)";
        return false;
    }
    std::map<std::pair<int, long long>, std::string> rows;  // by (pid, tid): a merged file holds every rank's
    std::map<int, std::string> hosts;
    const size_t first = out->size();
    for (const json &e : doc) {
        if (!e.is_object()) continue;
        const std::string ph = e.value("ph", "");
        if (ph == "M") {
            const std::string name = e.value("name", "");
            if (name == "thread_name") rows[{e.value("pid", 0), e.value("tid", 0LL)}] = e["args"].value("name", "");
            if (name == "loom_trace") hosts[e["args"].value("rank", -1)] = e["args"].value("host", "");
            continue;
        }
        if (ph != "X") continue;
        Event ev;
        ev.rank = e.value("pid", 0);
        ev.track = rows[{ev.rank, e.value("tid", 0LL)}];
        ev.cat = e.value("cat", "");
        ev.name = e.value("name", "");
        ev.ts = e.value("ts", 0.0);
        ev.dur = e.value("dur", 0.0);
        ev.args = e.value("args", json::object());
        out->push_back(std::move(ev));
    }
    if (hosts.empty()) {
        *why = "'" + path + "' has no loom_trace record (not written by Loom's trace parameter?)";
        return false;
    }
    for (size_t i = first; i < out->size(); ++i) (*out)[i].host = hosts[(*out)[i].rank];
    return true;
}

// Length of the union of [a, b) intervals clipped to [lo, hi), and the longest gap inside [lo, hi).
void busy_and_gap(std::vector<std::pair<double, double>> iv, double lo, double hi, double *busy, double *gap) {
    std::sort(iv.begin(), iv.end());
    *busy = 0;
    *gap = 0;
    double at = lo;
    for (auto [a, b] : iv) {
        a = std::max(a, lo);
        b = std::min(b, hi);
        if (b <= a) continue;
        if (a > at) *gap = std::max(*gap, a - at);
        if (b > at) {
            *busy += b - std::max(a, at);
            at = b;
        }
    }
    if (hi > at) *gap = std::max(*gap, hi - at);
}

struct StepNode {
    int rank;
    long long step;
    double start, end;
    std::string cat, transport, phase;
    int peer = -1;
    long long bytes = 0;
    std::vector<long long> deps;
};

void summarise(const Call &c) {
    double t0 = 1e300, t1 = 0;
    double slowest = 0, fastest = 1e300;
    for (const Event *e : c.calls) {
        t0 = std::min(t0, e->ts);
        t1 = std::max(t1, e->end());
        slowest = std::max(slowest, e->dur);
        fastest = std::min(fastest, e->dur);
    }
    const double span = t1 - t0;
    std::printf("comm %d call %lld: %s %s %s on %zu ranks: %s (ranks' own times %s-%s)\n", c.comm, c.number,
                c.collective.c_str(), bytes_text(static_cast<double>(c.bytes)).c_str(), c.algorithm.c_str(),
                c.calls.size(), ms(span).c_str(), ms(fastest).c_str(), ms(slowest).c_str());
    long long polls = 0, yields = 0, sleeps = 0;
    for (const Event *e : c.calls) {
        const json w = e->args.value("wait", json::object());
        polls += w.value("polls", 0LL);
        yields += w.value("yields", 0LL);
        sleeps += w.value("sleeps", 0LL);
    }
    std::printf("  waits: %lld unfinished looks, %lld yields, %lld sleeps (all ranks)\n", polls, yields, sleeps);
    if (c.steps.empty() || span <= 0) return;

    // Phases: from the first step's start to the last step's end, over every rank.
    std::map<std::string, std::pair<double, double>> phases;
    std::vector<std::string> order;
    for (const Event *e : c.steps) {
        std::string p = e->args.value("phase", "");
        if (p.empty()) p = c.algorithm + " (own steps)";
        auto it = phases.find(p);
        if (it == phases.end()) {
            phases[p] = {e->ts, e->end()};
            order.push_back(p);
        } else {
            it->second.first = std::min(it->second.first, e->ts);
            it->second.second = std::max(it->second.second, e->end());
        }
    }
    std::sort(order.begin(), order.end(), [&](const std::string &a, const std::string &b) {
        return phases[a].first < phases[b].first;
    });
    std::printf("  phases (first step's start to last step's end, all ranks):\n");
    for (const std::string &p : order)
        std::printf("    %-52s %+10.3f ms .. %+10.3f ms  (%5.1f %% of the call)\n", p.c_str(),
                    (phases[p].first - t0) / 1000, (phases[p].second - t0) / 1000,
                    100 * (phases[p].second - phases[p].first) / span);

    // Rails per host and direction: bytes, busy share, longest idle gap.
    struct Use {
        double bytes = 0;
        std::vector<std::pair<double, double>> iv;
    };
    std::map<std::string, Use> uses;
    for (const Event *e : c.steps) {
        if (e->cat != "send" && e->cat != "recv") continue;
        const std::string transport = e->args.value("transport", "");
        const int rail = e->args.value("rail", -1);
        std::string key = e->host + " " + transport + (rail >= 0 ? " rail" + std::to_string(rail) : "") + " " +
                          (e->cat == "send" ? "out" : "in");
        Use &u = uses[key];
        u.bytes += e->args.value("bytes", 0.0);
        u.iv.emplace_back(e->ts, e->end());
    }
    std::printf("  transports per host and direction (busy: some message in flight):\n");
    for (auto &[key, u] : uses) {
        double busy = 0, gap = 0;
        busy_and_gap(u.iv, t0, t1, &busy, &gap);
        const double rate = busy > 0 ? u.bytes / busy : 0;  // bytes per us = MB/s
        std::printf("    %-28s %10s  busy %5.1f %%  longest idle %s  %.1f MB/s while busy\n", key.c_str(),
                    bytes_text(u.bytes).c_str(), 100 * busy / span, ms(gap).c_str(), rate);
    }

    // Critical path: from the step that ends last, back through whichever
    // of its dependencies (or, for a receive, the matching send's post)
    // ended last.
    std::map<std::pair<int, long long>, StepNode> nodes;
    for (const Event *e : c.steps) {
        const std::pair<int, long long> k{e->rank, e->args.value("step", -1LL)};
        auto it = nodes.find(k);
        if (it != nodes.end()) {  // a striped message: one event per rail
            it->second.start = std::min(it->second.start, e->ts);
            it->second.end = std::max(it->second.end, e->end());
            it->second.transport = "striped " + e->args.value("transport", "");
            continue;
        }
        StepNode n;
        n.rank = e->rank;
        n.step = k.second;
        n.start = e->ts;
        n.end = e->end();
        n.cat = e->cat;
        n.transport = e->args.value("transport", "local");
        n.phase = e->args.value("phase", "");
        n.peer = e->args.value("peer", -1);
        n.bytes = e->args.value("message_bytes", e->args.value("bytes", 0LL));
        for (const json &d : e->args.value("deps", json::array())) n.deps.push_back(d.get<long long>());
        nodes[k] = n;
    }
    // The k-th send from a to b matches the k-th receive on b from a.
    std::map<std::tuple<int, int>, std::vector<long long>> sends, recvs;
    for (auto &[k, n] : nodes) {
        if (n.cat == "send") sends[{n.rank, n.peer}].push_back(n.step);
        if (n.cat == "recv") recvs[{n.rank, n.peer}].push_back(n.step);
    }
    std::map<std::pair<int, long long>, std::pair<int, long long>> matching_send;
    for (auto &[k, list] : recvs) {
        const auto [me, from] = k;
        auto it = sends.find({from, me});
        if (it == sends.end()) continue;
        for (size_t i = 0; i < list.size() && i < it->second.size(); ++i)
            matching_send[{me, list[i]}] = {from, it->second[i]};
    }
    const StepNode *at = nullptr;
    for (auto &[k, n] : nodes)
        if (!at || n.end > at->end) at = &n;
    std::map<std::string, double> by_kind;
    double waited = 0;
    size_t length = 0;
    std::vector<const StepNode *> path;
    while (at && length < 100000) {
        path.push_back(at);
        ++length;
        const StepNode *next = nullptr;
        double ready = -1;
        for (long long d : at->deps) {
            auto it = nodes.find({at->rank, d});
            if (it != nodes.end() && it->second.end > ready) {
                ready = it->second.end;
                next = &it->second;
            }
        }
        if (at->cat == "recv") {
            auto m = matching_send.find({at->rank, at->step});
            if (m != matching_send.end()) {
                auto it = nodes.find(m->second);
                if (it != nodes.end() && it->second.start > ready) {
                    ready = it->second.start;
                    next = &it->second;
                }
            }
        }
        std::string kind = at->cat == "send" || at->cat == "recv" ? at->cat + " " + at->transport : at->cat;
        const double from = ready > at->start ? ready : at->start;
        by_kind[kind] += std::max(0.0, at->end - from);
        if (ready >= 0 && at->start > ready) waited += at->start - ready;
        at = next;
    }
    std::printf("  critical path: %zu steps over ranks", path.size());
    std::set<int> ranks;
    for (const StepNode *n : path) ranks.insert(n->rank);
    for (int r : ranks) std::printf(" %d", r);
    std::printf("; of the call's %s:", ms(span).c_str());
    for (auto &[k, v] : by_kind) std::printf(" %s %s,", k.c_str(), ms(v).c_str());
    std::printf(" posted late %s\n", ms(waited).c_str());
}

void write_png(const Call &c, const std::string &png) {
    double t0 = 1e300;
    for (const Event *e : c.calls) t0 = std::min(t0, e->ts);
    // Rows: per rank, its calls row, local work, then each transport track.
    std::map<std::pair<int, std::string>, int> rows;
    std::vector<std::string> labels;
    std::vector<const Event *> all(c.calls);
    all.insert(all.end(), c.steps.begin(), c.steps.end());
    std::sort(all.begin(), all.end(), [](const Event *a, const Event *b) {
        return a->rank != b->rank ? a->rank < b->rank : a->track < b->track;
    });
    for (const Event *e : all) {
        const std::pair<int, std::string> k{e->rank, e->cat == "call" ? "call" : e->track};
        if (rows.count(k)) continue;
        const int y = static_cast<int>(rows.size());
        rows[k] = y;
        labels.push_back("r" + std::to_string(e->rank) + " " + k.second);
    }
    const std::string data = png + ".dat", script = png + ".gp";
    std::ofstream d(data);
    std::map<std::string, int> colours;  // by rail/transport
    for (const Event *e : all) {
        std::string key = e->cat;
        if (e->cat == "send" || e->cat == "recv") {
            key = e->args.value("transport", "");
            const int rail = e->args.value("rail", -1);
            if (rail >= 0) key += " rail" + std::to_string(rail);
        }
        if (!colours.count(key)) colours[key] = static_cast<int>(colours.size()) + 1;
        const int y = rows[{e->rank, e->cat == "call" ? "call" : e->track}];
        const double a = (e->ts - t0) / 1000, b = (e->end() - t0) / 1000;
        d << (a + b) / 2 << ' ' << y << ' ' << (b - a) / 2 << " 0.4 " << colours[key] << '\n';
    }
    d.close();
    std::ofstream g(script);
    const int height = std::max(300, 18 * static_cast<int>(rows.size()) + 120);
    g << "set terminal png size 1400," << height << " noenhanced\n";
    g << "set output '" << png << "'\n";
    g << "set title '" << c.collective << ' ' << bytes_text(static_cast<double>(c.bytes)) << ' ' << c.algorithm
      << ", comm " << c.comm << " call " << c.number << "'\n";
    g << "set xlabel 'ms from the first rank entering the call'\nset yrange [" << rows.size() << ":-1]\n";
    g << "set ytics (";
    for (size_t i = 0; i < labels.size(); ++i) g << (i ? ", " : "") << "'" << labels[i] << "' " << i;
    g << ") font ',8'\nset style fill solid 0.8 border -1\nset key outside right\n";
    g << "plot ";
    bool first = true;
    for (auto &[key, colour] : colours) {
        g << (first ? "" : ", ") << "'" << data << "' using ($5 == " << colour
          << " ? $1 : 1/0):2:3:4 with boxxyerror lc " << colour << " title '" << key << "'";
        first = false;
    }
    g << "\n";
    g.close();
    const std::string cmd = "gnuplot '" + script + "'";
    if (std::system(cmd.c_str()) != 0) {
        std::fprintf(stderr, "loom-trace: gnuplot failed or is missing; the data is in %s and the script in %s\n",
                     data.c_str(), script.c_str());
        return;
    }
    std::remove(data.c_str());
    std::remove(script.c_str());
    std::printf("timeline: %s\n", png.c_str());
}

}  // namespace

int main(int argc, char **argv) {
    std::vector<std::string> files;
    std::string merged, png, only_collective;
    long long only_call = -1;
    int only_comm = 0;
    bool quiet = false, check = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto need = [&](const char *what) -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "loom-trace: %s needs %s\n", a.c_str(), what);
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "-h" || a == "--help") {
            usage(stdout);
            return 0;
        } else if (a == "-o") merged = need("a file");
        else if (a == "--png") png = need("a file");
        else if (a == "--call") only_call = std::atoll(need("a number").c_str());
        else if (a == "--comm") only_comm = std::atoi(need("a number").c_str());
        else if (a == "--collective") only_collective = need("a name");
        else if (a == "-q") quiet = true;
        else if (a == "--check") check = true;
        else if (!a.empty() && a[0] == '-') {
            std::fprintf(stderr, "loom-trace: unknown option '%s'\n", a.c_str());
            usage(stderr);
            return 2;
        } else files.push_back(a);
    }
    if (files.empty()) {
        usage(stderr);
        return 2;
    }
    std::vector<Event> events;
    for (const std::string &f : files) {
        std::string why;
        if (!read_file(f, &events, &why)) {
            std::fprintf(stderr, "loom-trace: %s\n", why.c_str());
            return 1;
        }
    }
    if (!merged.empty()) {
        // The files are already on one clock (the wall clock): concatenating them merges.
        std::ofstream out(merged);
        if (!out) {
            std::fprintf(stderr, "loom-trace: cannot write '%s'\n", merged.c_str());
            return 1;
        }
        out << "[\n";
        bool first = true;
        for (const std::string &f : files) {
            std::ifstream in(f);
            std::string line;
            while (std::getline(in, line)) {
                if (line.empty() || line == "[" || line == "]") continue;
                if (line.back() == ',') line.pop_back();
                if (json::parse(line, nullptr, false).is_discarded()) continue;  // a cut last line
                out << (first ? "" : ",\n") << line;
                first = false;
            }
        }
        out << "\n]\n";
        std::printf("merged: %s (%zu files)\n", merged.c_str(), files.size());
    }
    // Calls: (comm, call number), one call event per rank.
    std::map<std::pair<int, long long>, Call> calls;
    for (const Event &e : events) {
        const std::pair<int, long long> k{e.args.value("comm", 0), e.args.value("call", 0LL)};
        Call &c = calls[k];
        c.comm = k.first;
        c.number = k.second;
        if (e.cat == "call") {
            c.calls.push_back(&e);
            c.collective = e.args.value("collective", "");
            c.algorithm = e.args.value("algorithm", "");
            c.bytes = e.args.value("bytes", 0LL);
        } else {
            c.steps.push_back(&e);
        }
    }
    if (check) {
        // Per rank and call: the distinct steps seen plus the joins (left out) must make the plan's count.
        size_t calls_checked = 0, incomplete = 0;
        std::map<std::string, std::pair<double, double>> carried;  // "ucx rail0" -> sent, received
        std::map<std::pair<int, std::string>, double> sent_by_rank;
        for (auto &[k, c] : calls) {
            for (const Event *call : c.calls) {
                std::set<long long> seen;
                for (const Event *e : c.steps)
                    if (e->rank == call->rank) seen.insert(e->args.value("step", -1LL));
                const long long steps = call->args.value("steps", 0LL), joins = call->args.value("joins", 0LL);
                ++calls_checked;
                if (steps > 0 && static_cast<long long>(seen.size()) + joins != steps) {
                    ++incomplete;
                    std::printf("check: rank %d comm %d call %lld (%s): %zu steps traced + %lld joins, the plan has %lld\n",
                                call->rank, c.comm, c.number, c.algorithm.c_str(), seen.size(), joins, steps);
                }
            }
            for (const Event *e : c.steps) {
                if (e->cat != "send" && e->cat != "recv") continue;
                const int rail = e->args.value("rail", -1);
                const std::string key = e->args.value("transport", "") + (rail >= 0 ? " rail" + std::to_string(rail) : "");
                (e->cat == "send" ? carried[key].first : carried[key].second) += e->args.value("bytes", 0.0);
                if (e->cat == "send") sent_by_rank[{e->rank, key}] += e->args.value("bytes", 0.0);
            }
        }
        for (auto &[key, b] : carried)
            std::printf("check: %s carried %.0f bytes sent, %.0f received (all ranks)\n", key.c_str(), b.first,
                        b.second);
        for (auto &[k, b] : sent_by_rank)
            std::printf("check: rank %d sent %.0f bytes through %s\n", k.first, b, k.second.c_str());
        std::printf("check: %zu calls in %zu files, %zu with steps missing\n", calls_checked, files.size(),
                    incomplete);
        if (incomplete) return 1;
    }
    const Call *longest = nullptr;
    for (auto &[k, c] : calls) {
        if (c.calls.empty()) continue;
        if (only_call >= 0 && (k.first != only_comm || k.second != only_call)) continue;
        if (!only_collective.empty() && c.collective != only_collective) continue;
        if (!quiet) summarise(c);
        double span = 0;
        for (const Event *e : c.calls) span = std::max(span, e->dur);
        double best = 0;
        if (longest)
            for (const Event *e : longest->calls) best = std::max(best, e->dur);
        if (!longest || span > best) longest = &c;
    }
    if (!longest) {
        std::fprintf(stderr, "loom-trace: no call matches\n");
        return 1;
    }
    if (!png.empty()) write_png(*longest, png);
    return 0;
}
