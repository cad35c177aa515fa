/*
 * coll/loom module: one per communicator. Enable saves the functions of the
 * module below (the fallback) and sets Loom up on the communicator; the
 * slots themselves (coll_loom_collectives.c) convert MPI arguments to
 * libloom's, or fall back with a counted reason when libloom cannot do the call.
 */
#include "coll_loom.h"

#include <stdio.h>
#include <stdlib.h>

#include "opal/runtime/opal_progress.h"
#include "opal/util/info.h"

static void module_construct(mca_coll_loom_module_t *m) {
    m->comm = NULL;
    m->loom = NULL;
    m->shm_inbox = NULL;
    m->node_labels = NULL;
    m->counts64 = NULL;
    m->applied = NULL; /* OBJ_NEW does not zero: destruct frees it even when set_up never ran */
    m->calls_unsynced = 0;
    m->known_dtype = NULL;
    m->pair_dtype = NULL;
    m->pair_op = NULL;
    m->rails = 1;
    m->state = COLL_LOOM_PENDING;
    m->previous_saved = false;
    m->context_kept = false;
    memset(&m->previous, 0, sizeof(m->previous));
}

static void release_previous(mca_coll_loom_module_t *m) {
    mca_coll_base_module_t **slots[] = {
#define COLL_LOOM_SLOT(slot) &m->previous.slot##_module,
        COLL_LOOM_SLOTS
#undef COLL_LOOM_SLOT
    };
    for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); ++i)
        if (*slots[i]) {
            OBJ_RELEASE(*slots[i]);
            *slots[i] = NULL;
        }
    m->previous_saved = false;
}

static void module_destruct(mca_coll_loom_module_t *m) {
    if (m->comm == &ompi_mpi_comm_world.comm && ompi_comm_rank(m->comm) == 0) mca_coll_loom_print_stats(m->loom);
    if (m->loom) loom_comm_free(&m->loom);
    if (m->shm_inbox) loom_shm_inbox_free(&m->shm_inbox);
    free(m->node_labels);
    free(m->counts64);
    if (m->applied)
        for (int i = 0; i < mca_coll_loom_component.param_count; ++i) free(m->applied[i]);
    free(m->applied);
    release_previous(m);
}

OBJ_CLASS_INSTANCE(mca_coll_loom_module_t, mca_coll_base_module_t, module_construct, module_destruct);

bool mca_coll_loom_param_is_runtime(const char *name) {
    /* Read when the communicator is set up (inboxes, node map), so fixed after. */
    static const char *const at_setup[] = {
        "shared_memory",    "shm_max_bytes",   "single_copy",   "single_copy_min_bytes", "topology",
        "verbose",          "rails",           "ucx_tls",       "rail_weights",          "rail_stripe_min_bytes",
        "rail_probe_bytes", "rail_timeout_ms", "rail_stall_ms", "rail_min_bytes",        "rail_refresh_calls",
        "progress_thread"};
    for (size_t i = 0; i < sizeof at_setup / sizeof at_setup[0]; ++i)
        if (!strcmp(name, at_setup[i])) return false;
    return true;
}

void mca_coll_loom_sync_params(mca_coll_loom_module_t *m) {
    if (!m->applied) return;
    /* Only an MPI_T write gives a variable the source SET: until then one
     * load per parameter, independent of each other, instead of a strcmp,
     * which was a large share of a small call (docs/design.md,
     * "Measurements behind code choices"). */
    const int n = mca_coll_loom_component.runtime_count;
    const mca_base_var_source_t *const *sources = mca_coll_loom_component.runtime_sources;
    int written = 0;
    for (int k = 0; k < n; ++k) written |= *sources[k] == MCA_BASE_VAR_SOURCE_SET;
    if (!written) return;
    for (int k = 0; k < n; ++k) {
        /* Compared by content: Open MPI frees the old string and the new
         * one may land at the same address. */
        const int i = mca_coll_loom_component.runtime_params[k];
        if (*sources[k] != MCA_BASE_VAR_SOURCE_SET || !m->applied[i]) continue;
        /* Open MPI stores an empty string as NULL. */
        const char *now = mca_coll_loom_component.param_values[i] ? mca_coll_loom_component.param_values[i] : "";
        if (!strcmp(now, m->applied[i])) continue;
        const char *name;
        if (loom_param_info(i, &name, NULL, NULL, NULL) != LOOM_SUCCESS) continue;
        if (loom_comm_set_param(m->loom, name, now) != LOOM_SUCCESS) {
            if (ompi_comm_rank(m->comm) == 0)
                fprintf(stderr, "coll/loom: coll_loom_%s = '%s' set through MPI_T: %s; keeping '%s'\n", name, now,
                        loom_last_error(), m->applied[i]);
        }
        /* Remembered either way, so a bad value is reported once. */
        char *copy = strdup(now);
        if (copy) {
            free(m->applied[i]);
            m->applied[i] = copy;
        }
    }
}

#define SAVE_PREVIOUS(m, comm, slot)                                              \
    do {                                                                          \
        (m)->previous.slot = (comm)->c_coll->coll_##slot;                         \
        (m)->previous.slot##_module = (comm)->c_coll->coll_##slot##_module;       \
        if ((m)->previous.slot##_module) OBJ_RETAIN((m)->previous.slot##_module); \
    } while (0)

/* Everything Loom needs on this communicator, made without communication
 * (enable may run inside a progress callback): the node map, this rank's
 * shared-memory inbox (peers' inboxes are mapped when first sent to), and
 * the libloom communicator, whose messages travel on `comm` itself with
 * tags in a range no other component of this Open MPI uses. Every rank
 * decides alike, so a collective never runs as Loom on some ranks and as
 * the module below on others. */
/* The MCA value of libloom parameter `wanted`, or NULL when it was left unset. */
static const char *component_value(const char *wanted) {
    for (int i = 0; i < mca_coll_loom_component.param_count; ++i) {
        const char *name;
        if (loom_param_info(i, &name, NULL, NULL, NULL) == LOOM_SUCCESS && !strcmp(name, wanted))
            return mca_coll_loom_component.param_values[i];
    }
    return NULL;
}

static bool set_up(mca_coll_loom_module_t *m, struct ompi_communicator_t *comm) {
    m->counts64 = malloc(sizeof(int64_t) * 4 * (size_t)ompi_comm_size(comm));
    if (!m->counts64) return false;
    mca_coll_loom_find_nodes(m, comm);
    mca_coll_loom_shm_create_inbox(m, comm);
    if (mca_coll_loom_create_loom_comm(comm, &m->loom) != LOOM_SUCCESS) {
        fprintf(stderr, "coll/loom: %s\n", loom_last_error());
        return false;
    }
    /* MCA values that differ from the table's defaults go to libloom; a bad
     * one is reported once and left at its default. */
    for (int i = 0; i < mca_coll_loom_component.param_count; ++i) {
        const char *name, *def;
        const char *value = mca_coll_loom_component.param_values[i];
        if (!value || loom_param_info(i, &name, &def, NULL, NULL) != LOOM_SUCCESS || !strcmp(value, def)) continue;
        if (loom_comm_set_param(m->loom, name, value) != LOOM_SUCCESS && ompi_comm_rank(comm) == 0)
            fprintf(stderr, "coll/loom: coll_loom_%s: %s; using %s\n", name, loom_last_error(), def);
    }
    /* What libloom has of each parameter that MPI_T may change later. */
    m->applied = calloc((size_t)mca_coll_loom_component.param_count, sizeof(char *));
    for (int i = 0; m->applied && i < mca_coll_loom_component.param_count; ++i) {
        const char *name;
        if (loom_param_info(i, &name, NULL, NULL, NULL) != LOOM_SUCCESS || !mca_coll_loom_param_is_runtime(name))
            continue;
        const char *value = mca_coll_loom_component.param_values[i];
        m->applied[i] = strdup(value ? value : "");
    }
    /* Open MPI knows whether this node's ranks share cores (mpirun turns
     * mpi_yield_when_idle on when it oversubscribes): the shared slots wait
     * the same way, unless coll_loom_slots_wait says otherwise. */
    const char *wait_value = component_value("slots_wait");
    if (opal_progress_yield_when_idle && (!wait_value || !strcmp(wait_value, "auto")))
        loom_comm_set_param(m->loom, "slots_wait", "yield");
    if (mca_coll_loom_component.verbose >= 1) loom_comm_set_param(m->loom, "verbose", "1");
    if (mca_coll_loom_component.verbose >= 2) loom_comm_set_param(m->loom, "verbose", "2");
    if (m->node_labels && loom_comm_set_nodes(m->loom, m->node_labels, ompi_comm_size(comm), m->rails) != LOOM_SUCCESS)
        fprintf(stderr, "coll/loom: %s\n", loom_last_error());
    /* After the parameters: shm_max_bytes is read when attaching. */
    return mca_coll_loom_shm_attach(m) == LOOM_SUCCESS;
}

int mca_coll_loom_module_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm) {
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *)module;
    /* Modules are enabled from lowest to highest priority, so the table
     * now holds the functions Loom falls back to. */
    if (!m->previous_saved) {
#define COLL_LOOM_SLOT(slot) SAVE_PREVIOUS(m, comm, slot);
        COLL_LOOM_SLOTS
#undef COLL_LOOM_SLOT
        m->previous_saved = true;
    }
    /* Blocking and nonblocking slots are needed below Loom. */
#define COLL_LOOM_MISSING(name, ...) !m->previous.name || !m->previous.i##name ||
    if (COLL_LOOM_COLLECTIVES(COLL_LOOM_MISSING) false) {
        /* Nothing to fall back to: do not take the communicator. */
        release_previous(m);
        return OMPI_ERROR;
    }
#undef COLL_LOOM_MISSING
    /* Persistent slots are optional below Loom (only libnbc fills them): take
     * one only where there is a module to hand refusals to. */
#define COLL_LOOM_OPTIONAL(name, ...) \
    if (!m->previous.name##_init) m->super.coll_##name##_init = NULL;
    COLL_LOOM_COLLECTIVES(COLL_LOOM_OPTIONAL)
#undef COLL_LOOM_OPTIONAL
    if (m->state == COLL_LOOM_PENDING) m->state = set_up(m, comm) ? COLL_LOOM_READY : COLL_LOOM_FAILED;
    return OMPI_SUCCESS;
}
