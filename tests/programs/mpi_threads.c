/*
 * MPI_THREAD_MULTIPLE under the recorder (4 ranks): each rank duplicates
 * MPI_COMM_WORLD twice (in its main thread, so every rank creates them in
 * the same order), then two threads each make ROUNDS MPI_Sendrecv ring
 * exchanges (to rank+1, from rank-1, tag = thread) on their own
 * communicator at the same time. Rank 0 prints the sum of what it
 * received; exit code 0 when every exchange carried the expected value.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>

#define ROUNDS 200

static int rank, size;
static MPI_Comm comms[2];
static long got[2];
static int bad;

static void *worker(void *arg)
{
    int t = (int)(long)arg;
    for (int i = 0; i < ROUNDS; i++) {
        int out = rank * 1000 + i, in = -1;
        MPI_Sendrecv(&out, 1, MPI_INT, (rank + 1) % size, t, &in, 1, MPI_INT,
                     (rank + size - 1) % size, t, comms[t], MPI_STATUS_IGNORE);
        if (in != ((rank + size - 1) % size) * 1000 + i)
            __atomic_store_n(&bad, 1, __ATOMIC_RELAXED);
        got[t] += in;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0)
            printf("mpi_threads: MPI_THREAD_MULTIPLE not provided\n");
        MPI_Finalize();
        return 3;
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[0]);
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
    pthread_t th[2];
    for (long t = 0; t < 2; t++)
        pthread_create(&th[t], NULL, worker, (void *)t);
    for (int t = 0; t < 2; t++)
        pthread_join(th[t], NULL);
    long mine = got[0] + got[1], total = 0;
    MPI_Reduce(&mine, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    int any_bad = 0;
    MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Comm_free(&comms[0]);
    MPI_Comm_free(&comms[1]);
    if (rank == 0)
        printf("mpi_threads total=%ld bad=%d\n", total, any_bad);
    MPI_Finalize();
    return any_bad;
}
