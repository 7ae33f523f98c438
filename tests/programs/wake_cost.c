/*
 * wake_cost: unlocks a mutex, and posts a semaphore, while a known number
 * of threads are blocked on it, so that the unlock (and the post) wakes
 * waiters: the wake cost that `contend report` shows per lock (HaLock,
 * Huang et al. 2012, Section 4.3: unlock time, which includes waking
 * waiters, is not negligible).
 *
 *   wake_cost [WAITERS [FILL]]
 *
 * With FILL, main first locks and unlocks FILL other mutexes once each, so
 * that under `contend record --light` its count table holds its 256 lock
 * entries before it takes `m`: `m` is then counted by call site, and the
 * unlock that finds waiters must still find that counted hold, although
 * main takes the last min(64, FILL) of the others again while it holds
 * `m` (more acquisitions counted by site in between).
 *
 * main locks `m` and starts WAITERS threads that each lock and unlock `m`;
 * once all of them are asleep in the kernel (state S in
 * /proc/self/task/TID/stat) it unlocks `m`. Then the same with `s`, a
 * semaphore at 0: WAITERS threads sem_wait, main posts WAITERS times once
 * all are asleep. Prints {"waiters":W,"asleep_m":A,"asleep_s":B}, A and B
 * the waiters seen asleep before the unlock and the posts.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
sem_t s;

static atomic_int tids[64];
static atomic_int started;

static void *mutex_waiter(void *arg)
{
    int i = (int)(long)arg;
    atomic_store(&tids[i], gettid());
    atomic_fetch_add(&started, 1);
    pthread_mutex_lock(&m);
    pthread_mutex_unlock(&m);
    return NULL;
}

static void *sem_waiter(void *arg)
{
    int i = (int)(long)arg;
    atomic_store(&tids[i], gettid());
    atomic_fetch_add(&started, 1);
    sem_wait(&s);
    return NULL;
}

/* 1 if thread `tid` of this process is asleep (state S). */
static int asleep(int tid)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    return p && p[1] == ' ' && p[2] == 'S';
}

/* Waits (at most 5 s) until all `n` waiters are asleep; returns how many are. */
static int wait_asleep(int n)
{
    while (atomic_load(&started) < n)
        usleep(1000);
    int a = 0;
    for (int round = 0; round < 5000; round++) {
        a = 0;
        for (int i = 0; i < n; i++)
            a += asleep(atomic_load(&tids[i]));
        if (a == n)
            break;
        usleep(1000);
    }
    usleep(20000); /* and a little longer, to be sure they wait in the futex */
    return a;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 3;
    int fill = argc > 2 ? atoi(argv[2]) : 0;
    if (n < 1 || n > 64 || fill < 0) {
        fprintf(stderr, "usage: %s [WAITERS (1-64) [FILL]]\n", argv[0]);
        return 2;
    }
    pthread_mutex_t *others = calloc((size_t)fill + 1, sizeof *others);
    if (!others)
        return 1;
    for (int i = 0; i < fill; i++) {
        pthread_mutex_init(&others[i], NULL);
        pthread_mutex_lock(&others[i]);
        pthread_mutex_unlock(&others[i]);
    }
    pthread_t t[64];
    pthread_mutex_lock(&m);
    for (int i = fill > 64 ? fill - 64 : 0; i < fill; i++) {
        pthread_mutex_lock(&others[i]);
        pthread_mutex_unlock(&others[i]);
    }
    for (long i = 0; i < n; i++)
        pthread_create(&t[i], NULL, mutex_waiter, (void *)i);
    int asleep_m = wait_asleep(n);
    pthread_mutex_unlock(&m);
    free(others);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);

    sem_init(&s, 0, 0);
    atomic_store(&started, 0);
    for (long i = 0; i < n; i++)
        pthread_create(&t[i], NULL, sem_waiter, (void *)i);
    int asleep_s = wait_asleep(n);
    for (int i = 0; i < n; i++)
        sem_post(&s);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    printf("{\"waiters\":%d,\"asleep_m\":%d,\"asleep_s\":%d}\n", n, asleep_m, asleep_s);
    return 0;
}
