// Loom's default selection rules: a loom-rules(5) document compiled into the
// library and matched by the same code as a user's rules file, after it.
// docs/selection-defaults.md says where each rule's threshold came from,
// by the rule's index.
#pragma once
#include "select/rules.hpp"

namespace loom {

// The document's JSON text.
const char *builtin_rules_text();
// The document, parsed on first use (its path is "built-in rules").
const RuleSet &builtin_rules();

}  // namespace loom
