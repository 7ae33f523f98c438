/*
 * scaling: a small program of known shape for `contend scale` (Venter 2016,
 * Section 3.1: speed-up lost to memory contention and to dependencies).
 *
 *   scaling THREADS [COMPUTE_MS [STREAM_MB [LOCKED_MS]]]
 *
 * The total work is fixed (strong scaling) and split evenly over THREADS
 * pthreads; three phases, separated by barriers:
 *
 *   1. compute: integer arithmetic on registers, COMPUTE_MS milliseconds of
 *      it in all (measured once on one thread at start-up and divided up),
 *      no memory traffic: scales perfectly, omega about 0;
 *   2. stream: four passes of a sum-and-update over a STREAM_MB MiB array
 *      (each thread its own slice), far larger than the private caches:
 *      memory-bound, so with more cores the threads compete for memory
 *      bandwidth and the work per byte grows (omega > 0);
 *   3. locked: 200 critical sections, each holding one global mutex while
 *      computing, LOCKED_MS milliseconds in all: serialised whatever the
 *      core count, so the threads wait for each other (dependencies D > 0).
 *
 * Defaults: 120 ms compute, 64 MiB stream, 60 ms locked, a few hundred
 * milliseconds on one core. At the end it prints its own measurements as
 * key=value pairs: wall_s, cpu_s (getrusage, all threads) and the wall time
 * of each phase.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Pure register arithmetic; the result is returned so it is not removed. */
static uint64_t spin(uint64_t iterations, uint64_t seed)
{
    uint64_t x = seed | 1;
    for (uint64_t i = 0; i < iterations; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    return x;
}

static int threads;
static uint64_t compute_iters;   /* per thread */
static uint64_t locked_iters;    /* per critical section */
static int sections_per_thread;
static double *array;
static size_t array_len;
static pthread_barrier_t barrier;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile uint64_t sink;
static double phase_start[4];

enum { SECTIONS = 200, PASSES = 4 };

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    uint64_t acc = 0;

    pthread_barrier_wait(&barrier);
    if (id == 0)
        phase_start[0] = now_s();
    acc += spin(compute_iters, (uint64_t)id + 1);

    pthread_barrier_wait(&barrier);
    if (id == 0)
        phase_start[1] = now_s();
    size_t lo = array_len * (size_t)id / (size_t)threads;
    size_t hi = array_len * (size_t)(id + 1) / (size_t)threads;
    double s = 0;
    for (int p = 0; p < PASSES; p++)
        for (size_t i = lo; i < hi; i++) {
            s += array[i];
            array[i] = s * 0.5;
        }
    acc += (uint64_t)s;

    pthread_barrier_wait(&barrier);
    if (id == 0)
        phase_start[2] = now_s();
    for (int k = 0; k < sections_per_thread; k++) {
        pthread_mutex_lock(&lock);
        acc += spin(locked_iters, (uint64_t)k + 7);
        pthread_mutex_unlock(&lock);
    }

    pthread_barrier_wait(&barrier);
    if (id == 0)
        phase_start[3] = now_s();
    sink += acc;
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s THREADS [COMPUTE_MS [STREAM_MB [LOCKED_MS]]]\n", argv[0]);
        return 2;
    }
    threads = atoi(argv[1]);
    double compute_ms = argc > 2 ? atof(argv[2]) : 120;
    double stream_mb = argc > 3 ? atof(argv[3]) : 64;
    double locked_ms = argc > 4 ? atof(argv[4]) : 60;
    if (threads < 1 || threads > 1024 || compute_ms < 0 || stream_mb <= 0 || locked_ms < 0) {
        fprintf(stderr, "%s: bad arguments\n", argv[0]);
        return 2;
    }

    /* Calibrate: iterations of spin() per millisecond on this CPU. */
    uint64_t probe = 1 << 20;
    double t0 = now_s();
    sink += spin(probe, 3);
    double per_ms = probe / ((now_s() - t0) * 1e3);
    compute_iters = (uint64_t)(compute_ms * per_ms / threads);
    sections_per_thread = SECTIONS / threads;
    if (sections_per_thread < 1)
        sections_per_thread = 1;
    locked_iters = (uint64_t)(locked_ms * per_ms / (sections_per_thread * threads));

    array_len = (size_t)(stream_mb * 1024 * 1024 / sizeof(double));
    array = malloc(array_len * sizeof(double));
    if (!array) {
        fprintf(stderr, "%s: cannot allocate %.0f MiB\n", argv[0], stream_mb);
        return 1;
    }
    for (size_t i = 0; i < array_len; i++)
        array[i] = (double)(i & 1023);

    pthread_barrier_init(&barrier, NULL, (unsigned)threads);
    pthread_t *tids = calloc((size_t)threads, sizeof *tids);
    double start = now_s();
    for (int i = 0; i < threads; i++)
        if (pthread_create(&tids[i], NULL, worker, (void *)(intptr_t)i) != 0) {
            fprintf(stderr, "%s: cannot create thread %d\n", argv[0], i);
            return 1;
        }
    for (int i = 0; i < threads; i++)
        pthread_join(tids[i], NULL);
    double wall = now_s() - start;

    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
                 ru.ru_stime.tv_usec / 1e6;
    printf("threads=%d wall_s=%.4f cpu_s=%.4f compute_s=%.4f stream_s=%.4f locked_s=%.4f\n",
           threads, wall, cpu, phase_start[1] - phase_start[0], phase_start[2] - phase_start[1],
           phase_start[3] - phase_start[2]);
    free(tids);
    free(array);
    return 0;
}
