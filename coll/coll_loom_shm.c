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
#include "opal/mca/pmix/pmix.h"

static const char *component_param(const char *wanted) {
    for (int i = 0; i < mca_coll_loom_component.param_count; ++i) {
        const char *name, *def;
        if (loom_param_info(i, &name, &def, NULL, NULL) != LOOM_SUCCESS || strcmp(name, wanted)) continue;
        return mca_coll_loom_component.param_values[i] ? mca_coll_loom_component.param_values[i] : def;
    }
    return NULL;
}

static bool on_this_machine(ompi_proc_t *proc) {
    return proc && !ompi_proc_is_sentinel(proc) && OPAL_PROC_ON_LOCAL_NODE(proc->super.proc_flags);
}

static int hash_label(const char *text) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; text && *text; ++text) h = (h ^ (unsigned char)*text) * 0x100000001b3ULL;
    return (int)(h & 0x7fffffff);
}

void mca_coll_loom_find_nodes(mca_coll_loom_module_t *m, struct ompi_communicator_t *comm) {
    const int p = ompi_comm_size(comm), me = ompi_comm_rank(comm);
    m->rails = 1;
    m->node_labels = calloc((size_t)p, sizeof(int));
    if (!m->node_labels) return;
    const char *topology = component_param("topology");
    if (topology && *topology) {
        const int world = ompi_comm_size(&ompi_mpi_comm_world.comm);
        int *world_labels = malloc(sizeof(int) * (size_t)world);
        const opal_jobid_t job = ompi_proc_local()->super.proc_name.jobid;
        const bool parsed =
            world_labels && loom_topology_parse(topology, world, world_labels, &m->rails) == LOOM_SUCCESS;
        if (parsed) {
            /* A rank's world rank is its vpid within this job. */
            for (int i = 0; i < p; ++i) {
                ompi_proc_t *proc = ompi_comm_peer_lookup(comm, i);
                const bool ours = proc && proc->super.proc_name.jobid == job && (int)proc->super.proc_name.vpid < world;
                m->node_labels[i] = ours ? world_labels[proc->super.proc_name.vpid] : -1 - i;
            }
        } else if (me == 0 && comm == &ompi_mpi_comm_world.comm) {
            fprintf(stderr, "coll/loom: coll_loom_topology: %s; using the machine's nodes\n", loom_last_error());
        }
        free(world_labels);
        if (parsed) return;
        m->rails = 1;
    }
    /* The machine: ranks on this node share our label without asking for
     * host names; the others are told apart by theirs. */
    for (int i = 0; i < p; ++i) {
        ompi_proc_t *proc = ompi_comm_peer_lookup(comm, i);
        m->node_labels[i] =
            (i == me || on_this_machine(proc)) ? 0 : hash_label(opal_get_proc_hostname(&proc->super)) | 1;
    }
}

void mca_coll_loom_shm_create_inbox(mca_coll_loom_module_t *m, struct ompi_communicator_t *comm) {
    const char *enabled = component_param("shared_memory");
    if (enabled && !strcmp(enabled, "0")) return;
    const int p = ompi_comm_size(comm), me = ompi_comm_rank(comm);
    int *local = malloc(sizeof(int) * (size_t)p);
    if (!local) return;
    int nlocal = 0;
    uint64_t identity = 0xcbf29ce484222325ULL; /* FNV-1a over the context id and the members */
    identity = (identity ^ ompi_comm_get_cid(comm)) * 0x100000001b3ULL;
    for (int i = 0; i < p; ++i) {
        ompi_proc_t *proc = ompi_comm_peer_lookup(comm, i);
        /* Same machine and, when emulating nodes, same emulated node. */
        const bool same_node = !m->node_labels || m->node_labels[i] == m->node_labels[me];
        if (i == me || (on_this_machine(proc) && same_node)) local[nlocal++] = i;
        const opal_process_name_t name = proc ? proc->super.proc_name : (opal_process_name_t){0, 0};
        identity = (identity ^ (((uint64_t)name.jobid << 32) | name.vpid)) * 0x100000001b3ULL;
    }
    if (nlocal >= 2) {
        char key[64];
        snprintf(key, sizeof key, "%x-%x-%016llx", (unsigned)ompi_proc_local()->super.proc_name.jobid,
                 (unsigned)ompi_comm_get_cid(comm), (unsigned long long)identity);
        if (loom_shm_inbox_create(key, identity, me, local, nlocal, &m->shm_inbox) != LOOM_SUCCESS)
            fprintf(stderr, "coll/loom: rank %d: cannot create its shared-memory inbox: %s\n", me, loom_last_error());
        /* Its name goes once every peer has mapped it; if a rank dies
         * before, the launcher removes it at the job's end, as it does
         * Open MPI's own shared-memory files. */
        char path[256];
        if (m->shm_inbox && opal_pmix.register_cleanup &&
            loom_shm_inbox_path(m->shm_inbox, path, sizeof path) == LOOM_SUCCESS)
            opal_pmix.register_cleanup(path, false, false, false);
    }
    free(local);
}

int mca_coll_loom_shm_attach(mca_coll_loom_module_t *m) {
    if (!m->shm_inbox) return LOOM_SUCCESS;
    int rc = loom_comm_attach_shared_memory(m->loom, &m->shm_inbox);
    if (rc != LOOM_SUCCESS)
        fprintf(stderr, "coll/loom: rank %d: cannot attach shared memory: %s\n", ompi_comm_rank(m->comm),
                loom_last_error());
    return rc;
}
