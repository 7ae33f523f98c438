/*
 * contend/zero_fill.h: writing a trace chunk with zeros before it is mapped
 * (internal to contend's in-process recorders: the lock collector, the
 * region recorder and the MPI recorder).
 *
 * A claimed chunk of a trace file used to be made by extending the file by
 * one byte and mapping the hole; the first touch of each page
 * (MADV_POPULATE_WRITE, or the first store) then took the read-fault path
 * (readahead, the file system reading and zero-filling the hole's pages)
 * and then the write fault. Writing the chunk with zeros first puts its
 * pages in the page cache (and allocates its blocks) in one system call per
 * 256 KiB, so the populate only maps them; and a full file system shows as
 * ENOSPC here instead of as a failed populate or a SIGBUS. Measured: the
 * first touch of a region chunk fell from 30 to 12 ns per 16-byte pair,
 * and the lock collector's uncontended pair from 58-61 to 39-40 ns added
 * (docs/benchmarks.md). Unused tails are punched out again after the run
 * (crates/contend-record/src/sparse.rs).
 */
#ifndef CONTEND_ZERO_FILL_H
#define CONTEND_ZERO_FILL_H

#include <errno.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

/* Writes `len` zero bytes at `off` of `fd`. 0 on success, -1 with errno
 * (ENOSPC: the file system is full). Async-signal-safe: one
 * pwritev(2) per 64 pages, no allocation. */
static inline int contend_write_zeros(int fd, uint64_t off, uint64_t len)
{
    static char zero_page[4096]; /* never written: the source of the zeros */
    struct iovec iov[64];
    while (len > 0) {
        int n = 0;
        uint64_t want = 0;
        while (n < 64 && want < len) {
            uint64_t piece = len - want < sizeof zero_page ? len - want : sizeof zero_page;
            iov[n].iov_base = zero_page;
            iov[n].iov_len = (size_t)piece;
            want += piece;
            n++;
        }
        ssize_t w = pwritev(fd, iov, n, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = ENOSPC;
            return -1;
        }
        off += (uint64_t)w;
        len -= (uint64_t)w;
    }
    return 0;
}

#endif
