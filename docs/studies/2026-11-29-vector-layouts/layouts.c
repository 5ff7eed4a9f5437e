/* What in fabricprobe's vector layout costs time: MPI_Alltoallv and MPI_Gatherv timed with one
 * layout feature at a time (OMB's loop: a barrier, then the mean of `iters` back-to-back calls after
 * `warmup`, averaged over ranks), all layouts of one size interleaved in rounds whose order rotates.
 *
 *   mpicc -O2 layouts.c -o layouts && mpiexec -n 2 ./layouts [rounds] [iters]
 *
 * Layouts, for a mean block of c floats (OMB's Size = 4c bytes):
 *   even       c from every rank, packed in rank order (OMB's layout)
 *   gap1       c each, rank order, one float of gap after each block (later blocks 4 B off alignment)
 *   gap16      c each, rank order, 16 floats (64 B) of gap after each block (aligned gaps)
 *   reverse    c each, packed in reverse rank order
 *   uneven     rank r's block floor(2c(r+1)/(n+1)) (alltoallv: k = (i+j) mod n), packed in rank order
 *   fabricprobe uneven, reverse rank order, one float of gap after each (specs/uneven.py)
 * Prints, per collective, size and layout, the median over rounds of the layout's time / even's. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { EVEN, GAP1, GAP16, REVERSE, UNEVEN, FABRICPROBE, LAYOUTS };
static const char *NAMES[LAYOUTS] = {"even", "gap1", "gap16", "reverse", "uneven", "fabricprobe"};

static int block(int layout, int c, int n, int k) { /* elements of block k */
    return (layout == UNEVEN || layout == FABRICPROBE) ? (int)((2L * c * (k + 1)) / (n + 1)) : c;
}

static int gap(int layout) { return layout == GAP1 || layout == FABRICPROBE ? 1 : layout == GAP16 ? 16 : 0; }

static int reversed(int layout) { return layout == REVERSE || layout == FABRICPROBE; }

/* counts and displacements of the buffer holding every block (one per peer), for peer sizes sz */
static int place(int layout, int n, const int *sz, int *displs) {
    int at = 0;
    for (int s = 0; s < n; s++) {
        int r = reversed(layout) ? n - 1 - s : s;
        displs[r] = at;
        at += sz[r] + gap(layout);
    }
    return at;
}

static double timed(int coll, int layout, int c, int iters, int warmup, float *sbuf, float *rbuf) {
    int n, me;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    int *scount = malloc(n * sizeof(int)), *sdispl = malloc(n * sizeof(int));
    int *rcount = malloc(n * sizeof(int)), *rdispl = malloc(n * sizeof(int));
    for (int j = 0; j < n; j++) {
        int alltoall = coll == 0;
        scount[j] = block(layout, c, n, alltoall && layout >= UNEVEN ? (me + j) % n : (alltoall ? j : me));
        rcount[j] = block(layout, c, n, alltoall && layout >= UNEVEN ? (me + j) % n : j);
    }
    int at = 0;
    for (int j = 0; j < n; j++) { sdispl[j] = at; at += scount[j]; }
    place(layout, n, rcount, rdispl);
    double t = 0;
    for (int i = 0; i < warmup + iters; i++) {
        if (i == warmup) { MPI_Barrier(MPI_COMM_WORLD); t = MPI_Wtime(); }
        if (coll == 0)
            MPI_Alltoallv(sbuf, scount, sdispl, MPI_FLOAT, rbuf, rcount, rdispl, MPI_FLOAT, MPI_COMM_WORLD);
        else
            MPI_Gatherv(sbuf, scount[0], MPI_FLOAT, rbuf, rcount, rdispl, MPI_FLOAT, 0, MPI_COMM_WORLD);
    }
    t = (MPI_Wtime() - t) / iters, free(scount), free(sdispl), free(rcount), free(rdispl);
    double sum;
    MPI_Allreduce(&t, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return sum / n;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rounds = argc > 1 ? atoi(argv[1]) : 7, iters = argc > 2 ? atoi(argv[2]) : 200, n, me;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    const int sizes[] = {1024, 65536, 1 << 20};
    const char *colls[] = {"alltoallv", "gatherv"};
    size_t most = (size_t)(2 * n * ((1 << 20) / 4 + 16) + 64);
    float *sbuf = aligned_alloc(4096, most * 4), *rbuf = aligned_alloc(4096, most * 4);
    memset(sbuf, 1, most * 4), memset(rbuf, 0, most * 4);
    if (me == 0) printf("n = %d, %d rounds, %d iterations; time / even's time, median over rounds (range)\n", n, rounds, iters);
    for (int coll = 0; coll < 2; coll++)
        for (int s = 0; s < 3; s++) {
            double t[LAYOUTS][64];
            int c = sizes[s] / 4;
            for (int r = 0; r < rounds; r++)
                for (int k = 0; k < LAYOUTS; k++) {
                    int layout = (k + r) % LAYOUTS;
                    t[layout][r] = timed(coll, layout, c, sizes[s] >= 65536 ? iters / 4 : iters, 20, sbuf, rbuf);
                }
            if (me != 0) continue;
            double even[64];
            memcpy(even, t[EVEN], sizeof even);
            qsort(even, rounds, sizeof(double), cmp);
            printf("%-9s %8d B, even %9.2f us:", colls[coll], sizes[s], even[rounds / 2] * 1e6);
            for (int k = 1; k < LAYOUTS; k++) {
                double ratio[64];
                for (int r = 0; r < rounds; r++) ratio[r] = t[k][r] / t[EVEN][r];
                qsort(ratio, rounds, sizeof(double), cmp);
                printf("  %s %.2f (%.2f-%.2f)", NAMES[k], ratio[rounds / 2], ratio[0], ratio[rounds - 1]);
            }
            printf("\n");
        }
    MPI_Finalize();
    return 0;
}
