/*
 * libloom-mpi: Loom under any MPI through the profiling interface. The
 * library defines MPI_Allreduce, MPI_Reduce_scatter(_block),
 * MPI_Allgather(v), MPI_Alltoall(v), their nonblocking and persistent forms,
 * and the request calls that complete them; everything else, and every call
 * Loom cannot take, goes to the MPI's own PMPI_ entry. Loaded with
 * LD_PRELOAD or linked before the MPI library. See loom-mpi(7).
 */
#ifndef LOOM_PMPI_LOOM_MPI_HPP
#define LOOM_PMPI_LOOM_MPI_HPP

#include <mpi.h>

#include <cstdint>

#include "loom.h"

namespace loom_mpi {

/* The library is loaded at start-up (preloaded or linked), so its
 * thread-local state can sit in the static TLS block, which every call
 * reaches without __tls_get_addr (about 120 instructions a call). */
#define LOOM_MPI_THREAD_LOCAL thread_local __attribute__((tls_model("initial-exec")))

/* Loom's own MPI calls (made while one of ours runs on this thread) go
 * straight to PMPI_: libloom calls MPI_Allreduce, MPI_Testsome and others. */
extern LOOM_MPI_THREAD_LOCAL int inside_loom;
struct InsideLoom {
    InsideLoom() { ++inside_loom; }
    ~InsideLoom() { --inside_loom; }
    InsideLoom(const InsideLoom &) = delete;
    InsideLoom &operator=(const InsideLoom &) = delete;
};

enum Collective {
    ALLREDUCE,
    REDUCE_SCATTER,
    REDUCE_SCATTER_BLOCK,
    ALLGATHER,
    ALLTOALL,
    ALLTOALLV,
    ALLGATHERV,
    NCOLLECTIVES
};
const char *collective_name(Collective c); /* libloom's name: "allreduce", ... */
const char *mpi_name(Collective c);        /* "MPI_Allreduce", ... */

/* Why a call went to the MPI's own collective. */
enum HandDown {
    HAND_DOWN_NOT_SET_UP, /* an intercommunicator, or Loom could not be set up on it */
    HAND_DOWN_DATATYPE,   /* not a predefined basic type */
    HAND_DOWN_OP,         /* user-defined op */
    HAND_DOWN_TYPE_OP,    /* op not defined for the datatype */
    HAND_DOWN_MISMATCHED, /* send and receive counts or types differ */
    HAND_DOWN_REFUSED,    /* libloom refused the call (e.g. a forced algorithm cannot run it) */
    NHAND_DOWNS
};

/* The Loom communicator of an MPI intracommunicator, made (collectively) at
 * the first collective the library sees on it and freed with it (a
 * communicator attribute's delete callback); null where Loom cannot run. */
loom_comm_t loom_comm_of(MPI_Comm comm);

/* Statistics (printed by rank 0 of MPI_COMM_WORLD at MPI_Finalize when
 * LOOM_MPI_STATS is set). */
/* A call and its bytes; with `comm`, a blocking call's algorithm (the
 * communicator's last). A nonblocking or persistent call's algorithm is
 * counted once done (count_algorithm): an alltoallv that learns the counts
 * first chooses it after its start. */
void count_call(Collective c, uint64_t bytes, loom_comm_t comm);
void count_algorithm(Collective c, const char *algorithm);
void count_hand_down(Collective c, HandDown why);

/* A Loom request behind an MPI_Request handle that the MPI made (an inactive
 * persistent send to MPI_PROC_NULL: unique and valid), so the handle can
 * sit in the program's arrays beside the MPI's own requests. */
int register_request(loom_request_t req, bool persistent, MPI_Comm comm, MPI_Request *handle, Collective c,
                     uint64_t bytes);

/* Reports a failed Loom call on comm (loom_last_error on stderr where the
 * handler is fatal) through its error handler; returns the class. */
int report_error(MPI_Comm comm, const char *what, int loom_status);
/* The same for an error found here, with its class and message. */
int report(MPI_Comm comm, const char *what, int error_class, const char *message);

}  // namespace loom_mpi

#endif
