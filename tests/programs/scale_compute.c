/* scale_compute: purely compute-bound, for the omega test of `contend scale`
 * (crates/contend-cli/tests/e2e_scale.rs).
 *
 * Usage: scale_compute THREADS [ITERATIONS]
 *
 * A fixed total of ITERATIONS (default 60 000 000) xorshift steps, split
 * evenly over THREADS threads; each thread works on registers only (no
 * memory traffic, no sharing, no locks). The work is the same on one core
 * and on THREADS cores, so C(m)/C(1) - 1 = omega (Venter 2016, Eq. 3.5)
 * must be close to 0.
 *
 * Prints "cpu_s=<getrusage CPU s> wall_s=<wall s>".
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t per_thread;
static volatile uint64_t sink;

static void *worker(void *arg) {
    uint64_t x = (uint64_t)(uintptr_t)arg | 1;
    for (uint64_t i = 0; i < per_thread; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    sink += x;
    return NULL;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 0;
    long long total = argc > 2 ? atoll(argv[2]) : 60000000LL;
    if (threads < 1 || threads > 1024 || total < 1) {
        fprintf(stderr, "usage: scale_compute THREADS [ITERATIONS]\n");
        return 2;
    }
    per_thread = (uint64_t)total / (uint64_t)threads;
    double t0 = now_s();
    pthread_t tid[1024];
    for (int i = 0; i < threads; i++)
        if (pthread_create(&tid[i], NULL, worker, (void *)(uintptr_t)(i + 1)) != 0) return 1;
    for (int i = 0; i < threads; i++) pthread_join(tid[i], NULL);
    double wall = now_s() - t0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                 (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    printf("cpu_s=%.6f wall_s=%.6f\n", cpu, wall);
    return 0;
}
