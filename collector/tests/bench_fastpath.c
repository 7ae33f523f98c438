/* Cost of an uncontended lock + unlock pair (and of other pairs), measured
 * in one thread while a second, idle thread exists (glibc uses cheaper
 * non-atomic lock paths while a process is single-threaded, which would
 * make the baseline unrealistically low). Run with and without the
 * collector and compare:
 *   bench_fastpath [iterations]
 * prints ns per pair for mutex, rwlock (write), spinlock and sem. */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void *idle(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 20000000;
    pthread_t t;
    pthread_create(&t, NULL, idle, NULL);
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
    pthread_spinlock_t sp;
    sem_t s;
    pthread_spin_init(&sp, 0);
    sem_init(&s, 0, 1);
    /* the best of several rounds: the machine may be shared */
    double best[4] = {1e9, 1e9, 1e9, 1e9};
    for (int round = 0; round < 7; round++) {
        double t0 = now_ns();
        for (long i = 0; i < n; i++) {
            pthread_mutex_lock(&m);
            pthread_mutex_unlock(&m);
        }
        double t1 = now_ns();
        for (long i = 0; i < n / 4; i++) {
            pthread_rwlock_wrlock(&rw);
            pthread_rwlock_unlock(&rw);
        }
        double t2 = now_ns();
        for (long i = 0; i < n / 4; i++) {
            pthread_spin_lock(&sp);
            pthread_spin_unlock(&sp);
        }
        double t3 = now_ns();
        for (long i = 0; i < n / 4; i++) {
            sem_wait(&s);
            sem_post(&s);
        }
        double t4 = now_ns();
        double r[4] = {(t1 - t0) / n, (t2 - t1) / (n / 4), (t3 - t2) / (n / 4),
                       (t4 - t3) / (n / 4)};
        for (int k = 0; k < 4; k++)
            if (r[k] < best[k])
                best[k] = r[k];
    }
    printf("mutex %.1f ns  rwlock %.1f ns  spin %.1f ns  sem %.1f ns  (per pair, best of 7)\n",
           best[0], best[1], best[2], best[3]);
    return 0;
}
