/*
 * A scripted MPI program for the recorder's end-to-end test (4 ranks).
 * Every call it makes is known, so the test can check the trace event by
 * event. Rank 0 prints one line with values every rank contributed; the
 * exit code is 0.
 *
 *   1. ring: Isend 8 ints to (r+1)%4 tag 10+r, Irecv from MPI_ANY_SOURCE
 *      with MPI_ANY_TAG, Waitall with MPI_STATUSES_IGNORE
 *   2. rank 0 Send 100 doubles to rank 1 tag 5; rank 1 Recv from
 *      MPI_ANY_SOURCE with MPI_STATUS_IGNORE
 *   3. Comm_split(color r%2, key -r): {2,0} and {3,1} (local rank 0 is the
 *      higher world rank); local 0 Ssend one int to local 1 tag 7, local 1
 *      Recv it with a status
 *   4. Barrier, Allreduce (sum of ranks), Bcast from root 1
 *   5. rank 3 Isend to rank 2 tag 9; rank 2 Irecv it and polls with Test;
 *      rank 3 Waits with MPI_STATUS_IGNORE
 *   6. Sendrecv ring (tag 11), Comm_free, Finalize
 *
 * With argument "abort": after step 1, rank 3 blocks in a Recv that no one
 * matches, rank 1 calls MPI_Abort(MPI_COMM_WORLD, 3) after 300 ms; the
 * others wait in a Barrier.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 4) {
        if (rank == 0)
            fprintf(stderr, "mpi_events needs 4 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    /* 1 */
    int out[8], in[8];
    for (int i = 0; i < 8; i++)
        out[i] = rank * 100 + i;
    MPI_Request rq[2];
    MPI_Isend(out, 8, MPI_INT, (rank + 1) % 4, 10 + rank, MPI_COMM_WORLD, &rq[0]);
    MPI_Irecv(in, 8, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &rq[1]);
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    int ring_from = in[0] / 100;

    if (argc > 1 && strcmp(argv[1], "abort") == 0) {
        if (rank == 3) {
            int x;
            MPI_Recv(&x, 1, MPI_INT, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            sleep_ms(300);
            MPI_Abort(MPI_COMM_WORLD, 3);
        } else {
            MPI_Barrier(MPI_COMM_WORLD);
        }
        return 1; /* not reached */
    }

    /* 2 */
    double d[100];
    if (rank == 0) {
        for (int i = 0; i < 100; i++)
            d[i] = i * 0.5;
        MPI_Send(d, 100, MPI_DOUBLE, 1, 5, MPI_COMM_WORLD);
    } else if (rank == 1) {
        MPI_Recv(d, 100, MPI_DOUBLE, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }

    /* 3 */
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
    int hrank;
    MPI_Comm_rank(half, &hrank);
    int token = rank;
    MPI_Status st;
    memset(&st, 0, sizeof st);
    if (hrank == 0)
        MPI_Ssend(&token, 1, MPI_INT, 1, 7, half);
    else
        MPI_Recv(&token, 1, MPI_INT, 0, 7, half, &st);

    /* 4 */
    MPI_Barrier(MPI_COMM_WORLD);
    int sum = 0;
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int b = rank == 1 ? 4242 : 0;
    MPI_Bcast(&b, 1, MPI_INT, 1, MPI_COMM_WORLD);

    /* 5 */
    if (rank == 3) {
        int v = 333;
        MPI_Request r;
        MPI_Isend(&v, 1, MPI_INT, 2, 9, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    } else if (rank == 2) {
        int v = 0, flag = 0;
        MPI_Request r;
        MPI_Irecv(&v, 1, MPI_INT, 3, 9, MPI_COMM_WORLD, &r);
        while (!flag)
            MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
    }

    /* 6 */
    int sr_in = -1;
    MPI_Sendrecv(&rank, 1, MPI_INT, (rank + 1) % 4, 11, &sr_in, 1, MPI_INT, (rank + 3) % 4, 11,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Comm_free(&half);

    int all[4];
    int mine = ring_from * 1000 + token * 100 + sr_in * 10 + (b == 4242);
    MPI_Gather(&mine, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("mpi_events sum=%d values=%d,%d,%d,%d source_tag=%d,%d\n", sum, all[0], all[1],
               all[2], all[3], st.MPI_SOURCE, st.MPI_TAG);
    MPI_Finalize();
    return 0;
}
