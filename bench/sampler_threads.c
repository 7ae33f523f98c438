/* sampler_threads: the target of bench/sampler_overhead.sh. THREADS
 * threads (default 64) that mostly sleep: each wakes every PERIOD_MS
 * (default 50 ms), does a few microseconds of work and sleeps again, for
 * SECONDS (default 5). Prints its own CPU time (getrusage) on exit:
 * "target_cpu_s=<s>".
 *
 * Usage: sampler_threads [THREADS] [SECONDS] [PERIOD_MS]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static double seconds = 5.0;
static long period_ms = 50;
static volatile unsigned long sink;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *worker(void *arg) {
    (void)arg;
    double end = now_s() + seconds;
    struct timespec p = {period_ms / 1000, (period_ms % 1000) * 1000000L};
    while (now_s() < end) {
        unsigned long x = 0;
        for (int i = 0; i < 2000; i++) x += (unsigned long)i * 2654435761u;
        sink += x;
        nanosleep(&p, NULL);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 64;
    if (argc > 2) seconds = atof(argv[2]);
    if (argc > 3) period_ms = atol(argv[3]);
    if (n < 1) n = 1;
    if (period_ms < 1) period_ms = 1;
    pthread_t *th = calloc((size_t)n, sizeof *th);
    if (!th) return 1;
    for (int i = 0; i < n; i++) pthread_create(&th[i], NULL, worker, NULL);
    for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("target_cpu_s=%.6f\n", (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                                      (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6);
    free(th);
    return 0;
}
