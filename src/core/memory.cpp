#include "core/memory.hpp"

namespace loom {

const char *memory_type_name(MemoryType m) {
    switch (m) {
        case MemoryType::host: return "host";
        case MemoryType::cuda: return "cuda";
        case MemoryType::cuda_managed: return "cuda_managed";
    }
    return "unknown";
}

bool memory_type_from_name(const std::string &name, MemoryType *out) {
    for (int i = 0; i < kMemoryTypeCount; ++i) {
        const auto m = static_cast<MemoryType>(i);
        if (name == memory_type_name(m)) {
            *out = m;
            return true;
        }
    }
    if (name == "cuda-managed") {
        *out = MemoryType::cuda_managed;
        return true;
    }
    return false;
}

}  // namespace loom
