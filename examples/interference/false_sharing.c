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
 * (its X of Table 1):
 *
 *   false_sharing DELAY_ITERATIONS [ITERATIONS]
 *   {"benchmark":"false_sharing","delay":…,"x_ns":…,"batches":…,
 *    "disturbed":…}
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
        sum += __rdtsc() - t0;
    }
    ticks = sum;
    wall[0] = now_ns() - w0;
    delayed[0] = run_delay_ns() - q0;
    atomic_store(&done, 1);
    return NULL;
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
    pthread_t a, b;
    pthread_create(&a, NULL, thread0, NULL);
    pthread_create(&b, NULL, thread1, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    long batches = iterations / BATCH;
    printf("{\"benchmark\":\"false_sharing\",\"delay\":%ld,\"x_ns\":%.2f,\"batches\":%ld,"
           "\"disturbed\":%.4f}\n",
           delay, (double)ticks / per_ns / (double)batches, batches,
           (double)(delayed[0] + delayed[1]) / (double)(wall[0] + wall[1] + 1));
    return 0;
}
