/* Smoke test for the lock collector: exercises every interposed primitive
 * and checks that return values and errno are unchanged. Run it with and
 * without LD_PRELOAD; it exits 0 and prints "ok" when all checks pass.
 *   usage: smoke [threads] [iterations] */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int failures;
#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);            \
            __atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);                        \
        }                                                                              \
    } while (0)

static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_spinlock_t spin;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static pthread_barrier_t barrier;
static sem_t sem;
static long counter, rcounter, scounter;
static int iterations = 20000;

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < iterations; i++) {
        CHECK(pthread_mutex_lock(&mtx) == 0);
        counter++;
        CHECK(pthread_mutex_unlock(&mtx) == 0);
        if (i % 4 == 0) {
            CHECK(pthread_rwlock_wrlock(&rw) == 0);
            rcounter++;
            CHECK(pthread_rwlock_unlock(&rw) == 0);
        } else {
            CHECK(pthread_rwlock_rdlock(&rw) == 0);
            CHECK(pthread_rwlock_unlock(&rw) == 0);
        }
        CHECK(pthread_spin_lock(&spin) == 0);
        scounter++;
        CHECK(pthread_spin_unlock(&spin) == 0);
        if (pthread_mutex_trylock(&mtx) == 0)
            CHECK(pthread_mutex_unlock(&mtx) == 0);
        CHECK(sem_wait(&sem) == 0);
        CHECK(sem_post(&sem) == 0);
    }
    int r = pthread_barrier_wait(&barrier);
    CHECK(r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD);
    return NULL;
}

static int ready;
static void *signaller(void *arg)
{
    (void)arg;
    usleep(20000);
    pthread_mutex_lock(&mtx);
    ready = 1;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&mtx);
    return NULL;
}

static void abs_in(struct timespec *ts, clockid_t clk, long ms)
{
    clock_gettime(clk, ts);
    ts->tv_nsec += ms * 1000000;
    ts->tv_sec += ts->tv_nsec / 1000000000;
    ts->tv_nsec %= 1000000000;
}

static void *hold_mutex(void *arg)
{
    pthread_mutex_t *m = arg;
    pthread_mutex_lock(m);
    usleep(200000);
    pthread_mutex_unlock(m);
    return NULL;
}

int main(int argc, char **argv)
{
    int nthreads = argc > 1 ? atoi(argv[1]) : 4;
    if (argc > 2)
        iterations = atoi(argv[2]);
    pthread_spin_init(&spin, 0);
    pthread_barrier_init(&barrier, NULL, (unsigned)nthreads);
    sem_init(&sem, 0, 2);

    pthread_t *t = calloc((size_t)nthreads, sizeof *t);
    for (int i = 0; i < nthreads; i++)
        CHECK(pthread_create(&t[i], NULL, worker, NULL) == 0);
    for (int i = 0; i < nthreads; i++)
        pthread_join(t[i], NULL);
    CHECK(counter == (long)nthreads * iterations);
    CHECK(scounter == (long)nthreads * iterations);

    /* cond wait / timedwait / clockwait */
    pthread_t s;
    pthread_create(&s, NULL, signaller, NULL);
    pthread_mutex_lock(&mtx);
    while (!ready)
        CHECK(pthread_cond_wait(&cond, &mtx) == 0);
    struct timespec ts;
    abs_in(&ts, CLOCK_REALTIME, 10);
    CHECK(pthread_cond_timedwait(&cond, &mtx, &ts) == ETIMEDOUT);
    abs_in(&ts, CLOCK_MONOTONIC, 10);
    CHECK(pthread_cond_clockwait(&cond, &mtx, CLOCK_MONOTONIC, &ts) == ETIMEDOUT);
    CHECK(pthread_mutex_unlock(&mtx) == 0);
    pthread_join(s, NULL);

    /* error-checking mutex: EDEADLK and EPERM */
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_t em;
    pthread_mutex_init(&em, &a);
    CHECK(pthread_mutex_unlock(&em) == EPERM);
    CHECK(pthread_mutex_lock(&em) == 0);
    CHECK(pthread_mutex_lock(&em) == EDEADLK);
    CHECK(pthread_mutex_trylock(&em) == EBUSY);
    CHECK(pthread_mutex_unlock(&em) == 0);
    CHECK(pthread_mutex_unlock(&em) == EPERM);

    /* recursive mutex */
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_t rm;
    pthread_mutex_init(&rm, &a);
    CHECK(pthread_mutex_lock(&rm) == 0);
    CHECK(pthread_mutex_lock(&rm) == 0);
    CHECK(pthread_mutex_unlock(&rm) == 0);
    CHECK(pthread_mutex_unlock(&rm) == 0);
    CHECK(pthread_mutex_unlock(&rm) == EPERM);

    /* timedlock times out; clocklock with a bad clock is EINVAL */
    pthread_mutex_t tm = PTHREAD_MUTEX_INITIALIZER;
    pthread_t h;
    pthread_create(&h, NULL, hold_mutex, &tm);
    usleep(50000);
    abs_in(&ts, CLOCK_REALTIME, 20);
    CHECK(pthread_mutex_timedlock(&tm, &ts) == ETIMEDOUT);
    abs_in(&ts, CLOCK_MONOTONIC, 20);
    CHECK(pthread_mutex_clocklock(&tm, CLOCK_MONOTONIC, &ts) == ETIMEDOUT);
    abs_in(&ts, CLOCK_REALTIME, 2000);
    CHECK(pthread_mutex_timedlock(&tm, &ts) == 0); /* waits for the holder */
    CHECK(pthread_mutex_unlock(&tm) == 0);
    pthread_join(h, NULL);
    CHECK(pthread_mutex_clocklock(&tm, CLOCK_PROCESS_CPUTIME_ID, &ts) == EINVAL);
    struct timespec bad = {0, 2000000000L};
    CHECK(pthread_mutex_timedlock(&tm, &bad) == 0); /* free: abstime not checked */
    CHECK(pthread_mutex_unlock(&tm) == 0);

    /* rwlock: deadlock detection, timed, bad abstime */
    CHECK(pthread_rwlock_wrlock(&rw) == 0);
    CHECK(pthread_rwlock_rdlock(&rw) == EDEADLK);
    CHECK(pthread_rwlock_tryrdlock(&rw) == EBUSY);
    CHECK(pthread_rwlock_unlock(&rw) == 0);
    CHECK(pthread_rwlock_timedrdlock(&rw, &bad) == EINVAL);
    abs_in(&ts, CLOCK_MONOTONIC, 10);
    CHECK(pthread_rwlock_clockwrlock(&rw, CLOCK_MONOTONIC, &ts) == 0);
    CHECK(pthread_rwlock_trywrlock(&rw) == EBUSY);
    CHECK(pthread_rwlock_unlock(&rw) == 0);

    /* semaphores and errno */
    sem_t s0;
    sem_init(&s0, 0, 0);
    errno = 1234;
    CHECK(sem_post(&s0) == 0 && errno == 1234);
    CHECK(sem_wait(&s0) == 0 && errno == 1234); /* trywait inside must not leak EAGAIN */
    CHECK(sem_trywait(&s0) == -1 && errno == EAGAIN);
    abs_in(&ts, CLOCK_REALTIME, 10);
    errno = 0;
    CHECK(sem_timedwait(&s0, &ts) == -1 && errno == ETIMEDOUT);
    sem_post(&s0);
    errno = 0;
    CHECK(sem_timedwait(&s0, &bad) == -1 && errno == EINVAL); /* even though available */
    errno = 0;
    CHECK(sem_clockwait(&s0, CLOCK_PROCESS_CPUTIME_ID, &ts) == -1 && errno == EINVAL);
    abs_in(&ts, CLOCK_MONOTONIC, 10);
    CHECK(sem_clockwait(&s0, CLOCK_MONOTONIC, &ts) == 0);

    /* spin trylock */
    CHECK(pthread_spin_trylock(&spin) == 0);
    CHECK(pthread_spin_trylock(&spin) == EBUSY);
    CHECK(pthread_spin_unlock(&spin) == 0);

    if (failures) {
        printf("%d failures\n", failures);
        return 1;
    }
    printf("ok\n");
    return 0;
}
