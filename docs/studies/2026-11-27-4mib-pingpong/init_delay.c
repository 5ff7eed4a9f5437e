/* LD_PRELOAD shim for docs/studies/2026-11-27-4mib-pingpong/omb_4mib_init_delay.sh and omb_4mib_host.sh: MPI_Init and
 * MPI_Init_thread return FP_INIT_DELAY seconds after the library's own, asleep, or FP_INIT_SPIN seconds
 * after it, busy, so OMB times its first size as late after MPI_Init as fabricprobe does (its imports,
 * set-up and validation come first), with the CPU idle or busy meanwhile. FP_INIT_TOUCH_MB=M makes it
 * first allocate M MiB and write every page (kept; freed at once with FP_INIT_TOUCH_FREE=1), and
 * FP_INIT_DLOPEN=PATH load that library, so that OMB's process holds what a fabricprobe rank holds
 * before its buffers are made (docs/studies/2026-11-27-4mib-pingpong/omb_4mib_first.sh; docs/performance.md, "The setting").
 * Build: mpicc -shared -fPIC -o libinit_delay.so init_delay.c -ldl */
#include <dlfcn.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void delay(void) {
    const char *s = getenv("FP_INIT_DELAY"), *spin = getenv("FP_INIT_SPIN");
    const char *touch = getenv("FP_INIT_TOUCH_MB"), *lib = getenv("FP_INIT_DLOPEN");
    if (touch) {
        size_t n = (size_t)(atof(touch) * (1 << 20));
        char *p = malloc(n);
        if (p) memset(p, 1, n);  /* held, as a rank's imports are, unless told */
        if (getenv("FP_INIT_TOUCH_FREE")) free(p);
    }
    if (lib && !dlopen(lib, RTLD_NOW | RTLD_LOCAL)) abort();
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
