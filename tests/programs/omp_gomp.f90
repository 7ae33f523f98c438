! OpenMP synchronisation with known waits in Fortran, built with gfortran
! -fopenmp (GCC's libgomp), for crates/contend-cli/tests/e2e/openmp_gomp.rs:
! the Fortran side of tests/programs/omp_gomp.c. Two threads; work is
! sleeping. Every wait is timed by the threads themselves with
! clock_gettime(CLOCK_MONOTONIC) around the construct.
!
!   1. named critical section `update`: each thread enters CRIT times and
!      holds it HOLD_MS, timing the wait before each entry (after one
!      untimed entry by one thread, without holding: 2 CRIT + 1 entries);
!   2. omp_set_lock (the Fortran binding omp_set_lock_): the same (also
!      2 CRIT + 1 acquisitions);
!   3. barrier: thread t sleeps (t + 1) * BAR_MS, then times its wait at
!      `!$omp barrier`;
!   4. imbalanced `parallel do schedule(static)`: REGIONS regions of a loop
!      of 2 iterations, iteration i (0-based) sleeping (1 + 3 i) * WORK_MS;
!      each thread records when its work ended.
!
! Prints one line of key=value (waits in ns).
module clock
  use iso_c_binding
  use omp_lib
  implicit none
  type, bind(c) :: timespec
    integer(c_long) :: sec, nsec
  end type timespec
  interface
    integer(c_int) function clock_gettime(id, ts) bind(c, name="clock_gettime")
      import :: c_int, timespec
      integer(c_int), value :: id
      type(timespec) :: ts
    end function clock_gettime
    integer(c_int) function nanosleep(req, rem) bind(c, name="nanosleep")
      import :: c_int, c_ptr, timespec
      type(timespec) :: req
      type(c_ptr), value :: rem
    end function nanosleep
  end interface
contains
  integer(c_int64_t) function now_ns()
    type(timespec) :: ts
    integer(c_int) :: r
    r = clock_gettime(1_c_int, ts) ! CLOCK_MONOTONIC
    now_ns = int(ts%sec, c_int64_t) * 1000000000_c_int64_t + int(ts%nsec, c_int64_t)
  end function now_ns

  ! One entry of the critical section `update`, held `hold` ms; returns
  ! the wait before the entry, ns.
  integer(c_int64_t) function named(hold)
    integer, intent(in) :: hold
    integer(c_int64_t) :: t0
    t0 = now_ns()
!$omp critical (update)
    named = now_ns() - t0
    if (hold > 0) call sleep_ms(hold)
!$omp end critical (update)
  end function named

  ! One acquisition of the OpenMP lock `lck`, held `hold` ms; returns the
  ! wait, ns.
  integer(c_int64_t) function locked(lck, hold)
    integer(omp_lock_kind), intent(inout) :: lck
    integer, intent(in) :: hold
    integer(c_int64_t) :: t0
    t0 = now_ns()
    call omp_set_lock(lck) ! SET_LOCK
    locked = now_ns() - t0
    if (hold > 0) call sleep_ms(hold)
    call omp_unset_lock(lck)
  end function locked

  subroutine sleep_ms(ms)
    integer, intent(in) :: ms
    type(timespec) :: req
    integer(c_int) :: r
    req%sec = ms / 1000
    req%nsec = mod(ms, 1000) * 1000000
    r = nanosleep(req, c_null_ptr)
  end subroutine sleep_ms
end module clock

program omp_gomp
  use clock
  use omp_lib
  implicit none
  integer, parameter :: CRIT = 3, HOLD_MS = 4, BAR_MS = 6, REGIONS = 3, WORK_MS = 5
  integer(c_int64_t) :: crit_wait(0:1), lock_wait(0:1), bar_wait(0:1), t0
  integer(c_int64_t) :: work_end(REGIONS, 0:1), imp(0:1), last
  integer(omp_lock_kind) :: lck
  integer :: t, i, r

  crit_wait = 0
  lock_wait = 0
  bar_wait = 0
  call omp_init_lock(lck)
  call omp_set_num_threads(2)
!$omp parallel private(t, i, t0)
  t = omp_get_thread_num()
  ! one untimed entry of each, on one thread: the collector's first-time
  ! work for an object and a site is done before the timed entries
!$omp single
  t0 = named(0)
  t0 = locked(lck, 0)
!$omp end single
  ! every phase starts together (single ends in a barrier), so its
  ! entries are contended
  do i = 1, CRIT
    crit_wait(t) = crit_wait(t) + named(HOLD_MS)
  end do
!$omp barrier
  do i = 1, CRIT
    lock_wait(t) = lock_wait(t) + locked(lck, HOLD_MS)
  end do
!$omp barrier
  call sleep_ms((t + 1) * BAR_MS)
  t0 = now_ns()
!$omp barrier ! EXPLICIT_BARRIER
  bar_wait(t) = now_ns() - t0
!$omp end parallel
  do r = 1, REGIONS
!$omp parallel do schedule(static) ! STATIC_DO
    do i = 0, 1
      call sleep_ms((1 + 3 * i) * WORK_MS)
      work_end(r, omp_get_thread_num()) = now_ns()
    end do
!$omp end parallel do
  end do
  call omp_destroy_lock(lck)
  imp = 0
  do r = 1, REGIONS
    last = max(work_end(r, 0), work_end(r, 1))
    do t = 0, 1
      imp(t) = imp(t) + (last - work_end(r, t))
    end do
  end do
  write (*, '(a,i0,a,i0,a,i0,a,i0,a,i0,a,i0,a,i0,a,i0)') 'threads=2 crit=', CRIT, &
    ' crit_wait_ns=', crit_wait(0) + crit_wait(1), ' lock_wait_ns=', lock_wait(0) + lock_wait(1), &
    ' bar0_ns=', bar_wait(0), ' bar1_ns=', bar_wait(1), ' regions=', REGIONS, &
    ' static0_ns=', imp(0), ' static1_ns=', imp(1)
end program omp_gomp
