/*
 * ctor_lock: takes mutexes before main runs, in a constructor of the
 * executable (priority 101, the earliest a program may use) and, when built
 * as a library, in the library's constructor, which the dynamic loader runs
 * before the executable's and possibly before the collector's own.
 *
 * Built twice by the tests:
 *   cc -shared -fPIC -DCTOR_LIB -o libctorlock.so ctor_lock.c
 *   cc -DCTOR_WITH_LIB -o ctor_lock ctor_lock.c -L. -lctorlock -Wl,-rpath,'$ORIGIN'
 * or alone (without -DCTOR_WITH_LIB) for the executable constructor only.
 * The output is deterministic.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>

#ifdef CTOR_LIB

pthread_mutex_t lib_lock = PTHREAD_MUTEX_INITIALIZER;
static int lib_count;

__attribute__((constructor)) static void lib_ctor(void)
{
    for (int i = 0; i < 10; i++) {
        pthread_mutex_lock(&lib_lock);
        lib_count++;
        pthread_mutex_unlock(&lib_lock);
    }
}

int ctor_lib_count(void)
{
    pthread_mutex_lock(&lib_lock);
    int n = lib_count;
    pthread_mutex_unlock(&lib_lock);
    return n;
}

#else

#ifdef CTOR_WITH_LIB
int ctor_lib_count(void);
#endif

pthread_mutex_t ctor_lock = PTHREAD_MUTEX_INITIALIZER;
static int ctor_count;
static int ctor_trylock_rc = -1;

__attribute__((constructor(101))) static void early_ctor(void)
{
    for (int i = 0; i < 10; i++) {
        pthread_mutex_lock(&ctor_lock);
        ctor_count++;
        pthread_mutex_unlock(&ctor_lock);
    }
    ctor_trylock_rc = pthread_mutex_trylock(&ctor_lock);
    if (ctor_trylock_rc == 0)
        pthread_mutex_unlock(&ctor_lock);
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < 100; i++) {
        pthread_mutex_lock(&ctor_lock);
        ctor_count++;
        pthread_mutex_unlock(&ctor_lock);
    }
    return NULL;
}

int main(void)
{
    printf("ctor: count=%d trylock=%d\n", ctor_count, ctor_trylock_rc);
#ifdef CTOR_WITH_LIB
    printf("lib ctor: count=%d\n", ctor_lib_count());
#endif
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    worker(NULL);
    pthread_join(t, NULL);
    printf("main: count=%d\n", ctor_count);
    return 0;
}

#endif
