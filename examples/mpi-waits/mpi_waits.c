/*
 * mpi_waits: MPI wait states with known sizes (4 ranks).
 *
 * Each phase injects a delay of DELAY ms (argument 1, default 100) with
 * nanosleep and every waiting rank measures, with CLOCK_MONOTONIC, how
 * long it was blocked in the call that waited. Rank 0 prints the sums: what
 * `contend report` should find as the wait state of that phase.
 *
 *   1. late sender: ranks 1 and 3 sleep DELAY, then MPI_Send to ranks 0
 *      and 2, which are already blocked in MPI_Recv (measured: the Recv)
 *   2. late receiver: ranks 0 and 2 MPI_Ssend to ranks 1 and 3, which
 *      sleep DELAY before their MPI_Recv (measured: the Ssend)
 *   3. wait at barrier: rank r sleeps r * DELAY / 3, then MPI_Barrier
 *      (measured: every rank's Barrier)
 *   4. wait at N x N: rank r sleeps (3 - r) * DELAY / 3, then
 *      MPI_Allreduce (measured: every rank's Allreduce)
 *
 * The sums are gathered with MPI_Reduce at the end (its own small wait
 * counts as "early reduce", no other pattern). The line "self ..." holds
 * them in ns.
 *
 * Time blocked also holds the time the call needs to finish once the
 * partner has arrived; with ranks that poll without yielding on fewer CPUs
 * than ranks (MPICH here), a collective can take milliseconds to complete
 * after the last rank entered. So the program also evaluates the wait-state
 * definitions (docs/mpi-wait-states.md) on its own CLOCK_MONOTONIC stamps
 * of the calls' enters and exits, gathered on rank 0: line "self_enter
 * ...". That needs one clock for all ranks, which CLOCK_MONOTONIC is on
 * one node (MPI_Wtime is not: Open MPI 4.1 starts each process's at 0),
 * and is printed only when all ranks ran on the same host.
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* CLOCK_MONOTONIC, s: one clock for all processes of a node. */
static double mono(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void sleep_ms(double ms)
{
    struct timespec ts;
    ts.tv_sec = (time_t)(ms / 1000);
    ts.tv_nsec = (long)((ms - (double)ts.tv_sec * 1000) * 1e6);
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
            fprintf(stderr, "mpi_waits needs 4 ranks (mpirun -np 4)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    double delay = argc > 1 ? atof(argv[1]) : 100.0;
    /* measured waits of this rank: late sender, late receiver, barrier, N x N (s) */
    double w[4] = {0, 0, 0, 0};
    /* CLOCK_MONOTONIC stamps: p1 recv enter, recv exit, send enter; p2
     * ssend enter, recv enter; barrier enter; allreduce enter; a hash of
     * the host name */
    double st[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int buf[256] = {0};
    double t;
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    unsigned h = 5381;
    for (size_t i = 0; i < strlen(host); i++)
        h = h * 33u + (unsigned char)host[i];
    st[7] = (double)h;

    /* 1. late sender */
    if (rank % 2 == 1) {
        sleep_ms(delay);
        st[2] = mono();
        MPI_Send(buf, 256, MPI_INT, rank - 1, 1, MPI_COMM_WORLD);
    } else {
        t = st[0] = mono();
        MPI_Recv(buf, 256, MPI_INT, rank + 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        st[1] = mono();
        w[0] = st[1] - t;
    }

    /* 2. late receiver (synchronous send) */
    if (rank % 2 == 0) {
        t = st[3] = mono();
        MPI_Ssend(buf, 256, MPI_INT, rank + 1, 2, MPI_COMM_WORLD);
        w[1] = mono() - t;
    } else {
        sleep_ms(delay);
        st[4] = mono();
        MPI_Recv(buf, 256, MPI_INT, rank - 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }

    /* 3. imbalanced barrier */
    sleep_ms(rank * delay / 3);
    t = st[5] = mono();
    MPI_Barrier(MPI_COMM_WORLD);
    w[2] = mono() - t;

    /* 4. imbalanced all-reduce */
    sleep_ms((3 - rank) * delay / 3);
    int one = rank, sum = 0;
    t = st[6] = mono();
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    w[3] = mono() - t;

    double total[4];
    MPI_Reduce(w, total, 4, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    double all[4][8];
    MPI_Gather(st, 8, MPI_DOUBLE, all, 8, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("mpi_waits delay=%.0f ms, time blocked as measured by the ranks (MPI_Wtime):\n",
               delay);
        printf("  late sender      (MPI_Recv,      ranks 0, 2):  %8.3f ms\n", total[0] * 1e3);
        printf("  late receiver    (MPI_Ssend,     ranks 0, 2):  %8.3f ms\n", total[1] * 1e3);
        printf("  wait at barrier  (MPI_Barrier,   all ranks):   %8.3f ms\n", total[2] * 1e3);
        printf("  wait at N x N    (MPI_Allreduce, all ranks):   %8.3f ms\n", total[3] * 1e3);
        printf("self late_sender_ns=%.0f late_receiver_ns=%.0f barrier_ns=%.0f nxn_ns=%.0f\n",
               total[0] * 1e9, total[1] * 1e9, total[2] * 1e9, total[3] * 1e9);
        /* the definitions on the stamps, if MPI_Wtime is one clock: its
         * distance to the kernel's CLOCK_MONOTONIC is the same on all ranks */
        double ref_lo = all[0][7], ref_hi = all[0][7];
        for (int r = 1; r < 4; r++) {
            ref_lo = all[r][7] < ref_lo ? all[r][7] : ref_lo;
            ref_hi = all[r][7] > ref_hi ? all[r][7] : ref_hi;
        }
        if (ref_hi - ref_lo < 1e-4) {
            double ls = 0, lr = 0, bar = 0, nxn = 0, bmax = 0, nmax = 0;
            for (int r = 0; r < 4; r += 2) {
                /* late sender: min(send enter, recv exit) - recv enter */
                double s_in = all[r + 1][2] < all[r][1] ? all[r + 1][2] : all[r][1];
                ls += s_in > all[r][0] ? s_in - all[r][0] : 0;
                /* late receiver: recv enter - ssend enter */
                lr += all[r + 1][4] > all[r][3] ? all[r + 1][4] - all[r][3] : 0;
            }
            for (int r = 0; r < 4; r++) {
                bmax = all[r][5] > bmax ? all[r][5] : bmax;
                nmax = all[r][6] > nmax ? all[r][6] : nmax;
            }
            for (int r = 0; r < 4; r++) {
                bar += bmax - all[r][5];
                nxn += nmax - all[r][6];
            }
            printf("self_enter late_sender_ns=%.0f late_receiver_ns=%.0f barrier_ns=%.0f "
                   "nxn_ns=%.0f\n",
                   ls * 1e9, lr * 1e9, bar * 1e9, nxn * 1e9);
        }
    }
    MPI_Finalize();
    return sum == 6 ? 0 : 1;
}
