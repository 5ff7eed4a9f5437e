/* LD_PRELOAD shim for docs/studies/2026-11-27-4mib-pingpong/omb_4mib_first.sh: where in physical memory a rank's message buffers lie.
 * The first MPI_Send and the first MPI_Recv of 1 MiB or more give the send and receive buffers, whose page
 * frames each rank reads then from /proc/self/pagemap (root sees frame numbers; OMB frees its buffers
 * before MPI_Finalize). At MPI_Finalize it appends to $FP_FRAMES_LOG one line,
 * "frames ARM rank=R send=RUNS/REGIONS recv=RUNS/REGIONS pages=P": RUNS is how many physically contiguous,
 * ascending stretches the buffer's pages make (1: one unbroken stretch; P: no page followed by the next
 * frame), REGIONS how many 2 MiB-aligned stretches of physical memory hold them (a host backing this VM
 * with 2 MiB pages needs a translation for each). ARM is $FP_ARM. Loops that reach MPI through their own
 * handle on libmpi (numba's, so fabricprobe's sweep) are not seen.
 * Build: mpicc -shared -fPIC -o libbuffer_frames.so buffer_frames.c */
#include <fcntl.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static long found[2], regions[2], pages;

static int by_value(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static long runs(const void *buf, size_t len, long *region_count) {
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t first = (uintptr_t)buf / page, last = ((uintptr_t)buf + len - 1) / page;
    size_t k = last - first + 1;
    uint64_t *entry = malloc(k * sizeof *entry);  /* one pagemap entry per page, in one read */
    int fd = open("/proc/self/pagemap", O_RDONLY);
    long n = 0;
    int ok = entry && fd >= 0 && pread(fd, entry, k * 8, (off_t)first * 8) == (ssize_t)(k * 8);
    if (fd >= 0) close(fd);
    for (size_t i = 0; ok && i < k; i++) {
        if (!(entry[i] >> 63)) ok = 0;  /* a page not present */
        entry[i] &= (1ULL << 55) - 1;   /* its frame number */
        n += !i || entry[i] != entry[i - 1] + 1;
    }
    for (size_t i = 0; ok && i < k; i++) entry[i] >>= 9;  /* 512 frames of 4 KiB: 2 MiB */
    if (ok) qsort(entry, k, sizeof *entry, by_value);
    *region_count = 0;
    for (size_t i = 0; ok && i < k; i++) *region_count += !i || entry[i] != entry[i - 1];
    free(entry);
    return ok ? n : -1;
}

static void note(int which, const void *buf, int count, MPI_Datatype type) {
    int size;
    if (found[which] || PMPI_Type_size(type, &size) != MPI_SUCCESS || (size_t)count * size < (1u << 20)) return;
    found[which] = runs(buf, (size_t)count * size, &regions[which]);
    pages = ((size_t)count * size + 4095) / 4096;
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
