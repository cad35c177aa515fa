#include "core/plan.hpp"

#include <algorithm>
#include <numeric>
#include <sstream>
#include <unordered_map>

namespace loom {

const char *collective_name(Collective c) {
    switch (c) {
        case Collective::allreduce: return "allreduce";
        case Collective::reduce_scatter: return "reduce_scatter";
        case Collective::reduce_scatter_block: return "reduce_scatter_block";
        case Collective::allgather: return "allgather";
        case Collective::alltoall: return "alltoall";
        case Collective::alltoallv: return "alltoallv";
        case Collective::allgatherv: return "allgatherv";
    }
    return "?";
}

bool collective_from_name(const std::string &name, Collective *out) {
    for (int i = 0; i < kCollectiveCount; ++i) {
        auto c = static_cast<Collective>(i);
        if (name == collective_name(c)) {
            *out = c;
            return true;
        }
    }
    return false;
}

const char *step_kind_name(StepKind k) {
    switch (k) {
        case StepKind::send: return "send";
        case StepKind::recv: return "recv";
        case StepKind::reduce: return "reduce";
        case StepKind::copy: return "copy";
        case StepKind::join: return "join";
    }
    return "?";
}

void ProgramBuilder::split_at(PieceMap &pieces, size_t at) {
    auto it = pieces.upper_bound(at);
    if (it == pieces.begin()) return;
    --it;
    if (it->first < at && at < it->second.end) {
        Piece right = it->second;  // same writer and readers on both sides
        it->second.end = at;
        pieces.emplace(at, std::move(right));
    }
}

void ProgramBuilder::track(const Slice &slice, bool write, StepId id, std::vector<StepId> &deps) {
    Slice s = slice;
    if (s.count == 0) return;
    if (s.buffer == Buffer::input) {
        if (!input_aliased_) return;  // the input is never written: nothing to order
        s = Slice{Buffer::output, s.offset + input_alias_offset_, s.count};
    }
    PieceMap &pieces = pieces_[static_cast<int>(s.buffer)];
    const size_t begin = s.offset, end = s.offset + s.count;
    split_at(pieces, begin);
    split_at(pieces, end);
    // Fill the untouched gaps inside [begin, end) so every element has a piece.
    size_t cursor = begin;
    for (auto it = pieces.lower_bound(begin); cursor < end;) {
        const size_t next = (it == pieces.end() || it->first >= end) ? end : it->first;
        if (cursor < next) pieces.emplace_hint(it, cursor, Piece{next, kNoWriter, {}});
        if (it == pieces.end() || it->first >= end) break;
        cursor = it->second.end;
        ++it;
    }
    auto first = pieces.lower_bound(begin), last = pieces.lower_bound(end);
    for (auto it = first; it != last; ++it) {
        Piece &piece = it->second;
        if (piece.writer != kNoWriter && piece.writer != id) deps.push_back(piece.writer);
        if (write)
            for (StepId r : piece.readers)
                if (r != id) deps.push_back(r);
    }
    if (write) {
        pieces.erase(first, last);
        pieces.emplace(begin, Piece{end, id, {}});
    } else {
        for (auto it = first; it != last; ++it) it->second.readers.push_back(id);
    }
}

Slice ProgramBuilder::to_current(const Slice &s) const {
    if (groups_.empty() || s.buffer == Buffer::scratch) return s;
    const Slice &base = s.buffer == Buffer::input ? groups_.back().input : groups_.back().output;
    return Slice{base.buffer, base.offset + s.offset, s.count};
}

void ProgramBuilder::push_group(const std::vector<int> &ranks, Slice input, Slice output, int lane,
                                const std::string &phase) {
    Group g;
    g.input = to_current(input);
    g.output = to_current(output);
    g.lane = lane >= 0 ? lane : (groups_.empty() ? -1 : groups_.back().lane);
    g.phase = groups_.empty() ? 0 : groups_.back().phase;
    if (!phase.empty()) {
        if (p_.phases.empty()) p_.phases.emplace_back();
        const std::string &outer = p_.phases[g.phase];
        const std::string name = outer.empty() ? phase : outer + " / " + phase;
        const auto it = std::find(p_.phases.begin(), p_.phases.end(), name);
        g.phase = static_cast<uint16_t>(it - p_.phases.begin());
        if (it == p_.phases.end() && p_.phases.size() < 0xffff) p_.phases.push_back(name);
        else if (it == p_.phases.end()) g.phase = 0;
        if (p_.step_phase.size() < p_.steps.size()) p_.step_phase.resize(p_.steps.size(), 0);
    }
    g.ranks = ranks;
    if (!groups_.empty())
        for (int &r : g.ranks) r = groups_.back().ranks[r];
    groups_.push_back(std::move(g));
}

void ProgramBuilder::pop_group() { groups_.pop_back(); }

StepId ProgramBuilder::add(StepKind kind, int peer, Slice dst, Slice src, const StepId *deps, size_t ndeps, int lane) {
    if (step_limit_ && p_.steps.size() >= step_limit_) {
        p_.truncated = true;
        return 0;  // later steps that wait on it are dropped too
    }
    if (!groups_.empty()) {
        if (peer >= 0) peer = groups_.back().ranks[peer];
        // Both sides of a message must agree on its lane: receives carry it too.
        if ((kind == StepKind::send || kind == StepKind::recv) && groups_.back().lane >= 0) lane = groups_.back().lane;
        dst = to_current(dst);
        src = to_current(src);
    }
    const size_t length = kind == StepKind::send ? src.count : dst.count;
    if (kind != StepKind::join && length == 0) kind = StepKind::join;
    const StepId id = static_cast<StepId>(p_.steps.size());
    std::vector<StepId> all(deps, deps + ndeps);
    Step s;
    s.kind = kind;
    s.lane = static_cast<uint8_t>(lane);
    if (kind != StepKind::join) {
        s.peer = peer;
        s.dst = dst;
        s.src = src;
        if (kind != StepKind::recv) track(src, false, id, all);
        if (kind != StepKind::send) track(dst, true, id, all);
    }
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    s.first_dep = static_cast<uint32_t>(p_.deps.size());
    s.dep_count = static_cast<uint32_t>(all.size());
    p_.deps.insert(p_.deps.end(), all.begin(), all.end());
    p_.steps.push_back(s);
    if (!p_.step_phase.empty() || (!groups_.empty() && groups_.back().phase != 0))
        p_.step_phase.resize(p_.steps.size(), groups_.empty() ? 0 : groups_.back().phase);
    return id;
}

void Program::finalize() {
    const size_t n = steps.size();
    std::vector<uint32_t> counts(n + 1, 0);
    for (const Step &s : steps)
        for (uint32_t d = 0; d < s.dep_count; ++d) ++counts[deps[s.first_dep + d] + 1];
    std::partial_sum(counts.begin(), counts.end(), counts.begin());
    dependents_begin = counts;
    dependents.assign(deps.size(), 0);
    std::vector<uint32_t> fill(counts.begin(), counts.end() - 1);
    for (StepId id = 0; id < n; ++id) {
        const Step &s = steps[id];
        for (uint32_t d = 0; d < s.dep_count; ++d) dependents[fill[deps[s.first_dep + d]]++] = id;
    }
    initial_unmet.assign(n, 0);
    next_in_peer_order.assign(n, kNoStep);
    std::unordered_map<int64_t, StepId> last_posted;  // key: peer * 2 + (is recv)
    for (StepId id = 0; id < n; ++id) {
        const Step &s = steps[id];
        initial_unmet[id] = s.dep_count;
        if (s.kind != StepKind::send && s.kind != StepKind::recv) continue;
        const int64_t key = int64_t{s.peer} * 2 + (s.kind == StepKind::recv ? 1 : 0);
        auto it = last_posted.find(key);
        if (it != last_posted.end()) {
            next_in_peer_order[it->second] = id;
            ++initial_unmet[id];
            it->second = id;
        } else {
            last_posted.emplace(key, id);
        }
    }
    initial_ready.clear();
    for (StepId id = 0; id < n; ++id)
        if (initial_unmet[id] == 0) initial_ready.push_back(id);
}

std::string Program::validate(size_t input_count, size_t output_count) const {
    auto in_bounds = [&](const Slice &sl) {
        size_t limit = sl.buffer == Buffer::input    ? input_count
                       : sl.buffer == Buffer::output ? output_count
                                                     : scratch_count;
        return sl.offset + sl.count <= limit;
    };
    for (StepId id = 0; id < steps.size(); ++id) {
        const Step &s = steps[id];
        std::ostringstream where;
        where << "step " << id << " (" << step_kind_name(s.kind) << ")";
        for (uint32_t d = 0; d < s.dep_count; ++d)
            if (deps[s.first_dep + d] >= id) return where.str() + " depends on a later step";
        if ((s.kind == StepKind::send || s.kind == StepKind::reduce || s.kind == StepKind::copy) && !in_bounds(s.src))
            return where.str() + " reads out of bounds";
        if ((s.kind == StepKind::recv || s.kind == StepKind::reduce || s.kind == StepKind::copy) && !in_bounds(s.dst))
            return where.str() + " writes out of bounds";
        if ((s.kind == StepKind::reduce || s.kind == StepKind::copy) && s.src.count != s.dst.count)
            return where.str() + " has slices of different lengths";
        if ((s.kind == StepKind::recv || s.kind == StepKind::reduce || s.kind == StepKind::copy) &&
            s.dst.buffer == Buffer::input)
            return where.str() + " writes the input buffer";
    }
    return {};
}

BlockLayout::BlockLayout(size_t count, size_t parts) : offsets(parts + 1) {
    const size_t base = parts ? count / parts : 0, extra = parts ? count % parts : 0;
    offsets[0] = 0;
    for (size_t b = 0; b < parts; ++b) offsets[b + 1] = offsets[b] + base + (b < extra ? 1 : 0);
}

BlockLayout::BlockLayout(const std::vector<size_t> &counts) : offsets(counts.size() + 1) {
    offsets[0] = 0;
    for (size_t b = 0; b < counts.size(); ++b) offsets[b + 1] = offsets[b] + counts[b];
}

size_t CollArgs::input_count() const {
    switch (collective) {
        case Collective::allreduce: return count;
        case Collective::reduce_scatter: return std::accumulate(recv_counts.begin(), recv_counts.end(), size_t{0});
        case Collective::reduce_scatter_block: return count * nranks;
        case Collective::allgather: return count;
        case Collective::alltoall: return count * nranks;
        case Collective::alltoallv: return extent_of(send_counts, send_displs);
        case Collective::allgatherv: return count;
    }
    return 0;
}

size_t CollArgs::output_count(int rank) const {
    switch (collective) {
        case Collective::allreduce: return count;
        case Collective::reduce_scatter:
            // In place, the whole input sits in the output buffer.
            return in_place ? input_count() : recv_counts[rank];
        case Collective::reduce_scatter_block: return in_place ? count * nranks : count;
        case Collective::allgather: return count * nranks;
        case Collective::alltoall: return count * nranks;
        case Collective::alltoallv:
        case Collective::allgatherv: return extent_of(recv_counts, recv_displs);
    }
    return 0;
}

size_t CollArgs::in_place_input_offset(int rank) const {
    if (collective == Collective::allgatherv) return recv_displs[rank];
    return collective == Collective::allgather ? count * rank : 0;
}

void set_uniform_blocks(CollArgs &a, size_t block) {
    const size_t p = static_cast<size_t>(a.nranks);
    a.recv_counts.assign(p, block);
    a.recv_displs.resize(p);
    for (size_t r = 0; r < p; ++r) a.recv_displs[r] = r * block;
    if (a.collective == Collective::alltoallv) {
        a.send_counts = a.recv_counts;
        a.send_displs = a.recv_displs;
        a.count_matrix.assign(p * p, block);
        a.count = 0;
    } else {
        a.count = block;
    }
}

void set_skewed_blocks(CollArgs &a, size_t block, size_t skew) {
    set_uniform_blocks(a, block);
    const size_t p = static_cast<size_t>(a.nranks);
    if (p < 2 || skew <= 1) return;
    skew = std::min(skew, p);
    // Rank 0's blocks take `skew` means; the other p - 1 share what is left of p means.
    const size_t hot = skew * block, cold = (p - skew) * block / (p - 1);
    auto skewed = [&](size_t r) { return r == 0 ? hot : cold; };
    if (a.collective == Collective::alltoallv) {
        for (size_t s = 0; s < p; ++s)
            for (size_t d = 0; d < p; ++d) a.count_matrix[s * p + d] = skewed(d);
        a = rank_args(a, 0);
    } else {
        size_t at = 0;
        for (size_t r = 0; r < p; ++r) {
            a.recv_counts[r] = skewed(r);
            a.recv_displs[r] = at;
            at += a.recv_counts[r];
        }
        a.count = a.recv_counts[0];
    }
}

bool knows_every_ranks_counts(const CollArgs &a) {
    const size_t p = static_cast<size_t>(a.nranks);
    return (a.collective == Collective::allgatherv && a.recv_counts.size() == p) ||
           (a.collective == Collective::alltoallv && a.count_matrix.size() == p * p);
}

CollArgs rank_args(const CollArgs &a, int rank) {
    const size_t p = static_cast<size_t>(a.nranks), me = static_cast<size_t>(rank);
    CollArgs mine = a;
    if (!knows_every_ranks_counts(a)) return mine;
    if (a.collective == Collective::allgatherv) {
        mine.count = a.recv_counts[me];
    } else {
        mine.send_counts.resize(p);
        mine.recv_counts.resize(p);
        mine.send_displs.resize(p);
        mine.recv_displs.resize(p);
        size_t sent = 0, received = 0;
        for (size_t peer = 0; peer < p; ++peer) {
            mine.send_counts[peer] = a.count_matrix[me * p + peer];
            mine.recv_counts[peer] = a.count_matrix[peer * p + me];
            mine.send_displs[peer] = sent;
            mine.recv_displs[peer] = received;
            sent += mine.send_counts[peer];
            received += mine.recv_counts[peer];
        }
        // In place, the send side is the receive side (the counts are symmetric then).
        if (a.in_place) {
            mine.send_counts = mine.recv_counts;
            mine.send_displs = mine.recv_displs;
        }
    }
    return mine;
}

bool alltoallv_block_totals(const CollArgs &a, size_t *total, size_t *largest) {
    if (a.node_counts.known()) {
        *total = a.node_counts.total;
        *largest = a.node_counts.largest;
        return true;
    }
    const size_t p = static_cast<size_t>(a.nranks);
    if (a.count_matrix.size() != p * p) return false;
    *total = std::accumulate(a.count_matrix.begin(), a.count_matrix.end(), size_t{0});
    *largest = a.count_matrix.empty() ? 0 : *std::max_element(a.count_matrix.begin(), a.count_matrix.end());
    return true;
}

size_t extent_of(const std::vector<size_t> &counts, const std::vector<size_t> &displs) {
    size_t end = 0;
    for (size_t i = 0; i < counts.size(); ++i)
        if (counts[i]) end = std::max(end, displs[i] + counts[i]);
    return end;
}

CollArgs::Part CollArgs::reduced_part(int rank) const {
    switch (collective) {
        case Collective::reduce_scatter:
            return {std::accumulate(recv_counts.begin(), recv_counts.begin() + rank, size_t{0}), recv_counts[rank]};
        case Collective::reduce_scatter_block: return {count * static_cast<size_t>(rank), count};
        default: return {0, count};
    }
}

std::string CollArgs::describe() const {
    std::ostringstream o;
    o << collective_name(collective) << " p=" << nranks << " count=" << count;
    if (collective == Collective::reduce_scatter || collective == Collective::allgatherv)
        o << " (varying counts, total " << std::accumulate(recv_counts.begin(), recv_counts.end(), size_t{0}) << ")";
    if (collective == Collective::alltoallv)
        o << " (varying counts, sent " << std::accumulate(send_counts.begin(), send_counts.end(), size_t{0})
          << ", received " << std::accumulate(recv_counts.begin(), recv_counts.end(), size_t{0}) << ")";
    o << " elem=" << elem_size << "B" << (in_place ? " in-place" : "") << (single_node ? " one-node" : "");
    if (memory != MemoryType::host) o << " memory=" << memory_type_name(memory);
    return o.str();
}

}  // namespace loom
