/*
 * loom.h - public C API of libloom.
 *
 * Loom runs Allreduce, Reduce_scatter(_block), Allgather and Alltoall over a
 * private duplicate of an MPI communicator. Every collective is nonblocking
 * underneath; the blocking calls are start + wait. See loom(3).
 */
#ifndef LOOM_H
#define LOOM_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_VERSION_MAJOR 0
#define LOOM_VERSION_MINOR 1
#define LOOM_VERSION_PATCH 0

/* Status codes. Every function returns one; loom_strerror() names it and
 * loom_last_error() gives the detailed message of the calling thread's last
 * failure (what was wrong and what to do). */
typedef enum {
    LOOM_SUCCESS = 0,
    LOOM_ERR_INVALID_ARGUMENT = 1,         /* null pointer, bad buffer, bad comm */
    LOOM_ERR_INVALID_COUNT = 2,            /* negative, or too large to address */
    LOOM_ERR_INVALID_DATATYPE = 3,         /* not a loom_datatype_t */
    LOOM_ERR_INVALID_OP = 4,               /* not a loom_op_t, or undefined for the datatype */
    LOOM_ERR_UNKNOWN_ALGORITHM = 5,        /* forced algorithm name does not exist */
    LOOM_ERR_ALGORITHM_NOT_APPLICABLE = 6, /* forced algorithm cannot run this call */
    LOOM_ERR_UNKNOWN_PARAMETER = 7,        /* loom_comm_set_param with an unknown name */
    LOOM_ERR_INVALID_PARAMETER_VALUE = 8,
    LOOM_ERR_TRANSPORT = 9, /* the underlying MPI call failed */
    LOOM_ERR_NO_MEMORY = 10,
    LOOM_ERR_INTERNAL = 11,
    LOOM_ERR_TIMEOUT = 12, /* a collective waited hang_timeout seconds with hang_abort set */
    LOOM_ERR_MISMATCH = 13 /* the ranks called one collective with different counts, types or ops;
                              the communicator is revoked: every later collective on it fails */
} loom_status_t;

/* In C++, the types and ops below are enums over int: any int a C caller
 * passes, an invalid one included (the calls refuse it), is then a value
 * of the type, where a plain enum admits only its enumerators' bit range. */
#ifdef __cplusplus
#define LOOM_ENUM_OVER_INT : int
#else
#define LOOM_ENUM_OVER_INT
#endif

/* Element types: every predefined MPI basic type, plus fp16 and bf16. */
typedef enum LOOM_ENUM_OVER_INT {
    LOOM_INT8,
    LOOM_UINT8,
    LOOM_INT16,
    LOOM_UINT16,
    LOOM_INT32,
    LOOM_UINT32,
    LOOM_INT64,
    LOOM_UINT64,
    LOOM_CHAR,
    LOOM_SIGNED_CHAR,
    LOOM_UNSIGNED_CHAR,
    LOOM_WCHAR,
    LOOM_SHORT,
    LOOM_UNSIGNED_SHORT,
    LOOM_INT,
    LOOM_UNSIGNED,
    LOOM_LONG,
    LOOM_UNSIGNED_LONG,
    LOOM_LONG_LONG,
    LOOM_UNSIGNED_LONG_LONG,
    LOOM_BYTE,
    LOOM_BOOL,
    LOOM_FLOAT16,
    LOOM_BFLOAT16,
    LOOM_FLOAT,
    LOOM_DOUBLE,
    LOOM_LONG_DOUBLE,
    LOOM_C_FLOAT_COMPLEX,
    LOOM_C_DOUBLE_COMPLEX,
    LOOM_C_LONG_DOUBLE_COMPLEX,
    /* value/index pairs for MINLOC and MAXLOC, laid out as MPI defines them */
    LOOM_FLOAT_INT,
    LOOM_DOUBLE_INT,
    LOOM_LONG_INT,
    LOOM_2INT,
    LOOM_SHORT_INT,
    LOOM_LONG_DOUBLE_INT,
    LOOM_DATATYPE_COUNT
} loom_datatype_t;

typedef enum LOOM_ENUM_OVER_INT {
    LOOM_SUM,
    LOOM_PROD,
    LOOM_MIN,
    LOOM_MAX,
    LOOM_LAND,
    LOOM_LOR,
    LOOM_LXOR,
    LOOM_BAND,
    LOOM_BOR,
    LOOM_BXOR,
    LOOM_MINLOC,
    LOOM_MAXLOC,
    LOOM_OP_COUNT
} loom_op_t;

/* Pass as sendbuf for in-place operation (MPI_IN_PLACE is accepted too). */
#define LOOM_IN_PLACE ((const void *)MPI_IN_PLACE)

typedef struct loom_comm *loom_comm_t;
typedef struct loom_request *loom_request_t;

void loom_get_version(int *major, int *minor, int *patch);
const char *loom_strerror(int status);
const char *loom_last_error(void);

/* Communicators. loom_comm_create duplicates `comm` (collective over comm)
 * and reads LOOM_* environment variables; loom_comm_free is collective too. */
int loom_comm_create(MPI_Comm comm, loom_comm_t *out);
int loom_comm_free(loom_comm_t *comm);
int loom_comm_rank(loom_comm_t comm, int *rank);
int loom_comm_size(loom_comm_t comm, int *size);
/* Set a parameter for this communicator, e.g. ("allreduce_algorithm", "ring").
 * Names and defaults: loom-info. Must be set identically on every rank. */
int loom_comm_set_param(loom_comm_t comm, const char *name, const char *value);
/* Chooses the algorithm and builds (caches) the plan for a call without
 * running it; fails exactly as the call would (e.g. a forced algorithm that
 * cannot run it). For persistent collectives, checked at init.
 * `counts` is used by reduce_scatter only; alltoallv and allgatherv are
 * prepared with every block `count` elements, in rank order. */
int loom_comm_prepare(loom_comm_t comm, const char *collective, int64_t count, const int64_t *counts,
                      loom_datatype_t type, int in_place, const char **algorithm);
/* Name of the algorithm the last call of `collective` ran ("allreduce", ...). */
int loom_comm_last_algorithm(loom_comm_t comm, const char *collective, const char **name);

/* A transport supplied by the caller: the coll/loom component posts through
 * Open MPI's PML with it. Functions return 0 on success. Handles are opaque;
 * test_many sets done[i] for each of n handles, and a handle reported done
 * is released by the transport; with n = 0 it only drives the caller's
 * progress engine once (Loom calls it so when it polls shared memory and
 * has nothing else to wait for). Messages between a pair with one tag must
 * match in posting order (MPI's rule). */
#define LOOM_TRANSPORT_VERSION 4 /* 2: version and name fields; isend and irecv take a lane; 3: withdraw; \
                                    4: notify and probe */
typedef struct loom_transport {
    int version;      /* LOOM_TRANSPORT_VERSION; any other value is refused with the reason */
    const char *name; /* what counters call it ("pml"; kept, not copied); NULL: "external" */
    void *context;
    int rank, size;
    uint32_t max_tag;
    /* `lane` is the rail or channel the plan put the message on (0 when it
     * has one); both sides of a message see the same lane. */
    int (*isend)(void *context, const void *buf, size_t bytes, int peer, uint32_t tag, int lane, void **handle);
    int (*irecv)(void *context, void *buf, size_t bytes, int peer, uint32_t tag, int lane, void **handle);
    /* Returns LOOM_ERR_MISMATCH when a message was larger than its receive
     * (the ranks' calls differ), another nonzero value on other errors. */
    int (*test_many)(void *context, void *const *handles, size_t n, unsigned char *done);
    /* Version 3, may be NULL: takes back a posted operation of a call
     * abandoned under hang_abort so its buffer is no longer touched; returns
     * 1 when withdrawn (the handle released), 0 when it finishes by itself. */
    int (*withdraw)(void *context, void *handle, int receive);
    /* Version 4, may be NULL (both or neither): a revoke notice when ranks
     * called a collective with different arguments. notify sends one
     * integer to `peer` on a channel no plan's message uses (above max_tag);
     * probe takes one that has arrived, returning 1 with its sender and
     * value, or returns 0. */
    int (*notify)(void *context, int peer, uint64_t value);
    int (*probe)(void *context, int *peer, uint64_t *value);
} loom_transport_t;
/* Creates a communicator over `transport` (copied; its context must outlive
 * the communicator). No communication. */
int loom_comm_create_with_transport(const loom_transport_t *transport, loom_comm_t *out);

/* Intra-node shared memory for a communicator over a caller's transport (how
 * coll/loom gets it; loom_comm_create does all of this itself). Each rank of
 * a node creates its inbox, named from `key` and `rank`; `local_ranks`
 * (ascending, `rank` included) are the ranks of the communicator on this
 * node, `identity` a value every one of them passes alike. Then it attaches
 * the inbox to the communicator: messages of at most shm_max_bytes to those
 * ranks go through shared memory from then on, each peer's inbox mapped when
 * first sent to (a send waits while the peer's inbox does not exist yet, so
 * every rank of the node must create and attach its inbox). Attaching
 * consumes the inbox and must precede the communicator's first collective;
 * with the shared_memory parameter 0 it only frees the inbox. An inbox's
 * name is removed once every peer has mapped it, or when it is freed. */
typedef struct loom_shm_inbox *loom_shm_inbox_t;
int loom_shm_inbox_create(const char *key, uint64_t identity, int rank, const int *local_ranks, int nlocal,
                          loom_shm_inbox_t *out);
int loom_shm_inbox_free(loom_shm_inbox_t *inbox);
/* The file an inbox's name makes under /dev/shm, into `path` (room bytes),
 * for a launcher that removes a job's files when it ends (coll/loom
 * registers it with PMIx): a rank killed before its peers mapped the inbox
 * leaves the name behind. */
int loom_shm_inbox_path(loom_shm_inbox_t inbox, char *path, size_t room);
int loom_comm_attach_shared_memory(loom_comm_t comm, loom_shm_inbox_t *inbox);

/* Which node each rank of `comm` is on: labels[r] is equal for ranks of one
 * node (any integers); `rails` is the network rails per node. Node-aware
 * algorithms and the selector follow it. loom_comm_create sets it from the
 * machine or the topology parameter; coll/loom from Open MPI's host names.
 * Only before the communicator's first collective. */
int loom_comm_set_nodes(loom_comm_t comm, const int *labels, int nranks, int rails);
/* Parses a topology specification (the topology parameter's syntax) for
 * `nranks` ranks: node labels per rank into `labels` (nranks entries) and the
 * rail count. LOOM_ERR_INVALID_PARAMETER_VALUE with the reason if it does not
 * fit. */
int loom_topology_parse(const char *spec, int nranks, int *labels, int *rails);
/* Where the calling rank sits in `comm`'s node map: its node and the node
 * count, its index among its node's ranks and their count, the rails. */
int loom_comm_node_info(loom_comm_t comm, int *node, int *nodes, int *local, int *local_count, int *rails);
/* The node map as text ("2 nodes: [0 2] [1 3]"); valid until the next call. */
int loom_comm_describe_nodes(loom_comm_t comm, const char **text);

/* The communicator's rails (the UCX transport between nodes): "" when none
 * were asked for or the communicator is on one node; "N rails over UCX:
 * NAME (weight W) ..." once they are up; "off: REASON" when bringing them up
 * failed and the PML or MPI carries messages between nodes instead. With
 * coll/loom they come up at the communicator's first blocking collective.
 * The text stays valid until the next call from this thread. */
int loom_comm_rails_state(loom_comm_t comm, const char **state);

/* The progress thread (parameter progress_thread): "off", "off (REASON)"
 * when auto left it off, or "on: N calls driven by the thread, M by the
 * caller (WHY)": nonblocking and persistent calls whose messages all go
 * through Loom's shared memory are driven by the thread between the
 * caller's calls; the others progress only inside the caller's calls (WHY
 * names the transport). The text stays valid until the next call from this
 * thread. */
int loom_comm_progress_state(loom_comm_t comm, const char **state);

/* What parameter adapt learnt on this communicator: "off", or a line per
 * collective and power-of-two size class with the algorithm chosen, every
 * candidate's time (the slowest rank's median), the calls, explorations and
 * switches. The text stays valid until the next call from this thread. */
int loom_comm_adapt_state(loom_comm_t comm, const char **state);

/* The same choices as a loom-rules(5) document for this communicator's
 * shape (a rules file that fixes what was learnt); LOOM_ERR_INVALID_ARGUMENT
 * when adapt is off. The text stays valid until the next call from this
 * thread. */
int loom_comm_adapt_rules(loom_comm_t comm, const char **rules);

/* The communicator's unfinished collectives, one line each: the collective
 * and its call number, how long it has waited, the ranks of this node that
 * have not entered it, and the ranks whose messages or shared slots it
 * waits for; "idle" when none runs. What parameter hang_timeout prints.
 * The text stays valid until the next call from this thread. */
int loom_comm_state(loom_comm_t comm, const char **state);

/* What carries a communicator's messages. The caller sets `version` to
 * LOOM_TRANSPORT_INFO_VERSION (any other value is refused with the reason).
 * `name` is "shared_memory" when the intra-node path is attached, else the
 * transport that carries everything ("mpi", or a loom_transport_t's name). With shared memory,
 * `node_ranks` is the number of ranks sharing it (this one included) and the
 * two counters the sends each path has carried; otherwise 1, 0 and 0.
 * single_copy_sends: of the shared-memory sends, those the receiver read
 * straight from this process's memory (the single_copy parameter).
 * `transports` lists every transport of the communicator in the order a
 * message tries them, each with its messages and bytes per lane and its own
 * counts; the arrays stay valid until the next call for this communicator. */
#define LOOM_TRANSPORT_INFO_VERSION 2 /* version 2: the version field and the per-transport counters */
typedef struct loom_lane_counters {
    uint64_t sent_messages, sent_bytes;
    uint64_t received_messages, received_bytes;
} loom_lane_counters_t;
typedef struct loom_transport_counters {
    const char *name;
    int lanes;                        /* at least 1 */
    const loom_lane_counters_t *lane; /* by lane */
    int extras;                       /* the transport's own counts ("single_copy_sends", ...) */
    const char *const *extra_name;
    const uint64_t *extra_value;
} loom_transport_counters_t;
typedef struct loom_transport_info {
    int version;
    const char *name;
    int node_ranks;
    uint64_t shared_memory_sends, point_to_point_sends;
    uint64_t single_copy_sends;
    int transports;
    const loom_transport_counters_t *transport;
} loom_transport_info_t;
int loom_comm_transport_info(loom_comm_t comm, loom_transport_info_t *info);

/* The parameter table: names, defaults, levels and help for every knob
 * loom_comm_set_param accepts (what loom-info -p prints). */
int loom_param_count(void);
int loom_param_info(int index, const char **name, const char **default_value, const char **help, int *level);

/* The algorithm registry (what loom-info -a prints): indices 0 to
 * loom_algorithm_count() - 1, grouped by collective, each group in the
 * selector's order of preference. `name` forces the algorithm (parameter
 * "<collective>_algorithm", environment LOOM_<COLLECTIVE>_ALGORITHM);
 * `collective` is the name loom_comm_prepare takes ("allreduce",
 * "reduce_scatter", "reduce_scatter_block", "allgather", "alltoall",
 * "alltoallv", "allgatherv");
 * `restrictions` says in words where it cannot run: "none", or "none (...)"
 * with a remark, when it can run every call. The strings are static. An
 * index out of range is LOOM_ERR_INVALID_ARGUMENT. */
typedef struct loom_algorithm_info {
    const char *name;
    const char *collective;
    const char *description;
    const char *restrictions;
} loom_algorithm_info_t;
int loom_algorithm_count(void);
int loom_algorithm_info(int index, loom_algorithm_info_t *info);
/* The memory algorithm `index` runs on: "host", or "device" (the cuda_ipc
 * algorithms, chosen for calls on device buffers only). */
int loom_algorithm_memory(int index, const char **memory);

/* Map a predefined MPI datatype / op to Loom's; LOOM_ERR_INVALID_DATATYPE or
 * LOOM_ERR_INVALID_OP for derived types and user-defined ops. */
int loom_datatype_from_mpi(MPI_Datatype type, loom_datatype_t *out);
int loom_op_from_mpi(MPI_Op op, loom_op_t *out);
/* The MPI error class an MPI layer returns for a failed Loom collective that
 * it cannot hand to its MPI's own collective, because the other ranks wait
 * inside Loom: LOOM_ERR_INVALID_ARGUMENT -> MPI_ERR_ARG, LOOM_ERR_INVALID_COUNT
 * -> MPI_ERR_COUNT, LOOM_ERR_MISMATCH -> MPI_ERR_TRUNCATE (ranks that called
 * with different counts, as MPI reports a receive too short), LOOM_ERR_TIMEOUT
 * -> MPI_ERR_OTHER (abandoned under hang_abort). 0 for LOOM_SUCCESS and for
 * every status the MPI's own collective may still take over. */
int loom_mpi_error_class(int status);
int loom_datatype_size(loom_datatype_t type, size_t *size);
/* 1 when `op` is defined for `type` (MPI's rules), else 0. */
int loom_op_supported(loom_datatype_t type, loom_op_t op);

/* ---- device memory (CUDA) ----
 * Collectives accept cudaMalloc'd buffers. libloom loads libcuda.so.1 at run
 * time (it links no CUDA library): without a driver, or in a thread with no
 * current CUDA context, every buffer is host memory. Device buffers are
 * staged through pinned host memory by Loom; managed memory is used in place. */
typedef enum { LOOM_MEMORY_HOST = 0, LOOM_MEMORY_CUDA = 1, LOOM_MEMORY_CUDA_MANAGED = 2 } loom_memory_t;
/* Where `ptr` lives, as Loom sees it. */
int loom_memory_type(const void *ptr, loom_memory_t *out);
/* The CUDA driver's state: "libcuda.so.1, driver 13.0", or why there is none. */
const char *loom_cuda_state(void);
/* dst = src (`bytes`), host or device memory on either side; returns when done. */
int loom_memory_copy(void *dst, const void *src, size_t bytes);
/* Device memory through the driver (the current context's device; without
 * one, device 0's primary context is made current): for tests and loom-bench. */
int loom_device_alloc(size_t bytes, void **out);
int loom_device_free(void *ptr);
/* A CUDA stream (cudaStream_t, CUstream) as an opaque pointer, so that
 * loom.h needs no CUDA header; NULL is the legacy default stream. */
typedef void *loom_cuda_stream_t;
/* Stream-ordered forms, NCCL's calling convention: the collective runs after
 * the work enqueued on `stream` before the call, and work enqueued on
 * `stream` after the call sees its result. In this release the call waits
 * for the stream's earlier work and returns once the collective is done (it
 * does not yet hand the host back before). Buffers anywhere; a non-NULL
 * stream without the CUDA driver is LOOM_ERR_INVALID_ARGUMENT. */
int loom_allreduce_on_stream(const void *sendbuf, void *recvbuf, int64_t count, loom_datatype_t type, loom_op_t op,
                             loom_comm_t comm, loom_cuda_stream_t stream);
int loom_reduce_scatter_on_stream(const void *sendbuf, void *recvbuf, const int64_t *recvcounts, loom_datatype_t type,
                                  loom_op_t op, loom_comm_t comm, loom_cuda_stream_t stream);
int loom_reduce_scatter_block_on_stream(const void *sendbuf, void *recvbuf, int64_t recvcount, loom_datatype_t type,
                                        loom_op_t op, loom_comm_t comm, loom_cuda_stream_t stream);
int loom_allgather_on_stream(const void *sendbuf, void *recvbuf, int64_t count, loom_datatype_t type, loom_comm_t comm,
                             loom_cuda_stream_t stream);
int loom_alltoall_on_stream(const void *sendbuf, void *recvbuf, int64_t count, loom_datatype_t type, loom_comm_t comm,
                            loom_cuda_stream_t stream);
int loom_alltoallv_on_stream(const void *sendbuf, const int64_t *sendcounts, const int64_t *sdispls, void *recvbuf,
                             const int64_t *recvcounts, const int64_t *rdispls, loom_datatype_t type, loom_comm_t comm,
                             loom_cuda_stream_t stream);
int loom_allgatherv_on_stream(const void *sendbuf, int64_t sendcount, void *recvbuf, const int64_t *recvcounts,
                              const int64_t *displs, loom_datatype_t type, loom_comm_t comm, loom_cuda_stream_t stream);

/* Calls on device buffers: run on the device (blocking calls with both
 * buffers on the device, every rank on one node: CUDA IPC) or staged
 * through host memory (everything else, and where CUDA IPC cannot run). */
typedef struct loom_staging_info {
    uint64_t device_calls;    /* run on the device through CUDA IPC */
    uint64_t staged_calls;    /* every form; persistent ones counted once, at init */
    uint64_t pipelined_calls; /* blocking allreduces staged chunk by chunk */
    uint64_t staged_bytes;    /* input bytes of the staged blocking and nonblocking calls */
    const char *reason;       /* why the last staged call was staged (valid until the next call) */
} loom_staging_info_t;
int loom_comm_staging_info(loom_comm_t comm, loom_staging_info_t *info);

/* Blocking collectives. Counts are in elements. */
int loom_allreduce(const void *sendbuf, void *recvbuf, int64_t count, loom_datatype_t type, loom_op_t op,
                   loom_comm_t comm);
int loom_reduce_scatter(const void *sendbuf, void *recvbuf, const int64_t *recvcounts, loom_datatype_t type,
                        loom_op_t op, loom_comm_t comm);
int loom_reduce_scatter_block(const void *sendbuf, void *recvbuf, int64_t recvcount, loom_datatype_t type, loom_op_t op,
                              loom_comm_t comm);
int loom_allgather(const void *sendbuf, void *recvbuf, int64_t count, loom_datatype_t type, loom_comm_t comm);
int loom_alltoall(const void *sendbuf, void *recvbuf, int64_t count, loom_datatype_t type, loom_comm_t comm);
/* The vector collectives, in MPI's conventions with one datatype; counts and
 * displacements in elements, one per rank of the communicator.
 * Alltoallv: sendcounts[j] elements at sendbuf + sdispls[j] go to rank j,
 * where they land at recvbuf + rdispls[i] (i the sender), recvcounts[i]
 * elements: the receiver's count must equal the sender's. LOOM_IN_PLACE as
 * sendbuf: the data to send sits in recvbuf, laid out as it is received
 * (sendcounts and sdispls are ignored and may be NULL).
 * Allgatherv: rank i's sendcount elements land at recvbuf + displs[i] on
 * every rank; recvcounts[i] must equal rank i's sendcount on every rank.
 * LOOM_IN_PLACE as sendbuf: each rank's block already sits at its place in
 * recvbuf (sendcount ignored).
 * Blocks a rank receives must not overlap in recvbuf: that is an error,
 * LOOM_ERR_INVALID_ARGUMENT naming the two peers. */
int loom_alltoallv(const void *sendbuf, const int64_t *sendcounts, const int64_t *sdispls, void *recvbuf,
                   const int64_t *recvcounts, const int64_t *rdispls, loom_datatype_t type, loom_comm_t comm);
int loom_allgatherv(const void *sendbuf, int64_t sendcount, void *recvbuf, const int64_t *recvcounts,
                    const int64_t *displs, loom_datatype_t type, loom_comm_t comm);

/* Nonblocking collectives: progress happens inside loom_test/loom_wait. */
int loom_iallreduce(const void *sendbuf, void *recvbuf, int64_t count, loom_datatype_t type, loom_op_t op,
                    loom_comm_t comm, loom_request_t *req);
int loom_ireduce_scatter(const void *sendbuf, void *recvbuf, const int64_t *recvcounts, loom_datatype_t type,
                         loom_op_t op, loom_comm_t comm, loom_request_t *req);
int loom_ireduce_scatter_block(const void *sendbuf, void *recvbuf, int64_t recvcount, loom_datatype_t type,
                               loom_op_t op, loom_comm_t comm, loom_request_t *req);
int loom_iallgather(const void *sendbuf, void *recvbuf, int64_t count, loom_datatype_t type, loom_comm_t comm,
                    loom_request_t *req);
int loom_ialltoall(const void *sendbuf, void *recvbuf, int64_t count, loom_datatype_t type, loom_comm_t comm,
                   loom_request_t *req);
int loom_ialltoallv(const void *sendbuf, const int64_t *sendcounts, const int64_t *sdispls, void *recvbuf,
                    const int64_t *recvcounts, const int64_t *rdispls, loom_datatype_t type, loom_comm_t comm,
                    loom_request_t *req);
int loom_iallgatherv(const void *sendbuf, int64_t sendcount, void *recvbuf, const int64_t *recvcounts,
                     const int64_t *displs, loom_datatype_t type, loom_comm_t comm, loom_request_t *req);

/* Persistent collectives (MPI 4's MPI_Allreduce_init ...): the call is
 * checked and its plan, scratch and bookkeeping made once, here; each
 * loom_start runs it again and allocates nothing. The request starts
 * inactive; loom_test and loom_wait leave it, inactive, for the next start;
 * loom_request_free frees it. Starting an active request is an error. */
int loom_allreduce_init(const void *sendbuf, void *recvbuf, int64_t count, loom_datatype_t type, loom_op_t op,
                        loom_comm_t comm, loom_request_t *req);
int loom_reduce_scatter_init(const void *sendbuf, void *recvbuf, const int64_t *recvcounts, loom_datatype_t type,
                             loom_op_t op, loom_comm_t comm, loom_request_t *req);
int loom_reduce_scatter_block_init(const void *sendbuf, void *recvbuf, int64_t recvcount, loom_datatype_t type,
                                   loom_op_t op, loom_comm_t comm, loom_request_t *req);
int loom_allgather_init(const void *sendbuf, void *recvbuf, int64_t count, loom_datatype_t type, loom_comm_t comm,
                        loom_request_t *req);
int loom_alltoall_init(const void *sendbuf, void *recvbuf, int64_t count, loom_datatype_t type, loom_comm_t comm,
                       loom_request_t *req);
/* The counts and displacements are copied at init: changing the arrays
 * between starts changes nothing (MPI 4 forbids it; Loom runs the call made
 * at init). */
int loom_alltoallv_init(const void *sendbuf, const int64_t *sendcounts, const int64_t *sdispls, void *recvbuf,
                        const int64_t *recvcounts, const int64_t *rdispls, loom_datatype_t type, loom_comm_t comm,
                        loom_request_t *req);
int loom_allgatherv_init(const void *sendbuf, int64_t sendcount, void *recvbuf, const int64_t *recvcounts,
                         const int64_t *displs, loom_datatype_t type, loom_comm_t comm, loom_request_t *req);
int loom_start(loom_request_t req);

/* Requests. test sets *done and frees a nonblocking request when done; wait
 * frees it (a persistent one stays, inactive). loom_request_free on an
 * active request waits for it first (Loom never leaves user buffers half
 * written). */
int loom_test(loom_request_t *req, int *done);
/* As loom_test; once done, *algorithm names the algorithm the call ran (a
 * static string), which a nonblocking alltoallv that learns the other
 * ranks' counts first chooses only after its start. */
int loom_test_algorithm(loom_request_t *req, int *done, const char **algorithm);
int loom_wait(loom_request_t *req);
/* As loom_wait, naming the algorithm the call ran, as loom_test_algorithm. */
int loom_wait_algorithm(loom_request_t *req, const char **algorithm);
int loom_request_free(loom_request_t *req);

#ifdef __cplusplus
}
#endif
#endif /* LOOM_H */
