/*
 * Cost of the creation records' call stacks (bench/creation_cost.sh):
 * creates N heap mutexes with pthread_mutex_init four calls below main and
 * N statically initialised ones first used there (each locked and unlocked
 * once), and prints the process's CPU time at main's entry (the dynamic
 * loader and the constructors: the collector loads the unwinder there) and
 * the CPU time per created and per first-used mutex.
 *
 *   creation_cost N
 * Prints: start_cpu_us=<us> init_ns=<ns per init+lock+unlock>
 *         first_use_ns=<ns per first lock+unlock>
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

__attribute__((noinline)) static void make(pthread_mutex_t *m)
{
    pthread_mutex_init(m, NULL);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void make2(pthread_mutex_t *m)
{
    make(m);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void make3(pthread_mutex_t *m)
{
    make2(m);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void touch(pthread_mutex_t *m)
{
    pthread_mutex_lock(m);
    pthread_mutex_unlock(m);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void touch2(pthread_mutex_t *m)
{
    touch(m);
    __asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
    double start = cpu_ns();
    long n = argc > 1 ? atol(argv[1]) : 20000;
    pthread_mutex_t *a = calloc((size_t)n, sizeof *a);
    pthread_mutex_t *b = calloc((size_t)n, sizeof *b);
    if (!a || !b)
        return 1;
    double t0 = cpu_ns();
    for (long i = 0; i < n; i++) {
        make3(&a[i]);
        touch2(&a[i]);
    }
    double t1 = cpu_ns();
    pthread_mutex_t init = PTHREAD_MUTEX_INITIALIZER;
    for (long i = 0; i < n; i++)
        b[i] = init;
    double t2 = cpu_ns();
    for (long i = 0; i < n; i++)
        touch2(&b[i]);
    double t3 = cpu_ns();
    printf("start_cpu_us=%.1f init_ns=%.1f first_use_ns=%.1f\n", start / 1e3, (t1 - t0) / n,
           (t3 - t2) / n);
    return 0;
}
