! Known wait states through the mpi_f08 bindings (2 ranks), measured by
! the program with its own clock (CLOCK_MONOTONIC, one clock for both
! ranks on one node), each stamp taken just before the MPI call:
!   1. late sender in MPI_Recv: rank 0 computes DELAY_A ms, stamps and
!      sends the stamp; rank 1 stamped just before its MPI_Recv.
!   2. late sender in MPI_Wait: rank 1 posts MPI_Irecv, stamps and waits;
!      rank 0 computes DELAY_B ms, stamps and sends the stamp.
!   3. wait at barrier on a communicator made by MPI_Comm_split: rank 1
!      computes DELAY_C ms, stamps and enters MPI_Barrier; rank 0 stamped
!      just before its barrier and sends that stamp afterwards, with the
!      stamp taken just before this send: rank 1 stamped just before its
!      MPI_Recv of it, and counts its wait as a late sender too (0 when
!      rank 0 sent first).
! The only barrier is the one of 3 (its wait is the run's wait at
! barrier). With MPICH, MPI_Init, MPI_Wait, MPI_Comm_split, MPI_Barrier and
! MPI_Finalize of mpi_f08 call PMPI_* directly; MPI_Send/MPI_Recv go
! through the C MPI_* functions.
! Rank 1 prints "self late_sender_ns=<1+2+3's message> barrier_ns=<3>
! recv_blocked_ns=<time from its stamps to the return of its MPI_Recv and
! MPI_Wait calls> barrier_blocked_ns=<the same for both ranks' barrier>"
! (the test compares the last two with the recorded durations of those
! calls: a rank descheduled between stamp and call shows as a difference)
! and "mpi_f08_late ok". Markers at the end of lines name the calls.
program mpi_f08_late
  use mpi_f08
  use, intrinsic :: iso_c_binding, only : c_int, c_long
  implicit none
  type, bind(C) :: timespec
    integer(c_long) :: sec, nsec
  end type
  interface
    integer(c_int) function clock_gettime(clk, ts) bind(C, name="clock_gettime")
      import :: c_int, timespec
      integer(c_int), value :: clk
      type(timespec) :: ts
    end function
  end interface
  integer, parameter :: DELAY_A = 40, DELAY_B = 30, DELAY_C = 25
  integer :: rank, ierr, color
  integer(8) :: mine, theirs, t_recv, t_wait, t_barrier, t_last, ls, bar
  integer(8) :: blocked, bar_blocked, three(3)
  type(MPI_Status) :: st
  type(MPI_Request) :: rq
  type(MPI_Comm) :: pair

  call MPI_Init(ierr) ! F08L_INIT
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  color = 0
  call MPI_Comm_split(MPI_COMM_WORLD, color, rank, pair) ! F08L_SPLIT

  ! 1. late sender in MPI_Recv
  if (rank == 0) then
    call spin(DELAY_A)
    mine = now()
    call MPI_Send(mine, 1, MPI_INTEGER8, 1, 1, MPI_COMM_WORLD) ! F08L_SEND
  else if (rank == 1) then
    t_recv = now()
    call MPI_Recv(theirs, 1, MPI_INTEGER8, 0, 1, MPI_COMM_WORLD, st) ! F08L_RECV
    blocked = now() - t_recv
    ls = max(0_8, theirs - t_recv)
  end if

  ! 2. late sender in MPI_Wait
  if (rank == 0) then
    call spin(DELAY_B)
    mine = now()
    call MPI_Send(mine, 1, MPI_INTEGER8, 1, 2, MPI_COMM_WORLD)
  else if (rank == 1) then
    call MPI_Irecv(theirs, 1, MPI_INTEGER8, 0, 2, MPI_COMM_WORLD, rq)
    t_wait = now()
    call MPI_Wait(rq, st, ierr) ! F08L_WAIT
    blocked = blocked + (now() - t_wait)
    ls = ls + max(0_8, theirs - t_wait)
  end if

  ! 3. wait at barrier on the split communicator
  if (rank == 1) call spin(DELAY_C)
  t_barrier = now()
  call MPI_Barrier(pair, ierr) ! F08L_BARRIER
  bar_blocked = now() - t_barrier
  if (rank == 0) then
    three(1) = t_barrier
    three(2) = bar_blocked
    three(3) = now()
    call MPI_Send(three, 3, MPI_INTEGER8, 1, 3, MPI_COMM_WORLD)
  else if (rank == 1) then
    t_last = now()
    call MPI_Recv(three, 3, MPI_INTEGER8, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
    blocked = blocked + (now() - t_last)
    ls = ls + max(0_8, three(3) - t_last)
    bar = max(0_8, t_barrier - three(1))
    print '(a,i0,a,i0,a,i0,a,i0)', 'self late_sender_ns=', ls, ' barrier_ns=', bar, &
      ' recv_blocked_ns=', blocked, ' barrier_blocked_ns=', bar_blocked + three(2)
    if (ierr == MPI_SUCCESS) print '(a)', 'mpi_f08_late ok'
  end if
  call MPI_Comm_free(pair)
  call MPI_Finalize(ierr) ! F08L_FINALIZE

contains

  integer(8) function now()
    type(timespec) :: ts
    integer(c_int) :: rc
    rc = clock_gettime(1_c_int, ts) ! CLOCK_MONOTONIC
    now = int(ts%sec, 8) * 1000000000_8 + int(ts%nsec, 8)
  end function

  ! Busy for ms milliseconds of the clock.
  subroutine spin(ms)
    integer, intent(in) :: ms
    integer(8) :: t0
    t0 = now()
    do while (now() - t0 < int(ms, 8) * 1000000_8)
    end do
  end subroutine

end program
