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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "accuracy_common.h"

pthread_mutex_t global_lock = PTHREAD_MUTEX_INITIALIZER;

static int iterations = 2000;
static uint64_t hold_ns = 30000;
static uint64_t work_ns = 20000;

static void *worker(void *arg)
{
    struct rounds *r = arg;
    wait_for_start();
    ACCURACY_ROUNDS(r, iterations, hold_ns, work_ns, pthread_mutex_lock(&global_lock),
                    pthread_mutex_unlock(&global_lock));
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
    struct rounds *res = calloc((size_t)threads, sizeof *res);
    if (!tid || !res)
        return 1;
    for (int i = 0; i < threads; i++)
        if (pthread_create(&tid[i], NULL, worker, &res[i]) != 0) {
            perror("pthread_create");
            return 1;
        }
    start_all(threads);
    struct rounds total = {0, 0, 0, 0, 0};
    for (int i = 0; i < threads; i++) {
        pthread_join(tid[i], NULL);
        add_rounds(&total, &res[i]);
    }
    printf("{");
    print_rounds(&total);
    printf("}\n");
    free(tid);
    free(res);
    return 0;
}
