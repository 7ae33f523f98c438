/* Regression program: an MPICH program run with the LOCK collector
 * preloaded (plain `contend record`, no --mpi). MPICH 4 on Debian uses UCX,
 * whose UCM patches mmap/munmap/madvise in every loaded object and takes its
 * own rwlock around them; the collector's chunk mappings, made inside a lock
 * wrapper while UCX held that rwlock for writing, made every rank abort with
 * "UCX FATAL pthread_rwlock_rdlock() failed: Resource deadlock avoided".
 * Each rank does enough lock traffic (through MPI and its own mutex) to need
 * several trace chunks. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long sum = 0;
    for (int i = 0; i < 200; i++) {
        /* allocations of a size UCM tracks (mmap threshold and above) */
        char *buf = malloc(1 << 20);
        buf[0] = (char)i;
        for (int j = 0; j < 100; j++) {
            pthread_mutex_lock(&m);
            sum += buf[0];
            pthread_mutex_unlock(&m);
        }
        free(buf);
        MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    printf("rank %d of %d done\n", rank, size);
    MPI_Finalize();
    return 0;
}
