/* OMB 7.4's osu_latency loop (docs/studies/2026-11-27-4mib-pingpong/omb_loops.c) as a program of its own, for
 * docs/studies/2026-11-27-4mib-pingpong/omb_4mib_host.sh: the loop and buffers docs/studies/2026-11-27-4mib-pingpong/omb_loop_host.py runs inside Python, in a
 * plain C process, so the host can be compared and the loop cannot.
 *   mpicc -O2 -o omb_loop_main omb_loop_main.c omb_loops.c;  mpiexec -n 2 omb_loop_main BYTES ITERS
 * Prints rank 0's mean half round trip in us. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

double pingpong(char *s, char *r, size_t size, int iters, int rank);
char *page_buffer(size_t size, int c);

int main(int argc, char **argv) {
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    size_t size = argc > 1 ? (size_t)atol(argv[1]) : 4194304;
    int iters = argc > 2 ? atoi(argv[2]) : 500;
    double us = pingpong(page_buffer(size, 97), page_buffer(size, 98), size, iters, rank);
    if (rank == 0) printf("%.1f\n", us);
    MPI_Finalize();
    return 0;
}
