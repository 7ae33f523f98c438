/*
 * rebuild_sites: locks that are global variables (an array of locks, a
 * struct member, a plain mutex) used from named functions at marked lines.
 * The rebuild test records it, rebuilds it with lines added above the
 * functions (every call site moves), and reports the old recording: the
 * sites must still be the lines below, or be plainly unresolved.
 *
 * Two threads take stripe_locks[6] in hot_section() 20 times each and hold
 * it 1 ms, so that lock waits; the other locks are taken uncontended.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <time.h>

static pthread_mutex_t stripe_locks[8] = {
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER};

struct table {
    long count;
    pthread_mutex_t lock;
};
static struct table table = {0, PTHREAD_MUTEX_INITIALIZER};
static pthread_mutex_t plain = PTHREAD_MUTEX_INITIALIZER;

static void __attribute__((noinline)) hot_section(void)
{
    struct timespec ms = {0, 1000000};
    pthread_mutex_lock(&stripe_locks[6]); /* SITE hot */
    nanosleep(&ms, NULL);
    pthread_mutex_unlock(&stripe_locks[6]);
}

static void __attribute__((noinline)) cold_section(void)
{
    pthread_mutex_lock(&stripe_locks[0]); /* SITE first */
    pthread_mutex_unlock(&stripe_locks[0]);
    pthread_mutex_lock(&table.lock); /* SITE member */
    table.count++;
    pthread_mutex_unlock(&table.lock);
    pthread_mutex_lock(&plain); /* SITE plain */
    pthread_mutex_unlock(&plain);
}

static void *worker(void *arg)
{
    for (int i = 0; i < 20; i++) {
        hot_section();
        cold_section();
    }
    return arg;
}

int main(void)
{
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    printf("count=%ld\n", table.count);
    return 0;
}
