! The mpi_f08 entry points that MPICH's bindings send to PMPI_* directly,
! beyond those of mpi_f08_late.f90 (2 ranks): MPI_Init_thread, MPI_Waitany,
! MPI_Waitsome, MPI_Testall, MPI_Probe, MPI_Send_init + MPI_Start,
! MPI_Request_free, MPI_Ibarrier. Every rank prints what the calls gave
! back (Waitany's index and status, Testall's flag, the values received);
! the test compares that with a run without the recorder.
program mpi_f08_calls
  use mpi_f08
  implicit none
  integer :: rank, x(4), y(4), idx, i, ierr, cnt
  logical :: flag
  type(MPI_Status) :: st, sts(4)
  type(MPI_Request) :: rq(4), p
  integer :: inds(4)
  call MPI_Init_thread(MPI_THREAD_FUNNELED, i)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  x = rank
  do i = 1, 4
    call MPI_Irecv(y(i), 1, MPI_INTEGER, 1 - rank, i, MPI_COMM_WORLD, rq(i))
  end do
  do i = 1, 4
    call MPI_Send(x(i), 1, MPI_INTEGER, 1 - rank, i, MPI_COMM_WORLD)
  end do
  call MPI_Waitany(4, rq, idx, st, ierr)
  print *, rank, 'waitany idx', idx, st%MPI_TAG, ierr
  call MPI_Waitsome(4, rq, cnt, inds, sts)
  call MPI_Testall(4, rq, flag, sts)
  do while (.not. flag)
    call MPI_Testall(4, rq, flag, sts)
  end do
  print *, rank, 'testall', flag
  call MPI_Isend(x(1), 1, MPI_INTEGER, 1 - rank, 9, MPI_COMM_WORLD, rq(2))
  call MPI_Probe(1 - rank, 9, MPI_COMM_WORLD, st)
  call MPI_Recv(y(1), 1, MPI_INTEGER, 1 - rank, 9, MPI_COMM_WORLD, st)
  call MPI_Wait(rq(2), st)
  call MPI_Send_init(x(1), 1, MPI_INTEGER, 1 - rank, 11, MPI_COMM_WORLD, p)
  call MPI_Irecv(y(2), 1, MPI_INTEGER, 1 - rank, 11, MPI_COMM_WORLD, rq(1))
  call MPI_Start(p)
  call MPI_Wait(p, st)
  call MPI_Wait(rq(1), st)
  call MPI_Request_free(p)
  call MPI_Ibarrier(MPI_COMM_WORLD, rq(1))
  call MPI_Wait(rq(1), MPI_STATUS_IGNORE)
  print *, rank, 'done', y(1), y(2)
  call MPI_Finalize()
end program
