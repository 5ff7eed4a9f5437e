/* LD_PRELOAD shim for benchmarks/omb_4mib_init_delay.sh and omb_4mib_host.sh: MPI_Init and
 * MPI_Init_thread return FP_INIT_DELAY seconds after the library's own, asleep, or FP_INIT_SPIN seconds
 * after it, busy, so OMB times its first size as late after MPI_Init as fabricprobe does (its imports,
 * set-up and validation come first), with the CPU idle or busy meanwhile.
 * Build: mpicc -shared -fPIC -o libinit_delay.so */
#include <mpi.h>
#include <stdlib.h>
#include <unistd.h>

static void delay(void) {
    const char *s = getenv("FP_INIT_DELAY"), *spin = getenv("FP_INIT_SPIN");
    if (s) usleep((useconds_t)(atof(s) * 1e6));
    if (spin) {
        volatile unsigned long n = 0;
        for (double end = PMPI_Wtime() + atof(spin); PMPI_Wtime() < end;) n++;
    }
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
