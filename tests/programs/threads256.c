/*
 * threads256: 256 threads (or argv[1]) each take a shared mutex 100 times
 * and increment a counter; prints the counter, which is deterministic.
 * Small thread stacks keep the memory footprint low.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define ROUNDS 100

pthread_mutex_t counter_lock = PTHREAD_MUTEX_INITIALIZER;
static long counter;

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        pthread_mutex_lock(&counter_lock);
        counter++;
        pthread_mutex_unlock(&counter_lock);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 256;
    if (n < 1 || n > 4096)
        return 2;
    pthread_t *t = calloc((size_t)n, sizeof *t);
    if (!t)
        return 1;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    int started = 0;
    for (int i = 0; i < n; i++) {
        if (pthread_create(&t[i], &attr, worker, NULL) != 0) {
            fprintf(stderr, "pthread_create failed at thread %d\n", i);
            break;
        }
        started++;
    }
    for (int i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    pthread_attr_destroy(&attr);
    printf("threads=%d counter=%ld expected=%ld\n", started, counter, (long)n * ROUNDS);
    free(t);
    return started == n && counter == (long)n * ROUNDS ? 0 : 1;
}
