#include "engine/cuda/driver.hpp"

#include <dlfcn.h>

#include <cstring>
#include <mutex>

#include "loom_config.h"

#ifdef LOOM_HAVE_CUDA
#include <cuda.h>

#include <map>
#include <set>
#include <utility>

#include "cuda/engine_kernels.hpp"
#include "cuda/reductions.hpp"
#include "engine/cuda/kernel_image.hpp"
#endif

namespace loom {

#ifdef LOOM_HAVE_CUDA
namespace {

// cuda.h maps API names to versioned symbols (cuMemAlloc -> cuMemAlloc_v2):
// the two-level stringify gives dlsym the name the macro expands to.
#define LOOM_CU_NAME2(fn) #fn
#define LOOM_CU_NAME(fn) LOOM_CU_NAME2(fn)
// clang-format off
#define LOOM_CU_FUNCTIONS(X)                                                                                    \
    X(cuInit) X(cuDriverGetVersion) X(cuGetErrorString)                                                         \
    X(cuCtxGetCurrent) X(cuCtxSetCurrent) X(cuCtxPushCurrent) X(cuCtxPopCurrent)                                \
    X(cuDeviceGet) X(cuDevicePrimaryCtxRetain) X(cuPointerGetAttributes) X(cuPointerGetAttribute)               \
    X(cuMemcpy) X(cuMemcpyAsync) X(cuMemAlloc) X(cuMemFree) X(cuMemHostAlloc) X(cuMemFreeHost)                  \
    X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize)                                                 \
    X(cuEventCreate) X(cuEventRecord) X(cuEventQuery) X(cuEventSynchronize) X(cuEventDestroy)                   \
    X(cuModuleLoadData) X(cuModuleGetFunction) X(cuLaunchKernel)                                                \
    X(cuIpcGetMemHandle) X(cuIpcOpenMemHandle) X(cuIpcCloseMemHandle)
// clang-format on

struct Driver {
#define LOOM_CU_MEMBER(fn) decltype(&::fn) fn = nullptr;
    LOOM_CU_FUNCTIONS(LOOM_CU_MEMBER)
#undef LOOM_CU_MEMBER
    bool loaded = false;
    std::string state;
};

Driver load_driver() {
    Driver d;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        d.state = "not loaded: libcuda.so.1 not found (no NVIDIA driver on this machine)";
        return d;
    }
#define LOOM_CU_RESOLVE(fn)                                                                                \
    d.fn = reinterpret_cast<decltype(d.fn)>(dlsym(lib, LOOM_CU_NAME(fn)));                                 \
    if (!d.fn) {                                                                                           \
        d.state = std::string("not loaded: libcuda.so.1 lacks ") + LOOM_CU_NAME(fn) + " (driver too old)"; \
        return d;                                                                                          \
    }
    LOOM_CU_FUNCTIONS(LOOM_CU_RESOLVE)
#undef LOOM_CU_RESOLVE
    // The library stays open for the process's life: pointers into it are kept.
    int version = 0;
    d.cuDriverGetVersion(&version);
    d.loaded = true;
    d.state = "libcuda.so.1, driver " + std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
    return d;
}

const Driver &driver() {
    static const Driver d = load_driver();
    return d;
}

Status cuda_fail(CUresult r, const char *what) {
    const char *text = nullptr;
    if (driver().cuGetErrorString(r, &text) != CUDA_SUCCESS || !text) text = "unknown CUDA error";
    return fail(LOOM_ERR_INTERNAL, std::string(what) + ": " + text + " (CUresult " + std::to_string(r) + ")");
}

CUdeviceptr dptr(const void *p) { return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p)); }

PointerInfo query_full(void *, const void *ptr) {
    const Driver &d = driver();
    unsigned int memory_type = 0, managed = 0;
    int device = -1;
    unsigned long long buffer_id = 0;
    CUdeviceptr start = 0;
    size_t size = 0;
    CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,      CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                   CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,   CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                   CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE};
    void *data[] = {&memory_type, &managed, &device, &buffer_id, &start, &size};
    PointerInfo info;
    // Host memory the driver never saw reads as type 0; errors mean host too.
    if (d.cuPointerGetAttributes(6, attrs, data, dptr(ptr)) != CUDA_SUCCESS) return info;
    if (memory_type != CU_MEMORYTYPE_DEVICE) return info;
    info.memory = managed ? MemoryType::cuda_managed : MemoryType::cuda;
    info.device = device;
    info.buffer_id = buffer_id;
    info.base = static_cast<uintptr_t>(start);
    info.size = size;
    return info;
}

uint64_t query_buffer_id(void *, const void *ptr) {
    unsigned long long id = 0;
    if (driver().cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, dptr(ptr)) != CUDA_SUCCESS) return 0;
    return id;
}

PointerCache &cache() {
    static PointerCache c(PointerCache::Queries{nullptr, query_full, query_buffer_id});
    return c;
}

Status need_driver(const char *what) {
    if (driver().loaded) return LOOM_SUCCESS;
    return fail(LOOM_ERR_INVALID_ARGUMENT, std::string(what) + ": CUDA is " + driver().state);
}

// The kernel named loom_reduce_<type>_<op> in this thread's context:
// the module is loaded once per context, functions found once per name.
Status kernel_for(const char *type, const char *op, CUfunction *out) {
    static std::mutex mutex;
    static std::map<CUcontext, CUmodule> modules;
    static std::map<std::pair<CUcontext, std::string>, CUfunction> functions;
    const Driver &d = driver();
    CUcontext ctx = nullptr;
    d.cuCtxGetCurrent(&ctx);
    const std::string name = std::string("loom_reduce_") + type + "_" + op;
    std::lock_guard<std::mutex> lock(mutex);
    auto f = functions.find({ctx, name});
    if (f != functions.end()) {
        *out = f->second;
        return LOOM_SUCCESS;
    }
    auto m = modules.find(ctx);
    if (m == modules.end()) {
        CUmodule mod = nullptr;
        const CUresult r = d.cuModuleLoadData(&mod, loom_kernel_image);
        if (r != CUDA_SUCCESS)
            return cuda_fail(r, "loading Loom's CUDA kernels (built for another GPU? NVCC_ARCH_FLAGS)");
        m = modules.emplace(ctx, mod).first;
    }
    CUfunction fn = nullptr;
    const CUresult r = d.cuModuleGetFunction(&fn, m->second, name.c_str());
    if (r != CUDA_SUCCESS)
        return fail(LOOM_ERR_INVALID_OP, std::string("no CUDA kernel for ") + op + " on " + type + " (" + name + ")");
    functions[{ctx, name}] = fn;
    *out = fn;
    return LOOM_SUCCESS;
}

}  // namespace

bool cuda_kernels_built() { return true; }

namespace detail {
std::atomic<int> cuda_driver_status{0};
bool try_cuda_driver() {
    const bool loaded = driver().loaded;
    cuda_driver_status.store(loaded ? 1 : 2, std::memory_order_relaxed);
    return loaded;
}
}  // namespace detail

bool device_reduction_available(const char *type, const char *op) {
    using namespace device_list;
    static const std::set<std::string> pairs = {
#define LOOM_PAIR_NAME(tname, oname, T, Op) #tname "/" #oname,
        LOOM_DEVICE_REDUCTIONS(LOOM_PAIR_NAME)
#undef LOOM_PAIR_NAME
    };
    return type && op && pairs.count(std::string(type) + "/" + op) > 0;
}
std::string cuda_driver_state() { return driver().state; }

PointerInfo pointer_info(const void *ptr) {
    if (!ptr || !current_context()) return PointerInfo{};
    return cache().lookup(ptr);
}

MemoryType memory_type_of(const void *ptr) { return pointer_info(ptr).memory; }

void *current_context() {
    CUcontext ctx = nullptr;
    if (!driver().loaded || driver().cuCtxGetCurrent(&ctx) != CUDA_SUCCESS) return nullptr;
    return ctx;
}

Status stream_synchronize(void *stream) {
    if (!driver().loaded) {
        if (!stream) return LOOM_SUCCESS;
        return fail(LOOM_ERR_INVALID_ARGUMENT, "a CUDA stream was given, but CUDA is " + driver().state);
    }
    if (!stream && !current_context()) return LOOM_SUCCESS;  // no context: nothing was enqueued in this thread
    const CUresult r = driver().cuStreamSynchronize(static_cast<CUstream>(stream));
    return r == CUDA_SUCCESS ? LOOM_SUCCESS : cuda_fail(r, "waiting for the caller's stream");
}

Status memory_copy(void *dst, const void *src, size_t bytes, void *context) {
    if (bytes == 0) return LOOM_SUCCESS;
    if (!driver().loaded) {
        std::memcpy(dst, src, bytes);
        return LOOM_SUCCESS;
    }
    const Driver &d = driver();
    const bool push = context && !current_context();
    if (push && d.cuCtxPushCurrent(static_cast<CUcontext>(context)) != CUDA_SUCCESS)
        return fail(LOOM_ERR_INTERNAL, "cannot make the buffers' CUDA context current for a staging copy");
    const CUresult r = d.cuMemcpy(dptr(dst), dptr(src), bytes);
    if (push) {
        CUcontext popped = nullptr;
        d.cuCtxPopCurrent(&popped);
    }
    return r == CUDA_SUCCESS ? LOOM_SUCCESS : cuda_fail(r, "copying between host and device");
}

Status device_alloc(size_t bytes, void **out) {
    LOOM_RETURN_IF_ERROR(need_driver("device_alloc"));
    const Driver &d = driver();
    CUresult r = d.cuInit(0);
    if (r != CUDA_SUCCESS) return cuda_fail(r, "cuInit");
    if (!current_context()) {
        CUdevice dev = 0;
        CUcontext ctx = nullptr;
        if ((r = d.cuDeviceGet(&dev, 0)) != CUDA_SUCCESS) return cuda_fail(r, "cuDeviceGet(0)");
        if ((r = d.cuDevicePrimaryCtxRetain(&ctx, dev)) != CUDA_SUCCESS)
            return cuda_fail(r, "cuDevicePrimaryCtxRetain");
        if ((r = d.cuCtxSetCurrent(ctx)) != CUDA_SUCCESS) return cuda_fail(r, "cuCtxSetCurrent");
    }
    CUdeviceptr p = 0;
    if ((r = d.cuMemAlloc(&p, bytes ? bytes : 1)) != CUDA_SUCCESS) return cuda_fail(r, "cuMemAlloc");
    *out = reinterpret_cast<void *>(static_cast<uintptr_t>(p));
    return LOOM_SUCCESS;
}

Status device_free(void *ptr) {
    LOOM_RETURN_IF_ERROR(need_driver("device_free"));
    const CUresult r = driver().cuMemFree(dptr(ptr));
    return r == CUDA_SUCCESS ? LOOM_SUCCESS : cuda_fail(r, "cuMemFree");
}

Status pinned_alloc(size_t bytes, void **out) {
    LOOM_RETURN_IF_ERROR(need_driver("pinned_alloc"));
    const CUresult r = driver().cuMemHostAlloc(out, bytes ? bytes : 1, CU_MEMHOSTALLOC_PORTABLE);
    return r == CUDA_SUCCESS ? LOOM_SUCCESS : cuda_fail(r, "cuMemHostAlloc (pinned staging buffer)");
}

Status pinned_free(void *ptr) {
    if (!ptr) return LOOM_SUCCESS;
    LOOM_RETURN_IF_ERROR(need_driver("pinned_free"));
    const CUresult r = driver().cuMemFreeHost(ptr);
    return r == CUDA_SUCCESS ? LOOM_SUCCESS : cuda_fail(r, "cuMemFreeHost");
}

static_assert(sizeof(IpcHandle) == sizeof(CUipcMemHandle), "IpcHandle holds a CUipcMemHandle");

Status ipc_get_handle(uintptr_t base, IpcHandle *out) {
    LOOM_RETURN_IF_ERROR(need_driver("CUDA IPC"));
    CUipcMemHandle h;
    const CUresult r = driver().cuIpcGetMemHandle(&h, static_cast<CUdeviceptr>(base));
    if (r != CUDA_SUCCESS)
        return cuda_fail(r, "cuIpcGetMemHandle (memory from a pool or VMM cannot be shared this way)");
    std::memcpy(out->bytes, &h, sizeof h);
    return LOOM_SUCCESS;
}

Status ipc_open(const IpcHandle &handle, void **base) {
    LOOM_RETURN_IF_ERROR(need_driver("CUDA IPC"));
    CUipcMemHandle h;
    std::memcpy(&h, handle.bytes, sizeof h);
    CUdeviceptr p = 0;
    const CUresult r = driver().cuIpcOpenMemHandle(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    if (r != CUDA_SUCCESS) return cuda_fail(r, "cuIpcOpenMemHandle (opening a peer's device buffer)");
    *base = reinterpret_cast<void *>(static_cast<uintptr_t>(p));
    return LOOM_SUCCESS;
}

Status ipc_close(void *base) {
    LOOM_RETURN_IF_ERROR(need_driver("CUDA IPC"));
    const CUresult r = driver().cuIpcCloseMemHandle(dptr(base));
    return r == CUDA_SUCCESS ? LOOM_SUCCESS : cuda_fail(r, "cuIpcCloseMemHandle");
}

DeviceStream::~DeviceStream() {
    if (!stream_) return;
    const Driver &d = driver();
    d.cuStreamSynchronize(static_cast<CUstream>(stream_));
    for (void *e : events_)
        if (e) d.cuEventDestroy(static_cast<CUevent>(e));
    d.cuStreamDestroy(static_cast<CUstream>(stream_));
}

Status DeviceStream::ensure() {
    if (stream_) return LOOM_SUCCESS;
    LOOM_RETURN_IF_ERROR(need_driver("staging"));
    const Driver &d = driver();
    CUstream s = nullptr;
    CUresult r = d.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    if (r != CUDA_SUCCESS) return cuda_fail(r, "cuStreamCreate");
    stream_ = s;
    for (void *&e : events_) {
        CUevent ev = nullptr;
        if ((r = d.cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING)) != CUDA_SUCCESS) return cuda_fail(r, "cuEventCreate");
        e = ev;
    }
    return LOOM_SUCCESS;
}

Status DeviceStream::free_event_slot() {
    // The event the next mark reuses must have fired: wait for the oldest mark.
    const uint64_t m = next_mark_;
    if (m > static_cast<uint64_t>(kEvents) && done_ < m - kEvents) {
        const CUresult r = driver().cuEventSynchronize(static_cast<CUevent>(events_[(m - kEvents) % kEvents]));
        if (r != CUDA_SUCCESS) return cuda_fail(r, "waiting for Loom's stream");
        done_ = m - kEvents;
    }
    return LOOM_SUCCESS;
}

Status DeviceStream::mark_point(uint64_t *mark) {
    const uint64_t m = next_mark_;
    const CUresult r =
        driver().cuEventRecord(static_cast<CUevent>(events_[m % kEvents]), static_cast<CUstream>(stream_));
    if (r != CUDA_SUCCESS) return cuda_fail(r, "cuEventRecord");
    *mark = next_mark_++;
    return LOOM_SUCCESS;
}

Status DeviceStream::copy(void *dst, const void *src, size_t bytes, uint64_t *mark) {
    LOOM_RETURN_IF_ERROR(ensure());
    LOOM_RETURN_IF_ERROR(free_event_slot());
    const CUresult r =
        bytes ? driver().cuMemcpyAsync(dptr(dst), dptr(src), bytes, static_cast<CUstream>(stream_)) : CUDA_SUCCESS;
    if (r != CUDA_SUCCESS) return cuda_fail(r, "cuMemcpyAsync");
    return mark_point(mark);
}

Status DeviceStream::reduce(void *dst, const void *const *sources, int nsources, size_t n, size_t elem_size,
                            const char *type, const char *op, bool accumulate, uint64_t *mark) {
    LOOM_RETURN_IF_ERROR(ensure());
    LOOM_RETURN_IF_ERROR(free_event_slot());
    CUfunction fn = nullptr;
    if (n > 0) LOOM_RETURN_IF_ERROR(kernel_for(type, op, &fn));
    const size_t lanes = elem_size <= 16 && 16 % elem_size == 0 ? 16 / elem_size : 1;
    for (int first = 0; n > 0 && first < nsources;) {
        // At most kMaxKernelSources per launch; later launches add to dst.
        int batch = nsources - first < kMaxKernelSources ? nsources - first : kMaxKernelSources;
        int acc = accumulate || first > 0 ? 1 : 0;
        LoomSources s{};
        bool aligned = reinterpret_cast<uintptr_t>(dst) % 16 == 0;
        for (int k = 0; k < batch; ++k) {
            s.p[k] = sources[first + k];
            aligned = aligned && reinterpret_cast<uintptr_t>(s.p[k]) % 16 == 0;
        }
        size_t packs = lanes > 1 && aligned ? n / lanes : 0;
        const size_t items = packs + (n - packs * lanes);
        size_t blocks = (items + kKernelThreads - 1) / kKernelThreads;
        if (blocks > kKernelMaxBlocks) blocks = kKernelMaxBlocks;
        void *d = dst;
        void *args[] = {&d, &s, &batch, &packs, &n, &acc};
        const CUresult r = driver().cuLaunchKernel(fn, static_cast<unsigned>(blocks), 1, 1, kKernelThreads, 1, 1, 0,
                                                   static_cast<CUstream>(stream_), args, nullptr);
        if (r != CUDA_SUCCESS) return cuda_fail(r, "launching a reduction kernel");
        first += batch;
    }
    return mark_point(mark);
}

Status DeviceStream::reached(uint64_t mark, bool *yes) {
    *yes = mark <= done_;
    if (*yes) return LOOM_SUCCESS;
    const CUresult r = driver().cuEventQuery(static_cast<CUevent>(events_[mark % kEvents]));
    if (r == CUDA_ERROR_NOT_READY) return LOOM_SUCCESS;
    if (r != CUDA_SUCCESS) return cuda_fail(r, "a staging copy failed");
    done_ = mark;  // the stream is in order: every earlier mark too
    *yes = true;
    return LOOM_SUCCESS;
}

Status DeviceStream::synchronize() {
    if (!stream_) return LOOM_SUCCESS;
    const CUresult r = driver().cuStreamSynchronize(static_cast<CUstream>(stream_));
    if (r != CUDA_SUCCESS) return cuda_fail(r, "waiting for the staging copies");
    done_ = next_mark_ - 1;
    return LOOM_SUCCESS;
}

#else  // built without cuda.h: every pointer is host memory

bool cuda_kernels_built() { return false; }
bool device_reduction_available(const char *, const char *) { return false; }
namespace detail {
std::atomic<int> cuda_driver_status{2};
bool try_cuda_driver() { return false; }
}  // namespace detail
std::string cuda_driver_state() { return "not built: configure found no CUDA toolkit (cuda.h)"; }
PointerInfo pointer_info(const void *) { return PointerInfo{}; }
MemoryType memory_type_of(const void *) { return MemoryType::host; }
void *current_context() { return nullptr; }
Status stream_synchronize(void *stream) {
    if (!stream) return LOOM_SUCCESS;
    return fail(LOOM_ERR_INVALID_ARGUMENT, "a CUDA stream was given, but this libloom was built without CUDA");
}
Status memory_copy(void *dst, const void *src, size_t bytes, void *) {
    if (bytes) std::memcpy(dst, src, bytes);
    return LOOM_SUCCESS;
}
namespace {
Status no_cuda(const char *what) {
    return fail(LOOM_ERR_INVALID_ARGUMENT, std::string(what) + ": this libloom was built without CUDA");
}
}  // namespace
Status device_alloc(size_t, void **) { return no_cuda("device_alloc"); }
Status ipc_get_handle(uintptr_t, IpcHandle *) { return no_cuda("CUDA IPC"); }
Status ipc_open(const IpcHandle &, void **) { return no_cuda("CUDA IPC"); }
Status ipc_close(void *) { return no_cuda("CUDA IPC"); }
Status device_free(void *) { return no_cuda("device_free"); }
Status pinned_alloc(size_t, void **) { return no_cuda("pinned_alloc"); }
Status pinned_free(void *) { return no_cuda("pinned_free"); }
DeviceStream::~DeviceStream() = default;
Status DeviceStream::ensure() { return no_cuda("staging"); }
Status DeviceStream::copy(void *, const void *, size_t, uint64_t *) { return no_cuda("staging"); }
Status DeviceStream::reduce(void *, const void *const *, int, size_t, size_t, const char *, const char *, bool,
                            uint64_t *) {
    return no_cuda("a device reduction");
}
Status DeviceStream::reached(uint64_t, bool *yes) {
    *yes = true;
    return LOOM_SUCCESS;
}
Status DeviceStream::synchronize() { return LOOM_SUCCESS; }

#endif

}  // namespace loom
