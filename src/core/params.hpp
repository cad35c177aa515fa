// The one parameter table. Each knob is declared once (name, type, default,
// level, help); it feeds the LOOM_* environment variables, loom_comm_set_param,
// loom-info's listing, the man page and the coll/loom MCA variables.
#pragma once
#include <array>
#include <string>
#include <vector>

#include "core/plan.hpp"
#include "core/status.hpp"

namespace loom {

enum class ParamType { algorithm, size, integer, topology, cost_model, path, text, choice };

enum ParamId {
    kParamAllreduceAlgorithm,
    kParamReduceScatterAlgorithm,
    kParamReduceScatterBlockAlgorithm,
    kParamAllgatherAlgorithm,
    kParamAlltoallAlgorithm,
    kParamSegmentSize,
    kParamKnomialRadix,
    kParamAlltoallMaxOutstanding,
    kParamPlanCacheEntries,
    kParamVerbose,
    kParamSharedMemory,
    kParamShmMaxBytes,
    kParamAlltoallShmMaxBytes,
    kParamSingleCopy,
    kParamSingleCopyMinBytes,
    kParamTopology,
    kParamRulesFile,
    kParamCostModel,
    kParamRails,
    kParamUcxTls,
    kParamRailWeights,
    kParamRailStripeMinBytes,
    kParamRailMinBytes,
    kParamRailProbeBytes,
    kParamRailTimeoutMs,
    kParamRailStallMs,
    kParamRailRefreshCalls,
    kParamProgressThread,
    kParamSlotsMaxBytes,
    kParamSlotsWait,
    kParamCudaStagingChunkBytes,
    kParamCudaIpc,
    kParamTrace,
    kParamWait,
    kParamWaitSpinUs,
    kParamHangTimeout,
    kParamHangAbort,
    kParamCount
};

struct ParamSpec {
    ParamId id;
    const char *name;  // loom_comm_set_param name; env var is LOOM_<NAME>
    ParamType type;
    const char *default_value;
    int level;  // 1 = user basic ... 9 = developer (Open MPI's MCA levels)
    const char *help;
    long long min_value, max_value;  // for size/integer
    Collective collective;           // for algorithm parameters
    const char *choices = nullptr;   // for choice parameters: "a,b,c"; integer() is the index
};

const std::vector<ParamSpec> &param_table();
const ParamSpec *find_param(const std::string &name);
std::string param_env_name(const ParamSpec &spec);  // "LOOM_ALLREDUCE_ALGORITHM"

// Parsed values for one communicator.
class Config {
  public:
    Config();  // defaults
    // Validates and sets; errors name the parameter, the value and what is allowed.
    Status set(const std::string &name, const std::string &value);
    // Applies every LOOM_* variable that is set; the first invalid one is an error.
    Status load_environment();
    const std::string &raw(ParamId id) const { return raw_[id]; }
    const std::string &forced_algorithm(Collective c) const;  // "auto" when not forced
    long long integer(ParamId id) const { return values_[id]; }
    // Changes whenever a value is set, so cached choices and plans can tell
    // they were made under other parameters.
    uint64_t generation() const { return generation_; }

  private:
    uint64_t generation_ = 0;
    std::array<std::string, kParamCount> raw_;
    std::array<long long, kParamCount> values_{};
};

// The progress_thread parameter's values, by index.
enum ProgressThreadMode { kProgressThreadOff = 0, kProgressThreadOn = 1, kProgressThreadAuto = 2 };
// The slots_wait parameter's values, by index.
enum SlotsWaitMode { kSlotsWaitAuto = 0, kSlotsWaitSpin = 1, kSlotsWaitYield = 2 };
// The wait parameter's values, by index.
enum WaitMode { kWaitAuto = 0, kWaitSpin = 1, kWaitSleep = 2 };

// Parses "64k", "1MiB", "4096" into bytes; false when malformed.
bool parse_size(const std::string &text, long long *out);

}  // namespace loom
