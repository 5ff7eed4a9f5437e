// core_pingpong.c's round trip through a cache line in each of P pages, the pages taken in turn for
// PASSES passes within one run: does the slow mode follow the page (where the host put the memory)
// or the moment (where the host put the two vCPUs)? Prints a row per pass, a column per page (ns).
//   gcc -O2 -o core_pages docs/studies/2026-11-27-4mib-pingpong/core_pages.c && ./core_pages 8 4 100000
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static void pin(int cpu) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(cpu, &s); sched_setaffinity(0, sizeof s, &s); }
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
int main(int argc, char **argv) {
    int P = argc > 1 ? atoi(argv[1]) : 8, passes = argc > 2 ? atoi(argv[2]) : 4; long n = argc > 3 ? atol(argv[3]) : 100000;
    char *mem = mmap(NULL, 4096L * P, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    volatile long *go = (volatile long *)mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    for (int p = 0; p < P; p++) *(volatile long *)(mem + 4096L * p) = 0;
    pid_t child = fork();
    if (child == 0) {
        pin(1);
        for (int k = 0; k < passes * P; k++) {
            volatile long *line = (volatile long *)(mem + 4096L * (k % P));
            while (*go != k + 1) ;
            for (long i = 0; i < n; i++) { while (line[0] != 2 * i + 1) ; line[0] = 2 * i + 2; }
            *go = -(k + 1);
        }
        _exit(0);
    }
    pin(0);
    static double t[64][64];
    if (P < 1 || P > 64 || passes < 1 || passes > 64) return 2;
    for (int k = 0; k < passes * P; k++) {
        volatile long *line = (volatile long *)(mem + 4096L * (k % P));
        *go = k + 1;
        double a = now();
        for (long i = 0; i < n; i++) { line[0] = 2 * i + 1; while (line[0] != 2 * i + 2) ; }
        t[k / P][k % P] = (now() - a) / n;
        while (*go != -(k + 1)) ;
        line[0] = 0;  // only now: the child has seen its last value
    }
    waitpid(child, NULL, 0);
    for (int q = 0; q < passes; q++) { for (int p = 0; p < P; p++) printf("%6.0f", t[q][p]); printf("\n"); }
    return 0;
}
