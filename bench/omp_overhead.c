/*
 * What recording adds to OpenMP constructs (built with clang -fopenmp:
 * libomp, which calls the collector's OMPT tool; built with gcc -fopenmp:
 * libgomp, whose entry points the collector interposes): N uncontended
 * omp_set_lock + omp_unset_lock pairs on one thread, and R empty parallel
 * regions of 2 threads. Timed with omp_get_wtime; prints ns per pair and
 * µs per region. Usage: omp_overhead N R
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    long r = argc > 2 ? atol(argv[2]) : 10000;
    omp_lock_t lock;
    omp_init_lock(&lock);
    volatile long x = 0;
    double t0 = omp_get_wtime();
    for (long i = 0; i < n; i++) {
        omp_set_lock(&lock);
        x++;
        omp_unset_lock(&lock);
    }
    double t1 = omp_get_wtime();
    int joined = 0; /* regions the second thread took part in */
    for (long i = 0; i < r; i++) {
#pragma omp parallel num_threads(2)
        {
            if (omp_get_thread_num() == 1)
                __atomic_add_fetch(&joined, 1, __ATOMIC_RELAXED);
        }
    }
    double t2 = omp_get_wtime();
    omp_destroy_lock(&lock);
    printf("lock_pair_ns=%.2f region_us=%.3f teams_of_2=%d\n", (t1 - t0) * 1e9 / n,
           (t2 - t1) * 1e6 / r, joined);
    return 0;
}
