#include "runtime/trace.hpp"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>

#include "select/selector.hpp"
#include "transport/router.hpp"

namespace loom {

const ParamId kParamTrace = declare_param(
    ParamSection::diagnostics,
    {"trace", ParamType::path, "", 4,
     "Write the step timeline of every collective to this file, as Chrome trace-event JSON (Perfetto, "
     "chrome://tracing, loom-trace(1)): each call and each step of its plan, posted and completed, with peer, "
     "bytes, lane, rail, transport and phase. %r is the process's rank in the job, %p its pid, %h its host "
     "(\"/tmp/loom-%r.json\"); empty: off. A file that cannot be written is reported once and the job runs "
     "untraced",
     0, 0, Collective::allreduce});

uint64_t trace_clock_ns() {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count());
}

namespace {

int job_rank(int fallback) {
    for (const char *name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
        const char *v = std::getenv(name);
        if (v && *v) return std::atoi(v);
    }
    return fallback;
}

std::string host_name() {
    char h[256] = {};
    if (gethostname(h, sizeof h - 1) != 0) return "unknown";
    return h;
}

std::string expand(const std::string &tmpl, int rank) {
    std::string out;
    for (size_t i = 0; i < tmpl.size(); ++i) {
        if (tmpl[i] != '%' || i + 1 == tmpl.size()) {
            out += tmpl[i];
            continue;
        }
        const char c = tmpl[++i];
        if (c == 'r') out += std::to_string(rank);
        else if (c == 'p') out += std::to_string(getpid());
        else if (c == 'h') out += host_name();
        else if (c == '%') out += '%';
        else {
            out += '%';
            out += c;
        }
    }
    return out;
}

// Open files by path: communicators of one process share theirs.
std::mutex &files_mutex() {
    static std::mutex m;
    return m;
}
std::map<std::string, std::weak_ptr<TraceFile>> &open_files() {
    static std::map<std::string, std::weak_ptr<TraceFile>> files;
    return files;
}

void json_string(std::string &out, const std::string &s) {
    out += '"';
    for (char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char esc[8];
            std::snprintf(esc, sizeof esc, "\\u%04x", c);
            out += esc;
        } else {
            out += c;
        }
    }
    out += '"';
}

// Microseconds with nanosecond digits, as the trace-event format counts.
void micros(std::string &out, uint64_t ns) {
    char t[40];
    std::snprintf(t, sizeof t, "%llu.%03u", static_cast<unsigned long long>(ns / 1000),
                  static_cast<unsigned>(ns % 1000));
    out += t;
}

}  // namespace

std::shared_ptr<TraceFile> TraceFile::open(const std::string &path_template, int fallback_rank, std::string *why) {
    const int rank = job_rank(fallback_rank);
    const std::string path = expand(path_template, rank);
    std::lock_guard<std::mutex> lock(files_mutex());
    auto &files = open_files();
    auto it = files.find(path);
    if (it != files.end())
        if (auto f = it->second.lock()) return f;
    std::FILE *f = std::fopen(path.c_str(), "w");
    if (!f) {
        *why = "cannot write the trace file '" + path + "': " + std::strerror(errno);
        return nullptr;
    }
    std::shared_ptr<TraceFile> file(new TraceFile(path, f, rank));
    files[path] = file;
    return file;
}

TraceFile::TraceFile(std::string path, std::FILE *f, int rank) : path_(std::move(path)), file_(f), rank_(rank) {
    std::string meta = "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + std::to_string(rank_) +
                       ",\"args\":{\"name\":\"rank " + std::to_string(rank_) + " (" + host_name() + ")\"}}";
    std::fputs("[\n", file_);
    event(meta);
    event("{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" + std::to_string(rank_) +
          ",\"args\":{\"sort_index\":" + std::to_string(rank_) + "}}");
    event("{\"ph\":\"M\",\"name\":\"loom_trace\",\"pid\":" + std::to_string(rank_) +
          ",\"args\":{\"rank\":" + std::to_string(rank_) + ",\"host\":\"" + host_name() +
          "\",\"pid\":" + std::to_string(getpid()) + ",\"clock\":\"wall\"}}");
    std::fflush(file_);
}

TraceFile::~TraceFile() {
    {
        std::lock_guard<std::mutex> lock(files_mutex());
        auto &files = open_files();
        auto it = files.find(path_);
        if (it != files.end() && it->second.expired()) files.erase(it);
    }
    std::fputs("\n]\n", file_);
    std::fclose(file_);
}

void TraceFile::event(const std::string &text) {
    if (!first_) std::fputs(",\n", file_);
    first_ = false;
    std::fputs(text.c_str(), file_);
}

uint32_t TraceFile::new_communicator(int rank, int size) {
    std::lock_guard<std::mutex> lock(mutex_);
    const uint32_t id = communicators_++;
    event("{\"ph\":\"M\",\"name\":\"loom_communicator\",\"pid\":" + std::to_string(rank_) + ",\"args\":{\"comm\":" +
          std::to_string(id) + ",\"rank\":" + std::to_string(rank) + ",\"size\":" + std::to_string(size) + "}}");
    std::fflush(file_);
    return id;
}

uint32_t TraceFile::row(const std::string &track, uint64_t start, uint64_t end) {
    int slot = 0;
    for (Row &r : rows_) {
        if (r.name.compare(0, track.size(), track) != 0 ||
            (r.name.size() != track.size() && r.name[track.size()] != ' '))
            continue;
        ++slot;
        if (r.free_at <= start) {
            r.free_at = end;
            return r.tid;
        }
    }
    Row r;
    r.name = slot == 0 ? track : track + " " + std::to_string(slot + 1);
    r.free_at = end;
    r.tid = static_cast<uint32_t>(rows_.size() + 1);
    rows_.push_back(r);
    // Rows sort by kind: calls, then local work, then each transport's sends and receives.
    event("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + std::to_string(rank_) +
          ",\"tid\":" + std::to_string(r.tid) + ",\"args\":{\"name\":\"" + r.name + "\"}}");
    event("{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":" + std::to_string(rank_) +
          ",\"tid\":" + std::to_string(r.tid) + ",\"args\":{\"sort_index\":" + std::to_string(r.tid) + "}}");
    return r.tid;
}

void TraceFile::write_call(uint32_t comm, const CallRecord &c, const Program *program, const StepTimes *times,
                           const Router *router, size_t elem_size) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string &e = buffer_;
    size_t joins = 0;  // steps without data, which the timeline leaves out
    if (program)
        for (const Step &s : program->steps) joins += s.kind == StepKind::join;
    const std::string pid = std::to_string(rank_);
    const std::string call_args = "\"comm\":" + std::to_string(comm) + ",\"call\":" + std::to_string(c.call);
    const std::string name = std::string(c.collective) + " " + bytes_text(c.bytes) + " " + c.algorithm;
    e.clear();
    e += "{\"ph\":\"X\",\"cat\":\"call\",\"name\":";
    json_string(e, name);
    e += ",\"pid\":" + pid + ",\"tid\":" + std::to_string(row("calls", c.start_ns, c.end_ns)) + ",\"ts\":";
    micros(e, c.start_ns);
    e += ",\"dur\":";
    micros(e, c.end_ns - c.start_ns);
    e += ",\"args\":{" + call_args + ",\"collective\":\"" + c.collective + "\",\"algorithm\":\"" + c.algorithm +
         "\",\"bytes\":" + std::to_string(c.bytes) + ",\"plan\":" + std::to_string(c.plan) + ",\"kind\":\"" + c.kind +
         "\",\"steps\":" + std::to_string(program ? program->size() : 0) + ",\"joins\":" + std::to_string(joins) +
         ",\"thread_driven\":" + (c.thread_driven ? "true" : "false") +
         ",\"wait\":{\"polls\":" + std::to_string(c.wait.polls) + ",\"yields\":" + std::to_string(c.wait.yields) +
         ",\"sleeps\":" + std::to_string(c.wait.sleeps) + "}}}";
    event(e);
    if (program && times) {
        std::vector<std::pair<int, size_t>> rails;
        for (StepId id = 0; id < program->size(); ++id) {
            const Step &s = program->steps[id];
            if (s.kind == StepKind::join) continue;
            const uint64_t t0 = times->posted[id], t1 = times->done[id];
            if (t0 == 0 || t1 < t0) continue;  // never ran (an abandoned call)
            const bool message = s.kind == StepKind::send || s.kind == StepKind::recv;
            const uint64_t bytes = (s.kind == StepKind::send ? s.src.count : s.dst.count) * elem_size;
            const char *transport = "local";
            rails.clear();
            if (message && router) {
                transport = router->carrier_name(times->carrier[id]);
                const Route route{c.plan, s.lane};
                router->rail_split(times->carrier[id], bytes, route, &rails);
            }
            if (rails.empty()) rails.emplace_back(-1, bytes);
            std::string deps;
            for (uint32_t d = 0; d < s.dep_count; ++d) {
                if (d) deps += ',';
                deps += std::to_string(program->deps[s.first_dep + d]);
            }
            const std::string &phase = program->phase_of(id);
            for (const auto &[rail, share] : rails) {
                std::string track;
                if (!message) track = "local";
                else {
                    track = transport;
                    if (rail >= 0) track += " rail" + std::to_string(rail);
                    track += s.kind == StepKind::send ? " send" : " recv";
                }
                e.clear();
                e += "{\"ph\":\"X\",\"cat\":\"";
                e += step_kind_name(s.kind);
                e += "\",\"name\":";
                std::string label = step_kind_name(s.kind);
                label += ' ' + bytes_text(share);
                if (message) label += (s.kind == StepKind::send ? " to " : " from ") + std::to_string(s.peer);
                json_string(e, label);
                e += ",\"pid\":" + pid + ",\"tid\":" + std::to_string(row(track, t0, t1)) + ",\"ts\":";
                micros(e, t0);
                e += ",\"dur\":";
                micros(e, t1 - t0);
                e += ",\"args\":{" + call_args + ",\"step\":" + std::to_string(id) +
                     ",\"bytes\":" + std::to_string(share) + ",\"deps\":[" + deps + "]";
                if (message) {
                    e += ",\"peer\":" + std::to_string(s.peer) + ",\"message_bytes\":" + std::to_string(bytes) +
                         ",\"lane\":" + std::to_string(s.lane) + ",\"transport\":\"" + transport +
                         "\",\"rail\":" + std::to_string(rail);
                }
                e += ",\"phase\":";
                json_string(e, phase);
                e += "}}";
                event(e);
            }
        }
    }
    std::fflush(file_);
}

}  // namespace loom
