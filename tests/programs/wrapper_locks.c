/*
 * A thin lock wrapper (crates/contend-cli/tests/e2e/heap_locks.rs,
 * `report --wrapper 'wrap_*'`): every lock and unlock goes through
 * wrap_lock/wrap_unlock, and the two heap mutexes are made by wrap_new, so
 * without --wrapper every site is inside the wrapper. The callers' lines
 * are marked CALL_A, CALL_B, NEW_A and NEW_B.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#define THREADS 2
#define ROUNDS 200

__attribute__((noinline)) static pthread_mutex_t *wrap_new(void)
{
    pthread_mutex_t *m = malloc(sizeof *m);
    if (!m || pthread_mutex_init(m, NULL) != 0)
        abort();
    return m;
}

__attribute__((noinline)) static void wrap_lock(pthread_mutex_t *m)
{
    pthread_mutex_lock(m);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void wrap_unlock(pthread_mutex_t *m)
{
    pthread_mutex_unlock(m);
    __asm__ volatile("" ::: "memory");
}

static pthread_mutex_t *a, *b;
/* One counter per lock: each is only touched under its own lock. */
static volatile long counter_a, counter_b;

static void spin_us(long us)
{
    struct timespec s, e;
    clock_gettime(CLOCK_MONOTONIC, &s);
    do
        clock_gettime(CLOCK_MONOTONIC, &e);
    while ((e.tv_sec - s.tv_sec) * 1000000L + (e.tv_nsec - s.tv_nsec) / 1000 < us);
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        wrap_lock(a); /* CALL_A */
        counter_a++;
        spin_us(10);
        wrap_unlock(a);
        wrap_lock(b); /* CALL_B */
        counter_b++;
        spin_us(10);
        wrap_unlock(b);
    }
    return NULL;
}

int main(void)
{
    a = wrap_new(); /* NEW_A */
    b = wrap_new(); /* NEW_B */
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    return counter_a == (long)THREADS * ROUNDS && counter_b == (long)THREADS * ROUNDS ? 0 : 1;
}
