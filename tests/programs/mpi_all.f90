! The Fortran entry points not used by mpi_fortran.f90, once each with
! known arguments (4 ranks, Open MPI's `use mpi`), for the recorder's
! end-to-end test. Rank 0 prints "mpi_all_f ok" when every value and
! every returned index, flag and status was as expected.
!   1. ring: MPI_IRECV x2 from r-1 (tags 7, 8), MPI_ISEND x2 to r+1;
!      MPI_WAITANY (1-based index) and MPI_WAITSOME on the receives (with
!      statuses), MPI_TESTALL polled on the sends
!   2. MPI_IRECV/MPI_ISEND tag 9: MPI_TESTANY and MPI_TESTSOME polled,
!      MPI_TEST on an MPI_REQUEST_NULL
!   3. rank 0 MPI_RSEND to rank 1 after a barrier (rank 1 posted first),
!      which MPI_WAITs; rank 2 MPI_ISSEND to 3, which MPI_PROBEs, MPI_IPROBEs
!      and MPI_RECVs; MPI_SENDRECV and MPI_SENDRECV_REPLACE rings (tag 11, 12)
!   3b. rank 0 MPI_SENDs 2 integers to rank 1 with tags 13 and 14, then
!      MPI_MPROBEs MPI_PROC_NULL (MPI_MESSAGE_NO_PROC) and MPI_MRECVs it;
!      rank 1 MPI_MPROBE + MPI_MRECV (tag 13), MPI_IMPROBE polled +
!      MPI_IMRECV + MPI_WAIT (tag 14)
!   4. MPI_BCAST (root 1), MPI_REDUCE (root 2), MPI_GATHER / MPI_GATHERV
!      (root 3), MPI_SCATTER / MPI_SCATTERV (root 0), MPI_ALLGATHER(V),
!      MPI_ALLTOALL(V/W), MPI_REDUCE_SCATTER(_BLOCK), MPI_SCAN, MPI_EXSCAN
!   5. MPI_COMM_DUP, MPI_COMM_CREATE of {1,2,3}, MPI_COMM_FREE
program mpi_all_f
  use mpi
  implicit none
  integer :: ierr, rank, nprocs, nxt, prv, i, idx, outcount, bad, anybad
  integer :: reqs(4), indices(2), st(MPI_STATUS_SIZE), sts(MPI_STATUS_SIZE, 2)
  integer :: r7, r8, r9, s7, s8, s9, v, w, res, one, nullreq
  integer :: a(16), all(16), counts(4), displs(4), ones(4), udispls(4), bdispls(4), types(4), vec(4)
  integer :: dupc, sub, wgroup, three, members(3)
  integer :: msg, mv(4)
  logical :: flag

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
  nxt = mod(rank + 1, 4)
  prv = mod(rank + 3, 4)
  bad = 0
  do i = 1, 16
    a(i) = rank * 100 + i - 1
  end do

  ! 1
  s7 = rank
  s8 = rank + 10
  call MPI_IRECV(r7, 1, MPI_INTEGER, prv, 7, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_IRECV(r8, 1, MPI_INTEGER, prv, 8, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_ISEND(s7, 1, MPI_INTEGER, nxt, 7, MPI_COMM_WORLD, reqs(3), ierr)
  call MPI_ISEND(s8, 1, MPI_INTEGER, nxt, 8, MPI_COMM_WORLD, reqs(4), ierr)
  call MPI_WAITANY(2, reqs, idx, st, ierr)
  if (idx /= 1 .and. idx /= 2) bad = 1
  if (st(MPI_SOURCE) /= prv) bad = 1
  if (reqs(idx) /= MPI_REQUEST_NULL) bad = 1
  call MPI_WAITSOME(2, reqs, outcount, indices, sts, ierr)
  if (outcount /= 1 .or. indices(1) /= 3 - idx .or. sts(MPI_TAG, 1) /= 6 + indices(1)) bad = 1
  flag = .false.
  do while (.not. flag)
    call MPI_TESTALL(2, reqs(3:4), flag, MPI_STATUSES_IGNORE, ierr)
  end do
  if (r7 /= prv .or. r8 /= prv + 10) bad = 1
  ! 2
  s9 = rank + 20
  call MPI_IRECV(r9, 1, MPI_INTEGER, prv, 9, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_ISEND(s9, 1, MPI_INTEGER, nxt, 9, MPI_COMM_WORLD, reqs(2), ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_TESTANY(1, reqs(1:1), idx, flag, st, ierr)
  end do
  if (idx /= 1 .or. st(MPI_TAG) /= 9) bad = 1
  outcount = 0
  do while (outcount == 0)
    call MPI_TESTSOME(1, reqs(2:2), outcount, indices, MPI_STATUSES_IGNORE, ierr)
  end do
  if (indices(1) /= 1 .or. r9 /= prv + 20) bad = 1
  nullreq = MPI_REQUEST_NULL
  call MPI_TEST(nullreq, flag, MPI_STATUS_IGNORE, ierr)
  if (.not. flag) bad = 1
  ! 3
  if (rank == 1) call MPI_IRECV(v, 1, MPI_INTEGER, 0, 2, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    call MPI_RSEND(a, 1, MPI_INTEGER, 1, 2, MPI_COMM_WORLD, ierr)
  else if (rank == 1) then
    call MPI_WAIT(reqs(1), st, ierr)
    if (v /= 0 .or. st(MPI_SOURCE) /= 0) bad = 1
  else if (rank == 2) then
    call MPI_ISSEND(a, 2, MPI_INTEGER, 3, 5, MPI_COMM_WORLD, reqs(1), ierr)
    call MPI_WAIT(reqs(1), MPI_STATUS_IGNORE, ierr)
  else
    call MPI_PROBE(2, 5, MPI_COMM_WORLD, st, ierr)
    call MPI_IPROBE(2, 5, MPI_COMM_WORLD, flag, st, ierr)
    if (.not. flag .or. st(MPI_SOURCE) /= 2) bad = 1
    call MPI_RECV(all, 2, MPI_INTEGER, 2, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    if (all(2) /= 201) bad = 1
  end if
  ! 3b
  if (rank == 0) then
    mv = (/ 31, 32, 33, 34 /)
    call MPI_SEND(mv, 2, MPI_INTEGER, 1, 13, MPI_COMM_WORLD, ierr)
    call MPI_SEND(mv(3), 2, MPI_INTEGER, 1, 14, MPI_COMM_WORLD, ierr)
    call MPI_MPROBE(MPI_PROC_NULL, 0, MPI_COMM_WORLD, msg, st, ierr)
    if (msg /= MPI_MESSAGE_NO_PROC .or. st(MPI_SOURCE) /= MPI_PROC_NULL) bad = 1
    call MPI_MRECV(mv, 0, MPI_INTEGER, msg, MPI_STATUS_IGNORE, ierr)
    if (msg /= MPI_MESSAGE_NULL) bad = 1
  else if (rank == 1) then
    call MPI_MPROBE(0, 13, MPI_COMM_WORLD, msg, st, ierr)
    if (st(MPI_SOURCE) /= 0 .or. st(MPI_TAG) /= 13) bad = 1
    mv = 0
    call MPI_MRECV(mv, 2, MPI_INTEGER, msg, st, ierr)
    if (msg /= MPI_MESSAGE_NULL .or. mv(2) /= 32 .or. st(MPI_TAG) /= 13) bad = 1
    flag = .false.
    do while (.not. flag)
      call MPI_IMPROBE(0, MPI_ANY_TAG, MPI_COMM_WORLD, flag, msg, MPI_STATUS_IGNORE, ierr)
    end do
    call MPI_IMRECV(mv, 2, MPI_INTEGER, msg, reqs(1), ierr)
    if (msg /= MPI_MESSAGE_NULL) bad = 1
    call MPI_WAIT(reqs(1), st, ierr)
    if (mv(1) /= 33 .or. mv(2) /= 34 .or. st(MPI_TAG) /= 14 .or. st(MPI_SOURCE) /= 0) bad = 1
  end if
  call MPI_SENDRECV(rank, 1, MPI_INTEGER, nxt, 11, w, 1, MPI_INTEGER, prv, 11, MPI_COMM_WORLD, st, ierr)
  if (w /= prv) bad = 1
  v = rank
  call MPI_SENDRECV_REPLACE(v, 1, MPI_INTEGER, nxt, 12, prv, 12, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  if (v /= prv) bad = 1
  ! 4
  one = rank + 1
  counts = (/ 1, 2, 3, 4 /)
  displs = (/ 0, 1, 3, 6 /)
  ones = 1
  udispls = (/ 0, 1, 2, 3 /)
  bdispls = (/ 0, 4, 8, 12 /)
  types = MPI_INTEGER
  res = 0
  if (rank == 1) res = 4242
  call MPI_BCAST(res, 1, MPI_INTEGER, 1, MPI_COMM_WORLD, ierr)
  if (res /= 4242) bad = 1
  call MPI_REDUCE(one, res, 1, MPI_INTEGER, MPI_SUM, 2, MPI_COMM_WORLD, ierr)
  if (rank == 2 .and. res /= 10) bad = 1
  call MPI_GATHER(one, 1, MPI_INTEGER, all, 1, MPI_INTEGER, 3, MPI_COMM_WORLD, ierr)
  if (rank == 3 .and. all(4) /= 4) bad = 1
  call MPI_GATHERV(a, rank + 1, MPI_INTEGER, all, counts, displs, MPI_INTEGER, 3, MPI_COMM_WORLD, ierr)
  if (rank == 3 .and. all(10) /= 303) bad = 1
  call MPI_SCATTER(a, 1, MPI_INTEGER, res, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  if (res /= rank) bad = 1
  call MPI_SCATTERV(a, counts, displs, MPI_INTEGER, all, rank + 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  if (all(1) /= displs(rank + 1)) bad = 1
  call MPI_ALLGATHER(one, 1, MPI_INTEGER, all, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  if (all(3) /= 3) bad = 1
  call MPI_ALLGATHERV(a, rank + 1, MPI_INTEGER, all, counts, displs, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  if (all(7) /= 300) bad = 1
  call MPI_ALLTOALL(a, 1, MPI_INTEGER, all, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  if (all(2) /= 100 + rank) bad = 1
  call MPI_ALLTOALLV(a, ones, udispls, MPI_INTEGER, all, ones, udispls, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  if (all(3) /= 200 + rank) bad = 1
  call MPI_ALLTOALLW(a, ones, bdispls, types, all, ones, bdispls, types, MPI_COMM_WORLD, ierr)
  if (all(4) /= 300 + rank) bad = 1
  vec = rank
  call MPI_REDUCE_SCATTER(vec, res, ones, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (res /= 6) bad = 1
  call MPI_REDUCE_SCATTER_BLOCK(vec, res, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (res /= 6) bad = 1
  call MPI_SCAN(one, res, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (res /= (rank + 1) * (rank + 2) / 2) bad = 1
  call MPI_EXSCAN(one, res, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank > 0 .and. res /= rank * (rank + 1) / 2) bad = 1
  ! 5
  call MPI_COMM_DUP(MPI_COMM_WORLD, dupc, ierr)
  call MPI_COMM_GROUP(MPI_COMM_WORLD, wgroup, ierr)
  members = (/ 1, 2, 3 /)
  call MPI_GROUP_INCL(wgroup, 3, members, three, ierr)
  call MPI_COMM_CREATE(dupc, three, sub, ierr)
  if ((rank == 0) .neqv. (sub == MPI_COMM_NULL)) bad = 1
  if (sub /= MPI_COMM_NULL) call MPI_COMM_FREE(sub, ierr)
  call MPI_COMM_FREE(dupc, ierr)
  if (dupc /= MPI_COMM_NULL) bad = 1
  call MPI_GROUP_FREE(three, ierr)
  call MPI_GROUP_FREE(wgroup, ierr)

  call MPI_ALLREDUCE(bad, anybad, 1, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (anybad == 0) then
      print '(A)', 'mpi_all_f ok'
    else
      print '(A)', 'mpi_all_f FAILED'
    end if
  end if
  call MPI_FINALIZE(ierr)
end program mpi_all_f
