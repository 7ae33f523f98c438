/*
 * join_after_work: the critical path through pthread_join.
 *   - 3 workers take work_lock 40 times each (200 us held, 20 us between),
 *     so they contend; worker 2 then sleeps 30 ms, so it ends last;
 *   - main first makes a timed join of worker 2 that times out (1 ms),
 *     a join of itself (EDEADLK), then joins the three workers and takes
 *     late_lock once after them.
 * Without the joins recorded, the critical path starts at main's late_lock
 * and never reaches the workers. Prints deterministic return values.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

pthread_mutex_t work_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t late_lock = PTHREAD_MUTEX_INITIALIZER;

static void spin_ns(long ns)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < ns);
}

static void *worker(void *arg)
{
    long k = (long)arg;
    for (int i = 0; i < 40; i++) {
        pthread_mutex_lock(&work_lock);
        spin_ns(200000);
        pthread_mutex_unlock(&work_lock);
        spin_ns(20000);
    }
    if (k == 2)
        usleep(30000);
    return (void *)(k + 1);
}

int main(void)
{
    pthread_t t[3];
    for (long k = 0; k < 3; k++)
        pthread_create(&t[k], NULL, worker, (void *)k);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 1000000;
    if (until.tv_nsec >= 1000000000) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000;
    }
    int timed = pthread_timedjoin_np(t[2], NULL, &until);
    int self = pthread_join(pthread_self(), NULL);
    long sum = 0;
    int failed = 0;
    for (int k = 0; k < 3; k++) {
        void *r = NULL;
        failed += pthread_join(t[k], &r) != 0;
        sum += (long)r;
    }
    pthread_mutex_lock(&late_lock);
    pthread_mutex_unlock(&late_lock);
    printf("timed=%s self=%s failed=%d sum=%ld\n", timed == ETIMEDOUT ? "ETIMEDOUT" : "other",
           self == EDEADLK ? "EDEADLK" : "other", failed, sum);
    return 0;
}
