/*
 * exit_holding: a worker thread calls exit(0) while other threads hold a
 * mutex, wait for it, and keep locking another one; the exit path (atexit
 * handlers, the collector's destructor) runs while they are still busy.
 * Prints one line, flushed, before exit(0).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t busy_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int holding, lockers_running;
static volatile long busy_count;

static void sleep_ms(long ms)
{
    struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&d, NULL);
}

static void *holder(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&held_lock);
    atomic_store(&holding, 1);
    for (;;)
        sleep_ms(1000);
    return NULL;
}

static void *waiter(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&held_lock); /* blocks until the process exits */
    pthread_mutex_unlock(&held_lock);
    return NULL;
}

static void *locker(void *arg)
{
    (void)arg;
    atomic_fetch_add(&lockers_running, 1);
    for (;;) {
        pthread_mutex_lock(&busy_lock);
        busy_count++;
        pthread_mutex_unlock(&busy_lock);
        sleep_ms(0);
    }
    return NULL;
}

static void *exiter(void *arg)
{
    (void)arg;
    while (!atomic_load(&holding) || atomic_load(&lockers_running) < 2)
        sleep_ms(1);
    sleep_ms(50);
    printf("exiting from a worker thread while others hold and wait\n");
    fflush(stdout);
    exit(0);
}

int main(void)
{
    pthread_t t[5];
    pthread_create(&t[0], NULL, holder, NULL);
    while (!atomic_load(&holding))
        sleep_ms(1);
    pthread_create(&t[1], NULL, waiter, NULL);
    pthread_create(&t[2], NULL, locker, NULL);
    pthread_create(&t[3], NULL, locker, NULL);
    pthread_create(&t[4], NULL, exiter, NULL);
    pthread_join(t[4], NULL); /* never returns: the exiter ends the process */
    printf("not reached\n");
    return 1;
}
