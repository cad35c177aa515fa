/* Bad input through the C API: each case must return the right status code
 * with a message that names the problem, and never crash or hang. */
#include <loom.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, failures, cases;

static void expect(int got, int want, const char *needle, const char *what) {
    ++cases;
    const char *msg = loom_last_error();
    if (got != want || (needle && !strstr(msg, needle))) {
        ++failures;
        fprintf(stderr, "[rank %d] FAIL %s: got %s (%d) \"%s\", want %s%s%s\n", rank, what, loom_strerror(got), got,
                msg, loom_strerror(want), needle ? " mentioning " : "", needle ? needle : "");
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    loom_comm_t comm = NULL;
    int buf[64] = {0}, out[64 * 8] = {0};

    /* A bad LOOM_* variable is reported by loom_comm_create. */
    setenv("LOOM_ALLREDUCE_ALGORITHM", "no_such_algorithm", 1);
    expect(loom_comm_create(MPI_COMM_WORLD, &comm), LOOM_ERR_UNKNOWN_ALGORITHM, "LOOM_ALLREDUCE_ALGORITHM",
           "env with unknown algorithm");
    unsetenv("LOOM_ALLREDUCE_ALGORITHM");
    setenv("LOOM_PROGRESS_THREAD", "sometimes", 1);
    expect(loom_comm_create(MPI_COMM_WORLD, &comm), LOOM_ERR_INVALID_PARAMETER_VALUE, "LOOM_PROGRESS_THREAD",
           "env with an unknown progress_thread value");
    unsetenv("LOOM_PROGRESS_THREAD");
    expect(loom_comm_create(MPI_COMM_NULL, &comm), LOOM_ERR_INVALID_ARGUMENT, "MPI_COMM_NULL", "null communicator");
    expect(loom_comm_create(MPI_COMM_WORLD, NULL), LOOM_ERR_INVALID_ARGUMENT, "NULL", "null out pointer");
    if (loom_comm_create(MPI_COMM_WORLD, &comm) != LOOM_SUCCESS) {
        fprintf(stderr, "cannot create a communicator: %s\n", loom_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    expect(loom_allreduce(NULL, out, 4, LOOM_INT, LOOM_SUM, comm), LOOM_ERR_INVALID_ARGUMENT, "sendbuf",
           "null sendbuf");
    expect(loom_allreduce(buf, NULL, 4, LOOM_INT, LOOM_SUM, comm), LOOM_ERR_INVALID_ARGUMENT, "recvbuf",
           "null recvbuf");
    /* A transport info of the first layout (no version) is refused, naming the fix. */
    loom_transport_info_t info;
    memset(&info, 0, sizeof info);
    expect(loom_comm_transport_info(comm, &info), LOOM_ERR_INVALID_ARGUMENT, "LOOM_TRANSPORT_INFO_VERSION",
           "transport info without a version");
    info.version = LOOM_TRANSPORT_INFO_VERSION;
    expect(loom_comm_transport_info(comm, &info), LOOM_SUCCESS, NULL, "transport info of this version");
    /* The progress thread: its values named when one is wrong; its state needs somewhere to go. */
    expect(loom_comm_set_param(comm, "progress_thread", "yes"), LOOM_ERR_INVALID_PARAMETER_VALUE, "off,on,auto",
           "progress_thread = yes");
    const char *state = NULL;
    expect(loom_comm_progress_state(comm, NULL), LOOM_ERR_INVALID_ARGUMENT, "state is NULL",
           "progress state into NULL");
    expect(loom_comm_progress_state(NULL, &state), LOOM_ERR_INVALID_ARGUMENT, NULL, "progress state of no communicator");
    expect(loom_comm_progress_state(comm, &state), LOOM_SUCCESS, NULL, "progress state");
    if (state && strcmp(state, "off") != 0) expect(1, 0, NULL, "progress state is off by default");
    expect(loom_allreduce(buf, buf, 4, LOOM_INT, LOOM_SUM, comm), LOOM_ERR_INVALID_ARGUMENT, "LOOM_IN_PLACE",
           "aliased buffers without in-place");
    expect(loom_allreduce(buf, out, -1, LOOM_INT, LOOM_SUM, comm), LOOM_ERR_INVALID_COUNT, "negative",
           "negative count");
    expect(loom_allreduce(buf, out, INT64_MAX / 2, LOOM_INT, LOOM_SUM, comm), LOOM_ERR_INVALID_COUNT, "too large",
           "huge count");
    expect(loom_allgather(buf, out, INT64_MAX / 4, LOOM_DOUBLE, comm), LOOM_ERR_INVALID_COUNT, "too large",
           "huge allgather count");
    expect(loom_allreduce(buf, out, 4, (loom_datatype_t)999, LOOM_SUM, comm), LOOM_ERR_INVALID_DATATYPE, "999",
           "unknown datatype");
    expect(loom_allreduce(buf, out, 4, LOOM_INT, (loom_op_t)77, comm), LOOM_ERR_INVALID_OP, "77", "unknown op");
    expect(loom_allreduce(buf, out, 4, LOOM_C_FLOAT_COMPLEX, LOOM_MIN, comm), LOOM_ERR_INVALID_OP, "float_complex",
           "op undefined for type");
    expect(loom_allreduce(buf, out, 4, LOOM_INT, LOOM_SUM, NULL), LOOM_ERR_INVALID_ARGUMENT, "NULL", "null comm");
    expect(loom_reduce_scatter(buf, out, NULL, LOOM_INT, LOOM_SUM, comm), LOOM_ERR_INVALID_ARGUMENT, "recvcounts",
           "null recvcounts");
    int64_t bad_counts[64];
    for (int i = 0; i < 64; ++i) bad_counts[i] = 1;
    bad_counts[size - 1] = -5;
    expect(loom_reduce_scatter(buf, out, bad_counts, LOOM_INT, LOOM_SUM, comm), LOOM_ERR_INVALID_COUNT, "recvcounts[",
           "negative recvcount");
    /* One entry past 2^60 bytes, and (two or more ranks) entries each
     * within it whose sum is not. */
    bad_counts[size - 1] = (int64_t)1 << 59;
    expect(loom_reduce_scatter(buf, out, bad_counts, LOOM_INT, LOOM_SUM, comm), LOOM_ERR_INVALID_COUNT, "recvcounts[",
           "huge recvcount");
    for (int i = 0; i < size && i < 64; ++i) bad_counts[i] = ((int64_t)1 << 58) / 3 * 2;
    if (size >= 2)
        expect(loom_reduce_scatter(buf, out, bad_counts, LOOM_INT, LOOM_SUM, comm), LOOM_ERR_INVALID_COUNT,
               "sum of recvcounts", "huge sum of recvcounts");
    expect(loom_allreduce(buf, out, ((int64_t)1 << 58) + 1, LOOM_INT, LOOM_SUM, comm), LOOM_ERR_INVALID_COUNT,
           "too large", "count just past 2^60 bytes");
    expect(loom_comm_set_param(comm, "allreduce_algorithm", "bogus"), LOOM_ERR_UNKNOWN_ALGORITHM, "bogus",
           "set unknown algorithm");
    /* The registry through the API: an index out of range names the valid
     * range; every entry is complete, its collective one the calls take,
     * and an unknown name's error lists it among its collective's. */
    loom_algorithm_info_t algo;
    const int nalgorithms = loom_algorithm_count();
    char range[64], param[64], what[128];
    snprintf(range, sizeof range, "[0, %d)", nalgorithms);
    expect(loom_algorithm_info(-1, &algo), LOOM_ERR_INVALID_ARGUMENT, range, "algorithm index -1");
    expect(loom_algorithm_info(nalgorithms, &algo), LOOM_ERR_INVALID_ARGUMENT, range, "algorithm index past the end");
    expect(loom_algorithm_info(0, NULL), LOOM_ERR_INVALID_ARGUMENT, "NULL", "algorithm info NULL");
    for (int i = 0; i < nalgorithms; ++i) {
        const char *used = NULL;
        snprintf(what, sizeof what, "loom_algorithm_info(%d)", i);
        memset(&algo, 0, sizeof algo);
        expect(loom_algorithm_info(i, &algo), LOOM_SUCCESS, NULL, what);
        ++cases;
        if (!algo.name || !*algo.name || !algo.collective || !algo.description || !*algo.description ||
            !algo.restrictions || !*algo.restrictions || loom_comm_last_algorithm(comm, algo.collective, &used)) {
            ++failures;
            fprintf(stderr, "[rank %d] FAIL: %s gave an empty field or an unknown collective '%s': %s\n", rank, what,
                    algo.collective ? algo.collective : "(null)", loom_last_error());
            continue;
        }
        snprintf(param, sizeof param, "%s_algorithm", algo.collective);
        snprintf(what, sizeof what, "error for an unknown %s lists %s", param, algo.name);
        expect(loom_comm_set_param(comm, param, "bogus"), LOOM_ERR_UNKNOWN_ALGORITHM, algo.name, what);
    }
    expect(loom_comm_set_param(comm, "no_such_param", "1"), LOOM_ERR_UNKNOWN_PARAMETER, "no_such_param",
           "unknown parameter");
    expect(loom_comm_set_param(comm, "segment_size", "-3"), LOOM_ERR_INVALID_PARAMETER_VALUE, "segment_size",
           "bad parameter value");
    expect(loom_iallreduce(buf, out, 4, LOOM_INT, LOOM_SUM, comm, NULL), LOOM_ERR_INVALID_ARGUMENT, "request",
           "null request pointer");
    expect(loom_wait(NULL), LOOM_ERR_INVALID_ARGUMENT, "NULL", "wait on null");
    int done;
    expect(loom_test(NULL, &done), LOOM_ERR_INVALID_ARGUMENT, "NULL", "test on null");
    /* Persistent requests: start on null, on a nonblocking request, on an active one. */
    expect(loom_start(NULL), LOOM_ERR_INVALID_ARGUMENT, "NULL", "start on null");
    expect(loom_allreduce_init(buf, out, 4, LOOM_INT, LOOM_SUM, comm, NULL), LOOM_ERR_INVALID_ARGUMENT, "request",
           "persistent init with a null request pointer");
    {
        loom_request_t nb = NULL, pr = NULL;
        expect(loom_iallreduce(buf, out, 4, LOOM_INT, LOOM_SUM, comm, &nb), LOOM_SUCCESS, NULL, "iallreduce");
        expect(loom_start(nb), LOOM_ERR_INVALID_ARGUMENT, "not a persistent request", "start on a nonblocking request");
        expect(loom_wait(&nb), LOOM_SUCCESS, NULL, "wait for the nonblocking request");
        expect(loom_allreduce_init(buf, out, 4, LOOM_INT, LOOM_SUM, comm, &pr), LOOM_SUCCESS, NULL, "allreduce_init");
        expect(loom_wait(&pr), LOOM_SUCCESS, NULL, "wait on an inactive persistent request");
        expect(pr != NULL, 1, NULL, "a persistent request outlives its wait");
        expect(loom_start(pr), LOOM_SUCCESS, NULL, "start");
        expect(loom_start(pr), LOOM_ERR_INVALID_ARGUMENT, "still active", "start on an active request");
        expect(loom_request_free(&pr), LOOM_SUCCESS, NULL, "free an active persistent request (waits first)");
    }

    /* A forced algorithm that cannot run this size: an error on every rank, no hang. */
    if (size > 1 && (size & (size - 1)) != 0) {
        expect(loom_comm_set_param(comm, "allgather_algorithm", "recursive_doubling"), LOOM_SUCCESS, NULL,
               "force restricted algorithm");
        expect(loom_allgather(buf, out, 1, LOOM_INT, comm), LOOM_ERR_ALGORITHM_NOT_APPLICABLE, "power-of-two",
               "inapplicable forced algorithm");
        loom_comm_set_param(comm, "allgather_algorithm", "auto");
    }
    /* After all of this the communicator still works. */
    for (int i = 0; i < 4; ++i) buf[i] = rank + 1;
    expect(loom_allreduce(buf, out, 4, LOOM_INT, LOOM_SUM, comm), LOOM_SUCCESS, NULL, "valid call after errors");
    ++cases;
    if (out[3] != size * (size + 1) / 2) {
        ++failures;
        fprintf(stderr, "[rank %d] FAIL: allreduce after errors gave %d\n", rank, out[3]);
    }
    /* Shared-memory inboxes: bad node groups and keys are refused before
     * anything is created in /dev/shm, and a topology that does not fit. */
    loom_shm_inbox_t inbox = NULL;
    const int unsorted[] = {2, 0}, without_me[] = {5, 6}, ok_group[] = {0, 1};
    expect(loom_shm_inbox_create("k", 1, 0, unsorted, 2, &inbox), LOOM_ERR_INVALID_ARGUMENT, "ascending",
           "inbox for an unsorted node group");
    expect(loom_shm_inbox_create("k", 1, 0, without_me, 2, &inbox), LOOM_ERR_INVALID_ARGUMENT, "include rank 0",
           "inbox for a node group without the rank");
    expect(loom_shm_inbox_create("a/b", 1, 0, ok_group, 2, &inbox), LOOM_ERR_INVALID_ARGUMENT, "without '/'",
           "inbox key with a slash");
    expect(loom_shm_inbox_create("k", 1, 0, ok_group, 1, &inbox), LOOM_ERR_INVALID_ARGUMENT, "at least 2",
           "inbox for a one-rank group");
    int labels[8] = {0}, rails = 0;
    expect(loom_topology_parse("nodes=9", 4, labels, &rails), LOOM_ERR_INVALID_PARAMETER_VALUE, "leaves a node empty",
           "topology with more nodes than ranks");
    expect(loom_topology_parse("0,1", 3, labels, &rails), LOOM_ERR_INVALID_PARAMETER_VALUE, "2 node labels for 3",
           "topology label count");
    expect(loom_comm_set_nodes(comm, labels, size + 1, 1), LOOM_ERR_INVALID_ARGUMENT, "ranks on a communicator of",
           "node map of the wrong size");
    expect(loom_comm_set_nodes(comm, labels, size, 1), LOOM_ERR_INVALID_ARGUMENT, "before the communicator's first",
           "node map after collectives ran");

    /* The vector collectives: every rank passes the same bad arguments, so
     * every rank fails at once, naming the array and entry. */
    int64_t ones[64], zeros[64], along[64], wide[64];
    for (int i = 0; i < 64; ++i) ones[i] = 1, zeros[i] = 0, along[i] = i, wide[i] = 2 * i;
    expect(loom_alltoallv(buf, ones, along, out, NULL, along, LOOM_INT, comm), LOOM_ERR_INVALID_ARGUMENT,
           "recvcounts is NULL", "alltoallv null recvcounts");
    expect(loom_alltoallv(buf, ones, NULL, out, ones, along, LOOM_INT, comm), LOOM_ERR_INVALID_ARGUMENT,
           "sdispls is NULL", "alltoallv null sdispls");
    bad_counts[size - 1] = -2;
    for (int i = 0; i < size - 1; ++i) bad_counts[i] = 1;
    expect(loom_alltoallv(buf, bad_counts, along, out, ones, along, LOOM_INT, comm), LOOM_ERR_INVALID_COUNT,
           "sendcounts[", "alltoallv negative sendcount");
    along[size - 1] = -1;
    expect(loom_alltoallv(buf, ones, wide, out, ones, along, LOOM_INT, comm), LOOM_ERR_INVALID_ARGUMENT, "rdispls[",
           "alltoallv negative rdispl");
    along[size - 1] = size - 1;
    if (size >= 2)
        expect(loom_alltoallv(buf, ones, along, out, ones, zeros, LOOM_INT, comm), LOOM_ERR_INVALID_ARGUMENT,
               "overlap in recvbuf", "alltoallv receive blocks overlapping");
    int64_t single[64];
    for (int i = 0; i < 64; ++i) single[i] = 1;
    ones[rank] = 3;
    expect(loom_alltoallv(buf, ones, wide, out, single, wide, LOOM_INT, comm), LOOM_ERR_INVALID_COUNT, "sends itself",
           "alltoallv sendcounts[rank] differing from recvcounts[rank]");
    ones[rank] = 1;
    expect(loom_allgatherv(buf, 2, out, ones, along, LOOM_INT, comm), LOOM_ERR_INVALID_COUNT, "sendcount = 2",
           "allgatherv sendcount differing from recvcounts[rank]");
    expect(loom_allgatherv(buf, 1, out, ones, NULL, LOOM_INT, comm), LOOM_ERR_INVALID_ARGUMENT, "displs is NULL",
           "allgatherv null displs");
    if (size >= 2)
        expect(loom_allgatherv(buf, 1, out, ones, zeros, LOOM_INT, comm), LOOM_ERR_INVALID_ARGUMENT,
               "overlap in recvbuf", "allgatherv receive blocks overlapping");
    /* check_vector_counts: counts that disagree between ranks (which only an
     * exchange can see) fail on every rank, naming the rank and its peer; a
     * bad argument on one rank fails the others too instead of leaving them
     * waiting; and the communicator works on. */
    expect(loom_comm_set_param(comm, "check_vector_counts", "1"), LOOM_SUCCESS, NULL, "check_vector_counts on");
    int64_t expects[64];
    for (int i = 0; i < 64; ++i) expects[i] = 1;
    if (size >= 2) {
        if (rank == 0) expects[1] = 2; /* rank 1 sends 1 */
        expect(loom_alltoallv(buf, ones, along, out, expects, wide, LOOM_INT, comm), LOOM_ERR_MISMATCH,
               rank == 0 ? "rank 0 expects recvcounts[1] = 2 elements from rank 1, which sends it 1"
                         : "rank 0 expects recvcounts[1] elements from rank 1",
               "alltoallv counts disagreeing between sender and receiver (check_vector_counts)");
        expects[1] = 1;
        if (rank == 1) expects[0] = 2;
        expect(loom_allgatherv(buf, 1, out, expects, wide, LOOM_INT, comm), LOOM_ERR_MISMATCH,
               rank == 0 ? "rank 0 has recvcounts[0] = 1 where another rank has 2"
                         : "rank 0 has recvcounts[0] where another rank has 2",
               "allgatherv recvcounts differing between ranks (check_vector_counts)");
        expects[0] = 1;
        if (rank == size - 1) expects[0] = -1;
        expect(loom_alltoallv(buf, ones, along, out, expects, wide, LOOM_INT, comm),
               rank == size - 1 ? LOOM_ERR_INVALID_COUNT : LOOM_ERR_MISMATCH,
               rank == size - 1 ? "recvcounts[0] is negative" : "passed invalid arguments",
               "alltoallv with a bad count on one rank (check_vector_counts)");
        expects[0] = 1;
    }
    for (int i = 0; i < 64; ++i) buf[i] = rank * 100 + i;
    for (int i = 0; i < 64 * 8; ++i) out[i] = -1;
    expect(loom_alltoallv(buf, ones, along, out, ones, wide, LOOM_INT, comm), LOOM_SUCCESS, NULL,
           "alltoallv after the failed checks");
    for (int i = 0; i < size; ++i)
        if (out[wide[i]] != i * 100 + rank) {
            ++failures;
            fprintf(stderr, "[rank %d] FAIL: alltoallv after the checks: block %d is %d, want %d\n", rank, i,
                    out[wide[i]], i * 100 + rank);
        }
    expect(loom_comm_set_param(comm, "check_vector_counts", "0"), LOOM_SUCCESS, NULL, "check_vector_counts off");

    expect(loom_comm_free(&comm), LOOM_SUCCESS, NULL, "free");
    expect(loom_comm_free(&comm), LOOM_ERR_INVALID_ARGUMENT, "NULL", "double free is an error, not a crash");

    /* The error classes an MPI layer returns for calls it cannot hand down
     * (coll/loom and libloom-mpi), and 0 for the ones it can. */
    const struct {
        int status, mpi_class;
    } classes[] = {{LOOM_SUCCESS, 0},
                   {LOOM_ERR_INVALID_ARGUMENT, MPI_ERR_ARG},
                   {LOOM_ERR_INVALID_COUNT, MPI_ERR_COUNT},
                   {LOOM_ERR_MISMATCH, MPI_ERR_TRUNCATE},
                   {LOOM_ERR_TIMEOUT, MPI_ERR_OTHER},
                   {LOOM_ERR_INVALID_DATATYPE, 0},
                   {LOOM_ERR_INVALID_OP, 0},
                   {LOOM_ERR_ALGORITHM_NOT_APPLICABLE, 0},
                   {LOOM_ERR_TRANSPORT, 0},
                   {LOOM_ERR_NO_MEMORY, 0}};
    for (size_t i = 0; i < sizeof classes / sizeof classes[0]; ++i) {
        ++cases;
        const int got = loom_mpi_error_class(classes[i].status);
        if (got != classes[i].mpi_class) {
            ++failures;
            fprintf(stderr, "[rank %d] FAIL loom_mpi_error_class(%s) = %d, want %d\n", rank,
                    loom_strerror(classes[i].status), got, classes[i].mpi_class);
        }
    }

    /* Fortran's predefined types map to a Loom type of the size the MPI
     * reports (where the MPI has them: a size of 0 means it was built
     * without that Fortran type); MPI_LOGICAL is refused. */
    const MPI_Datatype fortran[] = {MPI_INTEGER,          MPI_INTEGER1,  MPI_INTEGER2,  MPI_INTEGER4,
                                    MPI_INTEGER8,         MPI_REAL,      MPI_REAL4,     MPI_REAL8,
                                    MPI_COMPLEX,          MPI_COMPLEX8,  MPI_COMPLEX16, MPI_DOUBLE_COMPLEX,
                                    MPI_DOUBLE_PRECISION, MPI_CHARACTER, MPI_2INTEGER};
    for (size_t i = 0; i < sizeof fortran / sizeof fortran[0]; ++i) {
        int mpi_size = 0;
        if (fortran[i] == MPI_DATATYPE_NULL || MPI_Type_size(fortran[i], &mpi_size) != MPI_SUCCESS || mpi_size == 0)
            continue;
        ++cases;
        loom_datatype_t t;
        size_t loom_size = 0;
        if (loom_datatype_from_mpi(fortran[i], &t) != LOOM_SUCCESS ||
            loom_datatype_size(t, &loom_size) != LOOM_SUCCESS || loom_size != (size_t)mpi_size) {
            ++failures;
            fprintf(stderr,
                    "[rank %d] FAIL Fortran datatype %zu of the list (%d bytes): not mapped to a type of its size\n",
                    rank, i, mpi_size);
        }
    }
    loom_datatype_t logical;
    expect(loom_datatype_from_mpi(MPI_LOGICAL, &logical), LOOM_ERR_INVALID_DATATYPE, "predefined basic type",
           "MPI_LOGICAL is handed to the MPI");

    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("test_mpi_errors np=%d: %d cases per rank, %d failures\n", size, cases, total);
    MPI_Finalize();
    return total ? 1 : 0;
}
