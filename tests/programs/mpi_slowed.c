/*
 * The slowed-rank experiment: 4 ranks in a chain 0 <-> 1 <-> 2 <-> 3 (no
 * wrap-around), every iteration a halo exchange with the left and then
 * the right neighbour (MPI_Sendrecv, MPI_PROC_NULL past the ends), then
 * BASE_MS of computation (0: none, so that the only computation, and the
 * only delay, is the extra work). Rank SLOW (argument 1, default 0)
 * computes EXTRA_MS more in every iteration (argument 2, default 20). Each
 * iteration's computation is followed by an exchange, so all of the extra
 * work makes the other ranks wait: its neighbour directly, the ranks
 * further down the chain through their neighbours' waiting (propagation).
 *
 * The slowed rank measures its extra work with its own clock
 * (CLOCK_MONOTONIC around it, so time it lost to other processes counts:
 * the others waited for that too) and prints
 *   slowed rank=<SLOW> extra_ns=<sum> iterations=<N>
 * Every rank takes CLOCK_MONOTONIC stamps at the entry and exit of both
 * exchanges (one clock for all ranks on one node); rank 0 gathers them
 * and prints, over the exchanges that follow an iteration's computation,
 *   truth direct_wait_ns=<W> propagated_wait_ns=<P> wake_weighted_ns=<D>
 * by the late-sender definition on the program's own stamps:
 * W, the waiting of SLOW's right neighbour for SLOW (Σ max(0, entry of
 * SLOW's right exchange − entry of the neighbour's left exchange));
 * P, the waiting of every rank further right for its left neighbour
 * (waiting that SLOW's lateness reached only through other ranks);
 * D, the time the ranks right of SLOW took to leave their left exchange
 * after both sides had entered it (message latency, being scheduled out:
 * time they lost themselves, which the ranks after them waited for too),
 * each counted once per rank after it. Of P, at least P − D and at most
 * P is SLOW's doing.
 * Output "mpi_slowed ok" from rank 0 when every halo value arrived.
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ITERATIONS 10
#define BASE_MS 0.0

static unsigned long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec;
}

/* Computes for `ms` milliseconds of wall time; returns a value that
 * depends on the work so it is not optimised away. */
static double compute(double ms)
{
    unsigned long long end = now_ns() + (unsigned long long)(ms * 1e6);
    double x = 1.0;
    do {
        for (int i = 0; i < 2000; i++)
            x = x * 1.0000001 + 1e-9;
    } while (now_ns() < end);
    return x;
}

/* Per exchange: entry and exit of the left, entry and exit of the right. */
static unsigned long long stamps[ITERATIONS + 1][4];

static void exchange(int rank, int size, int iter, int *bad)
{
    int left = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    int right = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
    int out = rank * 1000 + iter, in_l = -1, in_r = -1;
    stamps[iter][0] = now_ns();
    MPI_Sendrecv(&out, 1, MPI_INT, left, 1, &in_l, 1, MPI_INT, left, 2, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE); /* EXCHANGE_LEFT */
    stamps[iter][1] = now_ns();
    stamps[iter][2] = now_ns();
    MPI_Sendrecv(&out, 1, MPI_INT, right, 2, &in_r, 1, MPI_INT, right, 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE); /* EXCHANGE_RIGHT */
    stamps[iter][3] = now_ns();
    if ((left != MPI_PROC_NULL && in_l != left * 1000 + iter) ||
        (right != MPI_PROC_NULL && in_r != right * 1000 + iter))
        *bad = 1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, bad = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > 64)
        MPI_Abort(MPI_COMM_WORLD, 2);
    int slow = argc > 1 ? atoi(argv[1]) : 0;
    double extra_ms = argc > 2 ? atof(argv[2]) : 20.0;
    double sink = 0;
    unsigned long long extra_ns = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int it = 0; it < ITERATIONS; it++) {
        exchange(rank, size, it, &bad);
        if (BASE_MS > 0)
            sink += compute(BASE_MS);
        if (rank == slow) {
            unsigned long long t0 = now_ns();
            sink += compute(extra_ms);
            extra_ns += now_ns() - t0;
        }
    }
    exchange(rank, size, ITERATIONS, &bad);
    if (rank == slow)
        printf("slowed rank=%d extra_ns=%llu iterations=%d\n", slow, extra_ns, ITERATIONS);
    enum { N = (ITERATIONS + 1) * 4 };
    static unsigned long long all[64][ITERATIONS + 1][4];
    MPI_Gather(stamps, N, MPI_UNSIGNED_LONG_LONG, all, N, MPI_UNSIGNED_LONG_LONG, 0,
               MPI_COMM_WORLD);
    if (rank == 0 && slow >= 0 && slow < size - 1) {
        unsigned long long direct = 0, propagated = 0, wake = 0;
        for (int k = 1; k <= ITERATIONS; k++) {
            for (int r = slow + 1; r < size; r++) {
                unsigned long long late = all[r - 1][k][2], early = all[r][k][0];
                unsigned long long wait = late > early ? late - early : 0;
                if (r == slow + 1)
                    direct += wait;
                else
                    propagated += wait;
                unsigned long long ready = late > early ? late : early;
                if (all[r][k][1] > ready)
                    wake += (all[r][k][1] - ready) * (unsigned long long)(size - 1 - r);
            }
        }
        printf("truth direct_wait_ns=%llu propagated_wait_ns=%llu wake_weighted_ns=%llu\n", direct,
               propagated, wake);
    }
    int any_bad = 0;
    MPI_Reduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0 && !any_bad)
        printf("mpi_slowed ok (%g)\n", sink > 0 ? 1.0 : 0.0);
    fflush(stdout);
    MPI_Finalize();
    return any_bad;
}
