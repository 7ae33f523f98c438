/*
 * accuracy_spin: like accuracy_mutex, for a pthread spinlock.
 *
 *   accuracy_spin [THREADS [ITERATIONS [HOLD_US [WORK_US]]]]
 *
 * Keep THREADS at most the number of CPUs: a spinning waiter whose lock
 * holder is preempted burns its whole time slice. Prints the totals as one
 * JSON line {"wait_ns":..,"hold_ns":..,"events":..}; the bias against the
 * collector is as in accuracy_mutex.c.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "accuracy_common.h"

pthread_spinlock_t global_spin;

static int iterations = 2000;
static uint64_t hold_ns = 10000;
static uint64_t work_ns = 10000;

static void *worker(void *arg)
{
    struct rounds *r = arg;
    wait_for_start();
    ACCURACY_ROUNDS(r, iterations, hold_ns, work_ns, pthread_spin_lock(&global_spin),
                    pthread_spin_unlock(&global_spin));
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 2;
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
    pthread_spin_init(&global_spin, PTHREAD_PROCESS_PRIVATE);
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
    pthread_spin_destroy(&global_spin);
    free(tid);
    free(res);
    return 0;
}
