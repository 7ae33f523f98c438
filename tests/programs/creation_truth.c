/*
 * creation_truth: what a lock's creation record costs, measured by the
 * program itself, for the test that the recording-cost estimate's slow
 * path counts it (docs/metrics.md, "Recording cost").
 *
 *   creation_truth [MUTEXES [ROUNDS]]   (defaults 2000 and 5)
 *
 * One thread, ROUNDS rounds; in each, MUTEXES fresh mutexes (never
 * initialised at that address before) are initialised through
 * pthread_mutex_init as the program calls it (interposed by the
 * collector, which writes a creation record with the call stack), and as
 * many through glibc's own pthread_mutex_init (looked up in libc.so.6, so
 * never recorded), each batch timed with the thread's CPU clock. Prints
 * one JSON line: the thread's id, the creations made through the
 * interposed function, and the CPU time of each kind in all rounds (ns).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double cpu_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* Four calls below main, as a library's constructor of a lock would be. */
__attribute__((noinline)) static void init_one(int (*init)(pthread_mutex_t *,
                                                           const pthread_mutexattr_t *),
                                               pthread_mutex_t *m)
{
    init(m, NULL);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static double init_all(int (*init)(pthread_mutex_t *,
                                                             const pthread_mutexattr_t *),
                                                 pthread_mutex_t *m, long n)
{
    double t0 = cpu_ns();
    for (long i = 0; i < n; i++)
        init_one(init, &m[i]);
    return cpu_ns() - t0;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 2000;
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    if (n < 1 || rounds < 1) {
        fprintf(stderr, "creation_truth: bad arguments\n");
        return 2;
    }
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    int (*real)(pthread_mutex_t *, const pthread_mutexattr_t *) =
        libc ? (int (*)(pthread_mutex_t *, const pthread_mutexattr_t *))dlsym(
                   libc, "pthread_mutex_init")
             : NULL;
    if (!real) {
        fprintf(stderr, "creation_truth: glibc's pthread_mutex_init not found\n");
        return 1;
    }
    /* every round's mutexes at new addresses: a creation is recorded once
     * per address */
    pthread_mutex_t *all = calloc((size_t)(2 * n * rounds), sizeof *all);
    if (!all)
        return 1;
    double interposed = 0, direct = 0;
    for (int r = 0; r < rounds; r++) {
        pthread_mutex_t *m = all + 2 * n * r;
        interposed += init_all(pthread_mutex_init, m, n);
        direct += init_all(real, m + n, n);
    }
    printf("{\"tid\": %ld, \"creations\": %ld, \"interposed_ns\": %.0f, \"direct_ns\": %.0f}\n",
           (long)syscall(SYS_gettid), n * rounds, interposed, direct);
    free(all);
    return 0;
}
