/*
 * Every wrapped MPI function not used by mpi_events.c, once, with known
 * arguments (4 ranks), for the recorder's end-to-end test. Rank 0 prints
 * "mpi_all ok" when every value arrived as sent; exit code 0 then.
 *
 *   1. rank 0 MPI_Bsend 10 ints to 1 (tag 1)
 *   2. rank 1 MPI_Irecv from 0 (tag 2), Barrier, rank 0 MPI_Rsend, 1 Waits
 *   3. rank 2 MPI_Ibsend 3 ints to 3 (tag 3), Waits; rank 3 Recv
 *   4. rank 3 MPI_Irecv from 2 (tag 4), Barrier, rank 2 MPI_Irsend 1 int,
 *      both Wait
 *   5. rank 0 MPI_Issend 2 ints to 2 (tag 5), Wait; rank 2 MPI_Probe, Recv
 *   6. MPI_Sendrecv_replace ring (tag 6, 1 int)
 *   7. Irecv x2 from r-1 (tags 7, 8), Isend x2 to r+1: MPI_Waitany on the
 *      receives, MPI_Waitsome on the other, MPI_Testall on the sends
 *      (polled); then Irecv/Isend tag 9: MPI_Testany / MPI_Testsome polled
 *   8. Reduce (root 2), Gather (root 3), Gatherv (root 3, rank r sends
 *      r+1 ints), Scatter (root 1), Scatterv (root 0, r+1 ints to rank r),
 *      Allgather, Allgatherv (r+1 ints), Alltoall, Alltoallv, Alltoallw (1
 *      int to each), Reduce_scatter (1 each), Reduce_scatter_block (1),
 *      Scan, Exscan
 *   9. MPI_Comm_create of world ranks {1,2,3} (rank 0 gets MPI_COMM_NULL),
 *      a Barrier on it, Comm_free; MPI_Comm_dup of world, Comm_free
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int bad;
#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "rank %d: check failed at line %d: %s\n", rank, __LINE__, #c);         \
            bad = 1;                                                                               \
        }                                                                                          \
    } while (0)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 4)
        MPI_Abort(MPI_COMM_WORLD, 2);
    int next = (rank + 1) % 4, prev = (rank + 3) % 4;
    int a[16], b[16];
    MPI_Request rq[4];
    MPI_Status st;
    for (int i = 0; i < 16; i++)
        a[i] = rank * 100 + i;

    /* 1 */
    static char bsend_buf[4096];
    MPI_Buffer_attach(bsend_buf, sizeof bsend_buf);
    if (rank == 0)
        MPI_Bsend(a, 10, MPI_INT, 1, 1, MPI_COMM_WORLD);
    else if (rank == 1) {
        MPI_Recv(b, 10, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(b[9] == 9);
    }
    /* 2 */
    if (rank == 1)
        MPI_Irecv(b, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, &rq[0]);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        MPI_Rsend(a, 1, MPI_INT, 1, 2, MPI_COMM_WORLD);
    else if (rank == 1) {
        MPI_Wait(&rq[0], &st);
        CHECK(b[0] == 0 && st.MPI_SOURCE == 0 && st.MPI_TAG == 2);
    }
    /* 3 */
    if (rank == 2) {
        MPI_Ibsend(a, 3, MPI_INT, 3, 3, MPI_COMM_WORLD, &rq[0]);
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    } else if (rank == 3) {
        MPI_Recv(b, 3, MPI_INT, 2, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(b[2] == 202);
    }
    /* 4 */
    if (rank == 3)
        MPI_Irecv(b, 1, MPI_INT, 2, 4, MPI_COMM_WORLD, &rq[0]);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 2) {
        MPI_Irsend(a, 1, MPI_INT, 3, 4, MPI_COMM_WORLD, &rq[0]);
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    } else if (rank == 3) {
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
        CHECK(b[0] == 200);
    }
    /* 5 */
    if (rank == 0) {
        MPI_Issend(a, 2, MPI_INT, 2, 5, MPI_COMM_WORLD, &rq[0]);
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    } else if (rank == 2) {
        MPI_Probe(0, 5, MPI_COMM_WORLD, &st);
        CHECK(st.MPI_SOURCE == 0);
        MPI_Recv(b, 2, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(b[1] == 1);
    }
    /* 6 */
    int v = rank;
    MPI_Sendrecv_replace(&v, 1, MPI_INT, next, 6, prev, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(v == prev);
    /* 7 */
    int r7 = -1, r8 = -1, s7 = rank, s8 = rank + 10;
    MPI_Irecv(&r7, 1, MPI_INT, prev, 7, MPI_COMM_WORLD, &rq[0]);
    MPI_Irecv(&r8, 1, MPI_INT, prev, 8, MPI_COMM_WORLD, &rq[1]);
    MPI_Isend(&s7, 1, MPI_INT, next, 7, MPI_COMM_WORLD, &rq[2]);
    MPI_Isend(&s8, 1, MPI_INT, next, 8, MPI_COMM_WORLD, &rq[3]);
    int idx = -1, outcount = 0, indices[2], flag = 0;
    MPI_Waitany(2, rq, &idx, &st);
    CHECK(idx == 0 || idx == 1);
    MPI_Waitsome(2, rq, &outcount, indices, MPI_STATUSES_IGNORE);
    CHECK(outcount == 1 && indices[0] == 1 - idx);
    while (!flag)
        MPI_Testall(2, rq + 2, &flag, MPI_STATUSES_IGNORE);
    CHECK(r7 == prev && r8 == prev + 10);
    int r9 = -1, s9 = rank + 20;
    MPI_Irecv(&r9, 1, MPI_INT, prev, 9, MPI_COMM_WORLD, &rq[0]);
    MPI_Isend(&s9, 1, MPI_INT, next, 9, MPI_COMM_WORLD, &rq[1]);
    flag = 0;
    while (!flag)
        MPI_Testany(1, rq, &idx, &flag, MPI_STATUS_IGNORE);
    outcount = 0;
    while (outcount == 0)
        MPI_Testsome(1, rq + 1, &outcount, indices, MPI_STATUSES_IGNORE);
    CHECK(r9 == prev + 20);
    /* 8 */
    int one = rank + 1, res = 0, counts[4] = {1, 2, 3, 4}, displs[4] = {0, 1, 3, 6};
    int ones[4] = {1, 1, 1, 1}, unit_displs[4] = {0, 1, 2, 3};
    int all[16];
    MPI_Reduce(&one, &res, 1, MPI_INT, MPI_SUM, 2, MPI_COMM_WORLD);
    CHECK(rank != 2 || res == 10);
    MPI_Gather(&one, 1, MPI_INT, all, 1, MPI_INT, 3, MPI_COMM_WORLD);
    CHECK(rank != 3 || all[3] == 4);
    MPI_Gatherv(a, rank + 1, MPI_INT, all, counts, displs, MPI_INT, 3, MPI_COMM_WORLD);
    CHECK(rank != 3 || all[9] == 303);
    MPI_Scatter(a, 1, MPI_INT, &res, 1, MPI_INT, 1, MPI_COMM_WORLD);
    CHECK(res == 100 + rank);
    MPI_Scatterv(a, counts, displs, MPI_INT, b, rank + 1, MPI_INT, 0, MPI_COMM_WORLD);
    CHECK(b[0] == displs[rank]);
    MPI_Allgather(&one, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    CHECK(all[2] == 3);
    MPI_Allgatherv(a, rank + 1, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD);
    CHECK(all[6] == 300);
    MPI_Alltoall(a, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    CHECK(all[1] == 100 + rank);
    MPI_Alltoallv(a, ones, unit_displs, MPI_INT, all, ones, unit_displs, MPI_INT, MPI_COMM_WORLD);
    CHECK(all[2] == 200 + rank);
    int bdispls[4] = {0, 4, 8, 12};
    MPI_Datatype types[4] = {MPI_INT, MPI_INT, MPI_INT, MPI_INT};
    MPI_Alltoallw(a, ones, bdispls, types, all, ones, bdispls, types, MPI_COMM_WORLD);
    CHECK(all[3] == 300 + rank);
    int vec[4] = {rank, rank, rank, rank};
    MPI_Reduce_scatter(vec, &res, ones, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(res == 6);
    MPI_Reduce_scatter_block(vec, &res, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(res == 6);
    MPI_Scan(&one, &res, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(res == (rank + 1) * (rank + 2) / 2);
    res = -1;
    MPI_Exscan(&one, &res, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(rank == 0 || res == rank * (rank + 1) / 2);
    /* 9 */
    MPI_Group world_group, three;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    int members[3] = {1, 2, 3};
    MPI_Group_incl(world_group, 3, members, &three);
    MPI_Comm sub;
    MPI_Comm_create(MPI_COMM_WORLD, three, &sub);
    CHECK((rank == 0) == (sub == MPI_COMM_NULL));
    if (sub != MPI_COMM_NULL) {
        MPI_Barrier(sub);
        MPI_Comm_free(&sub);
    }
    MPI_Group_free(&three);
    MPI_Group_free(&world_group);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_free(&dup);

    void *detached;
    int detached_size;
    MPI_Buffer_detach(&detached, &detached_size);
    int any_bad = 0;
    MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf(any_bad ? "mpi_all FAILED\n" : "mpi_all ok\n");
    MPI_Finalize();
    return any_bad;
}
