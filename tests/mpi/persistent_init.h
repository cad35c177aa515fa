/* The persistent collectives' names: MPI 4's (MPICH 4), or Open MPI 4's
 * extension of the same calls. PERSISTENT_INIT(Allreduce) is
 * MPI_Allreduce_init or MPIX_Allreduce_init. */
#ifndef LOOM_TESTS_PERSISTENT_INIT_H
#define LOOM_TESTS_PERSISTENT_INIT_H
#include <mpi.h>
#if MPI_VERSION >= 4
#define PERSISTENT_INIT(Name) MPI_##Name##_init
#elif defined(OPEN_MPI)
// after mpi.h: its extension prototypes need the MPI types
#include <mpi-ext.h>
#define PERSISTENT_INIT(Name) MPIX_##Name##_init
#else
#error "this MPI has no persistent collectives (MPI 4, or Open MPI's MPIX extension)"
#endif
#endif
