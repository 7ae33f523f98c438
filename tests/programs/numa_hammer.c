/* A program whose memory traffic is known: it fills a small "cold" array
 * once, then hammers a "hot" array of HOT_MB MiB with random reads for
 * SECONDS seconds (argument 1, default 1). It prints the address ranges
 * of both arrays ("hot 0x… 0x…", "cold 0x… 0x…") so a test can check that
 * the sampled pages are the hot array's, and at the end the number of hot
 * reads it made and the CPU time they took ("reads N", "cpu_s S": its work
 * rate, for bench/numa_sampler.sh). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define HOT_MB 64
#define COLD_MB 8

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    size_t hot_n = (size_t)HOT_MB * 1024 * 1024 / sizeof(uint64_t);
    size_t cold_n = (size_t)COLD_MB * 1024 * 1024 / sizeof(uint64_t);
    uint64_t *hot = malloc(hot_n * sizeof *hot);
    uint64_t *cold = malloc(cold_n * sizeof *cold);
    if (!hot || !cold) {
        perror("malloc");
        return 1;
    }
    for (size_t i = 0; i < cold_n; i++)
        cold[i] = i;
    for (size_t i = 0; i < hot_n; i++)
        hot[i] = i * 2654435761u;
    printf("hot %p %p\ncold %p %p\n", (void *)hot, (void *)(hot + hot_n), (void *)cold,
           (void *)(cold + cold_n));
    fflush(stdout);
    uint64_t x = 88172645463325252ull, sum = 0, reads = 0;
    double cpu0 = cpu_now();
    double end = now() + seconds;
    while (now() < end) {
        for (int k = 0; k < 100000; k++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            sum += hot[x % hot_n];
        }
        reads += 100000;
    }
    printf("sum %llu\nreads %llu\ncpu_s %.6f\n", (unsigned long long)sum, (unsigned long long)reads,
           cpu_now() - cpu0);
    free(hot);
    free(cold);
    return 0;
}
