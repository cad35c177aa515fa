// Engines run a plan's local steps (copy, reduce) on the memory the buffers
// live in: the host engine on the CPU, at once; a device engine would queue
// them on a stream and complete them later. The executor polls an engine's
// operations as it polls a transport's.
#pragma once
#include <cstddef>

#include "core/datatype.hpp"
#include "core/memory.hpp"
#include "core/status.hpp"

namespace loom {

// Opaque per-operation storage owned by the executor.
struct EngineHandle {
    alignas(8) unsigned char bytes[16];
};

class Engine {
  public:
    virtual ~Engine() = default;
    virtual const char *name() const = 0;
    virtual MemoryType memory() const = 0;
    // Start dst = src (`bytes`) or dst = dst op src (`count` elements, with
    // the host kernel `fn` of the call's type and op); *done is set when the
    // step completed before returning, else test() reports completion.
    virtual Status copy(void *dst, const void *src, size_t bytes, EngineHandle *h, bool *done) = 0;
    virtual Status reduce(void *dst, const void *src, size_t count, ReduceFn fn, EngineHandle *h, bool *done) = 0;
    virtual Status test(EngineHandle *h, bool *done) = 0;
};

// The engine for `memory`, or null when Loom has none for it yet.
Engine *engine_for(MemoryType memory);

}  // namespace loom
