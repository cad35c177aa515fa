// Where a collective's buffers live. Part of every call's arguments, its
// plan key, the rules file and --explain, so that device memory adds an
// engine and transports, not new plumbing.
#pragma once
#include <cstdint>
#include <string>

namespace loom {

enum class MemoryType : uint8_t { host, cuda, cuda_managed };
constexpr int kMemoryTypeCount = 3;

// "host", "cuda", "cuda_managed".
const char *memory_type_name(MemoryType m);
// Accepts the names above ("cuda-managed" too); false for anything else.
bool memory_type_from_name(const std::string &name, MemoryType *out);

}  // namespace loom
