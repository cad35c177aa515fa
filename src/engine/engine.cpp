// The one list of engines, by memory type.
#include "engine/engine.hpp"

#include "engine/host/host.hpp"

namespace loom {

Engine *engine_for(MemoryType memory) {
    switch (memory) {
        case MemoryType::host: return &host_engine();
        case MemoryType::cuda:
        case MemoryType::cuda_managed: return nullptr;  // the GPU engine is not built yet
    }
    return nullptr;
}

}  // namespace loom
