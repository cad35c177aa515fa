// The parameter mechanism. Each subsystem declares its own parameters beside
// its code (declare_param: name, type, default, level, help), as NCCL's
// NCCL_PARAM and UCC's component tables do; this registry gathers them into
// the one table that feeds the LOOM_* environment variables,
// loom_comm_set_param, loom-info's listing, the man page and the coll/loom
// MCA variables.
#pragma once
#include <string>
#include <vector>

#include "core/plan.hpp"
#include "core/status.hpp"

namespace loom {

enum class ParamType { algorithm, size, integer, topology, cost_model, path, text, choice };

// A parameter's handle, given when its subsystem declares it: the place of
// its value in every Config.
struct ParamId {
    int index = -1;
};

// Where a parameter is listed: by section, then in declaration order.
enum class ParamSection {
    algorithms,
    knobs,
    plans,
    shared_memory,
    selection,
    topology,
    rails,
    progress,
    device,
    diagnostics
};

struct ParamSpec;
// Checks a value beyond its type's form, for types a higher layer owns (an
// algorithm name, a cost model, a topology); the error names the parameter.
using ParamCheck = Status (*)(const ParamSpec &spec, const std::string &value);

struct ParamSpec {
    const char *name;  // loom_comm_set_param name; env var is LOOM_<NAME>
    ParamType type;
    const char *default_value;
    int level;  // 1 = user basic ... 9 = developer (Open MPI's MCA levels)
    const char *help;
    long long min_value, max_value;  // for size/integer
    Collective collective;           // for algorithm parameters
    const char *choices = nullptr;   // for choice parameters: "a,b,c"; integer() is the index
    ParamCheck check = nullptr;
    ParamSection section = ParamSection::algorithms;  // set by declare_param
    ParamId id = {};                                  // set by declare_param
};

// For checks: the error LOOM_ERR_INVALID_PARAMETER_VALUE, "parameter NAME: "
// and the last error's message (what the value's parser said).
Status invalid_value_of(const ParamSpec &spec);

// Registers a parameter; at namespace scope, during static initialisation
// (no Config may be made before every declaration has run).
ParamId declare_param(ParamSection section, ParamSpec spec);

// Every declared parameter, in listing order.
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
    const std::string &raw(ParamId id) const { return raw_[static_cast<size_t>(id.index)]; }
    long long integer(ParamId id) const { return values_[static_cast<size_t>(id.index)]; }
    // Changes whenever a value is set, so cached choices and plans can tell
    // they were made under other parameters.
    uint64_t generation() const { return generation_; }

  private:
    uint64_t generation_ = 0;
    std::vector<std::string> raw_;
    std::vector<long long> values_;
};

// What a value derived from the parameters was decided under: changed()
// is true at its first look and once after every change of the parameters,
// when the value must be decided again.
class ParamsSeen {
  public:
    bool changed(const Config &config) {
        if (seen_ == config.generation()) return false;
        seen_ = config.generation();
        return true;
    }

  private:
    uint64_t seen_ = UINT64_MAX;
};

// Parses "64k", "1MiB", "4096" into bytes; false when malformed.
bool parse_size(const std::string &text, long long *out);

// How much Loom says on stderr; every subsystem reads it.
extern const ParamId kParamVerbose;

}  // namespace loom
