/*
 * A futex-heavy program for bench/futex_analysis.sh: THREADS (4) threads
 * take one hand-written futex lock (Drepper, "Futexes Are Tricky", mutex
 * 2, through glibc's syscall(SYS_futex, ...), which the collector
 * records) ITERATIONS times each around a short critical section, so the
 * recording holds many FUTEX_WAIT calls (most find the word changed on 2
 * CPUs) and FUTEX_WAKE calls. Prints the shared counter.
 *
 * Usage: futex_contended [ITERATIONS per thread, default 1000000]
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#define THREADS 4

static atomic_int word;
static long iterations;
static volatile long shared;

static void futex_wait(atomic_int *w, int v)
{
    syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);
}

static void futex_wake(atomic_int *w)
{
    syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* 0: free, 1: taken, 2: taken and maybe waited for */
static void lock(void)
{
    int c = 0;
    if (atomic_compare_exchange_strong(&word, &c, 1))
        return;
    if (c != 2)
        c = atomic_exchange(&word, 2);
    while (c != 0) {
        futex_wait(&word, 2);
        c = atomic_exchange(&word, 2);
    }
}

static void unlock(void)
{
    if (atomic_fetch_sub(&word, 1) != 1) {
        atomic_store(&word, 0);
        futex_wake(&word);
    }
}

static void *worker(void *arg)
{
    (void)arg;
    for (long i = 0; i < iterations; i++) {
        lock();
        for (int k = 0; k < 50; k++)
            shared = shared + 1;
        unlock();
    }
    return NULL;
}

int main(int argc, char **argv)
{
    iterations = argc > 1 ? atol(argv[1]) : 1000000;
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&t[i], NULL, worker, NULL) != 0)
            return 1;
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("%ld\n", shared);
    return 0;
}
