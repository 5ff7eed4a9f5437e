/* LD_PRELOAD shim for benchmarks/omb_4mib_first.sh: where in physical memory a rank's message buffers lie.
 * The first MPI_Send and the first MPI_Recv of 1 MiB or more give the send and receive buffers, whose page
 * frames each rank reads then from /proc/self/pagemap (root sees frame numbers; OMB frees its buffers
 * before MPI_Finalize); at MPI_Finalize it appends to $FP_FRAMES_LOG one line: "frames ARM rank=R send=RUNS recv=RUNS pages=P", RUNS being how many
 * physically contiguous stretches the buffer's 4 KiB pages make (1: one unbroken stretch; P: no two
 * neighbours adjacent). ARM is $FP_ARM. Loops that reach MPI through their own handle on libmpi (numba's,
 * so fabricprobe's sweep) are not seen.
 * Build: mpicc -shared -fPIC -o libbuffer_frames.so buffer_frames.c */
#include <fcntl.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static long found[2], regions[2], pages;

static long runs(const void *buf, size_t len, long *region_count);

static void note(int which, const void *buf, int count, MPI_Datatype type) {
    int size;
    if (found[which] || PMPI_Type_size(type, &size) != MPI_SUCCESS || (size_t)count * size < (1u << 20)) return;
    found[which] = runs(buf, (size_t)count * size, &regions[which]);
    pages = ((size_t)count * size + 4095) / 4096;
}

static int by_value(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static long runs(const void *buf, size_t len, long *region_count) {
    int fd = open("/proc/self/pagemap", O_RDONLY);
    if (fd < 0) return -1;
    long page = sysconf(_SC_PAGESIZE), n = 0, k = 0;
    uint64_t prev = 0, *region = malloc((len / page + 2) * sizeof *region);
    for (uintptr_t a = (uintptr_t)buf & ~(uintptr_t)(page - 1); a < (uintptr_t)buf + len; a += page) {
        uint64_t e;
        if (!region || pread(fd, &e, 8, (off_t)(a / page) * 8) != 8 || !(e >> 63)) {
            close(fd);
            free(region);
            return -1;
        }
        uint64_t pfn = e & ((1ULL << 55) - 1);
        if (!n || pfn != prev + 1) n++;
        prev = pfn;
        region[k++] = pfn >> 9;  /* 512 frames of 4 KiB: 2 MiB */
    }
    close(fd);
    qsort(region, k, sizeof *region, by_value);
    *region_count = 0;
    for (long i = 0; i < k; i++) *region_count += !i || region[i] != region[i - 1];
    free(region);
    return n;
}

int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
    note(0, buf, count, type);
    return PMPI_Send(buf, count, type, dest, tag, comm);
}

int MPI_Recv(void *buf, int count, MPI_Datatype type, int src, int tag, MPI_Comm comm, MPI_Status *status) {
    note(1, buf, count, type);
    return PMPI_Recv(buf, count, type, src, tag, comm, status);
}

int MPI_Finalize(void) {
    const char *log = getenv("FP_FRAMES_LOG"), *arm = getenv("FP_ARM");
    int rank;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    FILE *out = log ? fopen(log, "a") : NULL;
    if (out) {
        fprintf(out, "frames %s rank=%d send=%ld/%ld recv=%ld/%ld pages=%ld\n", arm ? arm : "?", rank, found[0],
                regions[0], found[1], regions[1], pages);
        fclose(out);
    }
    return PMPI_Finalize();
}
