/*
 * libloom-mpi's requests: a nonblocking or persistent Loom collective hides
 * behind an MPI_Request the MPI made, so the program's MPI_Wait, MPI_Test,
 * their -all, -any and -some forms, MPI_Start(all), MPI_Request_free and
 * MPI_Request_get_status see it beside the MPI's own requests. Those calls
 * progress the Loom requests in their arguments and hand the rest (with
 * Loom's entries as MPI_REQUEST_NULL) to the MPI.
 */
#include <atomic>
#include <cstdio>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "loom_mpi.hpp"

namespace loom_mpi {
namespace {

struct Pending {
    loom_request_t req = nullptr;
    MPI_Comm comm = MPI_COMM_NULL;
    bool persistent = false;
    bool active = false;   /* started, and the program not yet told it completed */
    bool finished = false; /* Loom finished it (the result is in place) */
    int status = LOOM_SUCCESS;
    Collective collective = ALLREDUCE;
    uint64_t bytes = 0; /* per call, for the statistics */
};

std::mutex table_mutex;
std::unordered_map<MPI_Request, Pending *> table;
std::atomic<size_t> table_size{0};

Pending *find(MPI_Request handle) {
    if (inside_loom || handle == MPI_REQUEST_NULL || table_size.load(std::memory_order_acquire) == 0) return nullptr;
    std::lock_guard<std::mutex> lock(table_mutex);
    auto it = table.find(handle);
    return it == table.end() ? nullptr : it->second;
}

/* One step of progress; true once Loom has finished the request. */
bool advance(Pending *p) {
    if (p->finished) return true;
    int done = 0;
    const char *algorithm = nullptr;
    const int rc = loom_test_algorithm(&p->req, &done, &algorithm);
    if (rc != LOOM_SUCCESS) p->status = rc;
    if (done && rc == LOOM_SUCCESS) count_algorithm(p->collective, algorithm);
    p->finished = done || rc != LOOM_SUCCESS;
    return p->finished;
}

/* Waits until Loom has finished the request. */
void wait_until_finished(Pending *p) {
    const char *algorithm = nullptr;
    const int rc = loom_wait_algorithm(&p->req, &algorithm);
    if (rc != LOOM_SUCCESS) p->status = rc;
    else count_algorithm(p->collective, algorithm);
    p->finished = true;
}

/* A collective's status: no source, tag or elements. */
void empty_status(MPI_Status *s) {
    if (s == MPI_STATUS_IGNORE) return;
    s->MPI_SOURCE = MPI_ANY_SOURCE;
    s->MPI_TAG = MPI_ANY_TAG;
    s->MPI_ERROR = MPI_SUCCESS;
    PMPI_Status_set_elements(s, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(s, 0);
}

/* Drops a request from the table and frees its handle (now MPI_REQUEST_NULL). */
void forget(MPI_Request *handle, Pending *p) {
    {
        std::lock_guard<std::mutex> lock(table_mutex);
        table.erase(*handle);
        table_size.store(table.size(), std::memory_order_release);
    }
    PMPI_Request_free(handle);
    delete p;
}

/* Tells the program that a finished request completed: a nonblocking one is
 * freed (the handle becomes MPI_REQUEST_NULL), a persistent one goes
 * inactive. Returns the MPI error of a failed call. */
int complete(MPI_Request *handle, Pending *p, MPI_Status *s) {
    const int failed = p->status;
    const MPI_Comm comm = p->comm;
    empty_status(s);
    if (p->persistent) {
        p->active = p->finished = false;
        p->status = LOOM_SUCCESS;
    } else {
        forget(handle, p);
    }
    if (failed == LOOM_SUCCESS) return MPI_SUCCESS;
    const int error = report_error(comm, "a nonblocking collective", failed);
    if (s != MPI_STATUS_IGNORE) s->MPI_ERROR = error;
    return error;
}

/* A request array with Loom's entries found and, for the MPI, replaced by
 * MPI_REQUEST_NULL. */
struct Mixed {
    std::vector<MPI_Request> others;
    std::vector<std::pair<int, Pending *>> loom;
    bool split(int n, const MPI_Request *reqs) {
        if (inside_loom || n <= 0 || table_size.load(std::memory_order_acquire) == 0) return false;
        for (int i = 0; i < n; ++i)
            if (Pending *p = find(reqs[i])) loom.emplace_back(i, p);
        if (loom.empty()) return false;
        others.assign(reqs, reqs + n);
        for (auto &e : loom) others[static_cast<size_t>(e.first)] = MPI_REQUEST_NULL;
        return true;
    }
    void copy_back(MPI_Request *reqs) const {
        size_t next = 0;
        for (size_t i = 0; i < others.size(); ++i) {
            if (next < loom.size() && static_cast<size_t>(loom[next].first) == i) {
                ++next;
                continue;
            }
            reqs[i] = others[i];
        }
    }
};

MPI_Status *status_at(MPI_Status *statuses, int i) {
    return statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i];
}

/* Waitall's and a successful Testall's end: every Loom request of the array
 * reported complete (the inactive ones with an empty status). */
int complete_all(const Mixed &m, MPI_Request *reqs, MPI_Status *statuses) {
    int error = MPI_SUCCESS;
    for (auto &e : m.loom) {
        MPI_Status *s = status_at(statuses, e.first);
        if (!e.second->active) empty_status(s);
        else if (complete(&reqs[e.first], e.second, s) != MPI_SUCCESS) error = MPI_ERR_IN_STATUS;
    }
    return error;
}

/* Waitsome and Testsome. */
int some(bool wait, int n, MPI_Request *reqs, int *outcount, int *indices, MPI_Status *statuses) {
    Mixed m;
    if (!m.split(n, reqs))
        return wait ? PMPI_Waitsome(n, reqs, outcount, indices, statuses)
                    : PMPI_Testsome(n, reqs, outcount, indices, statuses);
    InsideLoom inside;
    std::vector<int> their_indices(static_cast<size_t>(n));
    std::vector<MPI_Status> their_statuses(statuses == MPI_STATUSES_IGNORE ? 0 : static_cast<size_t>(n));
    for (;;) {
        int out = 0, error = MPI_SUCCESS;
        bool loom_active = false;
        for (auto &e : m.loom) {
            if (!e.second->active) continue;
            loom_active = true;
            if (!advance(e.second)) continue;
            const int rc = complete(&reqs[e.first], e.second, status_at(statuses, out));
            if (rc != MPI_SUCCESS) error = MPI_ERR_IN_STATUS;
            indices[out++] = e.first;
        }
        int theirs = 0;
        const int rc = PMPI_Testsome(n, m.others.data(), &theirs, their_indices.data(),
                                     statuses == MPI_STATUSES_IGNORE ? MPI_STATUSES_IGNORE : their_statuses.data());
        if (rc != MPI_SUCCESS) error = rc;
        if (theirs != MPI_UNDEFINED)
            for (int k = 0; k < theirs; ++k) {
                const int i = their_indices[static_cast<size_t>(k)];
                reqs[i] = m.others[static_cast<size_t>(i)];
                if (statuses != MPI_STATUSES_IGNORE) statuses[out] = their_statuses[static_cast<size_t>(k)];
                indices[out++] = i;
            }
        if (out > 0 || error != MPI_SUCCESS) {
            *outcount = out;
            return error;
        }
        if (theirs == MPI_UNDEFINED && !loom_active) {
            *outcount = MPI_UNDEFINED;
            return MPI_SUCCESS;
        }
        if (!wait) {
            *outcount = 0;
            return MPI_SUCCESS;
        }
    }
}

/* Waitany and Testany. */
int any(bool wait, int n, MPI_Request *reqs, int *index, int *flag, MPI_Status *status) {
    Mixed m;
    if (!m.split(n, reqs))
        return wait ? PMPI_Waitany(n, reqs, index, status) : PMPI_Testany(n, reqs, index, flag, status);
    InsideLoom inside;
    for (;;) {
        bool loom_active = false;
        for (auto &e : m.loom) {
            if (!e.second->active) continue;
            loom_active = true;
            if (!advance(e.second)) continue;
            *index = e.first;
            if (flag) *flag = 1;
            return complete(&reqs[e.first], e.second, status);
        }
        int theirs = MPI_UNDEFINED, done = 0;
        const int rc = PMPI_Testany(n, m.others.data(), &theirs, &done, status);
        if (rc != MPI_SUCCESS || (done && theirs != MPI_UNDEFINED)) {
            if (theirs != MPI_UNDEFINED) reqs[theirs] = m.others[static_cast<size_t>(theirs)];
            *index = theirs;
            if (flag) *flag = done;
            return rc;
        }
        if (done && !loom_active) { /* nothing active at all */
            *index = MPI_UNDEFINED;
            if (flag) *flag = 1;
            return MPI_SUCCESS;
        }
        if (!wait) {
            *index = MPI_UNDEFINED;
            *flag = 0;
            return MPI_SUCCESS;
        }
    }
}

}  // namespace

int register_request(loom_request_t req, bool persistent, MPI_Comm comm, MPI_Request *handle, Collective c,
                     uint64_t bytes) {
    const int rc = PMPI_Send_init(nullptr, 0, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_SELF, handle);
    if (rc != MPI_SUCCESS) {
        loom_request_free(&req);
        return rc;
    }
    auto *p = new Pending;
    p->req = req;
    p->comm = comm;
    p->persistent = persistent;
    p->active = !persistent;
    p->collective = c;
    p->bytes = bytes;
    std::lock_guard<std::mutex> lock(table_mutex);
    table[*handle] = p;
    table_size.store(table.size(), std::memory_order_release);
    return MPI_SUCCESS;
}

}  // namespace loom_mpi

using namespace loom_mpi;

extern "C" {

int MPI_Wait(MPI_Request *req, MPI_Status *status) {
    Pending *p = find(*req);
    if (!p) return PMPI_Wait(req, status);
    InsideLoom inside;
    if (!p->active) {
        empty_status(status);
        return MPI_SUCCESS;
    }
    if (!p->finished) wait_until_finished(p);
    return complete(req, p, status);
}

int MPI_Test(MPI_Request *req, int *flag, MPI_Status *status) {
    Pending *p = find(*req);
    if (!p) return PMPI_Test(req, flag, status);
    InsideLoom inside;
    if (!p->active) {
        *flag = 1;
        empty_status(status);
        return MPI_SUCCESS;
    }
    *flag = advance(p) ? 1 : 0;
    return *flag ? complete(req, p, status) : MPI_SUCCESS;
}

int MPI_Request_get_status(MPI_Request req, int *flag, MPI_Status *status) {
    Pending *p = find(req);
    if (!p) return PMPI_Request_get_status(req, flag, status);
    InsideLoom inside;
    *flag = !p->active || advance(p);
    if (*flag) empty_status(status);
    return MPI_SUCCESS;
}

int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status statuses[]) {
    Mixed m;
    if (!m.split(n, reqs)) return PMPI_Waitall(n, reqs, statuses);
    InsideLoom inside;
    /* Loom's first: testing them drives the MPI's progress too. */
    for (bool all = false; !all;) {
        all = true;
        for (auto &e : m.loom)
            if (e.second->active && !advance(e.second)) all = false;
    }
    const int rc = PMPI_Waitall(n, m.others.data(), statuses);
    m.copy_back(reqs);
    const int error = complete_all(m, reqs, statuses);
    return rc != MPI_SUCCESS ? rc : error;
}

int MPI_Testall(int n, MPI_Request reqs[], int *flag, MPI_Status statuses[]) {
    Mixed m;
    if (!m.split(n, reqs)) return PMPI_Testall(n, reqs, flag, statuses);
    InsideLoom inside;
    bool all = true;
    for (auto &e : m.loom)
        if (e.second->active && !advance(e.second)) all = false;
    /* MPI_Testall completes all or nothing. */
    if (!all) {
        *flag = 0;
        return MPI_SUCCESS;
    }
    const int rc = PMPI_Testall(n, m.others.data(), flag, statuses);
    m.copy_back(reqs);
    if (!*flag) return rc;
    const int error = complete_all(m, reqs, statuses);
    return rc != MPI_SUCCESS ? rc : error;
}

int MPI_Waitany(int n, MPI_Request reqs[], int *index, MPI_Status *status) {
    return any(true, n, reqs, index, nullptr, status);
}

int MPI_Testany(int n, MPI_Request reqs[], int *index, int *flag, MPI_Status *status) {
    return any(false, n, reqs, index, flag, status);
}

int MPI_Waitsome(int n, MPI_Request reqs[], int *outcount, int indices[], MPI_Status statuses[]) {
    return some(true, n, reqs, outcount, indices, statuses);
}

int MPI_Testsome(int n, MPI_Request reqs[], int *outcount, int indices[], MPI_Status statuses[]) {
    return some(false, n, reqs, outcount, indices, statuses);
}

int MPI_Start(MPI_Request *req) {
    Pending *p = find(*req);
    if (!p) return PMPI_Start(req);
    InsideLoom inside;
    if (p->active) {
        std::fprintf(stderr, "loom-mpi: MPI_Start: the persistent collective is already active\n");
        PMPI_Comm_call_errhandler(p->comm, MPI_ERR_REQUEST);
        return MPI_ERR_REQUEST;
    }
    const int rc = loom_start(p->req);
    if (rc != LOOM_SUCCESS) return report_error(p->comm, "MPI_Start", rc);
    p->active = true;
    p->finished = false;
    count_call(p->collective, p->bytes, nullptr);
    return MPI_SUCCESS;
}

int MPI_Startall(int n, MPI_Request reqs[]) {
    Mixed m;
    if (!m.split(n, reqs)) return PMPI_Startall(n, reqs);
    /* One by one, in the array's order: collectives start in the same order on every rank. */
    for (int i = 0; i < n; ++i) {
        const int rc = MPI_Start(&reqs[i]);
        if (rc != MPI_SUCCESS) return rc;
    }
    return MPI_SUCCESS;
}

int MPI_Request_free(MPI_Request *req) {
    Pending *p = find(*req);
    if (!p) return PMPI_Request_free(req);
    InsideLoom inside;
    /* An active request is finished first: Loom never leaves a buffer half written. */
    if (p->req && p->active && !p->finished) wait_until_finished(p);
    int rc = p->req ? loom_request_free(&p->req) : LOOM_SUCCESS;
    if (p->status != LOOM_SUCCESS) rc = p->status;
    const MPI_Comm comm = p->comm;
    forget(req, p);
    return rc == LOOM_SUCCESS ? MPI_SUCCESS : report_error(comm, "MPI_Request_free", rc);
}

int MPI_Cancel(MPI_Request *req) {
    Pending *p = find(*req);
    if (!p) return PMPI_Cancel(req);
    /* MPI: cancelling a collective's request is erroneous. */
    std::fprintf(stderr, "loom-mpi: MPI_Cancel: a collective's request cannot be cancelled\n");
    PMPI_Comm_call_errhandler(p->comm, MPI_ERR_REQUEST);
    return MPI_ERR_REQUEST;
}

}  // extern "C"
