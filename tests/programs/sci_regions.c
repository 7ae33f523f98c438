/*
 * Regions of known interference for the SCI accuracy test.
 *
 * THREADS threads each execute the region "work" ROUNDS times. Its work is
 * fixed: spin for WORK_US µs on the monotonic clock. Interference is
 * injected in a known fraction of executions: every EVERY-th execution
 * also sleeps SLEEP_US µs inside the region. The program times everything
 * itself and prints one JSON line per thread:
 *
 *   {"tid":…, "duration_ns":…, "executions":…, "injected_ns":…,
 *    "sci_own":…, "disturbance_ns":…}
 *
 * duration_ns  the thread's own duration (first to last instruction of its
 *              function, the program's clock); the kernel's lifetime of the
 *              thread is longer by at most start_delay_ns (pthread_create
 *              called to the function running) + end_delay_ns (the function
 *              returned to pthread_join returning), which a loaded machine
 *              stretches
 * excess_ns    Σ (d − d_min) over the thread's executions
 * injected_ns  Σ actual length of the injected sleeps (the program's clock)
 * sci_own      the program's own SCI of the region: Σ (d − d_min) / duration
 * disturbance  Σ (d − d_min) − injected: excess nobody injected (preemption
 *              on a loaded machine); the test repeats a run where it is
 *              large
 *
 * With "nested" as argument each thread also runs a keyed region "lookup"
 * (key 1: 20 µs, key 2: 200 µs of fixed work, 20 executions each) inside an
 * outer region "outer", and the process ends normally. Without contend the
 * program runs unchanged (the regions cost a load and a branch).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <contend/region.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define THREADS 2
#define ROUNDS 120
#define WORK_US 100
#define EVERY 4
#define SLEEP_US 1000

static int nested;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void spin_us(uint64_t us)
{
    uint64_t end = now_ns() + us * 1000u;
    while (now_ns() < end)
        ;
}

struct result {
    long tid;
    uint64_t created_ns, start_ns, end_ns, joined_ns;
    uint64_t duration_ns, injected_ns, executions, min_ns, sum_ns;
};

static void *worker(void *arg)
{
    struct result *r = (struct result *)arg;
    uint64_t t_start = now_ns();
    r->start_ns = t_start;
    r->tid = syscall(SYS_gettid);
    r->min_ns = UINT64_MAX;
    for (int i = 0; i < ROUNDS; i++) {
        /* Timed inside the marks, as contend times a region (from BEGIN's
         * timestamp, its last act, to END's, its first): the recorder's
         * slow paths inside BEGIN (creating the trace file, or waiting
         * while another thread creates it; claiming a buffer) can take
         * milliseconds on a loaded machine and belong to neither. */
        CONTEND_REGION_BEGIN("work");
        uint64_t t0 = now_ns();
        spin_us(WORK_US);
        if (i % EVERY == EVERY - 1) {
            uint64_t s0 = now_ns();
            struct timespec ts = {0, SLEEP_US * 1000L};
            nanosleep(&ts, NULL);
            r->injected_ns += now_ns() - s0;
        }
        uint64_t d = now_ns() - t0;
        CONTEND_REGION_END("work");
        r->executions++;
        r->sum_ns += d;
        if (d < r->min_ns)
            r->min_ns = d;
    }
    if (nested) {
        for (int k = 1; k <= 2; k++) {
            for (int i = 0; i < 20; i++) {
                CONTEND_REGION_BEGIN("outer");
                CONTEND_REGION_BEGIN_KEY("lookup", k);
                spin_us(k == 1 ? 20 : 200);
                CONTEND_REGION_END("lookup");
                CONTEND_REGION_END("outer");
            }
        }
    }
    r->end_ns = now_ns();
    r->duration_ns = r->end_ns - t_start;
    return NULL;
}

int main(int argc, char **argv)
{
    nested = argc > 1 && strcmp(argv[1], "nested") == 0;
    pthread_t t[THREADS];
    struct result r[THREADS];
    memset(r, 0, sizeof r);
    for (int i = 0; i < THREADS; i++) {
        r[i].created_ns = now_ns();
        pthread_create(&t[i], NULL, worker, &r[i]);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        r[i].joined_ns = now_ns();
    }
    /* d_min over all threads, as in the metric */
    uint64_t min = UINT64_MAX;
    for (int i = 0; i < THREADS; i++)
        if (r[i].min_ns < min)
            min = r[i].min_ns;
    for (int i = 0; i < THREADS; i++) {
        uint64_t excess = r[i].sum_ns - r[i].executions * min;
        uint64_t disturbance = excess > r[i].injected_ns ? excess - r[i].injected_ns : 0;
        printf("{\"tid\":%ld,\"duration_ns\":%llu,\"executions\":%llu,\"injected_ns\":%llu,"
               "\"excess_ns\":%llu,\"sci_own\":%.6f,\"disturbance_ns\":%llu,"
               "\"start_delay_ns\":%llu,\"end_delay_ns\":%llu}\n",
               r[i].tid, (unsigned long long)r[i].duration_ns,
               (unsigned long long)r[i].executions, (unsigned long long)r[i].injected_ns,
               (unsigned long long)excess, (double)excess / (double)r[i].duration_ns,
               (unsigned long long)disturbance,
               (unsigned long long)(r[i].start_ns - r[i].created_ns),
               (unsigned long long)(r[i].joined_ns - r[i].end_ns));
    }
    return 0;
}
