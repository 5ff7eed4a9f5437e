/* OMB 7.4's timed loops, as a shared library for docs/studies/2026-11-27-4mib-pingpong/omb_loop_same_launch.py, so that OMB's loop
 * and fabricprobe's compiled loop can take turns on the same memory inside one launch.
 *
 * pingpong: osu_latency's loop (10 warm-up round trips, a barrier, then each round trip of ITERS timed;
 *   the mean half round trip in us, on rank 0). allreduce: osu_allreduce's (each call timed alone, a
 *   barrier after it; the mean in us of this rank). page_buffer: posix_memalign'd and memset, as OMB's. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

double pingpong(char *s, char *r, size_t size, int iters, int rank) {
    int peer = 1 - rank;
    double total = 0, t0 = 0;
    for (int i = 0; i < 10 + iters; i++) {
        if (i == 10) MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            t0 = MPI_Wtime();
            MPI_Send(s, size, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
            MPI_Recv(r, size, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (i >= 10) total += MPI_Wtime() - t0;
        } else {
            MPI_Recv(r, size, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(s, size, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
        }
    }
    return total * 1e6 / (2.0 * iters);
}

double allreduce(float *s, float *r, int count, int iters) {
    double total = 0;
    for (int i = 0; i < 10 + iters; i++) {
        double t0 = MPI_Wtime();
        MPI_Allreduce(s, r, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        if (i >= 10) total += MPI_Wtime() - t0;
        MPI_Barrier(MPI_COMM_WORLD);
    }
    return total * 1e6 / iters;
}

char *page_buffer(size_t size, int c) {
    void *p = NULL;
    if (posix_memalign(&p, sysconf(_SC_PAGESIZE), size ? size : 1)) return NULL;
    memset(p, c, size);
    return p;
}
