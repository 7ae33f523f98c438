/*
 * accuracy_mutex: measures its own mutex wait and hold times, so that a
 * test can compare them with what `contend record` + `contend report` say.
 *
 *   accuracy_mutex [THREADS [ITERATIONS [HOLD_US [WORK_US]]]]
 *
 * Every thread does ITERATIONS times:
 *   t0 = now; lock(global_lock); t1 = now;
 *   busy-wait HOLD_US; t2 = now; unlock(global_lock);
 *   busy-wait WORK_US outside the lock.
 * and sums wait = t1 - t0 and hold = t2 - t1. The totals over all threads
 * are printed as one JSON line: {"wait_ns":..,"hold_ns":..,"events":..}.
 *
 * The program's clock reads lie outside the collector's: t0 is taken before
 * the call enters the wrapper, t1 after it returned, t2 before the unlock
 * wrapper takes its release time. So the collector's wait is inside
 * [t0, t1] (contend's wait <= the program's) and its hold contains [t1, t2]
 * (contend's hold >= the program's).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

pthread_mutex_t global_lock = PTHREAD_MUTEX_INITIALIZER;

static int iterations = 2000;
static uint64_t hold_ns = 30000;
static uint64_t work_ns = 20000;
static atomic_int ready;
static atomic_int go;

struct result {
    uint64_t wait_ns, hold_ns, events;
    uint64_t preempted_events, preempted_span_ns;
};

/* A round this long was stalled from outside (see the worker). */
#define STALL_NS 2000000u

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void spin_until(uint64_t t)
{
    while (now_ns() < t)
        ;
}

/* Involuntary context switches of the calling thread so far. */
static long preemptions(void)
{
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return ru.ru_nivcsw;
}

static void *worker(void *arg)
{
    struct result *r = arg;
    atomic_fetch_add(&ready, 1);
    while (!atomic_load(&go))
        ;
    for (int i = 0; i < iterations; i++) {
        long cs = preemptions();
        uint64_t t0 = now_ns();
        pthread_mutex_lock(&global_lock);
        uint64_t t1 = now_ns();
        spin_until(t1 + hold_ns);
        uint64_t t2 = now_ns();
        pthread_mutex_unlock(&global_lock);
        uint64_t t3 = now_ns();
        r->wait_ns += t1 - t0;
        r->hold_ns += t2 - t1;
        r->events++;
        /* Disturbed: switched out involuntarily, or stalled for longer
         * than any lock hand-over here takes (a virtual CPU descheduled by
         * its host is invisible to ru_nivcsw but shows as such a stall). */
        if (preemptions() != cs || t3 - t0 > STALL_NS) {
            r->preempted_events++;
            r->preempted_span_ns += t3 - t0;
        }
        spin_until(now_ns() + work_ns);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 4;
    if (argc > 2)
        iterations = atoi(argv[2]);
    if (argc > 3)
        hold_ns = (uint64_t)atoll(argv[3]) * 1000u;
    if (argc > 4)
        work_ns = (uint64_t)atoll(argv[4]) * 1000u;
    if (threads < 1 || threads > 1024 || iterations < 0) {
        fprintf(stderr, "usage: %s [THREADS [ITERATIONS [HOLD_US [WORK_US]]]]\n", argv[0]);
        return 2;
    }
    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    struct result *res = calloc((size_t)threads, sizeof *res);
    if (!tid || !res)
        return 1;
    for (int i = 0; i < threads; i++)
        if (pthread_create(&tid[i], NULL, worker, &res[i]) != 0) {
            perror("pthread_create");
            return 1;
        }
    while (atomic_load(&ready) < threads)
        ;
    atomic_store(&go, 1);
    struct result total = {0, 0, 0, 0, 0};
    for (int i = 0; i < threads; i++) {
        pthread_join(tid[i], NULL);
        total.wait_ns += res[i].wait_ns;
        total.hold_ns += res[i].hold_ns;
        total.events += res[i].events;
        total.preempted_events += res[i].preempted_events;
        total.preempted_span_ns += res[i].preempted_span_ns;
    }
    printf("{\"wait_ns\":%llu,\"hold_ns\":%llu,\"events\":%llu,\"preempted_events\":%llu,"
           "\"preempted_span_ns\":%llu}\n",
           (unsigned long long)total.wait_ns, (unsigned long long)total.hold_ns,
           (unsigned long long)total.events, (unsigned long long)total.preempted_events,
           (unsigned long long)total.preempted_span_ns);
    free(tid);
    free(res);
    return 0;
}
