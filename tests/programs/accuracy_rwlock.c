/*
 * accuracy_rwlock: like accuracy_mutex, for one rwlock taken by readers and
 * writers.
 *
 *   accuracy_rwlock [READERS [WRITERS [ITERATIONS [HOLD_US [WORK_US]]]]]
 *
 * Readers take global_rwlock for reading, writers for writing; each thread
 * does ITERATIONS lock/hold/unlock/work rounds and sums its wait (t1 - t0)
 * and hold (t2 - t1). Prints the totals over all threads as one JSON line:
 * {"wait_ns":..,"hold_ns":..,"events":..,"read_events":..,"write_events":..}.
 * The bias against the collector is as in accuracy_mutex.c: contend's wait
 * <= the program's, contend's hold >= the program's.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

pthread_rwlock_t global_rwlock = PTHREAD_RWLOCK_INITIALIZER;

static int iterations = 1000;
static uint64_t hold_ns = 20000;
static uint64_t work_ns = 20000;
static atomic_int ready;
static atomic_int go;

struct result {
    int writer;
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
        if (r->writer)
            pthread_rwlock_wrlock(&global_rwlock);
        else
            pthread_rwlock_rdlock(&global_rwlock);
        uint64_t t1 = now_ns();
        spin_until(t1 + hold_ns);
        uint64_t t2 = now_ns();
        pthread_rwlock_unlock(&global_rwlock);
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
    int readers = argc > 1 ? atoi(argv[1]) : 2;
    int writers = argc > 2 ? atoi(argv[2]) : 1;
    if (argc > 3)
        iterations = atoi(argv[3]);
    if (argc > 4)
        hold_ns = (uint64_t)atoll(argv[4]) * 1000u;
    if (argc > 5)
        work_ns = (uint64_t)atoll(argv[5]) * 1000u;
    int threads = readers + writers;
    if (readers < 0 || writers < 0 || threads < 1 || threads > 1024 || iterations < 0) {
        fprintf(stderr, "usage: %s [READERS [WRITERS [ITERATIONS [HOLD_US [WORK_US]]]]]\n",
                argv[0]);
        return 2;
    }
    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    struct result *res = calloc((size_t)threads, sizeof *res);
    if (!tid || !res)
        return 1;
    for (int i = 0; i < threads; i++) {
        res[i].writer = i >= readers;
        if (pthread_create(&tid[i], NULL, worker, &res[i]) != 0) {
            perror("pthread_create");
            return 1;
        }
    }
    while (atomic_load(&ready) < threads)
        ;
    atomic_store(&go, 1);
    uint64_t wait = 0, hold = 0, events = 0, rd = 0, wr = 0, pe = 0, ps = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(tid[i], NULL);
        wait += res[i].wait_ns;
        hold += res[i].hold_ns;
        events += res[i].events;
        pe += res[i].preempted_events;
        ps += res[i].preempted_span_ns;
        if (res[i].writer)
            wr += res[i].events;
        else
            rd += res[i].events;
    }
    printf("{\"wait_ns\":%llu,\"hold_ns\":%llu,\"events\":%llu,\"read_events\":%llu,"
           "\"write_events\":%llu,\"preempted_events\":%llu,\"preempted_span_ns\":%llu}\n",
           (unsigned long long)wait, (unsigned long long)hold, (unsigned long long)events,
           (unsigned long long)rd, (unsigned long long)wr, (unsigned long long)pe,
           (unsigned long long)ps);
    free(tid);
    free(res);
    return 0;
}
