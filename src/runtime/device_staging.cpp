#include "runtime/device_staging.hpp"

#include <sched.h>

#include <algorithm>

#include "select/cost_model.hpp"
#include "select/selector.hpp"

namespace loom {

const ParamId kParamCudaStagingChunkBytes = declare_param(
    ParamSection::device,
    {"cuda_staging_chunk_bytes", ParamType::size, "0", 5,
     "Chunk of a blocking allreduce on device buffers staged through pinned host memory: the copy of one chunk "
     "to the host overlaps the reduction of the one before and the copy back of the one before that. 0: the "
     "cost model's choice (its pcie link for the copies, its prediction of each chunk's allreduce), a power of "
     "two from 64 KiB to 16 MiB",
     0, 1LL << 30, Collective::allreduce});

Status PinnedBuffer::reserve(size_t bytes) {
    if (bytes <= capacity_) return LOOM_SUCCESS;
    LOOM_RETURN_IF_ERROR(pinned_free(data_));
    data_ = nullptr;
    capacity_ = 0;
    void *p = nullptr;
    LOOM_RETURN_IF_ERROR(pinned_alloc(bytes, &p));
    data_ = static_cast<unsigned char *>(p);
    capacity_ = bytes;
    return LOOM_SUCCESS;
}

CallBytes call_bytes(const CollArgs &args, int rank, bool in_place) {
    CallBytes b;
    const size_t in = args.input_count() * args.elem_size, out = args.output_count(rank) * args.elem_size;
    b.in = in_place ? std::max(in, out) : in;
    b.recv = in_place ? b.in : out;
    return b;
}

StagingNeed staging_need(const CollArgs &args, int rank, const CallData &call) {
    StagingNeed need;
    // A buffer of no bytes still says where this rank's buffers are, so that
    // every rank takes the same path.
    const CallBytes bytes = call_bytes(args, rank, call.in_place);
    need.recv_used = call.recvbuf && bytes.recv > 0;
    if (call.recvbuf) need.recv_on_device = memory_type_of(call.recvbuf) == MemoryType::cuda;
    if (call.in_place) {
        need.send_used = need.recv_used;
        need.send_on_device = need.recv_on_device;
    } else {
        need.send_used = call.sendbuf && bytes.in > 0;
        if (call.sendbuf) need.send_on_device = memory_type_of(call.sendbuf) == MemoryType::cuda;
    }
    return need;
}

Status StagedCall::prepare(const CollArgs &args, int rank, const CallData &user, StagingNeed need) {
    user_ = user;
    host_ = user;
    need_ = need;
    context_ = current_context();
    bytes_ = call_bytes(args, rank, user.in_place);
    out_bytes_ = args.output_count(rank) * args.elem_size;
    output_has_gaps_ = is_vector_collective(args.collective) && !user.in_place;
    if (need.send_on_device && !user.in_place) {
        LOOM_RETURN_IF_ERROR(send_.reserve(bytes_.in));
        host_.sendbuf = send_.data();
    }
    if (need.recv_on_device) {
        LOOM_RETURN_IF_ERROR(recv_.reserve(bytes_.recv));
        host_.recvbuf = recv_.data();
    }
    return LOOM_SUCCESS;
}

Status StagedCall::copy_in() {
    if (user_.in_place) {
        if (need_.recv_on_device) return memory_copy(recv_.data(), user_.recvbuf, bytes_.in, context_);
        return LOOM_SUCCESS;
    }
    if (output_has_gaps_ && need_.recv_on_device)
        LOOM_RETURN_IF_ERROR(memory_copy(recv_.data(), user_.recvbuf, out_bytes_, context_));
    if (need_.send_on_device) return memory_copy(send_.data(), user_.sendbuf, bytes_.in, context_);
    return LOOM_SUCCESS;
}

Status StagedCall::copy_out() {
    if (!need_.recv_on_device) return LOOM_SUCCESS;
    return memory_copy(user_.recvbuf, recv_.data(), out_bytes_, context_);
}

std::vector<StagingChunk> staging_chunks(size_t count, size_t elem_size, size_t chunk_bytes) {
    std::vector<StagingChunk> chunks;
    const size_t per = std::max<size_t>(1, chunk_bytes / std::max<size_t>(1, elem_size));
    for (size_t first = 0; first < count; first += per) chunks.push_back({first, std::min(per, count - first)});
    return chunks;
}

namespace {
constexpr size_t kSmallestChunk = 64 * 1024;

// Where the model cannot price the chunks: a quarter of the message, 256 KiB to 4 MiB.
size_t rule_of_thumb_chunk(size_t bytes) {
    size_t chunk = 256 * 1024;
    while (chunk < 4 * 1024 * 1024 && chunk * 4 < bytes) chunk *= 2;
    return chunk;
}
}  // namespace

size_t model_chunk_bytes(const Communicator &comm, const CollArgs &args, loom_datatype_t type) {
    const size_t bytes = args.count * args.elem_size;
    const size_t configured = static_cast<size_t>(comm.config().integer(kParamCudaStagingChunkBytes));
    if (configured) return configured;
    if (bytes < 2 * kSmallestChunk) return 0;
    const CostModel model = model_for(comm.config());
    size_t best = 0;
    double best_us = 0;
    for (size_t chunk = kSmallestChunk; chunk <= 16 * 1024 * 1024 && chunk * 2 <= bytes; chunk *= 2) {
        CollArgs part = args;
        part.count = chunk / args.elem_size;
        part.in_place = true;
        part.memory = MemoryType::host;
        double chunk_us = 0;
        if (!comm.predicted_time(part, type, &chunk_us)) return rule_of_thumb_chunk(bytes);
        const double us = staged_pipeline_time(bytes, part.count * args.elem_size, chunk_us, model);
        if (!best || us < best_us) {
            best = part.count * args.elem_size;
            best_us = us;
        }
    }
    return best;
}

Status run_pipelined_allreduce(Communicator &comm, const CollArgs &args, const CallData &user, size_t chunk_bytes,
                               PinnedBuffer &ring, DeviceStream &stream) {
    const size_t es = args.elem_size;
    const std::vector<StagingChunk> chunks = staging_chunks(args.count, es, chunk_bytes);
    const size_t n = chunks.size();
    const size_t slot_bytes = chunks.empty() ? 0 : chunks[0].count * es;
    LOOM_RETURN_IF_ERROR(ring.reserve(slot_bytes * kStagingSlots));
    const unsigned char *in = static_cast<const unsigned char *>(user.in_place ? user.recvbuf : user.sendbuf);
    unsigned char *out = static_cast<unsigned char *>(user.recvbuf);
    auto slot = [&](size_t k) { return ring.data() + (k % kStagingSlots) * slot_bytes; };

    // A chunk goes: copied in (mark) -> reduced across ranks (req) -> copied out (mark) -> done.
    enum Stage { waiting, copying_in, reducing, copying_out, done };
    struct Chunk {
        Stage stage = waiting;
        uint64_t mark = 0;
        std::unique_ptr<Request> req;
    };
    std::vector<Chunk> state(n);
    size_t next_in = 0, next_start = 0, oldest = 0;
    Status err = LOOM_SUCCESS;
    while (oldest < n && err == LOOM_SUCCESS) {
        bool moved = false;
        // A chunk's slot is free once the chunk kSlots before it is done.
        while (next_in < n && (next_in < kStagingSlots || state[next_in - kStagingSlots].stage == done)) {
            err = stream.copy(slot(next_in), in + chunks[next_in].first * es, chunks[next_in].count * es,
                              &state[next_in].mark);
            if (err != LOOM_SUCCESS) break;
            state[next_in++].stage = copying_in;
            moved = true;
        }
        // Every rank starts the chunks' allreduces in chunk order.
        while (err == LOOM_SUCCESS && next_start < next_in) {
            bool landed = false;
            err = stream.reached(state[next_start].mark, &landed);
            if (err != LOOM_SUCCESS || !landed) break;
            CollArgs part = args;
            part.count = chunks[next_start].count;
            part.memory = MemoryType::host;
            err = comm.start(std::move(part), CallData::of(nullptr, true, slot(next_start), user.type, user.op),
                             &state[next_start].req);
            if (err != LOOM_SUCCESS) break;
            state[next_start++].stage = reducing;
            moved = true;
        }
        for (size_t k = oldest; err == LOOM_SUCCESS && k < next_start; ++k) {
            Chunk &c = state[k];
            if (c.stage == reducing) {
                bool finished = false;
                err = c.req->test(&finished);
                if (err != LOOM_SUCCESS || !finished) continue;
                c.req.reset();
                err = stream.copy(out + chunks[k].first * es, slot(k), chunks[k].count * es, &c.mark);
                c.stage = copying_out;
                moved = true;
            } else if (c.stage == copying_out) {
                bool landed = false;
                err = stream.reached(c.mark, &landed);
                if (landed) {
                    c.stage = done;
                    moved = true;
                }
            }
        }
        while (oldest < n && state[oldest].stage == done) ++oldest;
        if (!moved) sched_yield();
    }
    if (err != LOOM_SUCCESS) {
        // Never return with a copy or a reduction still writing.
        for (Chunk &c : state)
            if (c.req) (void)c.req->wait();
        (void)stream.synchronize();
    }
    return err;
}

}  // namespace loom
