/*
 * Two threads that name themselves ("spinner-a", "spinner-b") and then,
 * forever, spin for about 2 ms and sleep for 20 ms, for `contend record -p`
 * (crates/contend-cli/tests/e2e/attach.rs: an attach recording keeps the
 * threads' names in threads.json and the exports name their tracks so).
 * Prints "ready" once both are named; ends when killed.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static pthread_barrier_t named;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void *spinner(void *arg)
{
    pthread_setname_np(pthread_self(), (const char *)arg);
    pthread_barrier_wait(&named);
    for (;;) {
        double end = now_s() + 0.002;
        while (now_s() < end)
            ;
        usleep(20000);
    }
    return NULL;
}

int main(void)
{
    pthread_t t[2];
    pthread_barrier_init(&named, NULL, 3);
    pthread_create(&t[0], NULL, spinner, "spinner-a");
    pthread_create(&t[1], NULL, spinner, "spinner-b");
    pthread_barrier_wait(&named);
    printf("ready\n");
    fflush(stdout);
    for (;;)
        pause();
}
