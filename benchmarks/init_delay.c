/* LD_PRELOAD shim for benchmarks/omb_4mib_init_delay.sh: MPI_Init and MPI_Init_thread return FP_INIT_DELAY
 * seconds after the library's own, so OMB times its first size as late after MPI_Init as fabricprobe
 * does (its imports, set-up and validation come first). Build: mpicc -shared -fPIC -o libinit_delay.so */
#include <mpi.h>
#include <stdlib.h>
#include <unistd.h>

static void delay(void) {
    const char *s = getenv("FP_INIT_DELAY");
    if (s) usleep((useconds_t)(atof(s) * 1e6));
}

int MPI_Init(int *argc, char ***argv) {
    int rc = PMPI_Init(argc, argv);
    delay();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    delay();
    return rc;
}
