/*
 * Shared by the interference micro-benchmarks (Mosli Bouksiaa et al.,
 * "Using differential execution analysis to identify thread interference",
 * TPDS 2019, Section 4): clocks, compute(delay), the JSON result line.
 */
#ifndef INTERFERENCE_COMMON_H
#define INTERFERENCE_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <x86intrin.h>

/* TSC ticks per ns, measured over `ms` milliseconds. */
static inline double tsc_per_ns(unsigned ms)
{
    struct timespec ts0, ts1;
    clock_gettime(CLOCK_MONOTONIC, &ts0);
    uint64_t c0 = __rdtsc();
    struct timespec nap = {0, (long)ms * 1000000L};
    nanosleep(&nap, NULL);
    clock_gettime(CLOCK_MONOTONIC, &ts1);
    uint64_t c1 = __rdtsc();
    double ns = (double)(ts1.tv_sec - ts0.tv_sec) * 1e9 + (double)(ts1.tv_nsec - ts0.tv_nsec);
    return (double)(c1 - c0) / ns;
}

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* compute(delay): simulated work of `us` microseconds (a spin on the
 * clock, so the same on any CPU). */
static inline void compute_us(uint64_t us)
{
    if (!us)
        return;
    uint64_t end = now_ns() + us * 1000u;
    while (now_ns() < end)
        ;
}

/* compute(delay) at a finer grain: `ns` nanoseconds of spinning on the
 * clock (the lock benchmark's delay and critical section on small
 * machines, where the interesting delays are below a microsecond). */
static inline void compute_ns(uint64_t ns)
{
    if (!ns)
        return;
    uint64_t end = now_ns() + ns;
    while (now_ns() < end)
        ;
}

/* Pins the calling thread to CPU `i` modulo the CPUs it may use. */
static inline void pin(int i)
{
    cpu_set_t allowed, one;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        return;
    int n = CPU_COUNT(&allowed);
    if (n <= 0)
        return;
    int k = i % n;
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (CPU_ISSET(c, &allowed) && k-- == 0) {
            CPU_ZERO(&one);
            CPU_SET(c, &one);
            pthread_setaffinity_np(pthread_self(), sizeof one, &one);
            return;
        }
    }
}

/* Time the calling thread has spent runnable but waiting for a CPU, ns
 * (/proc/thread-self/schedstat, field 2): time other programs, or more
 * threads than CPUs, took from it. 0 when it cannot be read. */
static inline uint64_t run_delay_ns(void)
{
    FILE *f = fopen("/proc/thread-self/schedstat", "r");
    if (!f)
        return 0;
    unsigned long long run = 0, wait = 0;
    if (fscanf(f, "%llu %llu", &run, &wait) != 2)
        wait = 0;
    fclose(f);
    return wait;
}

/* Online CPUs the process may use. */
static inline int usable_cpus(void)
{
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        return 1;
    int n = CPU_COUNT(&allowed);
    return n > 0 ? n : 1;
}

#endif /* INTERFERENCE_COMMON_H */
