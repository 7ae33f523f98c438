/*
 * Threads that name themselves (issue 9: thread tracks named as the kernel
 * names them). Worker "nm-before" names itself with pthread_setname_np
 * before its first lock, "nm-after" after its first lock (its first chunk
 * is already claimed then), "nm-prctl" with prctl(PR_SET_NAME) after its
 * first lock, and "nm-by-main" is named by the main thread while it waits
 * on a barrier after its first locks (it stores that name at its exit: a
 * crash before loses it). Every worker takes a shared mutex a
 * few times after naming, so all four have lock events.
 *
 * Usage: thread_names [crash]   ("crash": the process ends with SIGKILL
 * right after the names are given, before any thread exits, so only what
 * was stored at once survives).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t named; /* workers and main: every name given */
static pthread_barrier_t first; /* nm-by-main took its first locks     */
static pthread_barrier_t go;    /* main named nm-by-main               */
static long counter;

static void work(int n)
{
    for (int i = 0; i < n; i++) {
        pthread_mutex_lock(&lock);
        counter++;
        usleep(100);
        pthread_mutex_unlock(&lock);
    }
}

static void *before(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "nm-before");
    work(20);
    pthread_barrier_wait(&named);
    return NULL;
}

static void *after(void *arg)
{
    (void)arg;
    work(5);
    pthread_setname_np(pthread_self(), "nm-after");
    work(20);
    pthread_barrier_wait(&named);
    return NULL;
}

static void *by_prctl(void *arg)
{
    (void)arg;
    work(5);
    prctl(PR_SET_NAME, "nm-prctl", 0, 0, 0);
    work(20);
    pthread_barrier_wait(&named);
    return NULL;
}

static void *by_main(void *arg)
{
    (void)arg;
    work(5);
    pthread_barrier_wait(&first);
    pthread_barrier_wait(&go);
    work(20);
    pthread_barrier_wait(&named);
    return NULL;
}

int main(int argc, char **argv)
{
    int crash = argc > 1 && strcmp(argv[1], "crash") == 0;
    pthread_barrier_init(&named, NULL, 5);
    pthread_barrier_init(&first, NULL, 2);
    pthread_barrier_init(&go, NULL, 2);
    pthread_t t[4];
    void *(*fn[4])(void *) = {before, after, by_prctl, by_main};
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, fn[i], NULL);
    pthread_barrier_wait(&first);
    pthread_setname_np(t[3], "nm-by-main");
    pthread_barrier_wait(&go);
    pthread_barrier_wait(&named);
    if (crash)
        kill(getpid(), SIGKILL);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    printf("counter=%ld\n", counter);
    return 0;
}
