/*
 * False-sharing micro-benchmark (Mosli Bouksiaa et al., TPDS 2019,
 * Listing 2): two threads on two CPUs; `x` and `y` share one cache line.
 * Thread 0 increments x ITERATIONS times; thread 1 increments y and then
 * computes `delay` iterations of an empty loop, until thread 0 is done.
 * The block is a batch of BATCH increments of x, a region "access_x"
 * (contend/region.h): one increment takes a few ns, less than the two
 * timestamps of a region, so a batch keeps the region's own cost small
 * beside what it measures. The program times each batch itself with the
 * TSC (around the region) and prints the mean time to access x per batch
 * (its X of Table 1), and its fastest batch and the 1% quantile of its
 * batches (the truth for contend's block statistics: the region's
 * timestamps lie inside the program's, so contend's durations are at most
 * the program's):
 *
 *   false_sharing DELAY_ITERATIONS [ITERATIONS]
 *   {"benchmark":"false_sharing","delay":…,"x_ns":…,"batches":…,
 *    "fastest_ns":…,"fastest_1pct_ns":…,"disturbed":…}
 *
 * disturbed: the share of the two threads' time they were runnable but
 * waiting for a CPU (schedstat run delay), taken by other load.
 */
#include "common.h"
#include <contend/region.h>
#include <stdatomic.h>

static struct {
    volatile long x;
    volatile long y;
} data __attribute__((aligned(64)));

#define BATCH 64

static long delay, iterations;
static atomic_int done, ready;
static uint64_t ticks, wall[2], delayed[2];
static uint64_t *batch_ticks; /* each batch's duration, TSC ticks */

static void *thread0(void *arg)
{
    (void)arg;
    pin(0);
    atomic_fetch_add(&ready, 1);
    while (atomic_load(&ready) < 2)
        ;
    uint64_t sum = 0, w0 = now_ns(), q0 = run_delay_ns();
    for (long i = 0; i < iterations / BATCH; i++) {
        uint64_t t0 = __rdtsc();
        CONTEND_REGION_BEGIN("access_x");
        for (int k = 0; k < BATCH; k++)
            data.x++;
        CONTEND_REGION_END("access_x");
        uint64_t d = __rdtsc() - t0;
        sum += d;
        batch_ticks[i] = d;
    }
    ticks = sum;
    wall[0] = now_ns() - w0;
    delayed[0] = run_delay_ns() - q0;
    atomic_store(&done, 1);
    return NULL;
}

static int by_ticks(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void *thread1(void *arg)
{
    (void)arg;
    pin(1);
    atomic_fetch_add(&ready, 1);
    while (atomic_load(&ready) < 2)
        ;
    uint64_t w0 = now_ns(), q0 = run_delay_ns();
    while (!atomic_load(&done)) {
        data.y++;
        for (volatile long k = 0; k < delay; k++)
            ;
    }
    wall[1] = now_ns() - w0;
    delayed[1] = run_delay_ns() - q0;
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: false_sharing DELAY_ITERATIONS [ITERATIONS]\n");
        return 2;
    }
    delay = atol(argv[1]);
    iterations = argc > 2 ? atol(argv[2]) : 1000000;
    double per_ns = tsc_per_ns(20);
    long n = iterations / BATCH;
    batch_ticks = calloc(n > 0 ? (size_t)n : 1, sizeof *batch_ticks);
    if (!batch_ticks)
        return 1;
    pthread_t a, b;
    pthread_create(&a, NULL, thread0, NULL);
    pthread_create(&b, NULL, thread1, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    long batches = n;
    qsort(batch_ticks, (size_t)(n > 0 ? n : 1), sizeof *batch_ticks, by_ticks);
    printf("{\"benchmark\":\"false_sharing\",\"delay\":%ld,\"x_ns\":%.2f,\"batches\":%ld,"
           "\"fastest_ns\":%.1f,\"fastest_1pct_ns\":%.1f,\"disturbed\":%.4f}\n",
           delay, (double)ticks / per_ns / (double)batches, batches,
           (double)batch_ticks[0] / per_ns, (double)batch_ticks[(n > 0 ? n - 1 : 0) / 100] / per_ns,
           (double)(delayed[0] + delayed[1]) / (double)(wall[0] + wall[1] + 1));
    return 0;
}
