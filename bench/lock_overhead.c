/* Cost of an uncontended pthread_mutex_lock + unlock pair, and of two
 * rdtsc reads, measured in one process (bench/lock_overhead.sh runs it
 * with and without the collector preloaded and reports the difference).
 *
 *   lock_overhead [PAIRS [IDLE_THREAD]]
 *
 * With IDLE_THREAD = 1 a second thread sleeps while the main thread
 * measures: glibc then uses its multi-threaded lock path (atomic
 * instructions), as in every program worth profiling; with 0 a
 * single-threaded process gets glibc's cheaper single-thread path.
 * Prints: pairs_ns=<ns per lock+unlock pair> rdtsc2_ns=<ns per two rdtsc>,
 * both in the thread's CPU time (CLOCK_THREAD_CPUTIME_ID). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* The thread's CPU time: on a machine shared with other work, time the
 * thread spent descheduled is not in it (nor, on a KVM guest with steal
 * time accounting, time the vCPU was stolen). */
static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void *idle(void *arg) {
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 20000000;
    if (argc > 2 && atoi(argv[2]) == 1) {
        pthread_t t;
        pthread_create(&t, NULL, idle, NULL);
        pthread_detach(t);
    }
    for (long i = 0; i < n / 10; i++) { /* warm up */
        pthread_mutex_lock(&lock);
        pthread_mutex_unlock(&lock);
    }
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        pthread_mutex_lock(&lock);
        pthread_mutex_unlock(&lock);
    }
    double t1 = now_ns();
    volatile uint64_t sink = 0;
    double t2 = now_ns();
    for (long i = 0; i < n; i++) {
        sink += __rdtsc();
        sink += __rdtsc();
    }
    double t3 = now_ns();
    printf("pairs_ns=%.2f rdtsc2_ns=%.2f\n", (t1 - t0) / n, (t3 - t2) / n);
    return (int)(sink & 0);
}
