! A scripted Fortran MPI program for the recorder's end-to-end test
! (4 ranks, Open MPI's mpif.h/`use mpi` bindings). Rank 0 prints one line.
!   1. ring: MPI_ISEND 4 integers to mod(r+1,4) tag 20+r, MPI_IRECV from
!      MPI_ANY_SOURCE / MPI_ANY_TAG, MPI_WAITALL with MPI_STATUSES_IGNORE
!   2. rank 0 MPI_SEND 10 double precision to rank 1 tag 6; rank 1 MPI_RECV
!      with MPI_STATUS_IGNORE
!   3. MPI_COMM_SPLIT(colour mod(r,2), key r); in it, local 0 MPI_SSEND one
!      integer to local 1 tag 8, local 1 MPI_RECV with a status
!   4. MPI_BARRIER, MPI_ALLREDUCE with MPI_IN_PLACE (sum of ranks)
!   5. MPI_COMM_FREE, MPI_FINALIZE
program mpi_fortran
  use mpi
  implicit none
  integer :: ierr, rank, nprocs, half, hrank, token, total
  integer :: outb(4), inb(4), reqs(2), st(MPI_STATUS_SIZE)
  double precision :: d(10)

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)

  outb = rank * 10
  call MPI_ISEND(outb, 4, MPI_INTEGER, mod(rank + 1, 4), 20 + rank, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_IRECV(inb, 4, MPI_INTEGER, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_WAITALL(2, reqs, MPI_STATUSES_IGNORE, ierr)

  if (rank == 0) then
    d = 1.5d0
    call MPI_SEND(d, 10, MPI_DOUBLE_PRECISION, 1, 6, MPI_COMM_WORLD, ierr)
  else if (rank == 1) then
    call MPI_RECV(d, 10, MPI_DOUBLE_PRECISION, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  end if

  call MPI_COMM_SPLIT(MPI_COMM_WORLD, mod(rank, 2), rank, half, ierr)
  call MPI_COMM_RANK(half, hrank, ierr)
  token = rank
  st = -7
  if (hrank == 0) then
    call MPI_SSEND(token, 1, MPI_INTEGER, 1, 8, half, ierr)
  else
    call MPI_RECV(token, 1, MPI_INTEGER, 0, 8, half, st, ierr)
  end if

  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  total = rank
  call MPI_ALLREDUCE(MPI_IN_PLACE, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_COMM_FREE(half, ierr)
  if (rank == 0) then
    write (*, '(A,I0,A,I0,A,I0,A,I0,A,L1)') 'mpi_fortran total=', total, ' ring_from=', inb(1) / 10, &
      ' split_source=', st(MPI_SOURCE), ' split_tag=', st(MPI_TAG), ' freed=', half == MPI_COMM_NULL
  end if
  call MPI_FINALIZE(ierr)
end program mpi_fortran
