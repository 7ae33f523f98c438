/*
 * timedlock: timed waits that time out after ~50 ms must return the same
 * codes with and without the collector:
 *   pthread_mutex_timedlock, pthread_mutex_clocklock,
 *   pthread_rwlock_timedwrlock, pthread_rwlock_timedrdlock,
 *   sem_timedwait (-1, errno ETIMEDOUT), pthread_cond_timedwait,
 *   and a pthread_mutex_trylock that fails with EBUSY.
 * Prints the codes and whether the wait lasted at least 45 ms.
 * Counts: 4 lock timeouts + 1 trylock failure = 5 failed lock events,
 * 1 semaphore timeout, 1 condition timeout.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

pthread_mutex_t held_mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_rwlock_t held_rwlock = PTHREAD_RWLOCK_INITIALIZER;
pthread_mutex_t cond_mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t never_signalled = PTHREAD_COND_INITIALIZER;
sem_t empty_sem;

#define TIMEOUT_NS (50 * 1000 * 1000L)

static const char *name(int rc)
{
    switch (rc) {
    case 0: return "0";
    case ETIMEDOUT: return "ETIMEDOUT";
    case EBUSY: return "EBUSY";
    case EINVAL: return "EINVAL";
    case EDEADLK: return "EDEADLK";
    default: return "other";
    }
}

static uint64_t now(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct timespec deadline(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    ts.tv_nsec += TIMEOUT_NS;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

static void show(const char *what, int rc, uint64_t start)
{
    uint64_t el = now(CLOCK_MONOTONIC) - start;
    printf("%-26s rc=%-9s waited_50ms=%d\n", what, name(rc), el >= 45u * 1000 * 1000);
}

static void *other(void *arg)
{
    (void)arg;
    struct timespec ts;
    uint64_t s;

    s = now(CLOCK_MONOTONIC);
    ts = deadline(CLOCK_REALTIME);
    show("mutex_timedlock", pthread_mutex_timedlock(&held_mutex, &ts), s);

    s = now(CLOCK_MONOTONIC);
    ts = deadline(CLOCK_MONOTONIC);
    show("mutex_clocklock", pthread_mutex_clocklock(&held_mutex, CLOCK_MONOTONIC, &ts), s);

    s = now(CLOCK_MONOTONIC);
    printf("%-26s rc=%-9s\n", "mutex_trylock", name(pthread_mutex_trylock(&held_mutex)));

    s = now(CLOCK_MONOTONIC);
    ts = deadline(CLOCK_REALTIME);
    show("rwlock_timedwrlock", pthread_rwlock_timedwrlock(&held_rwlock, &ts), s);

    s = now(CLOCK_MONOTONIC);
    ts = deadline(CLOCK_REALTIME);
    show("rwlock_timedrdlock", pthread_rwlock_timedrdlock(&held_rwlock, &ts), s);
    return NULL;
}

int main(void)
{
    sem_init(&empty_sem, 0, 0);
    pthread_mutex_lock(&held_mutex);
    pthread_rwlock_wrlock(&held_rwlock);
    pthread_t t;
    pthread_create(&t, NULL, other, NULL);
    pthread_join(t, NULL);
    pthread_rwlock_unlock(&held_rwlock);
    pthread_mutex_unlock(&held_mutex);

    uint64_t s = now(CLOCK_MONOTONIC);
    struct timespec ts = deadline(CLOCK_REALTIME);
    errno = 0;
    int rc = sem_timedwait(&empty_sem, &ts);
    int e = errno;
    uint64_t el = now(CLOCK_MONOTONIC) - s;
    printf("%-26s rc=%d errno=%-9s waited_50ms=%d\n", "sem_timedwait", rc, name(e),
           el >= 45u * 1000 * 1000);

    pthread_mutex_lock(&cond_mutex);
    s = now(CLOCK_MONOTONIC);
    ts = deadline(CLOCK_REALTIME);
    rc = pthread_cond_timedwait(&never_signalled, &cond_mutex, &ts);
    show("cond_timedwait", rc, s);
    printf("%-26s rc=%-9s\n", "mutex owned after timeout", name(pthread_mutex_trylock(&cond_mutex)));
    pthread_mutex_unlock(&cond_mutex);

    sem_destroy(&empty_sem);
    return 0;
}
