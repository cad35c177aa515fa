// The host engine: copies and reductions on the CPU, complete on return.
// The executor calls host_copy/host_reduce directly for host buffers (no
// virtual call per step on the small-message path); HostEngine wraps the
// same two functions for callers that hold an Engine.
#pragma once
#include <cstring>

#include "engine/engine.hpp"

namespace loom {

inline void host_copy(void *dst, const void *src, size_t bytes) {
    if (dst != src) std::memmove(dst, src, bytes);
}
inline void host_reduce(void *dst, const void *src, size_t count, ReduceFn fn) { fn(dst, src, count); }

Engine &host_engine();

}  // namespace loom
