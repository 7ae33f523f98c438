/*
 * errorcheck: error returns of error-checking and recursive mutexes must
 * come back unchanged through the collector, and errno must not change
 * (pthread functions do not set errno; a sentinel value is checked).
 * Prints one line per call: what, return code (symbolic), errno intact.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define SENTINEL 12345

static pthread_mutex_t ec;
static pthread_mutex_t rec;

static const char *name(int rc)
{
    switch (rc) {
    case 0: return "0";
    case EDEADLK: return "EDEADLK";
    case EPERM: return "EPERM";
    case EBUSY: return "EBUSY";
    case EINVAL: return "EINVAL";
    case EAGAIN: return "EAGAIN";
    default: return "other";
    }
}

static void show(const char *what, int rc)
{
    int e = errno;
    printf("%-28s rc=%-8s errno_intact=%d\n", what, name(rc), e == SENTINEL);
    errno = SENTINEL;
}

static void *other_thread(void *arg)
{
    (void)arg;
    errno = SENTINEL;
    show("ec unlock by non-owner", pthread_mutex_unlock(&ec));
    show("ec trylock by non-owner", pthread_mutex_trylock(&ec));
    show("rec unlock by non-owner", pthread_mutex_unlock(&rec));
    return NULL;
}

int main(void)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(&ec, &a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&rec, &a);
    pthread_mutexattr_destroy(&a);

    errno = SENTINEL;
    show("ec unlock unlocked", pthread_mutex_unlock(&ec));
    show("ec lock", pthread_mutex_lock(&ec));
    show("ec relock", pthread_mutex_lock(&ec));
    show("ec trylock by owner", pthread_mutex_trylock(&ec));
    show("rec lock 1", pthread_mutex_lock(&rec));
    show("rec lock 2", pthread_mutex_lock(&rec));
    show("rec trylock 3", pthread_mutex_trylock(&rec));

    pthread_t t;
    pthread_create(&t, NULL, other_thread, NULL);
    pthread_join(t, NULL);

    errno = SENTINEL;
    show("ec unlock", pthread_mutex_unlock(&ec));
    show("ec unlock again", pthread_mutex_unlock(&ec));
    show("rec unlock 3", pthread_mutex_unlock(&rec));
    show("rec unlock 2", pthread_mutex_unlock(&rec));
    show("rec unlock 1", pthread_mutex_unlock(&rec));
    show("rec unlock extra", pthread_mutex_unlock(&rec));

    pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
    show("rw wrlock", pthread_rwlock_wrlock(&rw));
    show("rw wrlock by owner", pthread_rwlock_wrlock(&rw));
    show("rw rdlock by writer", pthread_rwlock_rdlock(&rw));
    show("rw tryrdlock by writer", pthread_rwlock_tryrdlock(&rw));
    show("rw unlock", pthread_rwlock_unlock(&rw));

    pthread_spinlock_t sp;
    pthread_spin_init(&sp, PTHREAD_PROCESS_PRIVATE);
    show("spin lock", pthread_spin_lock(&sp));
    show("spin trylock held", pthread_spin_trylock(&sp));
    show("spin unlock", pthread_spin_unlock(&sp));
    pthread_spin_destroy(&sp);

    show("ec destroy", pthread_mutex_destroy(&ec));
    show("rec destroy", pthread_mutex_destroy(&rec));
    return 0;
}
