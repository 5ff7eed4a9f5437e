// Core-to-core round trip through one shared cache line, two processes pinned to CPUs 0 and 1,
// no MPI: is a launch's speed decided by where the VM's vCPUs sit, whatever runs on them?
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static void pin(int cpu) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(cpu, &s); sched_setaffinity(0, sizeof s, &s); }
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    volatile long *line = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    line[0] = 0;
    pid_t child = fork();
    if (child == 0) {
        pin(1);
        for (long i = 0; i < n; i++) { while (line[0] != 2 * i + 1) ; line[0] = 2 * i + 2; }
        _exit(0);
    }
    pin(0);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < n; i++) { line[0] = 2 * i + 1; while (line[0] != 2 * i + 2) ; }
    clock_gettime(CLOCK_MONOTONIC, &b);
    waitpid(child, NULL, 0);
    printf("%.1f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n);
    return 0;
}
