/* Cost of the interference (SCI) instrumentation per block execution
 * (bench/sci_overhead.sh runs it with and without recording and reports
 * the difference; Mosli Bouksiaa et al., TPDS 2019, Section 4.5 measures
 * the same for ISPOT's wrappers):
 *
 *   sci_overhead region N     N empty CONTEND_REGION_BEGIN/END pairs
 *   sci_overhead call N       N calls of an empty noinline function
 *                             `probed` (with --function probed: a uprobe
 *                             + uretprobe pair; built with
 *                             -finstrument-functions and recorded with
 *                             --instrumented-functions: the hooks)
 *
 * Prints: ns=<CPU ns per pair or call> wall_ns=<wall-clock ns per pair or
 * call>. ns is the thread's CPU time (CLOCK_THREAD_CPUTIME_ID, user and
 * kernel: a uprobe's trap and the first touch of trace pages count), so
 * that time the thread spent preempted by other programs on a shared
 * machine does not count. One thread (an idle second thread exists so
 * that glibc takes its multi-threaded paths, as in the programs worth
 * measuring). */
#define _GNU_SOURCE
#include <contend/region.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void *idle(void *arg) {
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

__attribute__((noinline, noclone)) void probed(void) {
    __asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: sci_overhead region|call N\n");
        return 2;
    }
    long n = atol(argv[2]);
    pthread_t t;
    pthread_create(&t, NULL, idle, NULL);
    pthread_detach(t);
    int region = strcmp(argv[1], "region") == 0;
    for (long i = 0; i < n / 10; i++) { /* warm up (and intern the site) */
        if (region) {
            CONTEND_REGION_BEGIN("bench");
            CONTEND_REGION_END("bench");
        } else {
            probed();
        }
    }
    double c0 = now_ns(CLOCK_THREAD_CPUTIME_ID), t0 = now_ns(CLOCK_MONOTONIC);
    for (long i = 0; i < n; i++) {
        if (region) {
            CONTEND_REGION_BEGIN("bench");
            __asm__ volatile("" ::: "memory");
            CONTEND_REGION_END("bench");
        } else {
            probed();
        }
    }
    double t1 = now_ns(CLOCK_MONOTONIC), c1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
    printf("ns=%.2f wall_ns=%.2f\n", (c1 - c0) / (double)n, (t1 - t0) / (double)n);
    return 0;
}
