/*
 * Heap locks named by where they were created (crates/contend-cli/tests/
 * e2e/heap_locks.rs). Usage: heap_locks [PAD]: allocates PAD bytes first,
 * so two runs with different PAD have their locks at different heap
 * addresses whatever ASLR does. Then, in a cache-like struct on the heap:
 *   - a mutex created by pthread_mutex_init (line marked INIT_MUTEX);
 *   - an rwlock created by pthread_rwlock_init (INIT_RWLOCK);
 *   - a mutex set from PTHREAD_MUTEX_INITIALIZER, never passed to an init
 *     function, first used by the line marked FIRST_USE;
 * and THREADS threads contend on all three. Prints the three addresses.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define THREADS 3
#define ROUNDS 300

struct cache {
    long hits;
    pthread_mutex_t lock;
    pthread_rwlock_t table_lock;
    pthread_mutex_t stats_lock;
    long stats;
};

static void spin_us(long us)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000 < us);
}

static struct cache *cache_new(void)
{
    struct cache *c = calloc(1, sizeof *c);
    if (!c)
        abort();
    pthread_mutex_init(&c->lock, NULL); /* INIT_MUTEX */
    pthread_rwlock_init(&c->table_lock, NULL); /* INIT_RWLOCK */
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    memcpy(&c->stats_lock, &fresh, sizeof fresh);
    return c;
}

static void *worker(void *arg)
{
    struct cache *c = arg;
    for (int i = 0; i < ROUNDS; i++) {
        pthread_mutex_lock(&c->lock);
        c->hits++;
        spin_us(20);
        pthread_mutex_unlock(&c->lock);
        pthread_rwlock_wrlock(&c->table_lock);
        spin_us(10);
        pthread_rwlock_unlock(&c->table_lock);
        pthread_mutex_lock(&c->stats_lock); /* FIRST_USE */
        c->stats++;
        spin_us(10);
        pthread_mutex_unlock(&c->stats_lock);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    size_t pad = argc > 1 ? strtoul(argv[1], NULL, 10) : 0;
    volatile char *padding = pad ? malloc(pad) : NULL;
    if (padding)
        padding[0] = 1;
    struct cache *c = cache_new();
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, c);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("lock=%p table_lock=%p stats_lock=%p hits=%ld\n", (void *)&c->lock,
           (void *)&c->table_lock, (void *)&c->stats_lock, c->hits);
    return 0;
}
