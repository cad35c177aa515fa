#include "select/rules.hpp"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <sstream>

#include "algorithms/algorithm.hpp"
#include "algorithms/fold.hpp"
#include "core/params.hpp"
#include "node_map.hpp"

namespace loom {
namespace {

using json = nlohmann::json;

// A count or size: a non-negative integer, or a string with a unit ("4KiB").
bool read_amount(const json &v, bool sizes, long long *out, std::string *why) {
    if (v.is_number_unsigned() && v.get<unsigned long long>() > static_cast<unsigned long long>(LLONG_MAX)) {
        *why = v.dump() + " is too large";
        return false;
    }
    if (v.is_number_integer() || v.is_number_unsigned()) {
        const long long n = v.get<long long>();
        if (n < 0) {
            *why = "must not be negative";
            return false;
        }
        *out = n;
        return true;
    }
    if (sizes && v.is_string()) {
        if (!parse_size(v.get<std::string>(), out) || *out < 0) {
            *why = "'" + v.get<std::string>() + "' is not a size (e.g. 4096, \"64KiB\", \"1MiB\")";
            return false;
        }
        return true;
    }
    *why = sizes ? "must be a size (a number of bytes or a string such as \"64KiB\")" : "must be an integer";
    return false;
}

// A range: a single amount, or [min, max] (max may be null: unbounded).
bool read_range(const json &v, bool sizes, Range *out, std::string *why) {
    if (v.is_array()) {
        if (v.size() != 2) {
            *why = "a range must be [min, max]";
            return false;
        }
        if (!read_amount(v[0], sizes, &out->min, why)) return false;
        if (v[1].is_null()) {
            out->max = -1;
        } else {
            if (!read_amount(v[1], sizes, &out->max, why)) return false;
            if (out->max < out->min) {
                *why = "max " + std::to_string(out->max) + " is below min " + std::to_string(out->min);
                return false;
            }
        }
        return true;
    }
    long long n = 0;
    if (!read_amount(v, sizes, &n, why)) return false;
    out->min = out->max = n;
    return true;
}

Status field_error(const std::string &origin, size_t index, const std::string &field, const std::string &why) {
    return fail(LOOM_ERR_INVALID_ARGUMENT,
                origin + ": rule " + std::to_string(index) + ": field '" + field + "': " + why);
}

}  // namespace

namespace {
size_t sum_of(const std::vector<size_t> &v) { return std::accumulate(v.begin(), v.end(), size_t{0}); }
}  // namespace

size_t message_bytes(const CollArgs &a) {
    switch (a.collective) {
        case Collective::allreduce:
        case Collective::allgather:
        case Collective::alltoall: return a.count * a.elem_size;
        case Collective::reduce_scatter:
        case Collective::reduce_scatter_block: return a.input_count() * a.elem_size;
        // The vector collectives' mean block, as OSU's size is the block of their fixed forms.
        case Collective::alltoallv:
        case Collective::allgatherv: return total_bytes(a) / static_cast<size_t>(std::max(a.nranks, 1));
    }
    return 0;
}

size_t total_bytes(const CollArgs &a) {
    switch (a.collective) {
        case Collective::allreduce:
        case Collective::reduce_scatter:
        case Collective::reduce_scatter_block: return message_bytes(a);
        case Collective::allgather:
        case Collective::alltoall: return message_bytes(a) * static_cast<size_t>(a.nranks);
        // alltoallv: what a rank sends on average, from every rank's counts
        // where learnt (the same on every rank), else this rank's own.
        case Collective::alltoallv: {
            size_t total = 0, largest = 0;
            return (alltoallv_block_totals(a, &total, &largest) ? total / static_cast<size_t>(std::max(a.nranks, 1))
                                                                : sum_of(a.send_counts)) *
                   a.elem_size;
        }
        case Collective::allgatherv: return sum_of(a.recv_counts) * a.elem_size;
    }
    return 0;
}

size_t elements_per_rank(const CollArgs &a) {
    switch (a.collective) {
        case Collective::allreduce:
        case Collective::reduce_scatter:
        case Collective::reduce_scatter_block: return a.input_count() / static_cast<size_t>(std::max(a.nranks, 1));
        case Collective::allgather:
        case Collective::alltoall: return a.count;
        case Collective::alltoallv: return total_bytes(a) / a.elem_size / static_cast<size_t>(std::max(a.nranks, 1));
        case Collective::allgatherv: return sum_of(a.recv_counts) / static_cast<size_t>(std::max(a.nranks, 1));
    }
    return 0;
}

size_t skew_of(const CollArgs &a) {
    size_t total = 0, largest = 0, blocks = 0;
    if (a.collective == Collective::alltoallv) {
        if (!alltoallv_block_totals(a, &total, &largest)) return 1;
        blocks = static_cast<size_t>(a.nranks) * static_cast<size_t>(a.nranks);
    } else if (a.collective == Collective::allgatherv && !a.recv_counts.empty()) {
        total = sum_of(a.recv_counts);
        largest = *std::max_element(a.recv_counts.begin(), a.recv_counts.end());
        blocks = a.recv_counts.size();
    }
    if (total == 0) return 1;
    return std::max<size_t>(1, largest * blocks / total);
}

Status parse_rules(const std::string &text, const std::string &origin, RuleSet *out) {
    json doc;
    try {
        doc = json::parse(text);
    } catch (const json::exception &e) {  // a syntax error, or a number too large for a double (out_of_range)
        return fail(LOOM_ERR_INVALID_ARGUMENT, origin + ": not valid JSON: " + e.what());
    }
    if (!doc.is_object()) return fail(LOOM_ERR_INVALID_ARGUMENT, origin + ": the top level must be an object");
    RuleSet set;
    set.path = origin;
    for (auto it = doc.begin(); it != doc.end(); ++it)
        if (it.key() != "rules" && it.key() != "model" && it.key() != "comment")
            return fail(LOOM_ERR_INVALID_ARGUMENT,
                        origin + ": unknown top-level field '" + it.key() + "' (known: rules, model, comment)");
    if (doc.contains("model")) {
        if (!doc["model"].is_string())
            return fail(LOOM_ERR_INVALID_ARGUMENT,
                        origin + ": field 'model' must be a string such as \"" + CostModel().describe() + "\"");
        CostModel m;
        if (CostModel::parse(doc["model"].get<std::string>(), &m) != LOOM_SUCCESS)
            return fail(LOOM_ERR_INVALID_ARGUMENT, origin + ": field 'model': " + last_error_message());
        set.model = m;
    }
    if (!doc.contains("rules") || !doc["rules"].is_array())
        return fail(LOOM_ERR_INVALID_ARGUMENT, origin + ": field 'rules' must be a list of entries");
    static const char *const fields[] = {"collective",  "memory",          "comm_size",   "nodes",
                                         "ppn",         "bytes",           "total_bytes", "elements_per_rank",
                                         "single_node", "power_of_two",    "algorithm",   "segment_size",
                                         "radix",       "max_outstanding", "note",        "comment",
                                         "skew"};
    static const std::set<std::string> known(std::begin(fields), std::end(fields));
    std::string known_list;
    for (const char *f : fields) known_list += (known_list.empty() ? "" : ", ") + std::string(f);
    size_t index = 0;
    for (const json &e : doc["rules"]) {
        if (!e.is_object())
            return fail(LOOM_ERR_INVALID_ARGUMENT, origin + ": rule " + std::to_string(index) + " is not an object");
        for (auto it = e.begin(); it != e.end(); ++it)
            if (!known.count(it.key()))
                return field_error(origin, index, it.key(), "unknown (known: " + known_list + ")");
        Rule r;
        r.index = index;
        if (!e.contains("collective") || !e["collective"].is_string() ||
            !collective_from_name(e["collective"].get<std::string>(), &r.collective))
            return field_error(origin, index, "collective",
                               "required: one of allreduce, reduce_scatter, reduce_scatter_block, allgather, alltoall, "
                               "alltoallv, allgatherv");
        if (e.contains("memory")) {
            MemoryType m;
            const bool named = e["memory"].is_string() && memory_type_from_name(e["memory"].get<std::string>(), &m);
            if (!named && !(e["memory"] == "device" || e["memory"] == "any"))
                return field_error(origin, index, "memory",
                                   "must be \"host\", \"cuda\", \"cuda_managed\", \"device\" or \"any\"");
            r.memory = named ? memory_type_name(m) : e["memory"].get<std::string>();
        }
        std::string why;
        const struct {
            const char *name;
            Range *range;
            bool sizes;
        } ranges[] = {{"comm_size", &r.comm_size, false},
                      {"nodes", &r.nodes, false},
                      {"ppn", &r.ppn, false},
                      {"bytes", &r.bytes, true},
                      {"total_bytes", &r.total_bytes, true},
                      {"elements_per_rank", &r.elements_per_rank, false},
                      {"skew", &r.skew, false}};
        for (const auto &x : ranges) {
            if (!e.contains(x.name)) continue;
            if (!read_range(e[x.name], x.sizes, x.range, &why)) return field_error(origin, index, x.name, why);
            // Every rank must choose alike, and an alltoallv rank knows only its own
            // counts: a size decides only where every rank's were gathered.
            if (r.collective == Collective::alltoallv && x.range != &r.comm_size && x.range != &r.nodes &&
                x.range != &r.ppn)
                r.needs_every_ranks_counts = true;
        }
        const std::pair<const char *, std::optional<bool> *> flags[] = {{"single_node", &r.single_node},
                                                                        {"power_of_two", &r.power_of_two}};
        for (const auto &[name, flag] : flags) {
            if (!e.contains(name)) continue;
            if (!e[name].is_boolean()) return field_error(origin, index, name, "must be true or false");
            *flag = e[name].get<bool>();
        }
        // One name, or a list in order of preference.
        json names = e.contains("algorithm") ? e["algorithm"] : json();
        if (names.is_string()) names = json::array({names});
        bool named = names.is_array() && !names.empty();
        for (size_t i = 0; named && i < names.size(); ++i) named = names[i].is_string();
        if (!named) return field_error(origin, index, "algorithm", "required: an algorithm name or a list of names");
        for (const json &n : names) {
            r.algorithms.push_back(n.get<std::string>());
            if (!find_algorithm(r.collective, r.algorithms.back()))
                return field_error(origin, index, "algorithm",
                                   std::string(collective_name(r.collective)) + " has no algorithm '" +
                                       r.algorithms.back() + "' (known: " + algorithm_names(r.collective) + ")");
        }
        if (e.contains("note")) {
            if (!e["note"].is_string()) return field_error(origin, index, "note", "must be a string");
            r.note = e["note"].get<std::string>();
        }
        long long v = 0;
        if (e.contains("segment_size")) {
            if (!read_amount(e["segment_size"], true, &v, &why)) return field_error(origin, index, "segment_size", why);
            r.segment_bytes = static_cast<size_t>(v);
        }
        if (e.contains("radix")) {
            if (!read_amount(e["radix"], false, &v, &why) || v < 2 || v > 64)
                return field_error(origin, index, "radix", why.empty() ? "must be in [2, 64]" : why);
            r.radix = static_cast<int>(v);
        }
        if (e.contains("max_outstanding")) {
            if (!read_amount(e["max_outstanding"], false, &v, &why) || v < 1 || v > (1 << 20))
                return field_error(origin, index, "max_outstanding", why.empty() ? "must be in [1, 1048576]" : why);
            r.max_outstanding = static_cast<int>(v);
        }
        set.rules.push_back(std::move(r));
        ++index;
    }
    *out = std::move(set);
    return LOOM_SUCCESS;
}

Status load_rules(const std::string &path, RuleSet *out) {
    std::ifstream in(path);
    if (!in) return fail(LOOM_ERR_INVALID_ARGUMENT, path + ": cannot be read");
    std::stringstream text;
    text << in.rdbuf();
    return parse_rules(text.str(), path, out);
}

namespace {
bool memory_matches(const std::string &rule, MemoryType m) {
    if (rule == "any") return true;
    if (rule == "device") return m != MemoryType::host;
    return rule == memory_type_name(m);
}
}  // namespace

const Rule *match_rule(const RuleSet &rules, const CollArgs &a, size_t from) {
    const bool known_nodes = a.nodes && a.nodes->nranks() == a.nranks;
    const long long nodes = known_nodes ? a.nodes->nodes() : 1;
    const long long ppn = known_nodes ? a.nodes->max_ranks_per_node() : a.nranks;
    const long long bytes = static_cast<long long>(message_bytes(a));
    const long long total = static_cast<long long>(total_bytes(a));
    const long long elements = static_cast<long long>(elements_per_rank(a));
    const bool power_of_two = is_power_of_two(a.nranks);
    // Once per call, not per rule: from the model's every-rank counts these sum p x p blocks.
    size_t total_blocks = 0, largest_block = 0;
    const bool knows_every_ranks_totals = alltoallv_block_totals(a, &total_blocks, &largest_block);
    const long long skew = static_cast<long long>(skew_of(a));
    for (size_t i = from; i < rules.rules.size(); ++i) {
        const Rule &r = rules.rules[i];
        if (r.collective != a.collective || !memory_matches(r.memory, a.memory)) continue;
        if (r.single_node && *r.single_node != a.single_node) continue;
        if (r.power_of_two && *r.power_of_two != power_of_two) continue;
        if (r.needs_every_ranks_counts && !knows_every_ranks_totals) continue;
        if (r.comm_size.contains(a.nranks) && r.nodes.contains(nodes) && r.ppn.contains(ppn) &&
            r.bytes.contains(bytes) && r.total_bytes.contains(total) && r.elements_per_rank.contains(elements) &&
            r.skew.contains(skew))
            return &r;
    }
    return nullptr;
}

std::shared_ptr<const RuleSet> rules_for_path(const std::string &path) {
    static std::mutex mutex;
    static std::map<std::string, std::shared_ptr<const RuleSet>> loaded;
    std::lock_guard<std::mutex> lock(mutex);
    auto hit = loaded.find(path);
    if (hit != loaded.end()) return hit->second;
    auto set = std::make_shared<RuleSet>();
    if (load_rules(path, set.get()) != LOOM_SUCCESS) {
        std::fprintf(stderr, "loom: ignoring the rules file: %s\n", last_error_message());
        set = std::make_shared<RuleSet>();
        set->path = path;
    }
    loaded[path] = set;
    return set;
}

}  // namespace loom
