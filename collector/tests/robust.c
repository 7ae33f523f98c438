/* Robust mutex: the owner thread dies holding it; lock and trylock must
 * still return EOWNERDEAD (acquired), then ENOTRECOVERABLE if not made
 * consistent. Prints "ok". */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t m1, m2, m3;

static void *die_holding(void *arg)
{
    pthread_mutex_lock(arg);
    return NULL; /* thread exits holding the robust mutex */
}

static void init(pthread_mutex_t *m)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(m, &a);
    pthread_t t;
    pthread_create(&t, NULL, die_holding, m);
    pthread_join(t, NULL);
}

int main(void)
{
    int fails = 0;
    init(&m1);
    init(&m2);
    init(&m3);
    fails += pthread_mutex_lock(&m1) != EOWNERDEAD;
    fails += pthread_mutex_consistent(&m1) != 0;
    fails += pthread_mutex_unlock(&m1) != 0;
    fails += pthread_mutex_lock(&m1) != 0;
    fails += pthread_mutex_unlock(&m1) != 0;

    fails += pthread_mutex_trylock(&m2) != EOWNERDEAD;
    fails += pthread_mutex_unlock(&m2) != 0; /* not made consistent */
    fails += pthread_mutex_lock(&m2) != ENOTRECOVERABLE;
    fails += pthread_mutex_trylock(&m2) != ENOTRECOVERABLE;

    struct timespec ts = {0, 0};
    fails += pthread_mutex_timedlock(&m3, &ts) != EOWNERDEAD;
    fails += pthread_mutex_unlock(&m3) != 0;
    printf(fails ? "FAIL %d\n" : "ok\n", fails);
    return fails != 0;
}
