/*
 * Communicators from MPI_Cart_create, MPI_Cart_sub, MPI_Comm_split_type and
 * MPI_Dist_graph_create_adjacent (4 ranks), each used by one collective,
 * so the test can check that the recorder gives them the same id on every
 * member. Rank 0 prints "mpi_topo ok".
 *   cart: 2 x 2, periodic, no reordering -> MPI_Barrier on it
 *   sub:  MPI_Cart_sub keeping dimension 0 -> {0,2} and {1,3};
 *         MPI_Allreduce on it
 *   node: MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) -> MPI_Barrier
 *   ring: MPI_Dist_graph_create_adjacent (from r-1 to r+1) -> MPI_Barrier
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 4)
        MPI_Abort(MPI_COMM_WORLD, 2);
    int dims[2] = {2, 2}, periods[2] = {1, 1}, remain[2] = {1, 0};
    MPI_Comm cart, sub, node, ring;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    MPI_Barrier(cart);
    MPI_Cart_sub(cart, remain, &sub);
    int sum = 0;
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, sub);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Barrier(node);
    int src = (rank + 3) % 4, dst = (rank + 1) % 4;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &src, MPI_UNWEIGHTED, 1, &dst,
                                   MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &ring);
    MPI_Barrier(ring);
    int ok = sum == (rank % 2 == 0 ? 2 : 4);
    MPI_Comm_free(&ring);
    MPI_Comm_free(&node);
    MPI_Comm_free(&sub);
    MPI_Comm_free(&cart);
    int all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (rank == 0)
        printf(all_ok ? "mpi_topo ok\n" : "mpi_topo FAILED\n");
    MPI_Finalize();
    return !all_ok;
}
