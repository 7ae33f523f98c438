/*
 * chunk_windows: exercises how the lock collector hands out trace chunks
 * (collector.c, "Mapping windows"): LONG long-lived threads, each taking
 * long_lock once and then waiting, with SHORT short-lived threads between
 * two of them (each takes short_lock once and exits), so that every
 * window of 32 chunks keeps one live chunk while its others are released,
 * and more windows stay mapped than the collector keeps slots for (the
 * claims beyond map their chunk alone); meanwhile one writer thread takes
 * writer_lock WRITES times, running through the lazily zeroed part of its
 * chunks and through several chunks. Then the long-lived threads take
 * long_lock once more and exit. Prints the counts; the events are
 * LONG * 2 on long_lock, LONG * SHORT on short_lock, WRITES on
 * writer_lock.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define LONG 70
#define SHORT 31
#define WRITES 20000

pthread_mutex_t long_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t short_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t writer_lock = PTHREAD_MUTEX_INITIALIZER;
static long long_count, short_count, writer_count;
static int started, go;

static void pause_briefly(void)
{
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
}

static void *long_lived(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&long_lock);
    long_count++;
    pthread_mutex_unlock(&long_lock);
    __atomic_fetch_add(&started, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
        pause_briefly();
    pthread_mutex_lock(&long_lock);
    long_count++;
    pthread_mutex_unlock(&long_lock);
    return NULL;
}

static void *short_lived(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&short_lock);
    short_count++;
    pthread_mutex_unlock(&short_lock);
    return NULL;
}

static void *writer(void *arg)
{
    (void)arg;
    for (int i = 0; i < WRITES; i++) {
        pthread_mutex_lock(&writer_lock);
        writer_count++;
        pthread_mutex_unlock(&writer_lock);
    }
    return NULL;
}

int main(void)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    pthread_t longs[LONG], w;
    if (pthread_create(&w, &attr, writer, NULL) != 0)
        return 1;
    for (int i = 0; i < LONG; i++) {
        if (pthread_create(&longs[i], &attr, long_lived, NULL) != 0)
            return 1;
        while (__atomic_load_n(&started, __ATOMIC_ACQUIRE) <= i)
            pause_briefly();
        for (int j = 0; j < SHORT; j++) {
            pthread_t s;
            if (pthread_create(&s, &attr, short_lived, NULL) != 0 || pthread_join(s, NULL) != 0)
                return 1;
        }
    }
    __atomic_store_n(&go, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < LONG; i++)
        pthread_join(longs[i], NULL);
    pthread_join(w, NULL);
    printf("long=%ld short=%ld writer=%ld\n", long_count, short_count, writer_count);
    return 0;
}
