// Fuzz target: loom-info --explain's call description (parse_call_spec),
// then the explanation of what it parsed, as loom-info prints it. A
// description parses, or fails with a message starting "explain: "; a
// parsed one is a call the selector can explain.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "select/call_spec.hpp"
#include "select/cost_model.hpp"
#include "select/rules.hpp"
#include "select/selector.hpp"

using namespace loom;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const Config config;
    // A sixteenth of the model's budget: a plan near the full one takes
    // seconds in a release build and minutes here; the truncation path and
    // its decline are exercised all the same.
    static const bool budget_lowered = (set_model_max_simulated_steps(kModelMaxSimulatedSteps / 16), true);
    (void)budget_lowered;
    const std::string text(reinterpret_cast<const char *>(data), size);
    CallSpec spec;
    if (parse_call_spec(text, config, &spec) != LOOM_SUCCESS) {
        if (std::strncmp(last_error_message(), "explain: ", 9) != 0) std::abort();
        return 0;
    }
    const CollArgs &a = spec.args;
    if (a.nranks < 1 || !a.nodes || a.nodes->nranks() != a.nranks) std::abort();
    Explanation e;
    if (explain_selection(config, a, &e, spec.knobs) != LOOM_SUCCESS) std::abort();
    if (format_explanation(a, e).empty()) std::abort();
    return 0;
}
