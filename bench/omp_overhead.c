/*
 * What recording adds to OpenMP constructs (built with clang -fopenmp:
 * libomp, which calls the collector's OMPT tool; built with gcc -fopenmp:
 * libgomp, whose entry points the collector interposes): N uncontended
 * omp_set_lock + omp_unset_lock pairs on one thread, and R empty parallel
 * regions of 2 threads. Timed with omp_get_wtime, and in CPU time: the
 * lock pairs with the thread's (CLOCK_THREAD_CPUTIME_ID), the regions with
 * the process's (CLOCK_PROCESS_CPUTIME_ID: both team threads, their
 * spin-waits included); time another program holds the CPUs is not
 * counted. Prints ns per pair and µs per region. Usage: omp_overhead N R
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu_s(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    long r = argc > 2 ? atol(argv[2]) : 10000;
    omp_lock_t lock;
    omp_init_lock(&lock);
    volatile long x = 0;
    double c0 = cpu_s(CLOCK_THREAD_CPUTIME_ID);
    double t0 = omp_get_wtime();
    for (long i = 0; i < n; i++) {
        omp_set_lock(&lock);
        x++;
        omp_unset_lock(&lock);
    }
    double t1 = omp_get_wtime();
    double c1 = cpu_s(CLOCK_THREAD_CPUTIME_ID);
    double p1 = cpu_s(CLOCK_PROCESS_CPUTIME_ID);
    int joined = 0; /* regions the second thread took part in */
    for (long i = 0; i < r; i++) {
#pragma omp parallel num_threads(2)
        {
            if (omp_get_thread_num() == 1)
                __atomic_add_fetch(&joined, 1, __ATOMIC_RELAXED);
        }
    }
    double t2 = omp_get_wtime();
    double p2 = cpu_s(CLOCK_PROCESS_CPUTIME_ID);
    omp_destroy_lock(&lock);
    printf("lock_pair_ns=%.2f region_us=%.3f teams_of_2=%d lock_pair_cpu_ns=%.2f "
           "region_cpu_us=%.3f\n",
           (t1 - t0) * 1e9 / n, (t2 - t1) * 1e6 / r, joined, (c1 - c0) * 1e9 / n,
           (p2 - p1) * 1e6 / r);
    return 0;
}
