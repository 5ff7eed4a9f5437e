/* Minimal C timing loop for MPI_Allreduce (float, sum), timed exactly as fabricprobe's
 * barrier mode: untimed barrier, MPI_Wtime around one call, per-iteration time = max over
 * ranks, then the median. Usage: c_allreduce_loop BYTES ITERATIONS WARMUP [HUGEPAGES]
 *
 * Buffers are placed as fabricprobe places them (fabricprobe/buffers.py), so the comparison is
 * of the timing loop and not of the allocator: page-aligned by default; with HUGEPAGES=1,
 * buffers of 2 MiB and more are 2 MiB-aligned and madvise(MADV_HUGEPAGE)d. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

static void *buffer(long bytes, int hugepages) {
    long align = (hugepages && bytes >= (2L << 20)) ? (2L << 20) : 4096;
    long size = (bytes + align - 1) / align * align;
    void *p = aligned_alloc(align, size ? size : align);
    if (align > 4096) madvise(p, size, MADV_HUGEPAGE);
    return p;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc != 4 && argc != 5) {
        if (rank == 0) fprintf(stderr, "usage: %s BYTES ITERATIONS WARMUP [HUGEPAGES]\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long count = atol(argv[1]) / (long)sizeof(float);
    int iters = atoi(argv[2]), warmup = atoi(argv[3]), hugepages = argc == 5 && atoi(argv[4]);
    float *send = buffer(count * (long)sizeof(float), hugepages);
    float *recv = buffer(count * (long)sizeof(float), hugepages);
    for (long i = 0; i < count; i++) { send[i] = 1.0f; recv[i] = 0.0f; }
    double *t = malloc(sizeof(double) * iters), *tmax = malloc(sizeof(double) * iters);
    for (int i = 0; i < warmup + iters; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        double t1 = MPI_Wtime();
        if (i >= warmup) t[i - warmup] = t1 - t0;
    }
    MPI_Reduce(t, tmax, iters, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        qsort(tmax, iters, sizeof(double), cmp);
        double median = iters % 2 ? tmax[iters / 2] : 0.5 * (tmax[iters / 2 - 1] + tmax[iters / 2]);
        printf("%.9e\n", median);
    }
    MPI_Finalize();
    return 0;
}
