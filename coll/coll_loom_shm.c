/*
 * coll/loom's intra-node shared memory. Which ranks share this node comes
 * from Open MPI's locality flags (no communication). Inbox names carry the
 * job, the context id and a hash of the members, so communicators that
 * reuse a context id never meet each other's inboxes.
 */
#include "coll_loom.h"

#include <stdio.h>
#include <stdlib.h>

#include "ompi/proc/proc.h"
#include "opal/mca/hwloc/hwloc-internal.h"

static const char *component_param(const char *wanted) {
    for (int i = 0; i < mca_coll_loom_component.param_count; ++i) {
        const char *name, *def;
        if (loom_param_info(i, &name, &def, NULL, NULL) != LOOM_SUCCESS || strcmp(name, wanted)) continue;
        return mca_coll_loom_component.param_values[i] ? mca_coll_loom_component.param_values[i] : def;
    }
    return NULL;
}

void mca_coll_loom_shm_create_inbox(mca_coll_loom_module_t *m, struct ompi_communicator_t *comm) {
    const char *enabled = component_param("shared_memory");
    if (enabled && !strcmp(enabled, "0")) return;
    const int p = ompi_comm_size(comm), me = ompi_comm_rank(comm);
    int *local = malloc(sizeof(int) * (size_t)p);
    if (!local) return;
    int nlocal = 0;
    uint64_t identity = 0xcbf29ce484222325ULL;  /* FNV-1a over the context id and the members */
    identity = (identity ^ ompi_comm_get_cid(comm)) * 0x100000001b3ULL;
    for (int i = 0; i < p; ++i) {
        ompi_proc_t *proc = ompi_comm_peer_lookup(comm, i);
        if (i == me || (proc && !ompi_proc_is_sentinel(proc) && OPAL_PROC_ON_LOCAL_NODE(proc->super.proc_flags)))
            local[nlocal++] = i;
        const opal_process_name_t name = proc ? proc->super.proc_name : (opal_process_name_t){0, 0};
        identity = (identity ^ (((uint64_t)name.jobid << 32) | name.vpid)) * 0x100000001b3ULL;
    }
    if (nlocal >= 2) {
        char key[64];
        snprintf(key, sizeof key, "%x-%x-%016llx", (unsigned)ompi_proc_local()->super.proc_name.jobid, (unsigned)ompi_comm_get_cid(comm),
                 (unsigned long long)identity);
        if (loom_shm_inbox_create(key, identity, me, local, nlocal, &m->shm_inbox) == LOOM_SUCCESS)
            m->shm_local_ranks = nlocal;
        else
            fprintf(stderr, "coll/loom: rank %d: cannot create its shared-memory inbox: %s\n", me, loom_last_error());
    }
    free(local);
}

int mca_coll_loom_shm_attach(mca_coll_loom_module_t *m) {
    if (!m->shm_inbox) return LOOM_SUCCESS;
    int rc = loom_comm_attach_shared_memory(m->loom, &m->shm_inbox);
    if (rc != LOOM_SUCCESS)
        fprintf(stderr, "coll/loom: rank %d: cannot attach shared memory: %s\n", ompi_comm_rank(m->comm), loom_last_error());
    return rc;
}
