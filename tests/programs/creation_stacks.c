/*
 * Creation stacks (crates/contend-cli/tests/e2e/creation_stacks.rs): a heap
 * mutex initialised two calls below main (main -> make_pool -> make_lock
 * -> pthread_mutex_init) and a static mutex first used one call below a
 * thread's start function (worker -> bump_stats -> pthread_mutex_lock).
 * Recorded without --stack-every, the report must still show each lock's
 * creation call stack. The marked lines are the frames the test expects.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define THREADS 2
#define ROUNDS 200

struct pool {
    pthread_mutex_t lock;
    long n;
};

static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static long stats;

static void spin_us(long us)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000 < us);
}

__attribute__((noinline)) static void make_lock(pthread_mutex_t *m)
{
    if (pthread_mutex_init(m, NULL) != 0) /* INIT */
        abort();
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static struct pool *make_pool(void)
{
    struct pool *p = calloc(1, sizeof *p);
    if (!p)
        abort();
    make_lock(&p->lock); /* MAKE_LOCK */
    p->n = 1;
    return p;
}

__attribute__((noinline)) static void bump_stats(void)
{
    pthread_mutex_lock(&stats_lock); /* FIRST_USE */
    stats++;
    pthread_mutex_unlock(&stats_lock);
    __asm__ volatile("" ::: "memory");
}

static void *worker(void *arg)
{
    struct pool *p = arg;
    for (int i = 0; i < ROUNDS; i++) {
        pthread_mutex_lock(&p->lock);
        p->n++;
        spin_us(10);
        pthread_mutex_unlock(&p->lock);
        bump_stats(); /* BUMP */
    }
    return NULL;
}

int main(void)
{
    struct pool *p = make_pool(); /* MAKE_POOL */
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, p);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("n=%ld stats=%ld\n", p->n, stats);
    return p->n == 1 + THREADS * ROUNDS && stats == THREADS * ROUNDS ? 0 : 1;
}
