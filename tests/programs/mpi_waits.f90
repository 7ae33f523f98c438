! mpi_waits in Fortran (Open MPI's `use mpi` bindings), 4 ranks: the
! phases of examples/mpi-waits/mpi_waits.c with DELAY = 80 ms, each
! waiting rank measuring with MPI_WTIME how long it was blocked:
!   1. late sender: ranks 1, 3 sleep DELAY, then MPI_SEND to 0, 2 (MPI_RECV)
!   2. late receiver: ranks 0, 2 MPI_SSEND to 1, 3, which sleep DELAY first
!   3. rank r sleeps r*DELAY/3, then MPI_BARRIER
!   4. rank r sleeps (3-r)*DELAY/3, then MPI_ALLREDUCE
! Rank 0 prints the sums (MPI_REDUCE) in the same "self ..." line.
program mpi_waits_f
  use mpi
  use iso_c_binding, only: c_int
  implicit none
  interface
    integer(c_int) function usleep(us) bind(C, name='usleep')
      import :: c_int
      integer(c_int), value :: us
    end function usleep
  end interface
  integer, parameter :: delay_us = 80000
  integer :: ierr, rank, nprocs, one, total, rc
  integer :: buf(256)
  double precision :: w(4), s(4), t

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
  if (nprocs /= 4) call MPI_ABORT(MPI_COMM_WORLD, 2, ierr)
  w = 0d0
  buf = 0

  if (mod(rank, 2) == 1) then
    rc = usleep(delay_us)
    call MPI_SEND(buf, 256, MPI_INTEGER, rank - 1, 1, MPI_COMM_WORLD, ierr)
  else
    t = MPI_WTIME()
    call MPI_RECV(buf, 256, MPI_INTEGER, rank + 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    w(1) = MPI_WTIME() - t
  end if

  if (mod(rank, 2) == 0) then
    t = MPI_WTIME()
    call MPI_SSEND(buf, 256, MPI_INTEGER, rank + 1, 2, MPI_COMM_WORLD, ierr)
    w(2) = MPI_WTIME() - t
  else
    rc = usleep(delay_us)
    call MPI_RECV(buf, 256, MPI_INTEGER, rank - 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  end if

  rc = usleep(rank * delay_us / 3)
  t = MPI_WTIME()
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  w(3) = MPI_WTIME() - t

  rc = usleep((3 - rank) * delay_us / 3)
  one = rank
  t = MPI_WTIME()
  call MPI_ALLREDUCE(one, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  w(4) = MPI_WTIME() - t

  call MPI_REDUCE(w, s, 4, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    write (*, '(A,F0.0,A,F0.0,A,F0.0,A,F0.0)') 'self late_sender_ns=', s(1) * 1d9, &
      ' late_receiver_ns=', s(2) * 1d9, ' barrier_ns=', s(3) * 1d9, ' nxn_ns=', s(4) * 1d9
  end if
  call MPI_FINALIZE(ierr)
end program mpi_waits_f
