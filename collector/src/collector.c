/*
 * contend lock collector: configuration, the trace file, chunks, the slow
 * recording path, fork and exit handling.
 *
 * Lifecycle
 *   - Initialisation is lazy: the first interposed call (possibly from
 *     another library's constructor, before ours ran) or our constructor,
 *     whichever comes first, runs contend_init(). One thread wins a CAS on
 *     contend_g.state and initialises; calls from other threads meanwhile
 *     pass through unrecorded (nobody ever waits for the initialiser).
 *   - The backtrace() warm-up, which loads libgcc_s (dlopen, malloc), runs
 *     only from our constructor, never from a lazy initialisation that
 *     might be running inside a malloc replacement. pthread_atfork is safe
 *     there: glibc keeps the first 48 handlers in a static array under an
 *     internal lock.
 *   - Each thread claims one chunk of the file at a time, handed out of a
 *     mapping window shared by the process's threads (see "Mapping
 *     windows"); a pthread_key destructor gives it back when the thread
 *     exits. A claim writes zeros over the chunk's head first, unless the
 *     launcher prepared the chunk (header field chunks_prepared; see
 *     map_new_chunk).
 *   - The chunk is faulted in ahead of the writer, a step at a time, with
 *     madvise(MADV_POPULATE_WRITE) (see "Faulting in" below).
 *   - At exit a destructor stores the end calibration, sets FLAG_FINISHED
 *     and writes the last maps snapshot. Nothing is unmapped at exit: other
 *     threads may still be recording.
 *   - fork(): the child drops the parent's mappings (its own copies) and
 *     starts a new trace under its own pid with FLAG_FORKED.
 */
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h> /* rename */
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "collector.h"
#include "contend/raw_mm.h"
#include "contend/zero_fill.h"

/* `enabled` of a recording without a control page: always 1 */
static const uint32_t always_enabled = 1;

CONTEND_HIDDEN struct contend_global contend_g = {.enabled = &always_enabled};
CONTEND_HIDDEN _Thread_local struct contend_thread contend_tls
    __attribute__((tls_model("initial-exec")));

#define TABLE_BYTES(slots) ((uint64_t)(slots) * 8u)
#define STACK_MAX 64        /* frames stored in a STACK record            */
#define STACK_SLACK 8       /* extra frames captured: the collector's own */
/* Frames of a creation's call stack when stacks are off (stack_every = 0):
 * mutrace's "where the lock was created" view, once per object (the object
 * table bounds the count), never on the fast path. */
#define CREATE_STACK_MAX 8
#define MAX_NAME_SUFFIX 10000
#define PASS_MSG "; recording nothing, the program runs unchanged"

/* The start-up calibration's figures: the trace header's fields of the
 * same names (contend/trace_format.h; measured by contend_calibrate_cost
 * and sampling.c), kept for fork children and shared with the
 * recording's later processes (<dir>/calibration). */
struct cost_figures {
    uint32_t record_ps, count_ps, calibration_ns;
    uint32_t window_record_ps, window_count_ps;
    uint32_t record_mt_ps, count_mt_ps;
};

/* Configuration and file state that the hot path never reads. */
static struct {
    char dir[PATH_MAX];        /* CONTEND_DIR, absolute ("" = disabled)     */
    char trace_path[PATH_MAX]; /* this process's .ctrace                   */
    char maps_path[PATH_MAX];  /* this process's .maps                     */
    uint64_t tsc_hz;           /* CONTEND_TSC_HZ                            */
    int fd;                    /* trace file (verified before each use)     */
    dev_t dev;
    ino_t ino;
    int configured;            /* environment parsed                        */
    int key_ok;
    pthread_key_t key;
    int atfork_done;
    int backtrace_ready;       /* libgcc_s loaded by our constructor        */
    uint64_t map_len;          /* header + tables mapping                   */
    int calibrated;            /* `cost` was measured (or taken)            */
    struct cost_figures cost;
    contend_control *control;  /* CONTEND_CONTROL's page, or NULL          */
    int slots;                 /* CONTEND_SLOTS (default 1): threads' first
                                  chunks are slots (see "Slots")          */
} C = {.fd = -1};

/* ------------------------------------------------------------------------ */
/* Small helpers without stdio or allocation                                 */

/* contend_append, contend_append_u64, contend_say: contend/say.h */

static void say_errno(const char *what, const char *path, int err, const char *tail)
{
    const char *desc = strerrordesc_np(err); /* static string, no allocation */
    char msg[PATH_MAX + 64];
    char *end = msg + sizeof msg;
    char *p = contend_append(msg, end, path);
    p = contend_append(p, end, ": ");
    contend_append(p, end, desc ? desc : "error");
    contend_say(what, msg, tail);
}

static uint32_t gettid_raw(void)
{
    return (uint32_t)contend_syscall6(SYS_gettid, 0, 0, 0, 0, 0, 0);
}

/* ------------------------------------------------------------------------ */
/* Configuration: environment variables, parsed once                         */

/* Strict unsigned decimal; 0 on any junk. */
static int parse_u64(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    if (!s || !*s)
        return 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return 0;
        uint64_t d = (uint64_t)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return 0;
        v = v * 10 + d;
    }
    *out = v;
    return 1;
}

static void bad_value(const char *name, const char *value)
{
    char what[96];
    char *p = contend_append(what, what + sizeof what, "ignoring bad ");
    p = contend_append(p, what + sizeof what, name);
    contend_append(p, what + sizeof what, "=");
    contend_say(what, value, NULL);
}

/* Maps the recording's control page (`record --start-after`,
 * `--duration`, `--max-size`). Inherited across fork (MAP_SHARED); each
 * exec maps it again. A page that cannot be used is said and ignored: the
 * process then records throughout. */
static void open_control(const char *path)
{
    if (!path || !*path)
        return;
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        say_errno("cannot open the control page ", path, errno,
                  "; recording without the window or size cap");
        return;
    }
    struct stat st;
    void *m = MAP_FAILED;
    if (fstat(fd, &st) == 0 && st.st_size >= (off_t)CONTEND_CONTROL_SIZE)
        m = contend_raw_mmap(NULL, CONTEND_CONTROL_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                             0);
    close(fd);
    if (m == MAP_FAILED) {
        contend_say("the control page ", path,
                    " is not a control page; recording without the window or size cap");
        return;
    }
    contend_control *c = m;
    if (memcmp(c->magic, CONTEND_CONTROL_MAGIC, 8) != 0 ||
        c->version != CONTEND_CONTROL_VERSION) {
        contend_raw_munmap(m, CONTEND_CONTROL_SIZE);
        contend_say("the control page ", path,
                    " has another format; recording without the window or size cap");
        return;
    }
    C.control = c;
    contend_g.enabled = &c->enabled;
}

/* The size cap: true when `bytes` more chunk bytes stay within the
 * recording's cap (and counts them). When they would not, records when the
 * cap was reached, stops recording in every process and flags this trace. */
static int cap_allows(uint64_t bytes)
{
    contend_control *c = C.control;
    if (!c || !c->max_bytes)
        return 1;
    uint64_t before = __atomic_fetch_add(&c->claimed_bytes, bytes, __ATOMIC_RELAXED);
    if (before + bytes <= c->max_bytes)
        return 1;
    uint64_t never = 0;
    __atomic_compare_exchange_n(&c->capped_ns, &never, contend_monotonic_ns(), 0,
                                __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    __atomic_store_n(&c->enabled, 0u, __ATOMIC_RELEASE);
    __atomic_fetch_or(&contend_g.hdr->flags, (uint64_t)CONTEND_FLAG_CAPPED, __ATOMIC_RELAXED);
    return 0;
}

/* Environment variable `name` as a flag: "1" or "0", `dflt` when unset or
 * empty; any other value is reported (bad_value) and `dflt` taken. */
static int env_flag(const char *name, int dflt)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    if (strcmp(v, "1") == 0)
        return 1;
    if (strcmp(v, "0") == 0)
        return 0;
    bad_value(name, v);
    return dflt;
}

static void parse_config(void)
{
    if (C.configured)
        return;
    C.configured = 1;

    const char *dir = getenv("CONTEND_DIR");
    if (!dir || !*dir) {
        C.dir[0] = 0; /* pure pass-through */
        return;
    }
    char *end = C.dir + sizeof C.dir;
    char *p = C.dir;
    if (dir[0] != '/') { /* make it absolute: the program may chdir later */
        if (!getcwd(C.dir, sizeof C.dir - 2)) {
            contend_say("CONTEND_DIR is relative and the working directory is unknown: ",
                        dir, "; recording nothing");
            C.dir[0] = 0;
            return;
        }
        p = C.dir + strlen(C.dir);
        p = contend_append(p, end, "/");
    }
    p = contend_append(p, end, dir);
    if ((size_t)(p - C.dir) > sizeof C.dir - 64) {
        contend_say("CONTEND_DIR is too long: ", dir, "; recording nothing");
        C.dir[0] = 0;
        return;
    }

    contend_g.clock_tsc = 0;
    const char *clock = getenv("CONTEND_CLOCK");
    if (clock && *clock) {
        if (strcmp(clock, "tsc") == 0) {
#if CONTEND_HAVE_TSC && defined(__x86_64__)
            contend_g.clock_tsc = 1;
#else
            contend_say("CONTEND_CLOCK=tsc is not supported on this architecture; ",
                        "using monotonic", NULL);
#endif
        } else if (strcmp(clock, "monotonic") != 0) {
            bad_value("CONTEND_CLOCK", clock);
        }
    }

    uint64_t v;
    C.tsc_hz = 0;
    const char *hz = getenv("CONTEND_TSC_HZ");
    if (hz && *hz) {
        if (parse_u64(hz, &v) && v > 0)
            C.tsc_hz = v;
        else
            bad_value("CONTEND_TSC_HZ", hz);
    }

    contend_g.stack_every = 0;
    const char *every = getenv("CONTEND_STACK_EVERY");
    if (every && *every) {
        if (parse_u64(every, &v) && v <= UINT32_MAX)
            contend_g.stack_every = (uint32_t)v;
        else
            bad_value("CONTEND_STACK_EVERY", every);
    }

    contend_g.light = env_flag("CONTEND_LIGHT", 0);

#if CONTEND_HAVE_TSC && defined(__x86_64__)
    contend_g.nt_stores = env_flag("CONTEND_NT_STORES", 0);
#else
    contend_g.nt_stores = 0;
    const char *nt = getenv("CONTEND_NT_STORES");
    if (nt && *nt)
        contend_say("CONTEND_NT_STORES is not supported on this architecture; ",
                    "using ordinary stores", NULL);
#endif

    C.slots = env_flag("CONTEND_SLOTS", 1);

    uint64_t chunk = CONTEND_DEFAULT_CHUNK_SIZE;
    const char *kb = getenv("CONTEND_CHUNK_KB");
    if (kb && *kb) {
        if (parse_u64(kb, &v) && v >= 4 && v <= 65536 && (v & (v - 1)) == 0)
            chunk = v * 1024u;
        else
            bad_value("CONTEND_CHUNK_KB", kb);
    }
    open_control(getenv("CONTEND_CONTROL"));

    long page = sysconf(_SC_PAGESIZE);
    if (page > 0 && chunk < (uint64_t)page)
        chunk = (uint64_t)page; /* chunks are mapped at page offsets */
    contend_g.chunk_size = (uint32_t)chunk;
}

/* ------------------------------------------------------------------------ */
/* Faulting in                                                               */

/*
 * The first store to each page of a MAP_SHARED file mapping is a page fault
 * (page-cache page, block reservation), microseconds each: per record that
 * would be a few nanoseconds on average but a multi-microsecond outlier
 * every 512 records, and on a full disk the store would raise SIGBUS in the
 * target. So the writer's end pointer (contend_thread.end) stops at the end
 * of the part of the chunk already faulted in with MADV_POPULATE_WRITE, a
 * step of POPULATE_STEP bytes at a time (the hot path's "room left" check
 * covers it at no extra cost). A populate that fails (ENOSPC, ...) stops
 * recording on that thread instead of crashing the program. Table pages are
 * populated the same way before their first insertion (a failure there
 * means the wide record form). On kernels without MADV_POPULATE_WRITE
 * (before 5.14) pages fault on first store as usual.
 */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
/* Memory-mapping calls bypass libc's symbols: see contend/raw_mm.h. */
#define POPULATE_STEP (16u * 1024u)
_Static_assert(POPULATE_STEP <= CONTEND_PREPARED_HEAD_BYTES,
               "a prepared chunk covers a lazy claim's zeros");
/* From a thread's second chunk on, the writer is a long one and the rest
 * of each chunk past its first step is faulted in by steps of this size,
 * the default chunk's whole rest in one: each step is a system
 * call and two readings of the thread's CPU clock (one more system call
 * each in a KVM guest). With 16 KiB steps these were about a tenth of a
 * lock loop's slow path: 64 KiB steps took 0.5-0.8 ns per pair off it
 * and 128 KiB steps 0.6-0.9 (docs/benchmarks.md, "Longer steps of
 * faulting in"); a larger chunk (--chunk-kb) still goes 128 KiB at a
 * time, so that no step stalls a lock call for long. */
#define EXTEND_STEP (128u * 1024u)
_Static_assert(EXTEND_STEP % POPULATE_STEP == 0, "whole pages per step");

static int populate_supported = 1; /* cleared on EINVAL */

/* 0 ok (or not supported), -1 the range cannot be written. errno kept. */
static int populate(void *addr, size_t len)
{
    if (!__atomic_load_n(&populate_supported, __ATOMIC_RELAXED))
        return 0;
    int saved = errno;
    int r = contend_raw_madvise(addr, len, MADV_POPULATE_WRITE);
    if (r != 0 && errno == EINVAL) {
        __atomic_store_n(&populate_supported, 0, __ATOMIC_RELAXED);
        r = 0;
    }
    errno = saved;
    return r;
}

/* Table pages (4 KiB units) already populated, per table. */
#define TABLE_UNITS (CONTEND_OBJECT_SLOTS * 8u / 4096u)
static uint64_t table_ready[2][(TABLE_UNITS + 63) / 64];

static int table_page_ready(uint64_t *table, uint32_t slot)
{
    int which = table == contend_g.sites;
    uint32_t unit = slot * 8u / 4096u;
    uint64_t bit = 1ull << (unit % 64);
    if (__atomic_load_n(&table_ready[which][unit / 64], __ATOMIC_RELAXED) & bit)
        return 1;
    /* faulting the page in is slow-path work, timed as such */
    uint64_t t0 = contend_cpu_ns();
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t pg = page > 0 ? (uintptr_t)page : 4096u;
    uintptr_t a = (uintptr_t)&table[slot] & ~(pg - 1);
    int ok = populate((void *)a, pg) == 0;
    if (ok)
        __atomic_fetch_or(&table_ready[which][unit / 64], bit, __ATOMIC_RELAXED);
    contend_cost_since(&contend_tls, t0);
    return ok;
}

/* ------------------------------------------------------------------------ */
/* Clock calibration                                                         */

/* One instant on the trace clock (`tsc`: rdtsc, else CLOCK_MONOTONIC ns)
 * and on CLOCK_MONOTONIC and CLOCK_REALTIME (ns): contend/clock.h, the
 * clock module shared with the MPI recorder. Shared with regions.c. */
void contend_clock_point(int tsc, uint64_t *ticks, uint64_t *mono, uint64_t *real)
{
    contend_clock_sample(tsc, ticks, mono, real);
}

/* The same instant on the trace clock and CLOCK_MONOTONIC (chunk
 * headers). Shared with regions.c. */
void contend_clock_pair(int tsc, uint64_t *ticks, uint64_t *mono)
{
    contend_clock_pair_sample(tsc, ticks, mono);
}

static void calibrate(contend_calibration *c)
{
    contend_clock_point(contend_g.clock_tsc, &c->ticks, &c->monotonic_ns, &c->realtime_ns);
    c->reserved = 0;
}

static void clock_pair(uint64_t *ticks, uint64_t *mono)
{
    contend_clock_pair(contend_g.clock_tsc, ticks, mono);
}

/* ------------------------------------------------------------------------ */
/* The trace file                                                            */

static int make_dir(const char *path)
{
    if (mkdir(path, 0777) == 0 || errno == EEXIST)
        return 0;
    return -1;
}

/* "<dir>/<sub>/<pid>[.<n>]<ext>" */
static void build_path(char *out, const char *sub, uint32_t pid, unsigned n, const char *ext)
{
    char *end = out + PATH_MAX;
    char *p = contend_append(out, end, C.dir);
    p = contend_append(p, end, "/");
    p = contend_append(p, end, sub);
    p = contend_append(p, end, "/");
    p = contend_append_u64(p, end, pid);
    if (n) {
        p = contend_append(p, end, ".");
        p = contend_append_u64(p, end, n);
    }
    contend_append(p, end, ext);
}

static void read_small_file(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    size_t got = 0;
    while (got < size) {
        ssize_t n = read(fd, buf + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
}

/* The header's calibration fields from `f`, and back. */
static void header_set_cost(contend_trace_header *h, const struct cost_figures *f)
{
    h->cost_record_ps = f->record_ps;
    h->cost_count_ps = f->count_ps;
    h->calibration_ns = f->calibration_ns;
    h->cost_window_record_ps = f->window_record_ps;
    h->cost_window_count_ps = f->window_count_ps;
    h->cost_record_mt_ps = f->record_mt_ps;
    h->cost_count_mt_ps = f->count_mt_ps;
}

static struct cost_figures header_cost(const contend_trace_header *h)
{
    return (struct cost_figures){h->cost_record_ps,        h->cost_count_ps,
                                 h->calibration_ns,        h->cost_window_record_ps,
                                 h->cost_window_count_ps,  h->cost_record_mt_ps,
                                 h->cost_count_mt_ps};
}

/*
 * Creates this process's trace and maps header + tables. Returns 0 on
 * success; on failure says why once and returns -1 (the caller passes
 * through). `forked` marks a fork child.
 */
static int create_trace(int forked)
{
    uint32_t pid = (uint32_t)getpid();
    char path[PATH_MAX];

    /* the launcher creates them; a bare CONTEND_DIR=... run needs them too */
    static const char *const subdirs[] = {"", "/locks", "/maps"};
    for (int i = 0; i < 3; i++) {
        contend_append(contend_append(path, path + PATH_MAX, C.dir), path + PATH_MAX,
                       subdirs[i]);
        if (make_dir(path) != 0) {
            say_errno("cannot create directory ", path, errno, PASS_MSG);
            return -1;
        }
    }

    /* <pid>.ctrace, or <pid>.<n>.ctrace when an earlier image of this pid
     * (before an exec) already wrote one */
    int fd = -1;
    unsigned n;
    for (n = 0; n < MAX_NAME_SUFFIX; n++) {
        build_path(path, "locks", pid, n, ".ctrace");
        fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd >= 0 || errno != EEXIST)
            break;
    }
    if (fd < 0) {
        say_errno("cannot create ", path, errno, PASS_MSG);
        return -1;
    }

    long page = sysconf(_SC_PAGESIZE);
    uint64_t pg = page > 0 ? (uint64_t)page : 4096u;
    uint64_t object_off = CONTEND_HEADER_SIZE;
    uint64_t site_off = object_off + TABLE_BYTES(CONTEND_OBJECT_SLOTS);
    uint64_t data_off = site_off + TABLE_BYTES(CONTEND_SITE_SLOTS);
    data_off = (data_off + pg - 1) / pg * pg; /* chunks are mapped: page-aligned */

    /* sparse: one byte at the end of the tables extends the file; the
     * header's page is written with zeros first, so that its populate only
     * maps a page-cache page (over a hole it took the read-fault path:
     * 0.3-0.5 ms of every process's start; contend/zero_fill.h) */
    char zero = 0;
    void *map = MAP_FAILED;
    struct stat st;
    if (contend_write_zeros(fd, 0, (CONTEND_HEADER_SIZE + pg - 1) / pg * pg) != 0 ||
        pwrite(fd, &zero, 1, (off_t)(data_off - 1)) != 1 || fstat(fd, &st) != 0 ||
        (map = contend_raw_mmap(NULL, data_off, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED ||
        populate(map, CONTEND_HEADER_SIZE) != 0) {
        int err = errno;
        if (map != MAP_FAILED)
            contend_raw_munmap(map, data_off);
        unlink(path);
        close(fd);
        say_errno("cannot set up ", path, err, PASS_MSG);
        return -1;
    }

    /* On tmpfs even a read of a hole allocates a page, so a table lookup
     * on a full tmpfs would raise SIGBUS: fault the tables in now (1 MiB)
     * and give up here if there is no room. Elsewhere holes read as zeros
     * without allocating, and table pages are populated before their first
     * insertion (table_page_ready). */
    struct statfs sfs;
    if (fstatfs(fd, &sfs) == 0 && (sfs.f_type == TMPFS_MAGIC || sfs.f_type == RAMFS_MAGIC)) {
        if (populate((char *)map + object_off, (size_t)(data_off - object_off)) != 0) {
            contend_raw_munmap(map, data_off);
            unlink(path);
            close(fd);
            contend_say("no room for the trace tables in ", C.dir, PASS_MSG);
            return -1;
        }
        memset(table_ready, 0xff, sizeof table_ready);
    } else {
        memset(table_ready, 0, sizeof table_ready);
    }

    contend_trace_header *h = map;
    h->version = CONTEND_TRACE_VERSION;
    h->header_size = CONTEND_HEADER_SIZE;
    h->endian_check = CONTEND_ENDIAN_CHECK;
    h->pointer_size = (uint16_t)sizeof(void *);
    h->clock = (uint16_t)(contend_g.clock_tsc ? CONTEND_CLOCK_TSC : CONTEND_CLOCK_MONOTONIC);
    h->chunk_size = contend_g.chunk_size;
    h->chunks_claimed = 0;
    h->pid = pid;
    h->ppid = (uint32_t)getppid();
    h->flags = (forked ? CONTEND_FLAG_FORKED : 0) | (contend_g.light ? CONTEND_FLAG_LIGHT : 0) |
               CONTEND_FLAG_SAMPLED_COST;
    h->object_table_offset = object_off;
    h->object_table_slots = CONTEND_OBJECT_SLOTS;
    h->site_table_slots = CONTEND_SITE_SLOTS;
    h->site_table_offset = site_off;
    h->data_offset = data_off;
    calibrate(&h->start);
    /* ticks are nanoseconds with the monotonic clock */
    h->ticks_per_second = contend_g.clock_tsc ? C.tsc_hz : 1000000000u;
    h->stack_every = contend_g.stack_every;
    /* a fork child inherits its parent's calibration (same code, same
     * machine); the first process measures it once recording is set up */
    h->collector_ns = 0;
    header_set_cost(h, &C.cost);
    ssize_t len = readlink("/proc/self/exe", h->exe_path, sizeof h->exe_path - 1);
    h->exe_path[len > 0 ? len : 0] = 0;
    read_small_file("/proc/self/cmdline", h->cmdline, sizeof h->cmdline);
    /* the magic last: a header without it was never finished */
    __atomic_thread_fence(__ATOMIC_RELEASE);
    memcpy(h->magic, CONTEND_TRACE_MAGIC, 8);

    memcpy(C.trace_path, path, sizeof path);
    build_path(C.maps_path, "maps", pid, n, ".maps");
    C.fd = fd;
    C.dev = st.st_dev;
    C.ino = st.st_ino;
    C.map_len = data_off;
    contend_g.data_offset = data_off;
    contend_g.objects = (uint64_t *)((char *)map + object_off);
    contend_g.sites = (uint64_t *)((char *)map + site_off);
    __atomic_store_n(&contend_g.hdr, h, __ATOMIC_RELEASE);

    if (contend_maps_open(C.maps_path) != 0)
        say_errno("cannot create ", C.maps_path, errno, "; addresses may not be symbolised");
    contend_maps_snapshot();
    return 0;
}

/* Our trace fd, if it still is ours (the program may have closed it or
 * reused the number: dup2, closefrom), else a fresh one by path (*tmp = 1:
 * the caller closes it). -1 if neither works. `file_size` (if not NULL)
 * gets the file's size from the same fstat. */
static int trace_fd(int *tmp, uint64_t *file_size)
{
    struct stat st;
    *tmp = 0;
    int fd = C.fd;
    if (!(fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == C.dev && st.st_ino == C.ino)) {
        fd = open(C.trace_path, O_RDWR | O_CLOEXEC);
        if (fd < 0)
            return -1;
        if (fstat(fd, &st) != 0 || st.st_dev != C.dev || st.st_ino != C.ino) {
            close(fd);
            return -1;
        }
        *tmp = 1;
    }
    if (file_size)
        *file_size = (uint64_t)st.st_size;
    return fd;
}

/* ------------------------------------------------------------------------ */
/* Chunks                                                                    */

/* Stores the calling thread's name as the kernel has it (its comm, at most
 * 15 characters) into the header of one of its chunks. One system call;
 * only on the slow path (chunk claims, renames, exits). A name the kernel
 * will not give leaves the field as it was. */
static void store_thread_name(void *chunk)
{
    char name[16] = {0};
    if (syscall(SYS_prctl, PR_GET_NAME, (unsigned long)name, 0ul, 0ul, 0ul) != 0)
        return;
    contend_chunk_header *ch = chunk;
    memcpy(ch->thread_name, name, sizeof ch->thread_name);
}

void contend_thread_renamed(void)
{
    struct contend_thread *ts = &contend_tls;
    if (ts->guard || __atomic_load_n(&contend_g.state, __ATOMIC_ACQUIRE) != CONTEND_STATE_ACTIVE)
        return; /* re-entered (or not recording): the next claim or the exit reads it */
    struct contend_saved saved = contend_enter(ts);
    if (ts->chunk)
        store_thread_name(ts->chunk);
    if (ts->count_chunk)
        store_thread_name(ts->count_chunk);
    contend_leave(ts, saved);
}

/*
 * Mapping windows. Mapping and unmapping each chunk by itself costs a
 * multi-threaded program more than the system calls: mmap and munmap take
 * the process's address-space lock for writing, and munmap shoots down the
 * TLB entries of every CPU running one of its threads (docs/benchmarks.md,
 * "Writing a chunk's zeros lazily", the profile of bench/thread_start.c).
 * So chunks are handed out of windows: one shared mapping of WINDOW_CHUNKS
 * consecutive chunks of the file, mapped when the first chunk in it is
 * claimed (the mapping may reach past the end of the file: a chunk's pages
 * are touched only after its claim has written its zeros, so no store ever
 * lands past the end) and unmapped when every chunk in it was claimed and
 * released again. A window therefore keeps the pages of its released
 * chunks mapped until its last chunk is released: at most WINDOW_SLOTS
 * windows of WINDOW_CHUNKS chunks each are kept (4 MiB each with the
 * default chunk size); a claim that finds no free slot maps its chunk by
 * itself, as before windows. The slot table is guarded by a lock
 * taken only on claims and releases (with the BUSY guard set, so a signal
 * handler on the same thread never re-enters it) and around nothing but
 * mmap/munmap, which are not cancellation points.
 */
#define WINDOW_CHUNKS 32u
#define WINDOW_SLOTS 64u

static struct {
    uint32_t lock;
    struct {
        char *base;      /* the window's mapping (NULL: slot free)        */
        uint64_t number; /* chunk index / WINDOW_CHUNKS                    */
        uint32_t live;   /* its chunks claimed and not yet released        */
        uint32_t handed; /* its chunk indices handed out (claimed or lost) */
    } slot[WINDOW_SLOTS];
} W;

/* The windows' lock (and the slots', below): a futex lock (0 free, 1
 * held, 2 held and maybe
 * waited for; Drepper, "Futexes Are Tricky", mutex2). A claim that finds it
 * taken sleeps in the kernel. It used to spin with sched_yield: when 512
 * threads claimed their chunks at once (bench/thread_scaling.sh), the
 * waiters took the CPU from the holder, which sat in mmap or munmap, and
 * thousands of yields per run followed (docs/benchmarks.md, "The windows'
 * lock sleeps instead of yielding"). errno is kept. */
static void futex_lock(uint32_t *lock)
{
    uint32_t c = 0;
    if (__atomic_compare_exchange_n(lock, &c, 1u, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return;
    int saved_errno = errno;
    if (c != 2u)
        c = __atomic_exchange_n(lock, 2u, __ATOMIC_ACQUIRE);
    while (c != 0u) {
        contend_syscall6(SYS_futex, (long)lock, FUTEX_WAIT_PRIVATE, 2, 0, 0, 0);
        c = __atomic_exchange_n(lock, 2u, __ATOMIC_ACQUIRE);
    }
    errno = saved_errno;
}

static void futex_unlock(uint32_t *lock)
{
    if (__atomic_exchange_n(lock, 0u, __ATOMIC_RELEASE) == 2u) {
        int saved_errno = errno;
        contend_syscall6(SYS_futex, (long)lock, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0);
        errno = saved_errno;
    }
}

static void lock_windows(void)
{
    futex_lock(&W.lock);
}

static void unlock_windows(void)
{
    futex_unlock(&W.lock);
}

static uint64_t window_bytes(void)
{
    return (uint64_t)WINDOW_CHUNKS * contend_g.chunk_size;
}

/* The mapping of chunk `idx` (its file region must already exist before
 * it is touched), counted as live in its window; NULL on failure. A chunk
 * whose window has no slot is mapped by itself. */
static void *window_map_chunk(int fd, uint32_t idx)
{
    uint64_t size = contend_g.chunk_size;
    uint64_t number = idx / WINDOW_CHUNKS;
    uint64_t within = (uint64_t)(idx % WINDOW_CHUNKS) * size;
    void *chunk = NULL;
    lock_windows();
    int found = -1, free_slot = -1;
    for (uint32_t i = 0; i < WINDOW_SLOTS; i++) {
        if (W.slot[i].base && W.slot[i].number == number) {
            found = (int)i;
            break;
        }
        if (!W.slot[i].base && free_slot < 0)
            free_slot = (int)i;
    }
    if (found < 0 && free_slot >= 0) {
        uint64_t off = contend_g.data_offset + number * window_bytes();
        void *m = contend_raw_mmap(NULL, window_bytes(), PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                                   (off_t)off);
        if (m != MAP_FAILED) {
            W.slot[free_slot].base = m;
            W.slot[free_slot].number = number;
            W.slot[free_slot].live = 0;
            W.slot[free_slot].handed = 0;
            found = free_slot;
        }
    }
    if (found >= 0) {
        W.slot[found].live++;
        W.slot[found].handed++;
        chunk = W.slot[found].base + within;
    }
    unlock_windows();
    if (chunk)
        return chunk;
    /* no slot (or the window could not be mapped): this chunk alone */
    void *m = contend_raw_mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                               (off_t)(contend_g.data_offset + (uint64_t)idx * size));
    return m == MAP_FAILED ? NULL : m;
}

/* Chunk index `idx` will never be mapped (its claim failed before): its
 * window, if mapped, no longer waits for it. */
static void window_skip_chunk(uint32_t idx)
{
    uint64_t number = idx / WINDOW_CHUNKS;
    void *unmap = NULL;
    lock_windows();
    for (uint32_t i = 0; i < WINDOW_SLOTS; i++) {
        if (W.slot[i].base && W.slot[i].number == number) {
            if (++W.slot[i].handed >= WINDOW_CHUNKS && W.slot[i].live == 0) {
                unmap = W.slot[i].base;
                W.slot[i].base = NULL;
            }
            break;
        }
    }
    unlock_windows();
    if (unmap)
        contend_raw_munmap(unmap, window_bytes());
}

/* The window slot whose mapping holds `p`, -1 for none (a chunk mapped
 * by itself). Under the windows' lock. */
static int window_holding(const void *p)
{
    const char *c = p;
    for (uint32_t i = 0; i < WINDOW_SLOTS; i++) {
        const char *b = W.slot[i].base;
        if (b && c >= b && c < b + window_bytes())
            return (int)i;
    }
    return -1;
}

/* Whether a window holds `p` (0: a chunk mapped by itself), counting
 * `more` users of it more (a slot handed out of a slot chunk in it: the
 * window then stays mapped until that user gives the slot back with
 * window_release_chunk). */
static int window_use(const void *p, uint32_t more)
{
    lock_windows();
    int i = window_holding(p);
    if (i >= 0)
        W.slot[i].live += more;
    unlock_windows();
    return i >= 0;
}

/* Gives back a chunk mapped by window_map_chunk: its window is unmapped
 * once all its chunks were handed out and released; a chunk mapped by
 * itself is unmapped now. */
static void window_release_chunk(void *chunk)
{
    void *unmap = NULL;
    lock_windows();
    int i = window_holding(chunk);
    if (i >= 0 && --W.slot[i].live == 0 && W.slot[i].handed >= WINDOW_CHUNKS) {
        unmap = W.slot[i].base;
        W.slot[i].base = NULL;
    }
    unlock_windows();
    if (unmap)
        contend_raw_munmap(unmap, window_bytes());
    else if (i < 0)
        contend_raw_munmap(chunk, contend_g.chunk_size);
}

/* fork child: the windows map the parent's trace. Drops them (the child's
 * copies only; the parent's stay) and the lock another thread of the
 * parent may have held at the fork. */
static void windows_after_fork(void)
{
    for (uint32_t i = 0; i < WINDOW_SLOTS; i++) {
        if (W.slot[i].base)
            contend_raw_munmap(W.slot[i].base, window_bytes());
        W.slot[i].base = NULL;
    }
    W.lock = 0;
}

static void release_chunk(struct contend_thread *ts)
{
    if (ts->chunk)
        window_release_chunk(ts->chunk);
    ts->chunk = ts->cur = ts->end = ts->chunk_end = NULL;
    ts->slotted &= (uint8_t)~CONTEND_SLOTTED_RECORDS;
}

static void release_count_chunk(struct contend_thread *ts)
{
    if (ts->count_chunk)
        window_release_chunk(ts->count_chunk);
    ts->count_chunk = NULL;
    ts->slotted &= (uint8_t)~CONTEND_SLOTTED_COUNTS;
    ts->counts = ts->last_count = NULL;
    ts->count_slots = 0;
    ts->count_used = 0;
    ts->count_locks = 0;
    ts->by_site_n = 0;
}

/* CONTEND_CHUNK_SINGLE_THREADED for a chunk claimed now. */
static uint32_t single_threaded_flag(void)
{
    return contend_process_single_threaded() ? CONTEND_CHUNK_SINGLE_THREADED : 0u;
}

/* Clears the owning thread's chunk's CONTEND_CHUNK_SINGLE_THREADED once
 * the process has had a second thread (trace_format.h): called on the
 * slow paths, where the collector looks again. Never in a fork child
 * (the chunk is the parent's). */
static void chunk_threads_again(void *chunk)
{
    if (!chunk || contend_process_single_threaded())
        return;
    contend_chunk_header *ch = chunk;
    uint32_t f = __atomic_load_n(&ch->flags, __ATOMIC_RELAXED);
    if (f & CONTEND_CHUNK_SINGLE_THREADED)
        __atomic_store_n(&ch->flags, f & ~CONTEND_CHUNK_SINGLE_THREADED, __ATOMIC_RELAXED);
}

/* Faults in more of the current chunk until `need` words fit.
 * 1: they fit; 0: the chunk is full; -1: the kernel refused (disk full). */
static int extend_chunk(struct contend_thread *ts, size_t need)
{
    chunk_threads_again(ts->chunk);
    while ((size_t)(ts->end - ts->cur) < need) {
        if (ts->end >= ts->chunk_end)
            return 0;
        /* a thread's first chunk keeps the short steps (a thread that
         * writes a little past its head faults in little more); from its
         * second chunk on it is a long writer */
        size_t step = (ts->seq > 1 ? EXTEND_STEP : POPULATE_STEP) / 8;
        if ((size_t)(ts->chunk_end - ts->end) < step)
            step = (size_t)(ts->chunk_end - ts->end);
        if (ts->end >= ts->zeroed_end) {
            /* the rest of the chunk, in one write (see claim_chunk) */
            int tmp;
            int fd = trace_fd(&tmp, NULL);
            if (fd < 0)
                return -1;
            uint64_t off = contend_g.data_offset + ts->chunk_index * (uint64_t)contend_g.chunk_size +
                           (uint64_t)((char *)ts->end - (char *)ts->chunk);
            int r = contend_write_zeros(fd, off, (uint64_t)((char *)ts->chunk_end - (char *)ts->end));
            if (tmp)
                close(fd);
            if (r != 0)
                return -1;
            ts->zeroed_end = ts->chunk_end;
        }
        if (populate(ts->end, step * 8) != 0)
            return -1;
        ts->end += step;
    }
    return 1;
}

/* Makes the file reach the end of chunk `idx`, whose last `tail` bytes
 * (at `tail_off`) were not written (the reader wants whole chunks; the
 * chunk's pages after its first zeros stay a hole). When the file is
 * shorter than that (`file_size`, from trace_fd's fstat), one fallocate of
 * the last page of the chunk's window extends it over the whole window, so
 * the later claims in that window find it long enough and make no system
 * call for it (before, every claim wrote zeros over its chunk's last page:
 * about 5 µs on the guest of docs/benchmarks.md, "One extension per
 * window", where short threads went from 48 to 42 µs). fallocate (without
 * KEEP_SIZE) never shrinks the file and never changes data already in it,
 * unlike ftruncate or a write of zeros, so any thread may do it at any
 * time, and a `file_size` made stale by another claim costs no more than a
 * needless fallocate; it is called through syscall(), which is not a
 * cancellation point. Where the file system cannot (EOPNOTSUPP) the
 * chunk's last page is written with zeros instead. 0, or -1 when the file
 * cannot be extended (disk full). The launcher cuts the file back to the
 * last chunk claimed after the run (crates/contend-record/src/sparse.rs). */
static int cover_chunk(int fd, uint64_t file_size, uint32_t idx, uint64_t tail_off, uint64_t tail)
{
    if (tail == 0 || file_size >= tail_off + tail)
        return 0;
    uint64_t window_end = contend_g.data_offset + (uint64_t)(idx / WINDOW_CHUNKS + 1) * window_bytes();
    if (contend_syscall6(SYS_fallocate, fd, 0, (long)(window_end - 4096u), 4096, 0, 0) == 0)
        return 0;
    return contend_write_zeros(fd, tail_off, tail);
}

/* Claims the next chunk of the file, extends the file to cover it, maps it
 * and faults in its first `populate_len` bytes. Its first `zero_len` bytes
 * are written with zeros (the part that will be written soon: its pages
 * then only need mapping, see contend/zero_fill.h); when that is less than
 * the chunk, the file is extended over the rest by cover_chunk, and the
 * rest stays a hole. NULL on failure. */
static void *map_new_chunk(size_t populate_len, size_t zero_len, uint32_t *index)
{
    contend_trace_header *h = contend_g.hdr;
    uint64_t size = contend_g.chunk_size;
    if (!cap_allows(size))
        return NULL;
    uint32_t idx = __atomic_fetch_add(&h->chunks_claimed, 1u, __ATOMIC_RELAXED);
    uint64_t off = contend_g.data_offset + (uint64_t)idx * size;
    *index = idx;

    int tmp;
    uint64_t file_size;
    int fd = trace_fd(&tmp, &file_size);
    if (fd < 0) {
        window_skip_chunk(idx);
        return NULL;
    }
    /* extend the file to cover the chunk by writing it with zeros: a write
     * never shrinks the file, unlike ftruncate, which could cut off a chunk
     * another thread claimed later; the tails left unwritten at the end are
     * punched out again (crates/contend-record/src/sparse.rs) */
    void *m = NULL;
    uint64_t head = zero_len < size ? zero_len : size;
    uint64_t tail = size - head < 4096u ? size - head : 4096u;
    /* A chunk the launcher prepared (its head in the page cache with its
     * blocks reserved, the file covering it: the header's chunks_prepared,
     * crates/contend-record/src/chunk_prep.rs) needs no zeros: the write
     * is most of a short thread's cost (docs/benchmarks.md, "Chunks
     * prepared by the launcher"). */
    int prepared = head <= CONTEND_PREPARED_HEAD_BYTES &&
                   idx < __atomic_load_n(&h->chunks_prepared, __ATOMIC_ACQUIRE);
    if (prepared ||
        (contend_write_zeros(fd, off, head) == 0 && cover_chunk(fd, file_size, idx, off + size - tail, tail) == 0))
        m = window_map_chunk(fd, idx);
    else
        window_skip_chunk(idx);
    if (m && prepared)
        __atomic_fetch_add(&h->claims_prepared, 1u, __ATOMIC_RELAXED);
    if (tmp)
        close(fd);
    if (!m)
        return NULL;
    if (populate_len && populate(m, populate_len) != 0) {
        window_release_chunk(m);
        return NULL;
    }
    return m;
}

/* ------------------------------------------------------------------------ */
/* Slots                                                                     */

/*
 * A chunk of its own costs a thread a claim: a write of zeros or a
 * prepared head, page faults, half a dozen system calls, 7-20 us on the
 * guests of docs/benchmarks.md ("Slots for a thread's first records"),
 * which a program of many short threads pays once per thread (twice in
 * light mode: its COUNTS table is a chunk too). So once the process has a
 * second thread, a thread's first record chunk and its first COUNTS table
 * are slots of CONTEND_SLOT_SIZE bytes handed out of the process's current
 * slot chunk (CONTEND_CHUNK_SLOTS, trace_format.h) under a lock: one
 * claim, its zeros and its page faults shared by the slots of the chunk.
 * A thread that fills its slot claims a chunk of its own as before. Each
 * slot handed out counts as a user of the slot chunk's window, so that
 * the window stays mapped until every slot is given back (the slot chunk
 * holds its window too until its last slot is handed out); a slot chunk
 * that had to be mapped by itself (no window slot free) is given back at
 * once and the thread claims a chunk of its own. When half the slots of
 * the current slot chunk are handed out, the thread that took the half
 * makes the next one (its spare) outside the lock, so that threads
 * starting in a burst do not wait for its zeros. A thread that fills its
 * slot pays for the slot and a chunk: record slots are handed out only
 * while the process's threads lately fitted theirs (record_slots_wanted).
 * CONTEND_SLOTS=0 turns slots off.
 */
static struct {
    uint32_t lock;  /* futex_lock; taken with the BUSY guard set        */
    char *base;     /* the current slot chunk (NULL: none)              */
    uint32_t index; /* its chunk index                                  */
    uint32_t next;  /* its next slot to hand out                        */
    char *spare;    /* the next slot chunk, made ahead (NULL: none)     */
    uint32_t spare_index;
    uint32_t making; /* a thread is making the spare                    */
    int32_t fit;    /* how the process's threads' first records fit a
                       slot lately (slot_outcome): record slots are
                       handed out while it is not negative              */
} S;

/* The score of S.fit stays within this much either way, so that a
 * process whose threads change what they write turns slots back on (or
 * off) after a few dozen threads. */
#define SLOT_FIT_SPAN 16

/* Notes how a thread's first records fitted a slot: `fits` 1 when they
 * did (or would have: its one chunk of its own holds less than a slot),
 * 0 when the thread filled its slot (or would have) and went on in a
 * chunk of its own, which then cost it a slot and a chunk. Racy
 * additions are fine: it is a rule of thumb. */
static void slot_outcome(int fits)
{
    int32_t v = __atomic_load_n(&S.fit, __ATOMIC_RELAXED);
    if (fits && v < SLOT_FIT_SPAN)
        __atomic_add_fetch(&S.fit, 1, __ATOMIC_RELAXED);
    else if (!fits && v > -SLOT_FIT_SPAN)
        __atomic_sub_fetch(&S.fit, 1, __ATOMIC_RELAXED);
}

/* Whether a thread's first COUNTS table claimed now is a slot. */
static int slots_wanted(void)
{
    return C.slots &&
           contend_g.chunk_size >= CONTEND_CHUNK_HEADER_SIZE + 2u * CONTEND_SLOT_SIZE &&
           !contend_process_single_threaded();
}

/* Whether a thread's first record chunk claimed now is a slot: as
 * slots_wanted, unless the process's threads lately wrote more than a
 * slot holds (a thread that fills its slot pays for a slot and a chunk:
 * 64 threads of 300 lock pairs each, tests/programs/thread_churn.c, were
 * estimated at 37.8 % with slots for all against 34.4 % without). */
static int record_slots_wanted(void)
{
    return slots_wanted() && __atomic_load_n(&S.fit, __ATOMIC_RELAXED) >= 0;
}

/* Whether the thread's next record chunk claim takes a slot: its first
 * claim (claim_chunk), with record slots wanted. */
static int record_claim_takes_slot(const struct contend_thread *ts)
{
    return !ts->cur && ts->seq == 0 && record_slots_wanted();
}

/* Whether the thread's next count-table claim takes a slot: its first
 * table (map_count_chunk), with slots wanted. */
static int count_claim_takes_slot(const struct contend_thread *ts)
{
    return ts->count_seq == 0 && slots_wanted();
}

static uint64_t slow_clock_ns(void);

/* A new slot chunk: claimed, written with zeros, faulted in, its header
 * stored; NULL when none can be had (or it could only be mapped by
 * itself). `*index` gets its chunk index. Timed on its own with the
 * thread CPU clock (its zeros and page faults take about 0.2 ms: the
 * wall-timed slot claim around it leaves it out, claim_timing). */
static char *new_slot_chunk(uint32_t *index)
{
    uint64_t w0 = slow_clock_ns();
    uint64_t t0 = contend_cpu_ns();
    uint64_t size = contend_g.chunk_size;
    char *m = map_new_chunk(size, size, index);
    if (m && !window_use(m, 0)) {
        window_release_chunk(m);
        m = NULL;
    }
    if (m) {
        contend_chunk_header *ch = (contend_chunk_header *)m;
        ch->tid = 0;
        ch->sequence = CONTEND_SLOT_SIZE;
        ch->flags = CONTEND_CHUNK_SLOTS;
        clock_pair(&ch->base_ticks, &ch->monotonic_ns);
        __atomic_store_n(&ch->magic, CONTEND_CHUNK_MAGIC, __ATOMIC_RELEASE);
    }
    contend_cost_since(&contend_tls, t0);
    contend_tls.slot_made_wall_ns += slow_clock_ns() - w0;
    return m;
}

/* Slots in a slot chunk (31 in a 128 KiB chunk). */
static uint32_t slots_per_chunk(void)
{
    return (uint32_t)((contend_g.chunk_size - CONTEND_CHUNK_HEADER_SIZE) / CONTEND_SLOT_SIZE);
}

/* Makes `m` (chunk `index`) the current slot chunk. Under S.lock. */
static void use_slot_chunk(char *m, uint32_t index)
{
    S.base = m;
    S.index = index;
    S.next = 0;
}

/* A slot of CONTEND_SLOT_SIZE bytes, written with zeros and faulted in,
 * its header still to write; `*index` gets its slot chunk's index. NULL
 * when no slot chunk can be had. Called with the BUSY guard set. */
static void *claim_slot(uint32_t *index)
{
    char *slot = NULL;
    /* The zeros of a new slot chunk are written under the lock (or while
     * S.making is set), and pwritev is a cancellation point: a thread
     * cancelled there would leave the lock held. Cancellation waits until
     * the claim is done (a request that came meanwhile acts at the
     * thread's next cancellation point, as it would have without the
     * collector). */
    int cancel_state = PTHREAD_CANCEL_ENABLE;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
    futex_lock(&S.lock);
    if (!S.base && S.spare) {
        use_slot_chunk(S.spare, S.spare_index);
        S.spare = NULL;
    }
    if (!S.base) {
        /* the process's first slot chunk, or a burst of new threads that
         * used up the spare before the next was ready: made here, while
         * the others wait */
        uint32_t idx;
        char *m = new_slot_chunk(&idx);
        if (m)
            use_slot_chunk(m, idx);
    }
    if (S.base && window_use(S.base, 1)) {
        slot = S.base + CONTEND_CHUNK_HEADER_SIZE + (uint64_t)S.next * CONTEND_SLOT_SIZE;
        *index = S.index;
        if (++S.next == slots_per_chunk()) {
            /* the last slot: the slot chunk's own hold on its window ends
             * (the slots' holds keep it mapped) */
            window_release_chunk(S.base);
            S.base = NULL;
        }
    }
    /* Half the slots handed out: the next slot chunk is made now, by this
     * thread, outside the lock, so that the threads that come meanwhile
     * do not wait for its zeros (a process of fewer threads never makes
     * one it does not use). */
    int make_spare = slot && !S.spare && !S.making && (!S.base || S.next >= slots_per_chunk() / 2);
    if (make_spare)
        S.making = 1;
    futex_unlock(&S.lock);
    if (make_spare) {
        uint32_t idx = 0;
        char *m = new_slot_chunk(&idx);
        futex_lock(&S.lock);
        /* (only the maker sets the spare: there is none meanwhile) */
        if (m && !S.base)
            use_slot_chunk(m, idx);
        else if (m) {
            S.spare = m;
            S.spare_index = idx;
        }
        S.making = 0;
        futex_unlock(&S.lock);
    }
    int ignored;
    pthread_setcancelstate(cancel_state, &ignored);
    return slot;
}

/* fork child: the slots (the thread's own and the current slot chunk) are
 * the parent's; the windows that held them are already dropped. */
static void slots_after_fork(struct contend_thread *ts)
{
    if (ts->slotted & CONTEND_SLOTTED_RECORDS)
        ts->chunk = ts->cur = ts->end = ts->chunk_end = NULL;
    if (ts->slotted & CONTEND_SLOTTED_COUNTS)
        ts->count_chunk = NULL;
    ts->slotted = 0;
    S.base = S.spare = NULL;
    S.making = 0;
    S.fit = 0;
    S.lock = 0;
}

/* Replaces the thread's chunk by a fresh one. 0 on failure (the thread then
 * stops recording). Called with the BUSY guard set; errno is the caller's
 * business. */
static int claim_chunk(struct contend_thread *ts)
{
    /* a thread leaving its slot for a chunk of its own */
    if (ts->slotted & CONTEND_SLOTTED_RECORDS)
        slot_outcome(0);
    release_chunk(ts);
    /* Past the last round of key destructors nothing would unmap a new
     * chunk again: stop recording on this thread instead of leaking. */
    if (ts->exit_rounds >= PTHREAD_DESTRUCTOR_ITERATIONS)
        return 0;

    uint64_t size = contend_g.chunk_size;
    size_t first = POPULATE_STEP < size ? POPULATE_STEP : size;
    /* Zeros for the first populate step only: a short thread (a pool's
     * worker taking a lock once) would otherwise write 128 KiB for a few
     * records; extend_chunk writes the rest in one go when the writer
     * first needs it. */
    uint32_t index;
    int lazy = __atomic_load_n(&populate_supported, __ATOMIC_RELAXED);
    /* a thread's first records go into a slot (see "Slots") */
    void *m = record_claim_takes_slot(ts) ? claim_slot(&index) : NULL;
    uint64_t bytes = m ? CONTEND_SLOT_SIZE : size;
    if (!m)
        m = map_new_chunk(0, lazy ? first : size, &index);
    if (!m)
        return 0;

    if (!ts->tid)
        ts->tid = gettid_raw();
    contend_chunk_header *ch = m;
    ch->tid = ts->tid;
    ch->sequence = ts->seq++;
    ch->flags = single_threaded_flag();
    store_thread_name(m);
    clock_pair(&ch->base_ticks, &ch->monotonic_ns);
    __atomic_store_n(&ch->magic, CONTEND_CHUNK_MAGIC, __ATOMIC_RELEASE);

    ts->chunk = m;
    ts->chunk_index = index;
    ts->cur = (uint64_t *)m + CONTEND_CHUNK_HEADER_SIZE / 8;
    ts->chunk_end = (uint64_t *)m + bytes / 8;
    ts->zeroed_end = lazy && bytes == size ? (uint64_t *)m + first / 8 : ts->chunk_end;
    ts->end = ts->zeroed_end;
    if (bytes < size)
        ts->slotted |= CONTEND_SLOTTED_RECORDS;
    ts->last = ch->base_ticks;
    if (!ts->key_set && C.key_ok) {
        /* arms the destructor that unmaps the chunk at thread exit */
        if (pthread_setspecific(C.key, ts) == 0)
            ts->key_set = 1;
    }
    return 1;
}

/* pthread_key destructor: the thread is exiting. Later calls on this thread
 * (other keys' destructors) claim a new chunk and re-arm the key. */
static void thread_exit(void *value)
{
    (void)value;
    struct contend_thread *ts = &contend_tls;
    /* the thread's end, for a thread joining this one (join.c) */
    if (ts->chunk)
        contend_join_exit(ts, __builtin_return_address(0));
    uint8_t saved = ts->guard;
    ts->guard |= CONTEND_GUARD_BUSY;
    CONTEND_SIGNAL_FENCE();
    /* a name another thread gave this one after its last claim */
    if (ts->chunk)
        store_thread_name(ts->chunk);
    if (ts->count_chunk)
        store_thread_name(ts->count_chunk);
    chunk_threads_again(ts->chunk);
    chunk_threads_again(ts->count_chunk);
    /* whether its first records fitted a slot (or would have: one chunk
     * of its own, less than a slot written), for the threads to come */
    if (ts->chunk && ts->seq == 1 && !contend_process_single_threaded())
        slot_outcome((ts->slotted & CONTEND_SLOTTED_RECORDS) ||
                     (size_t)((char *)ts->cur - (char *)ts->chunk) <= CONTEND_SLOT_SIZE);
    release_chunk(ts);
    release_count_chunk(ts);
    ts->key_set = 0;
    if (ts->exit_rounds < 255)
        ts->exit_rounds++;
    CONTEND_SIGNAL_FENCE();
    ts->guard = saved;
}

/* ------------------------------------------------------------------------ */
/* Slow recording path                                                       */

int32_t contend_table_insert(uint64_t *table, uint64_t addr, uint32_t slot, int is_site)
{
    for (int i = 0; i < 32; i++, slot = (slot + 1) & 0xffffu) {
        uint64_t v = __atomic_load_n(&table[slot], __ATOMIC_RELAXED);
        if (v == addr)
            return (int32_t)slot;
        if (v != 0)
            continue;
        /* Only what costs is timed (a page of the table faulted in, a
         * maps snapshot): the insertion itself is a few loads and one
         * compare-and-swap, and reading the thread CPU clock around it
         * (a system call, 0.5-1 us in a KVM guest) cost more than the
         * insertion, for every new lock and call site. */
        if (!table_page_ready(table, slot))
            return -1; /* cannot write there: wide form */
        uint64_t expected = 0;
        if (__atomic_compare_exchange_n(&table[slot], &expected, addr, 0, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {
            /* a new call site in code the last snapshot did not know
             * (dlopen): take a new snapshot so it can be symbolised */
            if (is_site && !contend_maps_covers(addr)) {
                uint64_t t0 = contend_cpu_ns();
                contend_maps_snapshot();
                contend_cost_since(&contend_tls, t0);
            }
            /* a new object: its first-use creation record is due */
            if (!is_site)
                contend_tls.created = 1;
            return (int32_t)slot;
        }
        if (expected == addr)
            return (int32_t)slot;
    }
    return -1;
}

/* Room for `need` words (need <= CONTEND_ROOM_WORDS): more of this chunk
 * or a new one. 0 if recording on this thread has to stop. */
static int make_room(struct contend_thread *ts, size_t need)
{
    int r = ts->cur ? extend_chunk(ts, need) : 0;
    if (r == 0 && claim_chunk(ts))
        r = extend_chunk(ts, need);
    if (r <= 0) {
        release_chunk(ts);
        return 0;
    }
    return 1;
}

/* Whether a record with `tag` (and extension word `ext`) names a lock
 * object, whose first use deserves a creation record: the pthread and
 * semaphore operations, futex words, OpenMP mutexes (not the parallel
 * region instances of OpenMP's other records). */
static int creatable(uint32_t tag, const uint64_t *ext)
{
    uint32_t code = tag & ~CONTEND_TAG_WIDE;
    if (code == CONTEND_TAG_OMP)
        return ext && (*ext & 0xffu) <= CONTEND_OMP_MUTEX_RELEASED;
    return code == CONTEND_TAG_FUTEX || (code >> 4) != 0;
}

/* Frames kept of a creation's call stack: all (STACK_MAX) when stacks are
 * recorded, else the CREATE_STACK_MAX innermost. */
static int create_depth(void)
{
    return contend_g.stack_every != 0 ? STACK_MAX : CREATE_STACK_MAX;
}

/* Wall time for timing the slow path's records (emit_record), ns: the TSC
 * when it is the trace clock and its rate is known (about 10 ns a read),
 * else CLOCK_MONOTONIC (the vDSO's, tens of ns). */
static uint64_t slow_clock_ns(void)
{
    if (contend_g.clock_tsc && C.tsc_hz)
        return (uint64_t)((unsigned __int128)contend_now() * 1000000000u / C.tsc_hz);
    return contend_monotonic_ns();
}

/* A record's slow path longer than this in wall time was descheduled or
 * blocked: it is not counted (a stack capture of 64 frames takes tens of
 * us). */
#define SLOW_WALL_MAX_NS 200000u

/*
 * The timing of a chunk claim (make_room) or count-table claim, the slow
 * path's own cost (contend_add_cost). A claim that takes a slot (a lock
 * and a few stores, no system call unless it makes a slot chunk) is timed
 * in wall time, like the slow path's records: reading the thread CPU
 * clock around it (a system call, 0.4-0.5 us a read on the guests of
 * docs/benchmarks.md) cost a short thread more than the claim itself
 * ("A slot claim timed in wall time"). A longer wall time than
 * SLOW_WALL_MAX_NS (descheduled, or waiting for another thread's slot
 * chunk) is not counted. Other claims write zeros and fault in pages,
 * where the wall time may hold blocking: they keep the CPU clock. Either
 * way the time counted inside (a slot chunk made by the claim,
 * new_slot_chunk) is not counted twice.
 */
struct claim_timing {
    uint64_t t0;     /* start, on the clock chosen                       */
    uint64_t inner0; /* ts->slow_ns at the start                         */
    uint64_t made0;  /* ts->slot_made_wall_ns at the start               */
    int wall;        /* 1: slow_clock_ns; 0: the thread CPU clock        */
};

static struct claim_timing claim_timing_start(const struct contend_thread *ts, int slot)
{
    struct claim_timing c = {0, ts->slow_ns, ts->slot_made_wall_ns, slot};
    c.t0 = slot ? slow_clock_ns() : contend_cpu_ns();
    return c;
}

/* Counts the claim's time less what was counted inside it: on the CPU
 * clock, the time counted inside; in wall time, the wall time of the slot
 * chunks made inside (their CPU time is what was counted for them: a
 * chunk's zeros and page faults may wait, and that wait is not the
 * collector's CPU). */
static void claim_timing_stop(struct contend_thread *ts, struct claim_timing c)
{
    uint64_t dt = (c.wall ? slow_clock_ns() : contend_cpu_ns()) - c.t0;
    uint64_t inner = c.wall ? ts->slot_made_wall_ns - c.made0 : ts->slow_ns - c.inner0;
    ts->slow_seq++; /* a cost sample around this is not kept */
    if ((int64_t)dt > (int64_t)inner && (!c.wall || dt - inner <= SLOW_WALL_MAX_NS))
        contend_add_cost(ts, dt - inner);
}

/* contend_emit_slow, and with `ext` a record with one extension word
 * after its addresses (futex records). `want_stack` is the number of
 * frames of the call stack to keep (0 = none, at most STACK_MAX). */
static void emit_record(struct contend_thread *ts, uint32_t tag, const void *obj,
                        const void *site, uint64_t t, int want_stack, const uint64_t *ext)
{
    ts->guard = CONTEND_GUARD_BUSY;
    CONTEND_SIGNAL_FENCE();
    if (tag != CONTEND_TAG_CREATE) {
        /* an object new to the table gets its creation record first (the
         * fast path leaves that to here; the probe hits when it ran) */
        contend_index(contend_g.objects, (uint64_t)(uintptr_t)obj, 0);
        if (CONTEND_UNLIKELY(ts->created)) {
            ts->created = 0;
            if (creatable(tag, ext)) {
                uint64_t cext = CONTEND_CREATE_FIRST_USE;
                emit_record(ts, CONTEND_TAG_CREATE, obj, site, t, create_depth(), &cext);
                if (ts->guard != 0)
                    return; /* recording stopped on this thread */
                ts->guard = CONTEND_GUARD_BUSY;
                CONTEND_SIGNAL_FENCE();
            }
        }
    }
    int saved_errno = errno;
    uint8_t guard_after = 0;
    /* Timed in wall time (slow_clock_ns), not with the thread CPU clock:
     * reading that clock (a system call: 0.5-1 us in a KVM guest, and the
     * code after it runs on cold caches) twice per call cost as much as a
     * creation's stack capture (sysbench mutex creating 4,096 mutexes: 11
     * of the 18 ms the collector added were those reads). This part makes
     * no system call; chunk work (make_room) and table pages are timed on
     * their own with the CPU clock, and their time is subtracted here. */
    uint64_t inner0 = ts->slow_ns;
    uint64_t t0 = slow_clock_ns();

    /* Capture the stack first (backtrace() may take libgcc's mutex: the
     * guard makes that call pass through). Frames before the wrapper's
     * return address belong to the collector and are dropped. */
    void *frames[STACK_MAX + STACK_SLACK];
    int first = 0, n = 0;
    if (want_stack && __atomic_load_n(&C.backtrace_ready, __ATOMIC_ACQUIRE)) {
        int depth = want_stack < STACK_MAX ? want_stack : STACK_MAX;
        n = backtrace(frames, depth + STACK_SLACK);
        for (int i = 0; i < n && i < STACK_SLACK + 2; i++) {
            if (frames[i] == site) {
                first = i;
                break;
            }
        }
        n -= first;
        if (n > depth)
            n = depth;
        if (n < 0)
            n = 0;
    }

    uint64_t o = (uint64_t)(uintptr_t)obj, s = (uint64_t)(uintptr_t)site;
    int32_t oi = contend_index(contend_g.objects, o, 0);
    int32_t si = contend_index(contend_g.sites, s, 1);
    int wide = (oi | si) < 0;
    if (wide) {
        contend_trace_header *h = contend_g.hdr;
        if (!(__atomic_load_n(&h->flags, __ATOMIC_RELAXED) & CONTEND_FLAG_TABLE_FULL))
            __atomic_fetch_or(&h->flags, (uint64_t)CONTEND_FLAG_TABLE_FULL, __ATOMIC_RELAXED);
        if (si < 0 && !contend_maps_covers(s))
            contend_maps_snapshot();
    }

    /* room for TIME + STACK + the record, all in one chunk */
    size_t need = 2 + (n ? 1 + (size_t)n : 0) + (wide ? 3 : 1) + (ext ? 1 : 0);
    if (!ts->cur || (size_t)(ts->end - ts->cur) < need) {
        struct claim_timing c = claim_timing_start(ts, record_claim_takes_slot(ts));
        int ok = make_room(ts, need);
        claim_timing_stop(ts, c);
        if (!ok) {
            guard_after = CONTEND_GUARD_DISABLED;
            goto out;
        }
    }

    uint64_t *p = ts->cur;
    uint64_t dt = t - ts->last;
    if (dt > CONTEND_DT_MAX) {
        /* also when t is before the chunk's base (timestamp taken before
         * the claim) or another CPU's TSC is a hair behind */
        p[1] = t;
        __atomic_store_n(&p[0], (uint64_t)CONTEND_TAG_TIME, __ATOMIC_RELEASE);
        p += 2;
        dt = 0;
    }
    if (n) {
        for (int i = 0; i < n; i++)
            p[1 + i] = (uint64_t)(uintptr_t)frames[first + i];
        __atomic_store_n(&p[0], (uint64_t)CONTEND_TAG_STACK | ((uint64_t)n << 8),
                         __ATOMIC_RELEASE);
        p += 1 + n;
    }
    if (wide) {
        p[1] = o;
        p[2] = s;
        if (ext)
            p[3] = *ext;
        __atomic_store_n(&p[0], contend_head(tag | CONTEND_TAG_WIDE, dt, 0, 0),
                         __ATOMIC_RELEASE);
        p += 3;
    } else {
        if (ext)
            p[1] = *ext;
        __atomic_store_n(&p[0], contend_head(tag, dt, (uint32_t)oi, (uint32_t)si),
                         __ATOMIC_RELEASE);
        p += 1;
    }
    p += ext ? 1 : 0;
    ts->cur = p;
    ts->last = t;

out:
    ts->slow_seq++; /* a cost sample around this is not kept */
    {
        uint64_t dt = slow_clock_ns() - t0, inner = ts->slow_ns - inner0;
        /* longer than SLOW_WALL_MAX_NS: the thread was descheduled (or a
         * chunk claim blocked); its wall time is not the collector's */
        if ((int64_t)dt > (int64_t)inner && dt - inner <= SLOW_WALL_MAX_NS)
            contend_add_cost(ts, dt - inner);
    }
    errno = saved_errno;
    CONTEND_SIGNAL_FENCE();
    ts->guard = guard_after;
}

void contend_emit_slow(struct contend_thread *ts, uint32_t tag, const void *obj,
                       const void *site, uint64_t t, int want_stack)
{
    emit_record(ts, tag, obj, site, t, want_stack ? STACK_MAX : 0, NULL);
}

void contend_emit_ext_slow(struct contend_thread *ts, uint32_t tag, uint64_t ext,
                           const void *obj, const void *site, uint64_t t, int first)
{
    int want_stack = 0;
    if (first && CONTEND_UNLIKELY(ts->countdown-- == 0)) {
        uint32_t every = contend_g.stack_every;
        ts->countdown = every ? every - 1 : UINT32_MAX;
        want_stack = every != 0 ? STACK_MAX : 0;
    }
    emit_record(ts, tag, obj, site, t, want_stack, &ext);
}

void contend_emit_first_use(struct contend_thread *ts, const void *obj, const void *site)
{
    ts->created = 0;
    uint64_t ext = CONTEND_CREATE_FIRST_USE;
    emit_record(ts, CONTEND_TAG_CREATE, obj, site, contend_now(), create_depth(), &ext);
}

void contend_emit_create(struct contend_thread *ts, uint32_t prim, const void *obj,
                         const void *site)
{
    ts->guard = CONTEND_GUARD_BUSY;
    CONTEND_SIGNAL_FENCE();
    contend_index(contend_g.objects, (uint64_t)(uintptr_t)obj, 0);
    int fresh = ts->created;
    ts->created = 0;
    uint64_t ext = CONTEND_CREATE_INIT | ((uint64_t)prim << CONTEND_CREATE_PRIM_SHIFT);
    emit_record(ts, CONTEND_TAG_CREATE, obj, site, contend_now(), fresh ? create_depth() : 0,
                &ext);
}

void contend_make_room(struct contend_thread *ts)
{
    if (ts->guard)
        return;
    ts->guard = CONTEND_GUARD_BUSY;
    CONTEND_SIGNAL_FENCE();
    int saved_errno = errno;
    struct claim_timing c = claim_timing_start(ts, record_claim_takes_slot(ts));
    uint8_t guard_after = make_room(ts, CONTEND_ROOM_WORDS) ? 0 : CONTEND_GUARD_DISABLED;
    claim_timing_stop(ts, c);
    errno = saved_errno;
    CONTEND_SIGNAL_FENCE();
    ts->guard = guard_after;
}

uint64_t contend_cpu_ns(void)
{
    struct timespec t;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0)
        return 0;
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

void contend_cost_since(struct contend_thread *ts, uint64_t t0)
{
    uint64_t dt = contend_cpu_ns() - t0;
    ts->slow_seq++; /* a cost sample around this is not kept */
    if ((int64_t)dt > 0)
        contend_add_cost(ts, dt);
}

void contend_add_cost(struct contend_thread *ts, uint64_t dt)
{
    ts->slow_ns += dt;
    contend_trace_header *h = __atomic_load_n(&contend_g.hdr, __ATOMIC_ACQUIRE);
    if (h)
        __atomic_fetch_add(&h->collector_ns, dt, __ATOMIC_RELAXED);
    if (ts->chunk) {
        contend_chunk_header *ch = (contend_chunk_header *)ts->chunk;
        __atomic_store_n(&ch->collector_ns, ch->collector_ns + dt, __ATOMIC_RELAXED);
    }
}

/* ------------------------------------------------------------------------ */
/* Light mode: COUNTS chunks                                                 */

/* Maps a fresh COUNTS chunk with the part its table uses written with
 * zeros (entries are hashed all over it; a first store to a page of a
 * hole could raise SIGBUS on a full disk) and makes its table the
 * thread's, empty;
 * the table before it, if any, is left mapped for claim_count_table to
 * move. 0 on failure (the thread's table unchanged). Called with the BUSY
 * guard set. */
static int map_count_chunk(struct contend_thread *ts)
{
    if (ts->exit_rounds >= PTHREAD_DESTRUCTOR_ITERATIONS)
        return 0;
    /* the thread's first table takes the first POPULATE_STEP bytes of the
     * chunk (510 entries of 32 bytes): faulting in all of a large chunk up
     * front would cost more than the counts save for a thread that takes
     * a few locks. A thread that needs more entries claims another COUNTS
     * chunk, whose table is twice the size of the one before, up to the
     * whole chunk: a thread cycling through thousands of locks (a hash
     * table's bucket locks, sysbench mutex) would otherwise claim and fault
     * in a chunk every few hundred acquisitions. */
    uint64_t size = contend_g.chunk_size;
    uint32_t doublings = ts->count_seq < 16 ? ts->count_seq : 16;
    uint64_t want = (uint64_t)POPULATE_STEP << doublings;
    size_t used = (size_t)(want < size ? want : size);
    /* only the table is ever written: the rest of the chunk stays a hole.
     * Its part is written with zeros (blocks reserved: a store cannot
     * raise SIGBUS on a full disk) but not faulted in: the pages the
     * thread's entries land on fault at their first count, in the
     * program's lock call (a thread with one lock touches one page of
     * four). Faulting the whole table in here, in the timed claim, made
     * bench/thread_scaling.sh's 512 short threads cost twice as much
     * (docs/benchmarks.md, "Light mode's cost samples without the
     * table's page faults"). */
    uint32_t index;
    /* a thread's first table is a slot (see "Slots") */
    void *m = count_claim_takes_slot(ts) ? claim_slot(&index) : NULL;
    int slot = m != NULL;
    if (slot)
        used = CONTEND_SLOT_SIZE;
    else
        m = map_new_chunk(0, used, &index);
    if (!m)
        return 0;
    if (!ts->tid)
        ts->tid = gettid_raw();
    contend_chunk_header *ch = m;
    ch->tid = ts->tid;
    ch->sequence = ts->count_seq++;
    ch->flags = CONTEND_CHUNK_COUNTS | single_threaded_flag();
    store_thread_name(m);
    clock_pair(&ch->base_ticks, &ch->monotonic_ns);
    __atomic_store_n(&ch->magic, CONTEND_CHUNK_MAGIC, __ATOMIC_RELEASE);
    ts->count_chunk = m;
    if (slot)
        ts->slotted |= CONTEND_SLOTTED_COUNTS;
    ts->counts = (contend_count *)((char *)m + CONTEND_CHUNK_HEADER_SIZE);
    ts->count_slots = (uint32_t)((used - CONTEND_CHUNK_HEADER_SIZE) / sizeof(contend_count));
    ts->count_used = 0;
    ts->count_locks = 0;
    ts->last_count = NULL;
    if (!ts->key_set && C.key_ok) {
        if (pthread_setspecific(C.key, ts) == 0)
            ts->key_set = 1;
    }
    return 1;
}

/* Probes at most this many entries from an entry's slot. */
#define COUNT_PROBES 16

/* The thread's count table fills the whole COUNTS chunk: the largest it
 * can have. */
static int count_table_is_largest(const struct contend_thread *ts)
{
    return (uint64_t)ts->count_slots * sizeof(contend_count) + CONTEND_CHUNK_HEADER_SIZE >=
           contend_g.chunk_size;
}

/* The entry of (o, s) in the thread's count table, inserted if new; NULL
 * when the probes find no room, when (o, s) is new and the table is the
 * largest one and three quarters full (past that, the probes of every
 * acquisition that finds no entry would grow long), or when o is a lock
 * and the table holds CONTEND_COUNT_LOCK_ENTRIES lock entries already. */
static contend_count *count_entry(struct contend_thread *ts, uint32_t prim, uint64_t o,
                                  uint64_t s)
{
    uint32_t n = ts->count_slots;
    uint32_t i = contend_count_slot(o, s, n);
    for (int k = 0; k < COUNT_PROBES; k++, i = i + 1 == n ? 0 : i + 1) {
        contend_count *e = &ts->counts[i];
        if (e->object == o && e->site == s)
            return e;
        if (e->object == 0) {
            int lock = o != CONTEND_COUNT_BY_SITE;
            if (lock && ts->count_locks >= CONTEND_COUNT_LOCK_ENTRIES)
                return NULL;
            if (ts->count_used >= n - n / 4 && count_table_is_largest(ts))
                return NULL;
            ts->count_used++;
            ts->count_locks += (uint32_t)lock;
            e->site = s;
            e->primitive = prim;
            e->count = 0;
            __atomic_store_n(&e->object, o, __ATOMIC_RELEASE);
            return e;
        }
    }
    return NULL;
}

/* The entry that counts the acquisition of lock o at site s: its own, or
 * when the table has none for it (it holds CONTEND_COUNT_LOCK_ENTRIES
 * locks already, or the lock's probes found no room), its site's by-site
 * entry (a mutex's or rwlock's hold is then remembered in by_site_lock[]
 * until its release). NULL when the table has no room for that either:
 * only call sites fill a table. */
static contend_count *count_entry_of_lock(struct contend_thread *ts, uint32_t prim,
                                          uint64_t o, uint64_t s)
{
    contend_count *e = count_entry(ts, prim, o, s);
    if (e)
        return e;
    /* A slot's table (126 entries, see "Slots") is full before the
     * thread has the CONTEND_COUNT_LOCK_ENTRIES lock entries a table of
     * its own keeps: none, so that the caller claims a larger table
     * rather than counting the lock by its call site. */
    if ((ts->slotted & CONTEND_SLOTTED_COUNTS) && ts->count_locks < CONTEND_COUNT_LOCK_ENTRIES)
        return NULL;
    e = count_entry(ts, prim, CONTEND_COUNT_BY_SITE, s);
    /* spinlock and semaphore releases never take a count back */
    if (e && (prim == CONTEND_PRIM_MUTEX || prim == CONTEND_PRIM_RWLOCK_READ ||
              prim == CONTEND_PRIM_RWLOCK_WRITE)) {
        uint32_t n = ts->by_site_n;
        if (n == CONTEND_BY_SITE_HELD_MAX) { /* the oldest is forgotten */
            for (uint32_t i = 1; i < n; i++) {
                ts->by_site_lock[i - 1] = ts->by_site_lock[i];
                ts->by_site_entry[i - 1] = ts->by_site_entry[i];
            }
            n--;
        }
        ts->by_site_lock[n] = (const void *)(uintptr_t)o;
        ts->by_site_entry[n] = e;
        ts->by_site_n = n + 1;
    }
    return e;
}

/* The thread's next count table (its first, or one twice as large as
 * the full one): the old table's entries move into it (their counts set
 * there, then zeroed in the old chunk, which a reader skips), so that the
 * locks a thread holds stay findable (contend_untimed, for a release that
 * finds waiters) and a thread keeps CONTEND_COUNT_LOCK_ENTRIES lock
 * entries in all, not per table. An entry that finds no room keeps its
 * count where it is. 0 when no chunk could be had (the table unchanged).
 * Called with the BUSY guard set. */
static int claim_count_table(struct contend_thread *ts)
{
    contend_count *old = ts->counts, *old_last = ts->last_count;
    uint32_t old_slots = ts->count_slots;
    void *old_chunk = ts->count_chunk;
    if (!map_count_chunk(ts))
        return 0;
    for (uint32_t i = 0; old && i < old_slots; i++) {
        contend_count *e = &old[i];
        uint64_t o = __atomic_load_n(&e->object, __ATOMIC_RELAXED);
        if (o == 0 || e->count == 0)
            continue;
        contend_count *n = count_entry(ts, e->primitive, o, e->site);
        if (!n)
            continue;
        __atomic_store_n(&n->count, n->count + e->count, __ATOMIC_RELAXED);
        __atomic_store_n(&e->count, 0, __ATOMIC_RELAXED);
        if (e == old_last)
            ts->last_count = n;
        for (uint32_t k = 0; k < ts->by_site_n; k++) {
            if (ts->by_site_entry[k] == e)
                ts->by_site_entry[k] = n;
        }
    }
    /* open by-site holds whose entry did not move are not found again */
    for (uint32_t k = 0; k < ts->by_site_n; k++) {
        contend_count *e = ts->by_site_entry[k];
        if (e && old && e >= old && e < old + old_slots)
            ts->by_site_entry[k] = NULL;
    }
    if (old_chunk)
        window_release_chunk(old_chunk);
    return 1;
}

void contend_count_slow(struct contend_thread *ts, uint32_t prim, const void *obj,
                        const void *site)
{
    ts->guard = CONTEND_GUARD_BUSY;
    CONTEND_SIGNAL_FENCE();
    uint64_t o = (uint64_t)(uintptr_t)obj, s = (uint64_t)(uintptr_t)site;
    chunk_threads_again(ts->count_chunk);
    /* probing is a few loads, as cheap as the fast path: only a chunk
     * claim is timed (reading the thread CPU clock is a system call, which
     * on every probe cost more than the probe, e.g. for a thread cycling
     * through thousands of locks) */
    contend_count *e = ts->counts ? count_entry_of_lock(ts, prim, o, s) : NULL;
    /* A full table is replaced by a larger one, up to the whole chunk; a
     * full table of the whole chunk is kept, and acquisitions it has no
     * entry for are recorded (below). Replacing it by an empty one of the
     * same size would not hold more. Only by-site entries (a thread's call
     * sites) fill a table: lock entries stop at CONTEND_COUNT_LOCK_ENTRIES,
     * so that a thread cycling through thousands of locks (a hash table's
     * bucket locks, sysbench mutex) keeps a table that stays in the cache
     * (its probes were the light mode's main cost on memcached). */
    if (!e && !(ts->counts && count_table_is_largest(ts))) {
        int saved_errno = errno;
        struct claim_timing c = claim_timing_start(ts, count_claim_takes_slot(ts));
        if (claim_count_table(ts))
            e = count_entry_of_lock(ts, prim, o, s);
        claim_timing_stop(ts, c);
        errno = saved_errno;
    }
    if (e) {
        uint64_t count = e->count + 1;
        __atomic_store_n(&e->count, count, __ATOMIC_RELAXED);
        ts->last_count = e;
        /* a new entry may be the object's first use in the process */
        if (count == 1 && e->object == o)
            contend_index(contend_g.objects, o, 0);
        int created = ts->created;
        CONTEND_SIGNAL_FENCE();
        ts->guard = 0;
        if (CONTEND_UNLIKELY(created))
            contend_emit_first_use(ts, obj, site);
        return;
    }
    /* no room for counts: record the acquisition instead, as a recorded
     * hold whose release is recorded too */
    CONTEND_SIGNAL_FENCE();
    ts->guard = 0;
    contend_held_push(ts, obj);
    contend_emit(ts, CONTEND_OP_TAG(prim, CONTEND_PHASE_IMMEDIATE), obj, site, contend_now());
}

void contend_claim_counts_ahead(struct contend_thread *ts)
{
    if (ts->guard)
        return;
    ts->guard = CONTEND_GUARD_BUSY;
    CONTEND_SIGNAL_FENCE();
    ts->count_claim_tried = 1;
    int saved_errno = errno;
    struct claim_timing c = claim_timing_start(ts, count_claim_takes_slot(ts));
    claim_count_table(ts); /* on failure the first count records instead */
    claim_timing_stop(ts, c);
    errno = saved_errno;
    CONTEND_SIGNAL_FENCE();
    ts->guard = 0;
}

/* The count entry of the latest counted acquisition of `lock` (its own
 * entry, or the by-site entry it was counted in), NULL if none. */
static contend_count *counted_hold(struct contend_thread *ts, const void *lock)
{
    uint64_t o = (uint64_t)(uintptr_t)lock;
    contend_count *e = ts->last_count;
    if (e && e->object == o && e->count > 0)
        return e;
    /* an open hold counted by site; the hold ends here */
    e = ts->by_site_n != 0 ? contend_by_site_forget(ts, lock) : NULL;
    if (e && e->count > 0)
        return e;
    for (uint32_t i = 0; ts->counts && i < ts->count_slots; i++) {
        if (ts->counts[i].object == o && ts->counts[i].count > 0)
            return &ts->counts[i];
    }
    return NULL;
}

uint32_t contend_untimed(struct contend_thread *ts, const void *lock, uint64_t t)
{
    contend_count *e = counted_hold(ts, lock);
    if (!e)
        return 0;
    __atomic_store_n(&e->count, e->count - 1, __ATOMIC_RELAXED);
    uint32_t prim = e->primitive;
    contend_emit2(ts, CONTEND_OP_TAG(prim, CONTEND_PHASE_UNTIMED), lock,
                  (const void *)(uintptr_t)e->site, t);
    return prim;
}

void contend_emit_stack(struct contend_thread *ts, uint32_t tag, const void *obj,
                        const void *site, uint64_t t)
{
    uint32_t every = contend_g.stack_every;
    if (!every) {
        ts->countdown = UINT32_MAX;
        contend_emit(ts, tag, obj, site, t);
        return;
    }
    ts->countdown = every - 1;
    contend_emit_slow(ts, tag, obj, site, t, 1);
}

/* ------------------------------------------------------------------------ */
/* Initialisation                                                            */

static void fork_prepare(void);
static void fork_parent(void);
static void fork_child(void);

static void set_state(int state)
{
    __atomic_store_n(&contend_g.state, state, __ATOMIC_RELEASE);
    __atomic_store_n(&contend_g.recording, state == CONTEND_STATE_ACTIVE, __ATOMIC_RELEASE);
}

/*
 * The recording's calibration, shared by its processes. Measuring it
 * (contend_calibrate_cost) takes about 0.3 ms of every process's start on
 * the KVM guest of docs/benchmarks.md, the largest part of what the
 * collector adds to a process that locks little (a build's compilers and
 * shells: 50 processes of a `make -j2`). The first process of a recording
 * to measure it writes the figures to <dir>/calibration (under a name of
 * its own, then renamed: a reader sees a whole file or none); a process
 * that finds the file takes them, as a fork child takes its parent's. A
 * file that does not read back whole, for this mode and this machine is
 * ignored.
 */
#define SHARED_CALIBRATION_MAGIC "CNTDCAL2"
struct shared_calibration {
    char magic[8];
    uint32_t light;
    struct cost_figures cost;
    char host[64]; /* uname's nodename: ranks of another machine measure
                      their own (a recording directory on a shared file
                      system) */
};
/* CNTDCAL1 was 96 bytes, without the multi-threaded figures: a file of
 * that layout does not read back whole and is measured again */
_Static_assert(sizeof(struct shared_calibration) == 104, "the calibration file's layout");

/* This machine's name for the shared calibration (truncated, NUL-padded). */
static void calibration_host(char host[64])
{
    struct utsname u;
    memset(host, 0, 64);
    if (uname(&u) == 0)
        memcpy(host, u.nodename, strnlen(u.nodename, 63));
}

/* <dir>/calibration, or <dir>/calibration.<pid> with `pid` nonzero. */
static void calibration_path(char *path, uint32_t pid)
{
    char *end = path + PATH_MAX;
    char *p = contend_append(contend_append(path, end, C.dir), end, "/calibration");
    if (pid)
        contend_append_u64(contend_append(p, end, "."), end, pid);
}

/* Takes the recording's calibration into C.* (and the header) when an
 * earlier process wrote it; 0 if not. */
static int read_shared_calibration(void)
{
    char path[PATH_MAX];
    calibration_path(path, 0);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct shared_calibration c;
    ssize_t n = read(fd, &c, sizeof c);
    close(fd);
    char host[64];
    calibration_host(host);
    if (n != (ssize_t)sizeof c || memcmp(c.magic, SHARED_CALIBRATION_MAGIC, 8) != 0 ||
        c.light != (uint32_t)contend_g.light || c.cost.record_ps == 0 || c.cost.record_mt_ps == 0 ||
        memcmp(c.host, host, sizeof host) != 0)
        return 0;
    C.cost = c.cost;
    header_set_cost(contend_g.hdr, &C.cost);
    return 1;
}

/* Writes C.*'s calibration for the recording's later processes (best
 * effort: without it each measures its own). */
static void write_shared_calibration(void)
{
    struct shared_calibration c;
    memset(&c, 0, sizeof c);
    memcpy(c.magic, SHARED_CALIBRATION_MAGIC, 8);
    c.light = (uint32_t)contend_g.light;
    c.cost = C.cost;
    calibration_host(c.host);
    char tmp[PATH_MAX], path[PATH_MAX];
    calibration_path(tmp, (uint32_t)getpid());
    calibration_path(path, 0);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    int ok = write(fd, &c, sizeof c) == (ssize_t)sizeof c;
    close(fd);
    if (!ok || rename(tmp, path) != 0)
        unlink(tmp);
}

static void contend_init(void)
{
    int expected = CONTEND_STATE_NONE;
    if (!__atomic_compare_exchange_n(&contend_g.state, &expected, CONTEND_STATE_INIT, 0,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        contend_resolve_reals(); /* someone else initialises: pass through */
        return;
    }
    struct contend_thread *ts = &contend_tls;
    struct contend_saved saved = contend_enter(ts);
    /* the whole start-up is the collector's cost (trace file, maps
     * snapshot, calibration): timed as one, counted once it has a trace */
    uint64_t t0 = contend_cpu_ns();

    int state = CONTEND_STATE_PASS;
    contend_resolve_reals();
    if (__atomic_load_n(&contend_g.resolved, __ATOMIC_ACQUIRE) != 1) {
        contend_say("cannot find the pthread functions; recording nothing", NULL, NULL);
        goto done;
    }
    parse_config();
    if (!C.dir[0])
        goto done;
    if (!C.key_ok)
        C.key_ok = pthread_key_create(&C.key, thread_exit) == 0;
    if (create_trace(0) != 0)
        goto done;
    if (!C.calibrated && read_shared_calibration())
        C.calibrated = 1;
    if (!C.calibrated) {
        contend_calibrate_cost(ts);
        C.cost = header_cost(contend_g.hdr);
        C.calibrated = 1;
        write_shared_calibration();
        ts->guard = CONTEND_GUARD_BUSY; /* still initialising */
    }
    if (!C.atfork_done)
        C.atfork_done = pthread_atfork(fork_prepare, fork_parent, fork_child) == 0;
    state = CONTEND_STATE_ACTIVE;
    contend_cost_since(ts, t0);

done:
    set_state(state);
    contend_leave(ts, saved);
}

int contend_prepare(struct contend_thread *ts)
{
    if (ts->guard)
        return 0;
    int state = __atomic_load_n(&contend_g.state, __ATOMIC_ACQUIRE);
    if (state == CONTEND_STATE_NONE)
        contend_init();
    else if (!__atomic_load_n(&contend_g.resolved, __ATOMIC_ACQUIRE))
        contend_resolve_reals();
    return contend_may_record(ts);
}

__attribute__((constructor)) static void contend_constructor(void)
{
    if (__atomic_load_n(&contend_g.state, __ATOMIC_ACQUIRE) == CONTEND_STATE_NONE)
        contend_init();
    if (__atomic_load_n(&contend_g.state, __ATOMIC_ACQUIRE) != CONTEND_STATE_ACTIVE)
        return;
    struct contend_thread *ts = &contend_tls;
    struct contend_saved saved = contend_enter(ts);
    if (!C.backtrace_ready) {
        /* the first backtrace() dlopens libgcc_s: do it here, not in a hook
         * (creation records carry a short stack even without stack_every) */
        uint64_t t0 = contend_cpu_ns();
        void *frames[4];
        backtrace(frames, 4);
        __atomic_store_n(&C.backtrace_ready, 1, __ATOMIC_RELEASE);
        contend_cost_since(ts, t0);
    }
    contend_leave(ts, saved);
}

__attribute__((destructor)) static void contend_destructor(void)
{
    if (__atomic_load_n(&contend_g.state, __ATOMIC_ACQUIRE) != CONTEND_STATE_ACTIVE)
        return;
    struct contend_thread *ts = &contend_tls;
    struct contend_saved saved = contend_enter(ts);
    uint64_t t0 = contend_cpu_ns();
    contend_trace_header *h = contend_g.hdr;
    calibrate(&h->end);
    if (ts->chunk)
        store_thread_name(ts->chunk);
    if (ts->count_chunk)
        store_thread_name(ts->count_chunk);
    chunk_threads_again(ts->chunk);
    chunk_threads_again(ts->count_chunk);
    contend_maps_snapshot();
    contend_cost_since(ts, t0);
    /* after the last cost: a reader that sees FINISHED sees it too */
    __atomic_fetch_or(&h->flags, (uint64_t)CONTEND_FLAG_FINISHED, __ATOMIC_RELEASE);
    /* Nothing is unmapped: other threads may still be recording, and the
     * records they store after this point are still kept. */
    contend_leave(ts, saved);
}

/* ------------------------------------------------------------------------ */
/* fork                                                                      */

/* Between the prepare and child handlers the forking thread records
 * nothing: handlers of other libraries that run in the child before ours
 * would otherwise write into the parent's chunk (the mapping is shared). */
static void fork_prepare(void)
{
    contend_tls.guard |= CONTEND_GUARD_FORK;
}

static void fork_parent(void)
{
    contend_tls.guard &= (uint8_t)~CONTEND_GUARD_FORK;
}

static void fork_child(void)
{
    struct contend_thread *ts = &contend_tls;
    int saved_errno = errno;
    ts->guard = CONTEND_GUARD_BUSY | CONTEND_GUARD_FORK;
    CONTEND_SIGNAL_FENCE();

    /* This is now the only thread. Drop our copies of the parent's
     * mappings (unmapping in the child does not touch the parent's): the
     * windows first (with the lock another thread may have held), then the
     * chunks (a chunk in a window is already unmapped with it). */
    windows_after_fork();
    slots_after_fork(ts);
    release_chunk(ts);
    /* the parent's COUNTS mapping is shared: drop it unmapped, like the
     * chunk, and start with no recorded holds (they are in the parent's
     * trace) */
    release_count_chunk(ts);
    ts->count_seq = 0;
    ts->count_claim_tried = 0;
    ts->held_n = 0;
    ts->seq = 0;
    ts->tid = gettid_raw();
    ts->exit_rounds = 0;

    int state = __atomic_load_n(&contend_g.state, __ATOMIC_ACQUIRE);
    if (state == CONTEND_STATE_ACTIVE) {
        __atomic_store_n(&contend_g.recording, 0, __ATOMIC_RELEASE);
        contend_trace_header *old = contend_g.hdr;
        contend_g.hdr = NULL;
        contend_g.objects = contend_g.sites = NULL;
        if (old)
            contend_raw_munmap(old, C.map_len);
        struct stat st;
        if (C.fd >= 0 && fstat(C.fd, &st) == 0 && st.st_dev == C.dev && st.st_ino == C.ino)
            close(C.fd); /* the parent's trace: still ours, so close it */
        C.fd = -1;
        contend_maps_after_fork();
        set_state(create_trace(1) == 0 ? CONTEND_STATE_ACTIVE : CONTEND_STATE_PASS);
    } else if (state == CONTEND_STATE_INIT) {
        /* another thread was initialising in the parent: start over */
        set_state(CONTEND_STATE_NONE);
    }

    errno = saved_errno;
    CONTEND_SIGNAL_FENCE();
    ts->guard = 0;
}
