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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "accuracy_common.h"

pthread_rwlock_t global_rwlock = PTHREAD_RWLOCK_INITIALIZER;

static int iterations = 1000;
static uint64_t hold_ns = 20000;
static uint64_t work_ns = 20000;

/* One thread's totals and its role. */
struct result {
    struct rounds r;
    int writer;
};

static void *worker(void *arg)
{
    struct result *res = arg;
    wait_for_start();
    if (res->writer)
        ACCURACY_ROUNDS(&res->r, iterations, hold_ns, work_ns,
                        pthread_rwlock_wrlock(&global_rwlock),
                        pthread_rwlock_unlock(&global_rwlock));
    else
        ACCURACY_ROUNDS(&res->r, iterations, hold_ns, work_ns,
                        pthread_rwlock_rdlock(&global_rwlock),
                        pthread_rwlock_unlock(&global_rwlock));
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
    start_all(threads);
    struct rounds total = {0, 0, 0, 0, 0};
    uint64_t rd = 0, wr = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(tid[i], NULL);
        add_rounds(&total, &res[i].r);
        if (res[i].writer)
            wr += res[i].r.events;
        else
            rd += res[i].r.events;
    }
    printf("{");
    print_rounds(&total);
    printf(",\"read_events\":%llu,\"write_events\":%llu}\n", (unsigned long long)rd,
           (unsigned long long)wr);
    free(tid);
    free(res);
    return 0;
}
