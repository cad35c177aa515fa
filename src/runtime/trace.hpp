// The step timeline (parameter `trace`): for every collective a rank runs,
// the call and each step of its plan (posted, completed, peer, bytes, lane,
// rail, transport, phase), written as Chrome trace-event JSON that Perfetto
// and chrome://tracing open and loom-trace(1) merges and summarises.
//
// Off (the default), the executor pays one branch per posted and completed
// step. On, a call records its steps' times in its request and formats them
// when it finishes: one write per call, under the file's lock.
#pragma once
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/params.hpp"
#include "core/plan.hpp"

namespace loom {

extern const ParamId kParamTrace;

class Router;

// Time stamps of the timeline: the wall clock in nanoseconds, so that files
// of the processes of one machine (or of machines that keep their clocks in
// step) share one clock.
uint64_t trace_clock_ns();

// The per-step record an execution fills while tracing.
struct StepTimes {
    std::vector<uint64_t> posted;   // ns; 0: not posted (a join, say)
    std::vector<uint64_t> done;     // ns
    std::vector<uint32_t> carrier;  // the router's transport of a message
    void arm(size_t steps) {
        posted.assign(steps, 0);
        done.assign(steps, 0);
        carrier.assign(steps, 0);
    }
};

// How a caller waited for a call: looks that found it unfinished, and how
// many of them gave the core away (sched_yield) or slept in the kernel.
struct WaitCounts {
    uint64_t polls = 0, yields = 0, sleeps = 0;
    void clear() { *this = WaitCounts{}; }
};

// What the timeline says about one call besides its steps.
struct CallRecord {
    const char *collective = "";
    const char *algorithm = "";
    const char *kind = "blocking";  // "nonblocking", "persistent"
    uint64_t bytes = 0;             // OSU's message size
    uint32_t plan = 0;
    uint64_t call = 0;  // the communicator's call number
    uint64_t start_ns = 0, end_ns = 0;
    bool thread_driven = false;
    WaitCounts wait;
};

// One trace file, shared by every traced communicator of the process that
// expands the template to the same path.
class TraceFile {
  public:
    // Opens (or shares) the file `path_template` names for this process:
    // %r is the process's rank in the job (OMPI_COMM_WORLD_RANK, PMIX_RANK,
    // PMI_RANK or SLURM_PROCID, else `fallback_rank`), %p its pid, %h its
    // host, %% a percent sign. Null, with the reason in *why, when it
    // cannot be opened.
    static std::shared_ptr<TraceFile> open(const std::string &path_template, int fallback_rank, std::string *why);
    ~TraceFile();
    const std::string &path() const { return path_; }
    // A number for a new communicator, unique in the file.
    uint32_t new_communicator(int rank, int size);
    // Writes the call and, when `program` is given, its steps.
    void write_call(uint32_t comm, const CallRecord &call, const Program *program, const StepTimes *times,
                    const Router *router, size_t elem_size);

  private:
    TraceFile(std::string path, std::FILE *f, int rank);
    struct Row {
        std::string name;
        uint64_t free_at = 0;  // ns: the end of its last event
        uint32_t tid;
    };
    // A row of `track` (a rail's sends, say) free from `start` on: events
    // of one row never overlap, so every viewer draws them side by side.
    uint32_t row(const std::string &track, uint64_t start, uint64_t end);
    void event(const std::string &text);
    std::mutex mutex_;
    std::string path_;
    std::FILE *file_;
    int rank_;
    bool first_ = true;
    uint32_t communicators_ = 0;
    std::vector<Row> rows_;
    std::string buffer_;
};

}  // namespace loom
