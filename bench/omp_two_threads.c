/*
 * OpenMP locks taken by both threads of one parallel region, for the
 * analysis benchmark (bench/openmp_analysis.sh): each of 2 threads takes
 * N omp_set_lock/omp_unset_lock pairs, 7 of 8 on its own lock and 1 of 8
 * on a lock both take (so some acquisitions wait). Prints the count.
 * Usage: omp_two_threads N
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    omp_lock_t lock[2];
    omp_init_lock(&lock[0]);
    omp_init_lock(&lock[1]);
    long taken = 0;
#pragma omp parallel num_threads(2) reduction(+ : taken)
    {
        int me = omp_get_thread_num();
        for (long i = 0; i < n; i++) {
            omp_lock_t *l = &lock[i % 8 == 0 ? 0 : me];
            omp_set_lock(l);
            taken++;
            omp_unset_lock(l);
        }
    }
    omp_destroy_lock(&lock[0]);
    omp_destroy_lock(&lock[1]);
    printf("acquisitions=%ld\n", taken);
    return 0;
}
