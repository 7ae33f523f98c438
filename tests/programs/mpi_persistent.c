/*
 * mpi_persistent: a ring halo exchange through persistent requests, with
 * one late sender of known delay (4 ranks).
 *
 * Every rank creates MPI_Recv_init(from prev, tag 5, 4 ints) and
 * MPI_Send_init(to next, tag 5, 4 ints) once, then for ITERS iterations:
 * MPI_Barrier, MPI_Startall(recv, send), MPI_Waitall. In iteration LATE
 * rank 0 sleeps DELAY ms (argument 1, default 200) before MPI_Startall,
 * so rank 1 waits for it in MPI_Waitall. A last iteration activates the
 * two requests with MPI_Start each (then MPI_Waitall), and both are freed
 * with MPI_Request_free.
 *
 * Every rank measures with CLOCK_MONOTONIC the time it spent in all its
 * MPI_Waitall calls and prints "rank R waitall_ns=<ns> other_ns=<ns>": the
 * late-sender wait `contend report` finds summed over ranks should match
 * the sum of the first (the ranks that were not waited for spend
 * microseconds there); the second is the part spent outside iteration
 * LATE, where nobody is late by design: more than microseconds there
 * means the machine disturbed the run (a rank preempted inside a call).
 * It also prints the CLOCK_MONOTONIC stamps (one clock for the ranks on
 * one node) of every round, "rank R stamps recv_post_ns=<t0>,<t1>,...
 * send_post_ns=... waitall_enter_ns=... waitall_exit_ns=...": the entries
 * of the calls posting its receive and its send (MPI_Startall, or the two
 * MPI_Start of the last round) and the entry and exit of MPI_Waitall, from
 * which the wait states follow by their definitions. Every rank
 * checks the payloads it received and exits 1 on a wrong one.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ITERS 6
#define LATE 3

static void sleep_ms(double ms)
{
    struct timespec ts;
    ts.tv_sec = (time_t)(ms / 1000);
    ts.tv_nsec = (long)((ms - (double)ts.tv_sec * 1000) * 1e6);
    nanosleep(&ts, NULL);
}

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 4) {
        if (rank == 0)
            fprintf(stderr, "mpi_persistent needs 4 ranks (mpirun -np 4)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    double delay = argc > 1 ? atof(argv[1]) : 200.0;
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int out[4], in[4];
    int bad = 0;
    long long waited = 0, other = 0;
    /* per round: entries of the postings of the receive and the send, entry
     * and exit of MPI_Waitall */
    long long rpost[ITERS + 1], spost[ITERS + 1], wenter[ITERS + 1], wexit[ITERS + 1];
    MPI_Request reqs[2];
    MPI_Recv_init(in, 4, MPI_INT, prev, 5, MPI_COMM_WORLD, &reqs[0]);
    MPI_Send_init(out, 4, MPI_INT, next, 5, MPI_COMM_WORLD, &reqs[1]);
    for (int it = 0; it <= ITERS; it++) {
        for (int k = 0; k < 4; k++)
            out[k] = 1000 * it + 10 * rank + k;
        MPI_Barrier(MPI_COMM_WORLD);
        if (it < ITERS) {
            if (it == LATE && rank == 0)
                sleep_ms(delay);
            rpost[it] = spost[it] = now_ns();
            MPI_Startall(2, reqs);
        } else {
            rpost[it] = now_ns();
            MPI_Start(&reqs[0]);
            spost[it] = now_ns();
            MPI_Start(&reqs[1]);
        }
        long long t0 = now_ns();
        wenter[it] = t0;
        MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
        wexit[it] = now_ns();
        long long dt = wexit[it] - t0;
        waited += dt;
        if (it != LATE)
            other += dt;
        for (int k = 0; k < 4; k++)
            if (in[k] != 1000 * it + 10 * prev + k) {
                fprintf(stderr, "mpi_persistent: rank %d iteration %d: got %d, want %d\n",
                        rank, it, in[k], 1000 * it + 10 * prev + k);
                bad = 1;
            }
    }
    MPI_Request_free(&reqs[0]);
    MPI_Request_free(&reqs[1]);
    if (reqs[0] != MPI_REQUEST_NULL || reqs[1] != MPI_REQUEST_NULL) {
        fprintf(stderr, "mpi_persistent: MPI_Request_free left a handle\n");
        bad = 1;
    }
    printf("rank %d waitall_ns=%lld other_ns=%lld\n", rank, waited, other);
    const char *names[4] = {"recv_post_ns", "send_post_ns", "waitall_enter_ns", "waitall_exit_ns"};
    long long *rows[4] = {rpost, spost, wenter, wexit};
    printf("rank %d stamps", rank);
    for (int k = 0; k < 4; k++) {
        printf(" %s=", names[k]);
        for (int it = 0; it <= ITERS; it++)
            printf(it ? ",%lld" : "%lld", rows[k][it]);
    }
    printf("\n");
    fflush(stdout);
    MPI_Finalize();
    return bad;
}
