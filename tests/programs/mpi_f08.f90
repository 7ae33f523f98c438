! The mpi_f08 Fortran bindings (2 ranks): rank 0 computes DELAY ms, then
! MPI_Send to rank 1, which waits in MPI_Recv (a late sender); then
! MPI_Irecv + MPI_Send + MPI_Wait, MPI_Barrier and MPI_Allreduce. Rank 1
! prints "mpi_f08 ok" when the values arrived. Each call's line ends with
! a marker comment the test finds.
program mpi_f08_test
  use mpi_f08
  implicit none
  integer :: rank, x, y
  integer(8) :: t0, t1, rate
  type(MPI_Status) :: st
  type(MPI_Request) :: rq
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  x = rank + 10
  if (rank == 0) then
    call system_clock(t0, rate)
    do
      call system_clock(t1)
      if (t1 - t0 >= rate / 20) exit
    end do
    call MPI_Send(x, 1, MPI_INTEGER, 1, 5, MPI_COMM_WORLD) ! F08_SEND
  else if (rank == 1) then
    call MPI_Recv(y, 1, MPI_INTEGER, 0, 5, MPI_COMM_WORLD, st) ! F08_RECV
  end if
  call MPI_Irecv(y, 1, MPI_INTEGER, MPI_ANY_SOURCE, 6, MPI_COMM_WORLD, rq)
  call MPI_Send(x, 1, MPI_INTEGER, 1 - rank, 6, MPI_COMM_WORLD)
  call MPI_Wait(rq, st)
  call MPI_Barrier(MPI_COMM_WORLD)
  call MPI_Allreduce(rank, x, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 1 .and. x == 1 .and. y == 10) print '(a)', 'mpi_f08 ok'
  call MPI_Finalize()
end program
