/*
 * crash: ends abnormally after some lock operations.
 *
 *   crash segv    200 lock/unlock pairs in two threads, then a NULL store:
 *                 SIGSEGV (exit by signal 11)
 *   crash spin    prints "pid=<pid>" (flushed), then keeps two threads
 *                 taking a mutex (one sleeping 100 us between rounds) until
 *                 it is killed; for tests that SIGKILL the target
 *   crash abort   200 lock/unlock pairs, then abort() (signal 6)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

pthread_mutex_t crash_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile long count;

static void *locker(void *arg)
{
    long n = (long)arg;
    for (long i = 0; n < 0 || i < n; i++) {
        pthread_mutex_lock(&crash_lock);
        count++;
        pthread_mutex_unlock(&crash_lock);
        if (n < 0) {
            struct timespec d = {0, 100 * 1000};
            nanosleep(&d, NULL);
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "segv";
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core); /* no core file from the crash */
    pthread_t t;
    if (strcmp(mode, "spin") == 0) {
        pthread_create(&t, NULL, locker, (void *)-1L);
        printf("pid=%d\n", (int)getpid());
        fflush(stdout);
        locker((void *)-1L);
        return 0;
    }
    pthread_create(&t, NULL, locker, (void *)100L);
    locker((void *)100L);
    pthread_join(t, NULL);
    printf("count=%ld\n", count);
    fflush(stdout);
    if (strcmp(mode, "abort") == 0)
        abort();
    /* Hold the lock while crashing: the trace then ends with it held. */
    pthread_mutex_lock(&crash_lock);
    volatile int *volatile p = NULL;
    *p = 1;
    return 0;
}
