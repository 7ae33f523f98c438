/*
 * MPI_Abort (4 ranks): an MPI_Barrier that rank 2 enters DELAY ms late
 * (argument 1, default 50), then rank 1 calls MPI_Abort(MPI_COMM_WORLD, 3)
 * after another DELAY ms while rank 0 waits in MPI_Recv for a message
 * from rank 1 that never comes and ranks 2 and 3 wait in a second
 * MPI_Barrier. The launcher ends the job (exit status not 0).
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdlib.h>
#include <time.h>

static void sleep_ms(double ms)
{
    struct timespec t = {(time_t)(ms / 1000), (long)((ms - 1000 * (time_t)(ms / 1000)) * 1e6)};
    while (nanosleep(&t, &t) != 0) {
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, x = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double delay = argc > 1 ? atof(argv[1]) : 50.0;
    if (rank == 2)
        sleep_ms(delay);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        sleep_ms(delay);
        MPI_Abort(MPI_COMM_WORLD, 3);
    } else if (rank == 0) {
        MPI_Recv(&x, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
