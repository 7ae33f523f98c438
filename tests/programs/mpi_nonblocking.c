/*
 * Nonblocking collectives and the communicators MPI-3 can make without
 * every member of the parent (4 ranks), each phase with a known late rank
 * (DELAY ms, argument 1, default 60), for `contend record --mpi`:
 *
 *   1. MPI_Iallreduce, rank 3 posts DELAY late; every rank waits at once in
 *      MPI_Wait: ranks 0-2 wait there (wait at N×N)
 *   2. MPI_Ibarrier, rank 0 late; MPI_Wait
 *   3. MPI_Ibcast from root 2, the root late; MPI_Wait
 *   4. MPI_Comm_create_group of world ranks {1, 3} (tag 7), called by them
 *      only, then an MPI_Barrier on it with rank 3 late
 *   5. MPI_Intercomm_create between {0, 1} and {2, 3} (halves of world by
 *      MPI_Comm_split), then world rank 0 sends to remote rank 0 (world
 *      rank 2) over it, DELAY late: a late sender on rank 2
 *   6. MPI_Comm_idup of world completed by MPI_Wait, then an MPI_Barrier on
 *      the new communicator with rank 1 late
 *
 * Every rank takes CLOCK_MONOTONIC stamps (one clock for all ranks on
 * one node) just before each posting call and each call that waits; rank
 * 0 gathers them and evaluates the wait-state definitions
 * (docs/mpi-wait-states.md) on them, summed over ranks:
 *   self_enter nxn_ns=… barrier_ns=… broadcast_ns=… late_sender_ns=…
 * (barrier: phases 2, 4 and 6), and prints "mpi_nonblocking ok" when
 * every value arrived.
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double delay_ms = 60.0;

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void late(int me, int who)
{
    if (me == who) {
        struct timespec t = {(time_t)(delay_ms / 1000), (long)((delay_ms - 1000 * (time_t)(delay_ms / 1000)) * 1e6)};
        while (nanosleep(&t, &t) != 0) {
        }
    }
}

/* Stamps per rank: [phase][0] posting / entering, [phase][1] the wait. */
static long long st[6][2];
#define STAMP(phase, k, call)                                                                      \
    do {                                                                                           \
        st[phase][k] = now_ns();                                                                   \
        call;                                                                                      \
    } while (0)

static long long pos(long long x) { return x > 0 ? x : 0; }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, bad = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 4)
        MPI_Abort(MPI_COMM_WORLD, 2);
    if (argc > 1)
        delay_ms = atof(argv[1]);
    MPI_Request rq;

    /* 1 */
    int one = rank + 1, sum = 0;
    late(rank, 3);
    STAMP(0, 0, MPI_Iallreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq));
    STAMP(0, 1, MPI_Wait(&rq, MPI_STATUS_IGNORE));
    bad |= sum != 10;

    /* 2 */
    late(rank, 0);
    STAMP(1, 0, MPI_Ibarrier(MPI_COMM_WORLD, &rq));
    STAMP(1, 1, MPI_Wait(&rq, MPI_STATUS_IGNORE));

    /* 3 */
    int value = rank == 2 ? 42 : 0;
    late(rank, 2);
    STAMP(2, 0, MPI_Ibcast(&value, 1, MPI_INT, 2, MPI_COMM_WORLD, &rq));
    STAMP(2, 1, MPI_Wait(&rq, MPI_STATUS_IGNORE));
    bad |= value != 42;

    /* 4 */
    if (rank == 1 || rank == 3) {
        MPI_Group world, pair;
        int members[2] = {1, 3};
        MPI_Comm_group(MPI_COMM_WORLD, &world);
        MPI_Group_incl(world, 2, members, &pair);
        MPI_Comm c;
        MPI_Comm_create_group(MPI_COMM_WORLD, pair, 7, &c);
        late(rank, 3);
        STAMP(3, 0, MPI_Barrier(c));
        MPI_Comm_free(&c);
        MPI_Group_free(&pair);
        MPI_Group_free(&world);
    }

    /* 5 */
    MPI_Comm half, inter;
    MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &half);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank < 2 ? 2 : 0, 9, &inter);
    if (rank == 0) {
        late(rank, 0);
        int x = 7;
        STAMP(4, 0, MPI_Send(&x, 1, MPI_INT, 0, 3, inter));
    } else if (rank == 2) {
        int x = 0;
        STAMP(4, 1, MPI_Recv(&x, 1, MPI_INT, 0, 3, inter, MPI_STATUS_IGNORE));
        bad |= x != 7;
    }
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);

    /* 6 */
    MPI_Comm dup;
    MPI_Comm_idup(MPI_COMM_WORLD, &dup, &rq);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    late(rank, 1);
    STAMP(5, 0, MPI_Barrier(dup));
    MPI_Comm_free(&dup);

    long long all[4][6][2];
    int any_bad = 0;
    MPI_Gather(st, 12, MPI_LONG_LONG, all, 12, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    MPI_Reduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        long long nxn = 0, barrier = 0, bcast = 0, ls = 0, last0 = 0, last1 = 0, last5 = 0;
        for (int r = 0; r < 4; r++) {
            last0 = all[r][0][0] > last0 ? all[r][0][0] : last0;
            last1 = all[r][1][0] > last1 ? all[r][1][0] : last1;
            last5 = all[r][5][0] > last5 ? all[r][5][0] : last5;
        }
        for (int r = 0; r < 4; r++) {
            nxn += pos(last0 - all[r][0][1]);
            barrier += pos(last1 - all[r][1][1]) + pos(last5 - all[r][5][0]);
            if (r != 2)
                bcast += pos(all[2][2][0] - all[r][2][1]);
        }
        long long g = all[1][3][0] > all[3][3][0] ? all[1][3][0] : all[3][3][0];
        barrier += pos(g - all[1][3][0]) + pos(g - all[3][3][0]);
        ls = pos(all[0][4][0] - all[2][4][1]);
        printf("self_enter nxn_ns=%lld barrier_ns=%lld broadcast_ns=%lld late_sender_ns=%lld\n",
               nxn, barrier, bcast, ls);
        if (!any_bad)
            printf("mpi_nonblocking ok\n");
    }
    MPI_Finalize();
    return any_bad;
}
