/*
 * Snapshots of /proc/self/maps, appended to <dir>/maps/<pid>[.<n>].maps.
 *
 * The reader resolves a call-site address in the latest snapshot that
 * covers it, so a snapshot is taken at start, at exit, and whenever a new
 * call site lies outside every executable mapping of the last snapshot
 * (code loaded later with dlopen, or JIT code).
 *
 * Raw open/read/write into static buffers: no stdio, no malloc. One
 * snapshot at a time (an atomic flag); a request that finds another
 * snapshot running is dropped, as that one is about to record the same
 * mappings.
 *
 * The executable ranges of the last snapshot live in two static arrays: the
 * snapshot fills the unused one and then publishes it, so a thread checking
 * an address meanwhile still reads a complete (older) set.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "collector.h"

#define MAX_RANGES 512

struct range {
    uint64_t lo, hi; /* [lo, hi) */
};

static char maps_path[PATH_MAX];
static int snap_busy;            /* atomic: a snapshot is running          */
static uint64_t snap_count;      /* snapshots written to the file          */
static int have_ranges;          /* atomic: a snapshot was parsed          */
static int cur_ranges;           /* atomic: which array is published       */
static uint32_t n_ranges[2];
static struct range ranges[2][MAX_RANGES];
static char buf[16384];

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int contend_maps_open(const char *path)
{
    size_t len = strlen(path);
    if (len >= sizeof maps_path)
        return -1;
    memcpy(maps_path, path, len + 1);
    snap_count = 0;
    int fd = open(maps_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        maps_path[0] = 0;
        return -1;
    }
    close(fd);
    return 0;
}

void contend_maps_after_fork(void)
{
    /* a parent thread may have been in the middle of a snapshot */
    __atomic_store_n(&snap_busy, 0, __ATOMIC_RELEASE);
}

int contend_maps_covers(uint64_t addr)
{
    if (!__atomic_load_n(&have_ranges, __ATOMIC_ACQUIRE))
        return 1; /* nothing to compare with: don't snapshot on every site */
    int which = __atomic_load_n(&cur_ranges, __ATOMIC_ACQUIRE);
    const struct range *r = ranges[which];
    uint32_t lo = 0, hi = n_ranges[which];
    while (lo < hi) { /* /proc/self/maps is sorted by address */
        uint32_t mid = lo + (hi - lo) / 2;
        if (addr < r[mid].lo)
            hi = mid;
        else if (addr >= r[mid].hi)
            lo = mid + 1;
        else
            return 1;
    }
    return 0;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Parser state for "lo-hi perms ..." lines, kept across read() pieces. */
struct parse {
    int field; /* 0 lo, 1 hi, 2 perms, 3 rest of line */
    int perm_i;
    int exec;
    uint64_t lo, hi;
    struct range *out;
    uint32_t n;
};

static void parse_piece(struct parse *ps, const char *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        char c = p[i];
        if (c == '\n') {
            if (ps->exec && ps->hi > ps->lo) {
                if (ps->n < MAX_RANGES) {
                    ps->out[ps->n].lo = ps->lo;
                    ps->out[ps->n].hi = ps->hi;
                    ps->n++;
                } else if (ps->hi > ps->out[MAX_RANGES - 1].hi) {
                    ps->out[MAX_RANGES - 1].hi = ps->hi; /* too many: widen */
                }
            }
            ps->field = 0;
            ps->perm_i = 0;
            ps->exec = 0;
            ps->lo = ps->hi = 0;
            continue;
        }
        switch (ps->field) {
        case 0:
        case 1: {
            int v = hexval(c);
            if (v >= 0) {
                if (ps->field == 0)
                    ps->lo = ps->lo * 16 + (uint64_t)v;
                else
                    ps->hi = ps->hi * 16 + (uint64_t)v;
            } else if (ps->field == 0 && c == '-') {
                ps->field = 1;
            } else if (ps->field == 1 && c == ' ') {
                ps->field = 2;
            } else {
                ps->field = 3;
            }
            break;
        }
        case 2:
            if (ps->perm_i == 2 && c == 'x')
                ps->exec = 1;
            if (++ps->perm_i == 4)
                ps->field = 3;
            break;
        default:
            break;
        }
    }
}

void contend_maps_snapshot(void)
{
    if (!maps_path[0])
        return;
    if (__atomic_exchange_n(&snap_busy, 1, __ATOMIC_ACQUIRE))
        return; /* another thread is taking one right now */
    int saved_errno = errno;

    int out = open(maps_path, O_WRONLY | O_APPEND | O_CLOEXEC);
    int in = out >= 0 ? open("/proc/self/maps", O_RDONLY | O_CLOEXEC) : -1;
    if (in >= 0) {
        char line[80];
        char *end = line + sizeof line;
        char *p = contend_append(line, end, "# snapshot ");
        p = contend_append_u64(p, end, snap_count++);
        p = contend_append(p, end, " ");
        p = contend_append_u64(p, end, contend_monotonic_ns());
        p = contend_append(p, end, "\n");
        int ok = write_all(out, line, (size_t)(p - line)) == 0;

        int spare = 1 - __atomic_load_n(&cur_ranges, __ATOMIC_ACQUIRE);
        struct parse ps = {.out = ranges[spare]};
        for (;;) {
            ssize_t n = read(in, buf, sizeof buf);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            parse_piece(&ps, buf, (size_t)n);
            if (ok)
                ok = write_all(out, buf, (size_t)n) == 0;
        }
        n_ranges[spare] = ps.n;
        __atomic_store_n(&cur_ranges, spare, __ATOMIC_RELEASE);
        __atomic_store_n(&have_ranges, 1, __ATOMIC_RELEASE);
    }
    if (in >= 0)
        close(in);
    if (out >= 0)
        close(out);

    errno = saved_errno;
    __atomic_store_n(&snap_busy, 0, __ATOMIC_RELEASE);
}
