/*
 * Memory-mapping calls of contend's in-process libraries (the lock
 * collector and the MPI recorder), made straight to the kernel rather than
 * through libc's mmap/munmap/madvise symbols. Internal to those libraries;
 * not part of any public interface.
 *
 * Why: libraries that track memory hook those symbols. UCX's UCM (used by
 * MPICH 4 and UCX builds of Open MPI) patches every loaded object's GOT
 * entries for mmap, munmap and madvise and takes its own rwlock around
 * them. The lock collector maps trace chunks inside its lock wrappers, so
 * with UCX a chunk mapping made while UCX held that rwlock for writing
 * re-entered UCM, which then took the same rwlock for reading, got EDEADLK
 * and aborted the process ("UCX FATAL pthread_rwlock_rdlock() failed:
 * Resource deadlock avoided"). Our own mappings are none of a memory
 * tracker's business, so they bypass it.
 *
 * Same contract as the libc functions: MAP_FAILED / -1 and errno on
 * failure.
 */
#ifndef CONTEND_RAW_MM_H
#define CONTEND_RAW_MM_H

#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

static inline void *contend_raw_mmap(void *addr, size_t len, int prot, int flags, int fd,
                                     off_t off)
{
    long r = syscall(SYS_mmap, addr, len, prot, flags, fd, off);
    return r == -1 ? MAP_FAILED : (void *)r;
}

static inline int contend_raw_munmap(void *addr, size_t len)
{
    return (int)syscall(SYS_munmap, addr, len);
}

static inline int contend_raw_madvise(void *addr, size_t len, int advice)
{
    return (int)syscall(SYS_madvise, addr, len, advice);
}

#endif /* CONTEND_RAW_MM_H */
