/*
 * coll/loom component: MCA parameters (declared once in libloom's table,
 * registered here), selection, and statistics printed at MPI_Finalize.
 */
#include "coll_loom.h"

#include <stdio.h>
#include <string.h>

#include "ompi/mca/coll/base/base.h"
#include "opal/mca/base/mca_base_var.h"

static int loom_register(void);
static int loom_close(void);

mca_coll_loom_component_t mca_coll_loom_component = {
    .super =
        {
            .collm_version =
                {
                    MCA_COLL_BASE_VERSION_2_0_0,
                    .mca_component_name = "loom",
                    MCA_BASE_MAKE_VERSION(component, LOOM_VERSION_MAJOR, LOOM_VERSION_MINOR, LOOM_VERSION_PATCH),
                    .mca_close_component = loom_close,
                    .mca_register_component_params = loom_register,
                },
            .collm_data = {MCA_BASE_METADATA_PARAM_CHECKPOINT},
            .collm_init_query = mca_coll_loom_init_query,
            .collm_comm_query = mca_coll_loom_comm_query,
        },
    .priority = 0,
    .verbose = 0,
    .stats = false,
};

static const char *collective_names[COLL_LOOM_NCOLLECTIVES] = {
#define COLL_LOOM_NAME(name, ...) #name,
    COLL_LOOM_COLLECTIVES(COLL_LOOM_NAME)
#undef COLL_LOOM_NAME
};
const char *mca_coll_loom_collective_name(enum coll_loom_collective c) { return collective_names[c]; }

static const char *fallback_reasons[COLL_LOOM_NFALLBACKS] = {
    "datatype not a predefined contiguous type", "user-defined op",
    "op not defined for the datatype",           "send and receive types differ",
    "Loom not set up on this communicator",      "libloom refused the call",
};

/* Process-wide counts; rank 0 of MPI_COMM_WORLD prints them. */
#define COLL_LOOM_MAX_ALGORITHMS 8
uint64_t mca_coll_loom_calls[COLL_LOOM_NCOLLECTIVES], mca_coll_loom_bytes[COLL_LOOM_NCOLLECTIVES];
static struct {
    struct {
        const char *name;
        uint64_t calls;
    } algorithms[COLL_LOOM_MAX_ALGORITHMS];
    uint64_t fallbacks[COLL_LOOM_NFALLBACKS];
} stats[COLL_LOOM_NCOLLECTIVES];

void mca_coll_loom_count_algorithm(enum coll_loom_collective c, const char *algorithm) {
    for (int i = 0; i < COLL_LOOM_MAX_ALGORITHMS; ++i) {
        if (!stats[c].algorithms[i].name) stats[c].algorithms[i].name = algorithm;
        if (stats[c].algorithms[i].name == algorithm || !strcmp(stats[c].algorithms[i].name, algorithm)) {
            stats[c].algorithms[i].calls++;
            return;
        }
    }
}

void mca_coll_loom_count_fallback(enum coll_loom_collective c, enum coll_loom_fallback why) {
    stats[c].fallbacks[why]++;
    if (mca_coll_loom_component.verbose >= 2)
        fprintf(stderr, "coll/loom: %s handed to the previous module: %s\n", collective_names[c],
                fallback_reasons[why]);
}

/* Each line of `text` after `prefix`. */
static void print_lines(const char *prefix, const char *text) {
    while (*text) {
        const char *end = strchr(text, '\n');
        const int len = end ? (int)(end - text) : (int)strlen(text);
        printf("%s%.*s\n", prefix, len, text);
        text += len + (end ? 1 : 0);
    }
}

void mca_coll_loom_print_stats(loom_comm_t world) {
    if (!mca_coll_loom_component.stats) return;
    printf("coll/loom stats (rank 0):\n");
    loom_transport_info_t t;
    t.version = LOOM_TRANSPORT_INFO_VERSION;
    if (world && loom_comm_transport_info(world, &t) == LOOM_SUCCESS) {
        if (!strcmp(t.name, "shared_memory"))
            printf(
                "  MPI_COMM_WORLD transport: shared_memory among %d ranks of this node (%llu sends, %llu by "
                "single copy), point-to-point otherwise (%llu sends)\n",
                t.node_ranks, (unsigned long long)t.shared_memory_sends, (unsigned long long)t.single_copy_sends,
                (unsigned long long)t.point_to_point_sends);
        else printf("  MPI_COMM_WORLD transport: %s (point-to-point only)\n", t.name);
        const char *rails = NULL;
        if (loom_comm_rails_state(world, &rails) == LOOM_SUCCESS && rails && *rails)
            printf("  MPI_COMM_WORLD rails: %s%s\n", rails,
                   !strncmp(rails, "off:", 4) ? " (fell back to the PML between nodes)" : "");
        loom_staging_info_t staging;
        if (loom_comm_staging_info(world, &staging) == LOOM_SUCCESS && staging.staged_calls)
            printf("  MPI_COMM_WORLD device buffers: %llu calls staged (%llu pipelined, %llu bytes): %s\n",
                   (unsigned long long)staging.staged_calls, (unsigned long long)staging.pipelined_calls,
                   (unsigned long long)staging.staged_bytes, staging.reason);
        const char *progress = NULL;
        if (loom_comm_progress_state(world, &progress) == LOOM_SUCCESS && strcmp(progress, "off") != 0)
            printf("  MPI_COMM_WORLD progress thread: %s\n", progress);
        const char *adapt = NULL;
        if (loom_comm_adapt_state(world, &adapt) == LOOM_SUCCESS && strcmp(adapt, "off") != 0)
            print_lines("  MPI_COMM_WORLD adapt: ", adapt);
        /* Every transport in the order messages try them, per lane. */
        for (int i = 0; i < t.transports; ++i) {
            const loom_transport_counters_t *c = &t.transport[i];
            for (int l = 0; l < c->lanes; ++l)
                printf("    %-14s lane %d: sent %llu messages, %llu bytes; received %llu messages, %llu bytes\n",
                       c->name, l, (unsigned long long)c->lane[l].sent_messages,
                       (unsigned long long)c->lane[l].sent_bytes, (unsigned long long)c->lane[l].received_messages,
                       (unsigned long long)c->lane[l].received_bytes);
            if (c->extras > 0) {
                printf("    %-14s", c->name);
                for (int e = 0; e < c->extras; ++e)
                    printf(" %s=%llu", c->extra_name[e], (unsigned long long)c->extra_value[e]);
                printf("\n");
            }
        }
    }
    printf("  %-22s %10s %14s %10s  %s\n", "collective", "calls", "bytes", "fallbacks",
           "algorithms / fallback reasons");
    for (int c = 0; c < COLL_LOOM_NCOLLECTIVES; ++c) {
        uint64_t fallbacks = 0;
        for (int f = 0; f < COLL_LOOM_NFALLBACKS; ++f) fallbacks += stats[c].fallbacks[f];
        printf("  %-22s %10llu %14llu %10llu ", collective_names[c], (unsigned long long)mca_coll_loom_calls[c],
               (unsigned long long)mca_coll_loom_bytes[c], (unsigned long long)fallbacks);
        for (int i = 0; i < COLL_LOOM_MAX_ALGORITHMS && stats[c].algorithms[i].name; ++i)
            printf(" %s=%llu", stats[c].algorithms[i].name, (unsigned long long)stats[c].algorithms[i].calls);
        for (int f = 0; f < COLL_LOOM_NFALLBACKS; ++f)
            if (stats[c].fallbacks[f])
                printf(" [fallback: %s=%llu]", fallback_reasons[f], (unsigned long long)stats[c].fallbacks[f]);
        if (mca_coll_loom_staged_fallbacks((enum coll_loom_collective)c))
            printf(" [device buffers staged for the module below=%llu]",
                   (unsigned long long)mca_coll_loom_staged_fallbacks((enum coll_loom_collective)c));
        printf("\n");
    }
    fflush(stdout);
}

static int loom_register(void) {
    mca_base_component_t *c = &mca_coll_loom_component.super.collm_version;
    mca_coll_loom_component.priority = 0;
    (void)mca_base_component_var_register(
        c, "priority", "Priority of coll/loom (0 = off; 100 puts Loom above tuned and libnbc)", MCA_BASE_VAR_TYPE_INT,
        NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY, &mca_coll_loom_component.priority);
    mca_coll_loom_component.verbose = 0;
    (void)mca_base_component_var_register(c, "verbose",
                                          "0 silent; 1 errors and each algorithm choice once; 2 every call and "
                                          "every fallback with its reason",
                                          MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
                                          MCA_BASE_VAR_SCOPE_READONLY, &mca_coll_loom_component.verbose);
    mca_coll_loom_component.stats = false;
    (void)mca_base_component_var_register(c, "stats",
                                          "At MPI_Finalize rank 0 prints, per collective, calls, bytes, algorithms "
                                          "used and fallbacks with their reasons",
                                          MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_4,
                                          MCA_BASE_VAR_SCOPE_READONLY, &mca_coll_loom_component.stats);
    /* Every libloom parameter (algorithm overrides, segment size, ...) from
     * the one table, as coll_loom_<name>. */
    const int n = loom_param_count();
    mca_coll_loom_component.param_count = n;
    mca_coll_loom_component.param_values = calloc((size_t)n, sizeof(char *));
    mca_coll_loom_component.runtime_count = 0;
    mca_coll_loom_component.runtime_params = calloc((size_t)n, sizeof(int));
    mca_coll_loom_component.runtime_sources = calloc((size_t)n, sizeof(*mca_coll_loom_component.runtime_sources));
    if (!mca_coll_loom_component.param_values || !mca_coll_loom_component.runtime_params ||
        !mca_coll_loom_component.runtime_sources)
        return OMPI_ERR_OUT_OF_RESOURCE;
    for (int i = 0; i < n; ++i) {
        const char *name, *def, *help;
        int level;
        if (loom_param_info(i, &name, &def, &help, &level) != LOOM_SUCCESS) continue;
        if (!strcmp(name, "verbose")) continue; /* coll_loom_verbose above covers it */
        mca_coll_loom_component.param_values[i] = (char *)def;
        /* Writable through MPI_T (MPI_T_cvar_write) unless libloom reads
         * it only when a communicator is set up; a write applies from the
         * next collective call on each communicator. */
        const bool runtime = mca_coll_loom_param_is_runtime(name);
        const int index = mca_base_component_var_register(
            c, name, help, MCA_BASE_VAR_TYPE_STRING, NULL, 0, runtime ? MCA_BASE_VAR_FLAG_SETTABLE : 0,
            (mca_base_var_info_lvl_t)(level - 1), runtime ? MCA_BASE_VAR_SCOPE_ALL : MCA_BASE_VAR_SCOPE_READONLY,
            &mca_coll_loom_component.param_values[i]);
        const mca_base_var_t *var = NULL;
        if (runtime && index >= 0 && mca_base_var_get(index, &var) == OPAL_SUCCESS) {
            const int k = mca_coll_loom_component.runtime_count++;
            mca_coll_loom_component.runtime_params[k] = i;
            mca_coll_loom_component.runtime_sources[k] = &var->mbv_source;
        }
    }
    return OMPI_SUCCESS;
}

static int loom_close(void) {
    mca_coll_loom_progress_fini();
    free(mca_coll_loom_component.param_values);
    mca_coll_loom_component.param_values = NULL;
    free(mca_coll_loom_component.runtime_params);
    free(mca_coll_loom_component.runtime_sources);
    mca_coll_loom_component.runtime_params = NULL;
    mca_coll_loom_component.runtime_sources = NULL;
    mca_coll_loom_component.runtime_count = 0;
    return OMPI_SUCCESS;
}

int mca_coll_loom_init_query(bool enable_progress_threads, bool enable_mpi_threads) {
    (void)enable_progress_threads;
    (void)enable_mpi_threads;
    return OMPI_SUCCESS;
}

mca_coll_base_module_t *mca_coll_loom_comm_query(struct ompi_communicator_t *comm, int *priority) {
    *priority = mca_coll_loom_component.priority;
    if (mca_coll_loom_component.priority <= 0) return NULL;
    /* Intercommunicators stay with Open MPI's modules (never selected, so
     * there is nothing to count per call). */
    if (OMPI_COMM_IS_INTER(comm)) return NULL;
    mca_coll_loom_module_t *m = OBJ_NEW(mca_coll_loom_module_t);
    if (!m) return NULL;
    m->comm = comm;
    m->super.coll_module_enable = mca_coll_loom_module_enable;
#define COLL_LOOM_SLOT(slot) m->super.coll_##slot = mca_coll_loom_##slot;
    COLL_LOOM_SLOTS
#undef COLL_LOOM_SLOT
    return &m->super;
}
