// The parameter registry and Config: the checks every type shares; the
// checks of types a higher layer owns come with each declaration.
#include "core/params.hpp"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdlib>

namespace loom {
namespace {

// Declarations in registration order: a parameter's id is its place here.
std::vector<ParamSpec> &registry() {
    static std::vector<ParamSpec> declared;
    return declared;
}

}  // namespace

ParamId declare_param(ParamSection section, ParamSpec spec) {
    spec.section = section;
    spec.id.index = static_cast<int>(registry().size());
    registry().push_back(spec);
    return spec.id;
}

const std::vector<ParamSpec> &param_table() {
    static const std::vector<ParamSpec> table = [] {
        std::vector<ParamSpec> t = registry();
        std::stable_sort(t.begin(), t.end(),
                         [](const ParamSpec &a, const ParamSpec &b) { return a.section < b.section; });
        return t;
    }();
    return table;
}

Status invalid_value_of(const ParamSpec &spec) {
    return fail(LOOM_ERR_INVALID_PARAMETER_VALUE, std::string("parameter ") + spec.name + ": " + last_error_message());
}

const ParamId kParamVerbose =
    declare_param(ParamSection::diagnostics, {"verbose", ParamType::integer, "0", 2,
                                              "0 silent; 1 reports errors and each algorithm choice once; 2 every call",
                                              0, 100, Collective::allreduce});

const ParamSpec *find_param(const std::string &name) {
    for (const ParamSpec &s : param_table())
        if (name == s.name) return &s;
    return nullptr;
}

std::string param_env_name(const ParamSpec &spec) {
    std::string env = "LOOM_";
    for (const char *c = spec.name; *c; ++c) env += static_cast<char>(std::toupper(static_cast<unsigned char>(*c)));
    return env;
}

bool parse_size(const std::string &text, long long *out) {
    if (text.empty()) return false;
    size_t pos = 0;
    while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) ++pos;
    if (pos == 0 || pos > 15) return false;
    long long v = std::stoll(text.substr(0, pos));
    std::string suffix = text.substr(pos);
    for (char &c : suffix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    long long mult = 1;
    if (suffix.empty() || suffix == "b") mult = 1;
    else if (suffix == "k" || suffix == "kb" || suffix == "kib") mult = 1LL << 10;
    else if (suffix == "m" || suffix == "mb" || suffix == "mib") mult = 1LL << 20;
    else if (suffix == "g" || suffix == "gb" || suffix == "gib") mult = 1LL << 30;
    else return false;
    if (v > LLONG_MAX / mult) return false;  // "999999999999999g": more bytes than a long long holds
    *out = v * mult;
    return true;
}

Config::Config() : raw_(registry().size()), values_(registry().size()) {
    for (const ParamSpec &s : param_table()) {
        Status st = set(s.name, s.default_value);
        (void)st;  // defaults are valid by construction (tested)
    }
}

Status Config::set(const std::string &name, const std::string &value) {
    const ParamSpec *spec = find_param(name);
    if (!spec) {
        std::string names;
        for (const ParamSpec &s : param_table()) names += std::string(names.empty() ? "" : ", ") + s.name;
        return fail(LOOM_ERR_UNKNOWN_PARAMETER, "unknown parameter '" + name + "' (known: " + names + ")");
    }
    if (spec->check) {
        Status st = spec->check(*spec, value);
        if (st != LOOM_SUCCESS) return st;
    }
    switch (spec->type) {
        case ParamType::size:
        case ParamType::integer: {
            long long v = 0;
            bool ok = spec->type == ParamType::size ? parse_size(value, &v) : false;
            if (spec->type == ParamType::integer) {
                char *end = nullptr;
                v = std::strtoll(value.c_str(), &end, 10);
                ok = !value.empty() && end && *end == '\0';
            }
            if (!ok || v < spec->min_value || v > spec->max_value)
                return fail(LOOM_ERR_INVALID_PARAMETER_VALUE,
                            "parameter " + name + " = '" + value + "' is not " +
                                (spec->type == ParamType::size ? "a size" : "an integer") + " in [" +
                                std::to_string(spec->min_value) + ", " + std::to_string(spec->max_value) + "]");
            values_[static_cast<size_t>(spec->id.index)] = v;
            break;
        }
        case ParamType::choice: {
            const std::string choices = spec->choices;
            long long index = 0;
            size_t begin = 0;
            for (;; ++index) {
                const size_t end = choices.find(',', begin);
                if (choices.compare(begin, end == std::string::npos ? std::string::npos : end - begin, value) == 0)
                    break;
                if (end == std::string::npos)
                    return fail(LOOM_ERR_INVALID_PARAMETER_VALUE,
                                "parameter " + name + " = '" + value + "' is not one of " + choices);
                begin = end + 1;
            }
            values_[static_cast<size_t>(spec->id.index)] = index;
            break;
        }
        case ParamType::algorithm:
        case ParamType::topology:
        case ParamType::cost_model:
        case ParamType::path:
        case ParamType::text:
            break;  // a path is read when first needed: an unreadable file is reported and ignored there
    }
    raw_[static_cast<size_t>(spec->id.index)] = value;
    ++generation_;
    return LOOM_SUCCESS;
}

Status Config::load_environment() {
    for (const ParamSpec &s : param_table()) {
        const char *v = std::getenv(param_env_name(s).c_str());
        if (!v) continue;
        Status st = set(s.name, v);
        if (st != LOOM_SUCCESS)
            return fail(st, std::string("environment variable ") + param_env_name(s) + ": " + last_error_message());
    }
    return LOOM_SUCCESS;
}

}  // namespace loom
