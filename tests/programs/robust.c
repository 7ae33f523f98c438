/*
 * robust: a robust mutex whose owner thread exits while holding it.
 *
 *   robust                 1, 2 and 4 below
 *   robust unrecoverable   3 below
 *
 *   1. owner thread locks and returns without unlocking;
 *   2. main locks -> EOWNERDEAD (main now owns it), makes it consistent,
 *      unlocks, locks again -> 0, unlocks;
 *   3. another owner dies holding it; main's trylock -> EOWNERDEAD, unlocks
 *      without pthread_mutex_consistent; the next locks and a final
 *      trylock -> ENOTRECOVERABLE. (With glibc 2.36, a pthread_mutex_lock
 *      that follows a pthread_mutex_trylock that returned ENOTRECOVERABLE
 *      blocks forever, so a wrapper must not call the real lock after such
 *      a try-lock.)
 *   4. a thread blocked in pthread_mutex_lock while the owner dies gets
 *      EOWNERDEAD.
 * Prints the return codes symbolically.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

pthread_mutex_t robust_lock;
pthread_mutex_t robust_lock2;

static const char *name(int rc)
{
    switch (rc) {
    case 0: return "0";
    case EOWNERDEAD: return "EOWNERDEAD";
    case ENOTRECOVERABLE: return "ENOTRECOVERABLE";
    case EPERM: return "EPERM";
    case EINVAL: return "EINVAL";
    case EBUSY: return "EBUSY";
    default: return "other";
    }
}

static void *die_holding(void *arg)
{
    pthread_mutex_t *m = arg;
    int rc = pthread_mutex_lock(m);
    printf("owner lock            rc=%s\n", name(rc));
    return NULL; /* exits holding m */
}

static atomic_int owner_holds;

static void *die_holding_later(void *arg)
{
    pthread_mutex_t *m = arg;
    pthread_mutex_lock(m);
    atomic_store(&owner_holds, 1);
    struct timespec d = {0, 50 * 1000 * 1000};
    nanosleep(&d, NULL);
    return NULL;
}

static void *blocked_waiter(void *arg)
{
    pthread_mutex_t *m = arg;
    int rc = pthread_mutex_lock(m);
    printf("blocked waiter lock   rc=%s\n", name(rc));
    if (rc == EOWNERDEAD)
        pthread_mutex_consistent(m);
    pthread_mutex_unlock(m);
    return NULL;
}

static void init(pthread_mutex_t *m)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(m, &a);
    pthread_mutexattr_destroy(&a);
}

int main(int argc, char **argv)
{
    init(&robust_lock);
    init(&robust_lock2);
    pthread_t t;

    if (argc > 1 && strcmp(argv[1], "unrecoverable") == 0) {
        pthread_create(&t, NULL, die_holding, &robust_lock);
        pthread_join(t, NULL);
        printf("trylock, owner died   rc=%s\n", name(pthread_mutex_trylock(&robust_lock)));
        printf("unlock inconsistent   rc=%s\n", name(pthread_mutex_unlock(&robust_lock)));
        printf("lock unrecoverable    rc=%s\n", name(pthread_mutex_lock(&robust_lock)));
        printf("lock unrecoverable    rc=%s\n", name(pthread_mutex_lock(&robust_lock)));
        /* Last: a lock after this try-lock would block forever (glibc). */
        printf("trylock unrecoverable rc=%s\n", name(pthread_mutex_trylock(&robust_lock)));
        return 0;
    }

    pthread_create(&t, NULL, die_holding, &robust_lock);
    pthread_join(t, NULL);
    printf("lock after owner died rc=%s\n", name(pthread_mutex_lock(&robust_lock)));
    printf("consistent            rc=%s\n", name(pthread_mutex_consistent(&robust_lock)));
    printf("unlock                rc=%s\n", name(pthread_mutex_unlock(&robust_lock)));
    printf("lock again            rc=%s\n", name(pthread_mutex_lock(&robust_lock)));
    printf("unlock                rc=%s\n", name(pthread_mutex_unlock(&robust_lock)));

    pthread_t owner, waiter;
    pthread_create(&owner, NULL, die_holding_later, &robust_lock2);
    /* the waiter starts only once the owner holds the lock (a fixed sleep
     * here let the waiter win the lock on a loaded machine) */
    struct timespec d = {0, 1000 * 1000};
    while (!atomic_load(&owner_holds))
        nanosleep(&d, NULL);
    pthread_create(&waiter, NULL, blocked_waiter, &robust_lock2);
    pthread_join(owner, NULL);
    pthread_join(waiter, NULL);
    printf("final lock            rc=%s\n", name(pthread_mutex_lock(&robust_lock2)));
    printf("final unlock          rc=%s\n", name(pthread_mutex_unlock(&robust_lock2)));
    return 0;
}
