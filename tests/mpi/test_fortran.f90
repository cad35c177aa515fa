! A plain Fortran MPI program (use mpi): each collective Loom runs, blocking
! and nonblocking, on Fortran's types (INTEGER, INTEGER*8, REAL, DOUBLE
! PRECISION, DOUBLE COMPLEX, CHARACTER, 2INTEGER), in place where MPI allows it, on MPI_COMM_WORLD, on its
! halves and on duplicates made and freed in a loop, at counts 0, 1, p-1, p,
! p+1 and 1001, each result checked element by element. Run under coll/loom
! (run_component_tests.sh) and with libloom-mpi preloaded
! (run_pmpi_tests.sh): Fortran's bindings must reach Loom and MPI_IN_PLACE
! must arrive as the C one.
program test_fortran
  use mpi
  implicit none
  integer :: cases = 0, failures = 0
  integer :: ierr, rank, p, half, copy, loop, all_failures, all_cases

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, p, ierr)
  call check_comm(MPI_COMM_WORLD)
  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), p - rank, half, ierr)
  call check_comm(half)
  call MPI_Comm_free(half, ierr)
  do loop = 1, 3
    call MPI_Comm_dup(MPI_COMM_WORLD, copy, ierr)
    call check_comm(copy)
    call MPI_Comm_free(copy, ierr)
  end do
  call MPI_Reduce(failures, all_failures, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  call MPI_Reduce(cases, all_cases, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(A,I0,A,I0,A,I0,A)', 'test_fortran np=', p, ': ', all_cases, ' cases, ', all_failures, ' failures'
  call MPI_Finalize(ierr)
  if (all_failures /= 0 .and. rank == 0) stop 1

contains

  subroutine expect(ok, what, comm, n)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    integer, intent(in) :: comm, n
    integer :: rank, p, ierr
    cases = cases + 1
    if (ok) return
    failures = failures + 1
    call MPI_Comm_rank(comm, rank, ierr)
    call MPI_Comm_size(comm, p, ierr)
    if (failures <= 20) print '(A,A,A,I0,A,I0,A,I0)', 'FAIL: ', what, ' p=', p, ' n=', n, ' rank=', rank
  end subroutine expect

  ! The element a rank sends to `to`, at `i`: every source, destination and
  ! position gives another value.
  integer function tagged(from, to, i)
    integer, intent(in) :: from, to, i
    tagged = from * 10000000 + to * 10000 + i
  end function tagged

  ! How many elements `from` sends `to` in the alltoallv: uneven, some zero.
  integer function vcount(from, to, n, p)
    integer, intent(in) :: from, to, n, p
    vcount = mod(from + 2 * to + n, 4)
    if (to == mod(from + 1, p)) vcount = vcount + n
  end function vcount

  ! How many elements `rank` contributes to the allgatherv.
  integer function gcount(rank, n)
    integer, intent(in) :: rank, n
    gcount = mod(rank + n, 3)
    if (rank == 0) gcount = gcount + n
  end function gcount

  subroutine check_comm(comm)
    integer, intent(in) :: comm
    integer, parameter :: sizes(6) = [0, 1, -1, -2, -3, 1001]
    integer :: rank, p, ierr, k, n, i, q, total, at, request, requests(2)
    integer :: statuses(MPI_STATUS_SIZE, 2)
    double precision, allocatable :: da(:), db(:)
    real, allocatable :: ra(:)
    integer(8), allocatable :: la(:), lb(:)
    complex(8), allocatable :: za(:), zb(:)
    character(len=:), allocatable :: ca, cb
    integer, allocatable :: ia(:), ib(:), sc(:), sd(:), rc(:), rd(:)
    logical :: ok

    call MPI_Comm_rank(comm, rank, ierr)
    call MPI_Comm_size(comm, p, ierr)
    do k = 1, size(sizes)
      n = sizes(k)
      if (n == -1) n = p - 1
      if (n == -2) n = p
      if (n == -3) n = p + 1

      ! allreduce, double precision sum, out of place
      allocate(da(max(n, 1)), db(max(n, 1)))
      da = [(dble(rank + 1 + i), i = 1, max(n, 1))]
      db = -1
      call MPI_Allreduce(da, db, n, MPI_DOUBLE_PRECISION, MPI_SUM, comm, ierr)
      ok = ierr == MPI_SUCCESS
      do i = 1, n
        ok = ok .and. db(i) == dble(p * (p + 1) / 2 + p * i)
      end do
      call expect(ok, 'MPI_Allreduce double sum', comm, n)

      ! iallreduce and MPI_Wait, the same
      db = -1
      call MPI_Iallreduce(da, db, n, MPI_DOUBLE_PRECISION, MPI_SUM, comm, request, ierr)
      call MPI_Wait(request, MPI_STATUS_IGNORE, ierr)
      ok = ierr == MPI_SUCCESS .and. request == MPI_REQUEST_NULL
      do i = 1, n
        ok = ok .and. db(i) == dble(p * (p + 1) / 2 + p * i)
      end do
      call expect(ok, 'MPI_Iallreduce double sum', comm, n)
      deallocate(da, db)

      ! allreduce of the other Fortran types: REAL, INTEGER*8 past 2**31, DOUBLE COMPLEX
      allocate(ra(max(n, 1)), la(max(n, 1)), lb(max(n, 1)), za(max(n, 1)), zb(max(n, 1)))
      ra = [(real(rank + i), i = 1, max(n, 1))]
      call MPI_Allreduce(MPI_IN_PLACE, ra, n, MPI_REAL, MPI_SUM, comm, ierr)
      ok = ierr == MPI_SUCCESS
      do i = 1, n
        ok = ok .and. ra(i) == real(p * (p - 1) / 2 + p * i)
      end do
      call expect(ok, 'MPI_Allreduce real sum in place', comm, n)
      la = [(int(rank, 8) * 2_8**33 + i, i = 1, max(n, 1))]
      call MPI_Allreduce(la, lb, n, MPI_INTEGER8, MPI_SUM, comm, ierr)
      ok = ierr == MPI_SUCCESS
      do i = 1, n
        ok = ok .and. lb(i) == int(p * (p - 1) / 2, 8) * 2_8**33 + int(p, 8) * i
      end do
      call expect(ok, 'MPI_Allreduce integer*8 sum', comm, n)
      za = [(cmplx(rank + i, -rank, kind=8), i = 1, max(n, 1))]
      call MPI_Allreduce(za, zb, n, MPI_DOUBLE_COMPLEX, MPI_SUM, comm, ierr)
      ok = ierr == MPI_SUCCESS
      do i = 1, n
        ok = ok .and. zb(i) == cmplx(p * (p - 1) / 2 + p * i, -(p * (p - 1) / 2), kind=8)
      end do
      call expect(ok, 'MPI_Allreduce double complex sum', comm, n)
      deallocate(ra, la, lb, za, zb)

      ! allgather of CHARACTERs
      allocate(character(len=max(n, 1)) :: ca)
      allocate(character(len=max(p * n, 1)) :: cb)
      do i = 1, n
        ca(i:i) = achar(65 + mod(rank + i, 26))
      end do
      call MPI_Allgather(ca, n, MPI_CHARACTER, cb, n, MPI_CHARACTER, comm, ierr)
      ok = ierr == MPI_SUCCESS
      do q = 0, p - 1
        do i = 1, n
          ok = ok .and. cb(q * n + i:q * n + i) == achar(65 + mod(q + i, 26))
        end do
      end do
      call expect(ok, 'MPI_Allgather character', comm, n)
      deallocate(ca, cb)

      ! allreduce, integer max, in place
      allocate(ia(max(n, 1)))
      ia = [(mod(rank * 7 + i, 13), i = 1, max(n, 1))]
      call MPI_Allreduce(MPI_IN_PLACE, ia, n, MPI_INTEGER, MPI_MAX, comm, ierr)
      ok = ierr == MPI_SUCCESS
      do i = 1, n
        ok = ok .and. ia(i) == maxval([(mod(q * 7 + i, 13), q = 0, p - 1)])
      end do
      call expect(ok, 'MPI_Allreduce integer max in place', comm, n)
      deallocate(ia)

      ! allreduce MINLOC on INTEGER pairs (value, index): ties keep the smaller index
      allocate(ia(max(2 * n, 1)), ib(max(2 * n, 1)))
      do i = 1, n
        ia(2 * i - 1) = mod(rank + i, 3)
        ia(2 * i) = rank
      end do
      call MPI_Allreduce(ia, ib, n, MPI_2INTEGER, MPI_MINLOC, comm, ierr)
      ok = ierr == MPI_SUCCESS
      do i = 1, n
        ok = ok .and. ib(2 * i - 1) == minval([(mod(q + i, 3), q = 0, p - 1)])
        ok = ok .and. ib(2 * i) == minloc([(mod(q + i, 3), q = 0, p - 1)], 1) - 1
      end do
      call expect(ok, 'MPI_Allreduce 2integer minloc', comm, n)
      deallocate(ia, ib)

      ! reduce_scatter_block, integer sum
      allocate(ia(max(p * n, 1)), ib(max(n, 1)))
      ia = [(rank + i, i = 1, max(p * n, 1))]
      ib = -1
      call MPI_Reduce_scatter_block(ia, ib, n, MPI_INTEGER, MPI_SUM, comm, ierr)
      ok = ierr == MPI_SUCCESS
      do i = 1, n
        ok = ok .and. ib(i) == p * (p - 1) / 2 + p * (rank * n + i)
      end do
      call expect(ok, 'MPI_Reduce_scatter_block integer sum', comm, n)
      deallocate(ia, ib)

      ! allgather, out of place then in place
      allocate(ia(max(n, 1)), ib(max(p * n, 1)))
      ia = [(tagged(rank, 0, i), i = 1, max(n, 1))]
      do at = 0, 1
        ib = -1
        if (at == 0) then
          call MPI_Allgather(ia, n, MPI_INTEGER, ib, n, MPI_INTEGER, comm, ierr)
        else
          ib(rank * n + 1:rank * n + n) = ia(1:n)
          call MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ib, n, MPI_INTEGER, comm, ierr)
        end if
        ok = ierr == MPI_SUCCESS
        do q = 0, p - 1
          do i = 1, n
            ok = ok .and. ib(q * n + i) == tagged(q, 0, i)
          end do
        end do
        if (at == 0) then
          call expect(ok, 'MPI_Allgather', comm, n)
        else
          call expect(ok, 'MPI_Allgather in place', comm, n)
        end if
      end do
      deallocate(ia, ib)

      ! alltoall, blocking, then two at once through MPI_Ialltoall and MPI_Waitall
      allocate(ia(max(p * n, 1)), ib(max(2 * p * n, 1)))
      ia = 0
      do q = 0, p - 1
        do i = 1, n
          ia(q * n + i) = tagged(rank, q, i)
        end do
      end do
      ib = -1
      call MPI_Alltoall(ia, n, MPI_INTEGER, ib, n, MPI_INTEGER, comm, ierr)
      ok = ierr == MPI_SUCCESS
      do q = 0, p - 1
        do i = 1, n
          ok = ok .and. ib(q * n + i) == tagged(q, rank, i)
        end do
      end do
      call expect(ok, 'MPI_Alltoall', comm, n)
      ib = -1
      call MPI_Ialltoall(ia, n, MPI_INTEGER, ib, n, MPI_INTEGER, comm, requests(1), ierr)
      call MPI_Ialltoall(ia, n, MPI_INTEGER, ib(p * n + 1:), n, MPI_INTEGER, comm, requests(2), ierr)
      call MPI_Waitall(2, requests, statuses, ierr)
      ok = ierr == MPI_SUCCESS
      do q = 0, p - 1
        do i = 1, n
          ok = ok .and. ib(q * n + i) == tagged(q, rank, i) .and. ib(p * n + q * n + i) == tagged(q, rank, i)
        end do
      end do
      call expect(ok, 'MPI_Ialltoall twice, MPI_Waitall', comm, n)
      deallocate(ia, ib)

      ! alltoallv, uneven counts (some zero), a gap of one element between receive blocks
      allocate(sc(0:p - 1), sd(0:p - 1), rc(0:p - 1), rd(0:p - 1))
      total = 0
      do q = 0, p - 1
        sc(q) = vcount(rank, q, n, p)
        sd(q) = total
        total = total + sc(q)
      end do
      allocate(ia(max(total, 1)))
      do q = 0, p - 1
        do i = 1, sc(q)
          ia(sd(q) + i) = tagged(rank, q, i)
        end do
      end do
      total = 0
      do q = 0, p - 1
        rc(q) = vcount(q, rank, n, p)
        rd(q) = total
        total = total + rc(q) + 1
      end do
      allocate(ib(max(total, 1)))
      ib = -1
      call MPI_Alltoallv(ia, sc, sd, MPI_INTEGER, ib, rc, rd, MPI_INTEGER, comm, ierr)
      ok = ierr == MPI_SUCCESS
      do q = 0, p - 1
        do i = 1, rc(q)
          ok = ok .and. ib(rd(q) + i) == tagged(q, rank, i)
        end do
        ok = ok .and. ib(rd(q) + rc(q) + 1) == -1
      end do
      call expect(ok, 'MPI_Alltoallv', comm, n)
      deallocate(ia, ib)

      ! allgatherv, uneven contributions, in place and out of place
      total = 0
      do q = 0, p - 1
        rc(q) = gcount(q, n)
        rd(q) = total
        total = total + rc(q) + 1
      end do
      allocate(ia(max(rc(rank), 1)), ib(max(total, 1)))
      ia = [(tagged(rank, 0, i), i = 1, max(rc(rank), 1))]
      do at = 0, 1
        ib = -1
        if (at == 0) then
          call MPI_Allgatherv(ia, rc(rank), MPI_INTEGER, ib, rc, rd, MPI_INTEGER, comm, ierr)
        else
          ib(rd(rank) + 1:rd(rank) + rc(rank)) = ia(1:rc(rank))
          call MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ib, rc, rd, MPI_INTEGER, comm, ierr)
        end if
        ok = ierr == MPI_SUCCESS
        do q = 0, p - 1
          do i = 1, rc(q)
            ok = ok .and. ib(rd(q) + i) == tagged(q, 0, i)
          end do
          ok = ok .and. ib(rd(q) + rc(q) + 1) == -1
        end do
        if (at == 0) then
          call expect(ok, 'MPI_Allgatherv', comm, n)
        else
          call expect(ok, 'MPI_Allgatherv in place', comm, n)
        end if
      end do
      deallocate(ia, ib, sc, sd, rc, rd)
    end do
  end subroutine check_comm
end program test_fortran
