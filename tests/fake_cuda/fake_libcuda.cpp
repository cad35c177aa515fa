// A stand-in libcuda.so.1 for machines without a GPU, so that the tests run
// libloom's device paths (detection, the pointer cache, staging) on the CPU.
// "Device" memory is a memfd mapped twice: the address handed out has no
// access rights, so host code that touches device memory crashes as it
// would on a GPU; the driver copies through a second, writable mapping.
// Asynchronous copies wait in their stream until an event query, an event
// or stream synchronisation runs them, so reading a staged buffer before its
// copy completed reads stale data, as on a GPU. Kernels are libloom's
// reductions by name (cuda/engine_kernels.hpp), run on the CPU with the same
// element-wise operations the GPU kernels use. Only what libloom uses.
#include <cuda.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>

#include "cuda/engine_kernels.hpp"
#include "cuda/reductions.hpp"

namespace {

// dst[i] = (accumulate ? dst[i] : s[0][i]) op s[1][i] ..., as the GPU kernels.
template <typename T, typename Op>
void reduce_on_cpu(void *dst, const void *const *s, int nsources, size_t n, int accumulate) {
    T *d = static_cast<T *>(dst);
    for (size_t i = 0; i < n; ++i) {
        T acc = accumulate ? d[i] : static_cast<const T *>(s[0])[i];
        for (int k = accumulate ? 0 : 1; k < nsources; ++k) acc = Op::apply(acc, static_cast<const T *>(s[k])[i]);
        d[i] = acc;
    }
}

struct FakeKernel {
    const char *name;
    void (*run)(void *dst, const void *const *s, int nsources, size_t n, int accumulate);
};
using namespace loom;
using namespace loom::device_list;
#define LOOM_FAKE_KERNEL(tname, oname, T, Op) {"loom_reduce_" #tname "_" #oname, reduce_on_cpu<T, Op>},
const FakeKernel kernels[] = {LOOM_DEVICE_REDUCTIONS(LOOM_FAKE_KERNEL)};
#undef LOOM_FAKE_KERNEL
int fake_module;

struct Allocation {
    uintptr_t base;
    size_t size;
    unsigned char *shadow;  // writable view; null for pinned host memory
    unsigned long long id;
    int fd;
    bool imported = false;  // a peer's, opened by cuIpcOpenMemHandle
};

// What a fake IPC handle carries: the exporter's memfd, reachable through /proc.
struct FakeIpcHandle {
    unsigned magic;
    int pid, fd;
    size_t size;
};
constexpr unsigned kIpcMagic = 0x10031c;

struct Op {
    bool is_event = false;
    const FakeKernel *kernel = nullptr;  // a launch: its arguments below
    void *kdst = nullptr;
    const void *ksources[kMaxKernelSources] = {};
    int nsources = 0;
    size_t n = 0;
    int accumulate = 0;
    void *dst = nullptr;
    const void *src = nullptr;
    size_t bytes = 0;
    unsigned long long event_serial = 0;  // for is_event: the record it completes
    struct FakeEvent *event = nullptr;
};

struct FakeStream {
    std::deque<Op> queue;
};

struct FakeEvent {
    unsigned long long recorded = 0;  // serial of the last record
    unsigned long long reached = 0;   // serial of the last record the stream passed
};

std::recursive_mutex mu;
std::map<uintptr_t, Allocation> allocations;
unsigned long long next_id = 1;
int fake_context_storage;
thread_local CUcontext current = nullptr;

const Allocation *find(uintptr_t p) {
    auto it = allocations.upper_bound(p);
    if (it == allocations.begin()) return nullptr;
    --it;
    return p - it->second.base < it->second.size ? &it->second : nullptr;
}

// The address the fake driver itself uses for p.
unsigned char *view(uintptr_t p) {
    const Allocation *a = find(p);
    if (a && a->shadow) return a->shadow + (p - a->base);
    return reinterpret_cast<unsigned char *>(p);
}

bool copy_range_ok(uintptr_t p, size_t bytes) {
    const Allocation *a = find(p);
    return !a || p + bytes <= a->base + a->size;
}

void run(Op &op) {
    if (op.is_event) {
        op.event->reached = op.event_serial;
        return;
    }
    if (op.kernel) {
        const void *sources[kMaxKernelSources];
        for (int k = 0; k < op.nsources; ++k) sources[k] = view(reinterpret_cast<uintptr_t>(op.ksources[k]));
        op.kernel->run(view(reinterpret_cast<uintptr_t>(op.kdst)), sources, op.nsources, op.n, op.accumulate);
        return;
    }
    std::memmove(view(reinterpret_cast<uintptr_t>(op.dst)), view(reinterpret_cast<uintptr_t>(op.src)), op.bytes);
}

void drain(FakeStream *s) {
    while (!s->queue.empty()) {
        Op op = s->queue.front();
        s->queue.pop_front();
        run(op);
    }
}

std::map<FakeEvent *, FakeStream *> event_stream;  // where each event was last recorded

}  // namespace

extern "C" {

CUresult CUDAAPI cuInit(unsigned int) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuDriverGetVersion(int *v) {
    *v = 13000;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGetErrorString(CUresult r, const char **s) {
    switch (r) {
        case CUDA_SUCCESS: *s = "no error"; break;
        case CUDA_ERROR_INVALID_VALUE: *s = "invalid argument"; break;
        case CUDA_ERROR_INVALID_CONTEXT: *s = "invalid device context"; break;
        case CUDA_ERROR_NOT_READY: *s = "device not ready"; break;
        case CUDA_ERROR_OUT_OF_MEMORY: *s = "out of memory"; break;
        default: *s = "fake libcuda: error"; break;
    }
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxGetCurrent(CUcontext *c) {
    *c = current;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxSetCurrent(CUcontext c) {
    current = c;
    return CUDA_SUCCESS;
}
// One level of pushed context is all libloom uses.
thread_local CUcontext pushed_below = nullptr;
CUresult CUDAAPI cuCtxPushCurrent(CUcontext c) {
    pushed_below = current;
    current = c;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxPopCurrent(CUcontext *c) {
    if (c) *c = current;
    current = pushed_below;
    pushed_below = nullptr;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGet(CUdevice *d, int ordinal) {
    if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
    *d = 0;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice) {
    *c = reinterpret_cast<CUcontext>(&fake_context_storage);
    return CUDA_SUCCESS;
}

// The mappings of a device allocation: no access at the address handed
// out, read-write at the shadow the fake itself uses.
static CUresult map_device(int fd, size_t bytes, bool imported, CUdeviceptr *out) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t size = (bytes + page - 1) / page * page;
    void *device = mmap(nullptr, size, PROT_NONE, MAP_SHARED, fd, 0);
    void *shadow = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (device == MAP_FAILED || shadow == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    std::lock_guard<std::recursive_mutex> lock(mu);
    const uintptr_t base = reinterpret_cast<uintptr_t>(device);
    Allocation a{base, bytes, static_cast<unsigned char *>(shadow), next_id++, fd};
    a.imported = imported;
    allocations[base] = a;
    *out = static_cast<CUdeviceptr>(base);
    return CUDA_SUCCESS;
}

static void unmap_device(const Allocation &a) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t size = (a.size + page - 1) / page * page;
    munmap(reinterpret_cast<void *>(a.base), size);
    munmap(a.shadow, size);
    close(a.fd);
}

CUresult CUDAAPI cuMemAlloc(CUdeviceptr *out, size_t bytes) {
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const int fd = memfd_create("fake-cuda", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, static_cast<off_t>((bytes + page - 1) / page * page)) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    return map_device(fd, bytes, false, out);
}

CUresult CUDAAPI cuMemFree(CUdeviceptr p) {
    std::lock_guard<std::recursive_mutex> lock(mu);
    auto it = allocations.find(static_cast<uintptr_t>(p));
    if (it == allocations.end() || !it->second.shadow || it->second.imported) return CUDA_ERROR_INVALID_VALUE;
    unmap_device(it->second);
    allocations.erase(it);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuIpcGetMemHandle(CUipcMemHandle *h, CUdeviceptr p) {
    std::lock_guard<std::recursive_mutex> lock(mu);
    auto it = allocations.find(static_cast<uintptr_t>(p));
    if (it == allocations.end() || !it->second.shadow || it->second.imported) return CUDA_ERROR_INVALID_VALUE;
    FakeIpcHandle f{kIpcMagic, static_cast<int>(getpid()), it->second.fd, it->second.size};
    std::memset(h, 0, sizeof *h);
    std::memcpy(h, &f, sizeof f);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuIpcOpenMemHandle(CUdeviceptr *p, CUipcMemHandle h, unsigned int) {
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    FakeIpcHandle f;
    std::memcpy(&f, &h, sizeof f);
    if (f.magic != kIpcMagic) return CUDA_ERROR_INVALID_VALUE;
    if (f.pid == getpid()) return CUDA_ERROR_INVALID_CONTEXT;  // CUDA refuses a process its own handles
    const std::string path = "/proc/" + std::to_string(f.pid) + "/fd/" + std::to_string(f.fd);
    const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) return CUDA_ERROR_INVALID_HANDLE;
    return map_device(fd, f.size, true, p);
}

CUresult CUDAAPI cuIpcCloseMemHandle(CUdeviceptr p) {
    std::lock_guard<std::recursive_mutex> lock(mu);
    auto it = allocations.find(static_cast<uintptr_t>(p));
    if (it == allocations.end() || !it->second.imported) return CUDA_ERROR_INVALID_VALUE;
    unmap_device(it->second);
    allocations.erase(it);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemHostAlloc(void **out, size_t bytes, unsigned int) {
    void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    std::lock_guard<std::recursive_mutex> lock(mu);
    const uintptr_t base = reinterpret_cast<uintptr_t>(p);
    allocations[base] = Allocation{base, bytes, nullptr, next_id++, -1};
    *out = p;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemFreeHost(void *p) {
    std::lock_guard<std::recursive_mutex> lock(mu);
    auto it = allocations.find(reinterpret_cast<uintptr_t>(p));
    if (it == allocations.end() || it->second.shadow) return CUDA_ERROR_INVALID_VALUE;
    munmap(p, it->second.size);
    allocations.erase(it);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuPointerGetAttributes(unsigned int n, CUpointer_attribute *attrs, void **data, CUdeviceptr ptr) {
    std::lock_guard<std::recursive_mutex> lock(mu);
    const Allocation *a = find(static_cast<uintptr_t>(ptr));
    for (unsigned int i = 0; i < n; ++i) {
        switch (attrs[i]) {
            case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
                *static_cast<unsigned int *>(data[i]) = !a ? 0 : a->shadow ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
                break;
            case CU_POINTER_ATTRIBUTE_IS_MANAGED: *static_cast<unsigned int *>(data[i]) = 0; break;
            case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *static_cast<int *>(data[i]) = a ? 0 : -2; break;
            case CU_POINTER_ATTRIBUTE_BUFFER_ID: *static_cast<unsigned long long *>(data[i]) = a ? a->id : 0; break;
            case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
                *static_cast<CUdeviceptr *>(data[i]) = a ? static_cast<CUdeviceptr>(a->base) : 0;
                break;
            case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *static_cast<size_t *>(data[i]) = a ? a->size : 0; break;
            default: return CUDA_ERROR_INVALID_VALUE;
        }
    }
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuPointerGetAttribute(void *data, CUpointer_attribute attr, CUdeviceptr ptr) {
    std::lock_guard<std::recursive_mutex> lock(mu);
    const Allocation *a = find(static_cast<uintptr_t>(ptr));
    if (!a) return CUDA_ERROR_INVALID_VALUE;
    void *d[] = {data};
    return cuPointerGetAttributes(1, &attr, d, ptr);
}

// A copy, checked; run now (stream null) or queued on the stream.
static CUresult copy(CUdeviceptr dst, CUdeviceptr src, size_t bytes, FakeStream *stream) {
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    std::lock_guard<std::recursive_mutex> lock(mu);
    if (!copy_range_ok(dst, bytes) || !copy_range_ok(src, bytes)) return CUDA_ERROR_INVALID_VALUE;
    Op op;
    op.dst = reinterpret_cast<void *>(dst);
    op.src = reinterpret_cast<const void *>(src);
    op.bytes = bytes;
    if (stream) stream->queue.push_back(op);
    else run(op);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t bytes) { return copy(dst, src, bytes, nullptr); }

CUresult CUDAAPI cuStreamCreate(CUstream *s, unsigned int) {
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    *s = reinterpret_cast<CUstream>(new FakeStream);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamDestroy(CUstream s) {
    std::lock_guard<std::recursive_mutex> lock(mu);
    auto *fs = reinterpret_cast<FakeStream *>(s);
    drain(fs);
    for (auto it = event_stream.begin(); it != event_stream.end();)
        it = it->second == fs ? event_stream.erase(it) : std::next(it);
    delete fs;
    return CUDA_SUCCESS;
}
FakeStream legacy_default_stream;  // stream 0
CUresult CUDAAPI cuStreamSynchronize(CUstream s) {
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    std::lock_guard<std::recursive_mutex> lock(mu);
    drain(s ? reinterpret_cast<FakeStream *>(s) : &legacy_default_stream);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s) {
    if (!s) return CUDA_ERROR_INVALID_HANDLE;  // libloom always uses its own stream
    return copy(dst, src, bytes, reinterpret_cast<FakeStream *>(s));
}

CUresult CUDAAPI cuEventCreate(CUevent *e, unsigned int) {
    *e = reinterpret_cast<CUevent>(new FakeEvent);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventDestroy(CUevent e) {
    std::lock_guard<std::recursive_mutex> lock(mu);
    event_stream.erase(reinterpret_cast<FakeEvent *>(e));
    delete reinterpret_cast<FakeEvent *>(e);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventRecord(CUevent e, CUstream s) {
    if (!s) return CUDA_ERROR_INVALID_HANDLE;
    std::lock_guard<std::recursive_mutex> lock(mu);
    auto *fe = reinterpret_cast<FakeEvent *>(e);
    auto *fs = reinterpret_cast<FakeStream *>(s);
    Op op;
    op.is_event = true;
    op.event = fe;
    op.event_serial = ++fe->recorded;
    fs->queue.push_back(op);
    event_stream[fe] = fs;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleLoadData(CUmodule *m, const void *image) {
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    if (!image) return CUDA_ERROR_INVALID_VALUE;
    *m = reinterpret_cast<CUmodule>(&fake_module);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleGetFunction(CUfunction *f, CUmodule, const char *name) {
    for (const FakeKernel &k : kernels)
        if (std::string(name) == k.name) {
            *f = reinterpret_cast<CUfunction>(const_cast<FakeKernel *>(&k));
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_NOT_FOUND;
}
// The parameters of engine_kernels.hpp: dst, sources, nsources, packs, n, accumulate.
CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int, unsigned int, unsigned int bx,
                                unsigned int, unsigned int, unsigned int, CUstream s, void **params, void **) {
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    if (!s || !params || gx == 0 || bx == 0 || bx > 1024) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::recursive_mutex> lock(mu);
    Op op;
    op.kernel = reinterpret_cast<const FakeKernel *>(f);
    op.kdst = *static_cast<void **>(params[0]);
    const LoomSources &sources = *static_cast<const LoomSources *>(params[1]);
    op.nsources = *static_cast<int *>(params[2]);
    op.n = *static_cast<size_t *>(params[4]);
    op.accumulate = *static_cast<int *>(params[5]);
    if (op.nsources < 1 || op.nsources > kMaxKernelSources) return CUDA_ERROR_INVALID_VALUE;
    for (int k = 0; k < op.nsources; ++k) op.ksources[k] = sources.p[k];
    reinterpret_cast<FakeStream *>(s)->queue.push_back(op);
    return CUDA_SUCCESS;
}

// Each query lets the event's stream run one operation: a poller sees
// NOT_READY before the work is done, as with a real device.
CUresult CUDAAPI cuEventQuery(CUevent e) {
    std::lock_guard<std::recursive_mutex> lock(mu);
    auto *fe = reinterpret_cast<FakeEvent *>(e);
    if (fe->reached == fe->recorded) return CUDA_SUCCESS;
    FakeStream *fs = event_stream[fe];
    if (fs && !fs->queue.empty()) {
        Op op = fs->queue.front();
        fs->queue.pop_front();
        run(op);
    }
    return fe->reached == fe->recorded ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}
CUresult CUDAAPI cuEventSynchronize(CUevent e) {
    std::lock_guard<std::recursive_mutex> lock(mu);
    auto *fe = reinterpret_cast<FakeEvent *>(e);
    FakeStream *fs = event_stream[fe];
    while (fe->reached != fe->recorded && fs && !fs->queue.empty()) {
        Op op = fs->queue.front();
        fs->queue.pop_front();
        run(op);
    }
    return CUDA_SUCCESS;
}

}  // extern "C"
