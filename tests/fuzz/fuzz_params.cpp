// Fuzz target: parameter values (Config::set), as loom_comm_set_param and
// the LOOM_* variables pass them. The first byte picks a parameter of the
// table (or, past its end, takes the name from the input up to '='); the
// rest is the value. A value is taken as given, or refused with a message
// naming the parameter; a number taken lies in the parameter's range, a
// cost model taken reads back from its own description.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/params.hpp"
#include "select/cost_model.hpp"

using namespace loom;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    const std::vector<ParamSpec> &table = param_table();
    // C strings, as the callers pass them: up to the first NUL.
    std::string rest(reinterpret_cast<const char *>(data) + 1, size - 1);
    rest.resize(std::strlen(rest.c_str()));
    std::string name, value;
    if (data[0] < table.size()) {
        name = table[data[0]].name;
        value = rest;
    } else {
        const size_t eq = rest.find('=');
        name = rest.substr(0, eq);
        value = eq == std::string::npos ? "" : rest.substr(eq + 1);
    }
    Config config;
    const Status st = config.set(name, value);
    const ParamSpec *spec = find_param(name);
    if (st != LOOM_SUCCESS) {
        const bool known_code = st == LOOM_ERR_UNKNOWN_PARAMETER || st == LOOM_ERR_UNKNOWN_ALGORITHM ||
                                st == LOOM_ERR_INVALID_PARAMETER_VALUE;
        if (!known_code || (st == LOOM_ERR_UNKNOWN_PARAMETER) != (spec == nullptr) ||
            std::string(last_error_message()).find(name) == std::string::npos)
            std::abort();
        return 0;
    }
    if (!spec || config.raw(spec->id) != value) std::abort();
    if (spec->type == ParamType::size || spec->type == ParamType::integer) {
        const long long v = config.integer(spec->id);
        if (v < spec->min_value || v > spec->max_value) std::abort();
    }
    if (spec->type == ParamType::cost_model) {  // a model taken reads back from its own description
        CostModel m, again;
        if (CostModel::parse(value, &m) != LOOM_SUCCESS || CostModel::parse(m.describe(), &again) != LOOM_SUCCESS ||
            again.describe() != m.describe())
            std::abort();
    }
    return 0;
}
