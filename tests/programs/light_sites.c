/*
 * light_sites: known numbers of acquisitions per call site and thread, for
 * the tests of `contend record --light` (uncontended acquisitions counted
 * per object, call site and thread; contended ones recorded).
 *
 *   light_sites [THREADS [ITERATIONS]]
 *
 * Each thread does ITERATIONS times: lock + unlock `shared` in site_a();
 * every third iteration also in site_b(); every iteration also lock +
 * unlock its own `private` mutex in site_private() (never contended) and
 * sem_wait + sem_post its own semaphore in site_sem(). The threads hammer
 * `shared` together, so some of its acquisitions are contended and some
 * not. Prints the expected counts as one JSON line:
 *   {"threads":T,"a":T*I,"b":T*ceil(I/3),"private":T*I,"sem":T*I}
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>

pthread_mutex_t shared = PTHREAD_MUTEX_INITIALIZER;

struct worker {
    pthread_mutex_t private;
    sem_t sem;
    int iterations;
};

static volatile unsigned long sink;

__attribute__((noinline)) static void site_a(void)
{
    pthread_mutex_lock(&shared);
    sink++;
    pthread_mutex_unlock(&shared);
}

__attribute__((noinline)) static void site_b(void)
{
    pthread_mutex_lock(&shared);
    sink += 2;
    pthread_mutex_unlock(&shared);
}

__attribute__((noinline)) static void site_private(struct worker *w)
{
    pthread_mutex_lock(&w->private);
    sink += 3;
    pthread_mutex_unlock(&w->private);
}

__attribute__((noinline)) static void site_sem(struct worker *w)
{
    sem_wait(&w->sem);
    sink += 4;
    sem_post(&w->sem);
}

static void *run(void *arg)
{
    struct worker *w = arg;
    for (int i = 0; i < w->iterations; i++) {
        site_a();
        if (i % 3 == 0)
            site_b();
        site_private(w);
        site_sem(w);
        for (int k = 0; k < 50; k++)
            sink += (unsigned long)k;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 4;
    int iterations = argc > 2 ? atoi(argv[2]) : 10000;
    if (threads < 1 || threads > 256 || iterations < 1) {
        fprintf(stderr, "usage: %s [THREADS [ITERATIONS]]\n", argv[0]);
        return 2;
    }
    pthread_t tid[256];
    struct worker *w = calloc((size_t)threads, sizeof *w);
    if (!w)
        return 1;
    for (int t = 0; t < threads; t++) {
        pthread_mutex_init(&w[t].private, NULL);
        sem_init(&w[t].sem, 0, 1);
        w[t].iterations = iterations;
        if (pthread_create(&tid[t], NULL, run, &w[t]) != 0) {
            perror("pthread_create");
            return 1;
        }
    }
    for (int t = 0; t < threads; t++)
        pthread_join(tid[t], NULL);
    long n = (long)threads * iterations;
    long b = (long)threads * ((iterations + 2) / 3);
    printf("{\"threads\":%d,\"a\":%ld,\"b\":%ld,\"private\":%ld,\"sem\":%ld}\n", threads, n, b, n, n);
    free(w);
    return 0;
}
