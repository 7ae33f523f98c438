! Persistent requests through Open MPI's Fortran entry points (4 ranks,
! `use mpi`), for the recorder's end-to-end test: a ring with
! MPI_RECV_INIT (from r-1, tag 5, 4 integers) and MPI_SEND_INIT (to r+1),
! three rounds of MPI_BARRIER + MPI_STARTALL + MPI_WAITALL, a fourth with
! MPI_START of each request + MPI_WAITALL, then MPI_REQUEST_FREE of both.
! Rank 0 prints "mpi_persistent_f ok" when every payload was right and the
! freed handles are MPI_REQUEST_NULL.
program mpi_persistent_f
  use mpi
  implicit none
  integer :: ierr, rank, nprocs, nxt, prv, it, k, bad, anybad
  integer :: reqs(2), outv(4), inv(4)
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
  if (nprocs /= 4) then
    if (rank == 0) print *, 'mpi_persistent_f needs 4 ranks'
    call MPI_ABORT(MPI_COMM_WORLD, 2, ierr)
  end if
  nxt = mod(rank + 1, 4)
  prv = mod(rank + 3, 4)
  bad = 0
  call MPI_RECV_INIT(inv, 4, MPI_INTEGER, prv, 5, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_SEND_INIT(outv, 4, MPI_INTEGER, nxt, 5, MPI_COMM_WORLD, reqs(2), ierr)
  do it = 0, 3
    do k = 1, 4
      outv(k) = 1000 * it + 10 * rank + k
    end do
    call MPI_BARRIER(MPI_COMM_WORLD, ierr)
    if (it < 3) then
      call MPI_STARTALL(2, reqs, ierr)
    else
      call MPI_START(reqs(1), ierr)
      call MPI_START(reqs(2), ierr)
    end if
    call MPI_WAITALL(2, reqs, MPI_STATUSES_IGNORE, ierr)
    do k = 1, 4
      if (inv(k) /= 1000 * it + 10 * prv + k) bad = 1
    end do
  end do
  call MPI_REQUEST_FREE(reqs(1), ierr)
  call MPI_REQUEST_FREE(reqs(2), ierr)
  if (reqs(1) /= MPI_REQUEST_NULL .or. reqs(2) /= MPI_REQUEST_NULL) bad = 1
  call MPI_ALLREDUCE(bad, anybad, 1, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
  if (rank == 0 .and. anybad == 0) print '(a)', 'mpi_persistent_f ok'
  call MPI_FINALIZE(ierr)
end program mpi_persistent_f
