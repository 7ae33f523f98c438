! mpi_waits in Fortran (Open MPI's `use mpi` bindings), 4 ranks: the
! phases of examples/mpi-waits/mpi_waits.c with DELAY = 80 ms, each
! waiting rank measuring with MPI_WTIME how long it was blocked:
!   1. late sender: ranks 1, 3 sleep DELAY, then MPI_SEND to 0, 2 (MPI_RECV)
!   2. late receiver: ranks 0, 2 MPI_SSEND to 1, 3, which sleep DELAY first
!   3. rank r sleeps r*DELAY/3, then MPI_BARRIER
!   4. rank r sleeps (3-r)*DELAY/3, then MPI_ALLREDUCE
! Rank 0 prints the sums (MPI_REDUCE) in the same "self ..." line, and
! the wait-state definitions evaluated on the ranks' own stamps of the
! calls' entries (SYSTEM_CLOCK with 8-byte integers: CLOCK_MONOTONIC ns,
! one clock for all ranks on one node), gathered on rank 0, in a
! "self_enter ..." line: they exclude the time a rank needs to notice that
! its partner arrived, which a loaded machine stretches.
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
  ! entry stamps, ns: recv, send (p1); ssend, recv (p2); barrier; allreduce
  integer(8) :: st(6), all(6, 4), r8
  double precision :: ls, lr, bar, nxn
  integer :: r

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
  if (nprocs /= 4) call MPI_ABORT(MPI_COMM_WORLD, 2, ierr)
  w = 0d0
  st = 0
  buf = 0

  if (mod(rank, 2) == 1) then
    rc = usleep(delay_us)
    call system_clock(st(2), r8)
    call MPI_SEND(buf, 256, MPI_INTEGER, rank - 1, 1, MPI_COMM_WORLD, ierr)
  else
    call system_clock(st(1), r8)
    t = MPI_WTIME()
    call MPI_RECV(buf, 256, MPI_INTEGER, rank + 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    w(1) = MPI_WTIME() - t
  end if

  if (mod(rank, 2) == 0) then
    call system_clock(st(3), r8)
    t = MPI_WTIME()
    call MPI_SSEND(buf, 256, MPI_INTEGER, rank + 1, 2, MPI_COMM_WORLD, ierr)
    w(2) = MPI_WTIME() - t
  else
    rc = usleep(delay_us)
    call system_clock(st(4), r8)
    call MPI_RECV(buf, 256, MPI_INTEGER, rank - 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  end if

  rc = usleep(rank * delay_us / 3)
  call system_clock(st(5), r8)
  t = MPI_WTIME()
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  w(3) = MPI_WTIME() - t

  rc = usleep((3 - rank) * delay_us / 3)
  one = rank
  call system_clock(st(6), r8)
  t = MPI_WTIME()
  call MPI_ALLREDUCE(one, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  w(4) = MPI_WTIME() - t

  call MPI_REDUCE(w, s, 4, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  call MPI_GATHER(st, 6, MPI_INTEGER8, all, 6, MPI_INTEGER8, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    write (*, '(A,F0.0,A,F0.0,A,F0.0,A,F0.0)') 'self late_sender_ns=', s(1) * 1d9, &
      ' late_receiver_ns=', s(2) * 1d9, ' barrier_ns=', s(3) * 1d9, ' nxn_ns=', s(4) * 1d9
    ls = 0d0
    lr = 0d0
    bar = 0d0
    nxn = 0d0
    do r = 1, 3, 2
      ! late sender: send entry - recv entry; late receiver: recv entry - ssend entry
      ls = ls + max(0d0, dble(all(2, r + 1) - all(1, r)))
      lr = lr + max(0d0, dble(all(4, r + 1) - all(3, r)))
    end do
    do r = 1, 4
      bar = bar + dble(maxval(all(5, :)) - all(5, r))
      nxn = nxn + dble(maxval(all(6, :)) - all(6, r))
    end do
    write (*, '(A,F0.0,A,F0.0,A,F0.0,A,F0.0)') 'self_enter late_sender_ns=', ls, &
      ' late_receiver_ns=', lr, ' barrier_ns=', bar, ' nxn_ns=', nxn
  end if
  call MPI_FINALIZE(ierr)
end program mpi_waits_f
