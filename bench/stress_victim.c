/* stress_victim: the program the memory contention generator's benchmark
 * slows down (bench/stress_bandwidth.sh).
 *
 * Usage: stress_victim memory|compute [PASSES]
 *
 * memory:  PASSES (default 16) STREAM-style triad passes a[i] = b[i] + 3 c[i]
 *          over three 64 MiB arrays: memory-bound;
 * compute: the same number of passes of register-only arithmetic taking
 *          about as long: the control, which memory contention should not
 *          slow down.
 *
 * Prints "seconds=<wall time of the passes>".
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc < 2 || (strcmp(argv[1], "memory") != 0 && strcmp(argv[1], "compute") != 0)) {
        fprintf(stderr, "usage: stress_victim memory|compute [PASSES]\n");
        return 2;
    }
    int passes = argc > 2 ? atoi(argv[2]) : 16;
    size_t n = (64u << 20) / sizeof(double);
    double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
    if (!a || !b || !c) return 1;
    for (size_t i = 0; i < n; i++) {
        a[i] = 0;
        b[i] = (double)(i & 255);
        c[i] = 1.0;
    }
    volatile double sink = 0;
    double t0 = now_s();
    if (strcmp(argv[1], "memory") == 0) {
        for (int p = 0; p < passes; p++) {
            for (size_t i = 0; i < n; i++) a[i] = b[i] + 3.0 * c[i];
            sink += a[p];
        }
    } else {
        uint64_t x = 88172645463325252ull;
        for (int p = 0; p < passes; p++) {
            for (size_t i = 0; i < n; i++) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
            }
            sink += (double)(x & 1);
        }
    }
    printf("seconds=%.6f\n", now_s() - t0);
    free(a);
    free(b);
    free(c);
    return 0;
}
