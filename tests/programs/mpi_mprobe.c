/*
 * mpi_mprobe: receives through matched probes and blocking probes, with a
 * late sender of known size (4 ranks).
 *
 * Every phase starts with MPI_Barrier; then a sender sleeps DELAY ms
 * (argument 1, default 100) before MPI_Send, and the receiver, already
 * blocked in a probe, measures with MPI_Wtime how long the probe blocked:
 *
 *   0. every rank: MPI_Mprobe(MPI_PROC_NULL) returns MPI_MESSAGE_NO_PROC,
 *      MPI_Mrecv of it receives nothing (no wait, no message)
 *   1. rank 0 late -> rank 1: MPI_Mprobe + MPI_Mrecv   (measured: Mprobe)
 *      meanwhile rank 3 late -> rank 2: MPI_Improbe polled every 2 ms,
 *      then MPI_Imrecv + MPI_Wait (a non-blocking probe: no wait state)
 *   2. rank 0 late -> rank 1: MPI_Mprobe + MPI_Imrecv + MPI_Wait
 *      (measured: Mprobe)
 *   3. rank 0 late -> rank 1: MPI_Probe + MPI_Recv     (measured: Probe)
 *
 * Rank 1 prints "self late_sender_ns=<sum> waits=3": what `contend report`
 * should find as the late-sender wait (docs/mpi-wait-states.md, "Late
 * sender at a blocking probe"). Every rank checks the payloads it received
 * and exits 1 on a wrong one.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void sleep_ms(double ms)
{
    struct timespec ts;
    ts.tv_sec = (time_t)(ms / 1000);
    ts.tv_nsec = (long)((ms - (double)ts.tv_sec * 1000) * 1e6);
    nanosleep(&ts, NULL);
}

static int bad;

static void check(int got, int want, const char *what)
{
    if (got != want) {
        fprintf(stderr, "mpi_mprobe: %s: got %d, want %d\n", what, got, want);
        bad = 1;
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 4) {
        if (rank == 0)
            fprintf(stderr, "mpi_mprobe needs 4 ranks (mpirun -np 4)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    double delay = argc > 1 ? atof(argv[1]) : 100.0;
    double waited = 0; /* rank 1: seconds blocked in the probes */
    int buf[4];
    MPI_Message msg;
    MPI_Status st;
    MPI_Request req;

    /* 0: MPI_PROC_NULL */
    MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &msg, &st);
    check(msg == MPI_MESSAGE_NO_PROC, 1, "MPI_Mprobe(MPI_PROC_NULL) gives MPI_MESSAGE_NO_PROC");
    MPI_Mrecv(buf, 4, MPI_INT, &msg, &st);
    check(st.MPI_SOURCE, MPI_PROC_NULL, "source of MPI_MESSAGE_NO_PROC");

    /* 1 */
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 || rank == 3) {
        int v[4] = {rank, 1, 2, 3};
        sleep_ms(delay);
        MPI_Send(v, 4, MPI_INT, rank == 0 ? 1 : 2, 11, MPI_COMM_WORLD);
    } else if (rank == 1) {
        double t0 = MPI_Wtime();
        MPI_Mprobe(0, 11, MPI_COMM_WORLD, &msg, &st);
        waited += MPI_Wtime() - t0;
        int n;
        MPI_Get_count(&st, MPI_INT, &n);
        check(n, 4, "count from MPI_Mprobe");
        MPI_Mrecv(buf, 4, MPI_INT, &msg, MPI_STATUS_IGNORE);
        check(buf[0], 0, "phase 1 payload");
    } else {
        int flag = 0, polls = 0;
        for (;;) {
            MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &msg, &st);
            if (flag)
                break;
            polls++;
            sleep_ms(2);
        }
        check(st.MPI_SOURCE, 3, "source from MPI_Improbe");
        check(polls > 0, 1, "MPI_Improbe polled before the message came");
        MPI_Imrecv(buf, 4, MPI_INT, &msg, &req);
        MPI_Wait(&req, &st);
        check(buf[0], 3, "phase 1 payload (Imrecv)");
    }

    /* 2 */
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        int v[4] = {20, 21, 22, 23};
        sleep_ms(delay);
        MPI_Send(v, 4, MPI_INT, 1, 12, MPI_COMM_WORLD);
    } else if (rank == 1) {
        double t0 = MPI_Wtime();
        MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &msg, MPI_STATUS_IGNORE);
        waited += MPI_Wtime() - t0;
        MPI_Imrecv(buf, 4, MPI_INT, &msg, &req);
        MPI_Wait(&req, &st);
        check(st.MPI_TAG, 12, "phase 2 tag");
        check(buf[3], 23, "phase 2 payload");
    }

    /* 3 */
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        int v[4] = {30, 31, 32, 33};
        sleep_ms(delay);
        MPI_Send(v, 4, MPI_INT, 1, 13, MPI_COMM_WORLD);
    } else if (rank == 1) {
        double t0 = MPI_Wtime();
        MPI_Probe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        waited += MPI_Wtime() - t0;
        MPI_Recv(buf, 4, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        check(buf[1], 31, "phase 3 payload");
    }

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        printf("self late_sender_ns=%.0f waits=3\n", waited * 1e9);
        fflush(stdout);
    }
    MPI_Finalize();
    return bad;
}
