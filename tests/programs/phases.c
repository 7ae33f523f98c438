/* Three phases on three locks, apart in time, for the recording window and
 * the size cap: phase A uses lock_a, B lock_b, C lock_c; each runs for
 * PHASE_MS, with GAP_MS of sleep between phases. Each lock/unlock pair is
 * followed by SPACING_US of spinning, so a phase has a known, moderate
 * number of acquisitions.
 *
 * Prints per phase: "phase <name> <start_ns> <end_ns> <acquisitions>",
 * CLOCK_MONOTONIC, the same clock as contend's meta.json.
 * Usage: phases [PHASE_MS GAP_MS SPACING_US]  (default 300 300 20) */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

pthread_mutex_t lock_a = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t lock_b = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t lock_c = PTHREAD_MUTEX_INITIALIZER;

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void phase(const char *name, pthread_mutex_t *m, uint64_t ms, uint64_t spacing_us)
{
    uint64_t start = now_ns(), end = start + ms * 1000000u, n = 0, t = start;
    while (t < end) {
        pthread_mutex_lock(m);
        n++;
        pthread_mutex_unlock(m);
        uint64_t until = now_ns() + spacing_us * 1000u;
        while ((t = now_ns()) < until)
            ;
    }
    printf("phase %s %llu %llu %llu\n", name, (unsigned long long)start,
           (unsigned long long)now_ns(), (unsigned long long)n);
}

static void pause_ms(uint64_t ms)
{
    struct timespec d = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&d, &d) != 0)
        ;
}

int main(int argc, char **argv)
{
    uint64_t phase_ms = argc > 1 ? strtoull(argv[1], 0, 10) : 300;
    uint64_t gap_ms = argc > 2 ? strtoull(argv[2], 0, 10) : 300;
    uint64_t spacing_us = argc > 3 ? strtoull(argv[3], 0, 10) : 20;
    phase("a", &lock_a, phase_ms, spacing_us);
    pause_ms(gap_ms);
    phase("b", &lock_b, phase_ms, spacing_us);
    pause_ms(gap_ms);
    phase("c", &lock_c, phase_ms, spacing_us);
    return 0;
}
