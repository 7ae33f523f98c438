/*
 * contend region recorder: the manual regions of contend/region.h and the
 * -finstrument-functions hooks, recorded into
 * <CONTEND_DIR>/regions/<pid>[.<n>].creg (format: contend/region_format.h)
 * for the interference (SCI) analysis (Mosli Bouksiaa et al., TPDS 2019,
 * Section 3.2: per-thread buffers, a timestamp at each entry and exit).
 *
 * Part of the preloaded collector library but independent of the lock
 * collector: its own configuration (the same CONTEND_* environment), its
 * own file, its own per-thread state; it shares only the text helpers
 * (contend/say.h) and the raw mapping calls (contend/raw_mm.h).
 *
 * Exports:
 *   contend_region_api_v1      the table contend/region.h finds with dlsym
 *   __cyg_profile_func_enter   the -finstrument-functions hooks (glibc has
 *   __cyg_profile_func_exit    empty ones; these take precedence)
 *
 * Lifecycle
 *   - The constructor parses the environment (CONTEND_DIR, CONTEND_CLOCK,
 *     CONTEND_TSC_HZ, CONTEND_FUNCTIONS, CONTEND_FUNCTION_EVERY) and
 *     registers the thread-exit key and the fork handlers. Nothing is
 *     created until the first region or recorded hook: a process that
 *     marks nothing leaves no file.
 *   - The first use creates the file (one thread wins a CAS) and maps its
 *     header. Threads that call meanwhile wait for it (a futex, at most
 *     START_WAIT_NS in all), so no execution is lost at start-up; see
 *     start() for why the wait cannot deadlock.
 *   - Each thread claims one chunk of the file at a time, writes it with
 *     zeros (contend/zero_fill.h: the pages enter the page cache without
 *     a fault), maps it and faults all of it in at once (MADV_POPULATE_WRITE), so
 *     the hot path never takes a page fault; the key destructor unmaps it
 *     at thread exit.
 *   - At exit a destructor stores the end calibration and FLAG_FINISHED.
 *   - fork(): the child drops the parent's mappings and starts its own file
 *     on its next use; every site is interned again there (a generation
 *     number kept beside each site's id).
 *
 * Hot path (a BEGIN or END): one TLS access, one load of the site's id,
 * one comparison for room, one timestamp, one or two stores. No locks, no
 * allocation, no system call; errno untouched. Re-entry (a signal handler
 * that marks a region while the thread is writing one) passes through
 * unrecorded, guarded by a per-thread byte.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* collector.c: clock points; futex.c: the collector's own system calls,
 * never recorded */
__attribute__((visibility("hidden"))) void contend_clock_point(int tsc, uint64_t *ticks,
                                                              uint64_t *mono, uint64_t *real);
__attribute__((visibility("hidden"))) void contend_clock_pair(int tsc, uint64_t *ticks,
                                                             uint64_t *mono);
__attribute__((visibility("hidden"))) long contend_syscall6(long nr, long a1, long a2, long a3,
                                                           long a4, long a5, long a6);

#include "contend/clock.h" /* the trace clock, shared with the collector and MPI recorder */
#define REG_HAVE_TSC CONTEND_CLOCK_HAVE_TSC

#include "contend/raw_mm.h"
#include "contend/zero_fill.h"
#include "contend/region.h"
#include "contend/region_format.h"
#include "contend/say.h"

#define REG_EXPORT __attribute__((visibility("default")))
#define REG_LIKELY(x) __builtin_expect(!!(x), 1)
#define REG_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define REG_INLINE static inline __attribute__((always_inline))
#define REG_FENCE() __atomic_signal_fence(__ATOMIC_SEQ_CST)

#define ST_NONE 0   /* no file yet                          */
#define ST_INIT 1   /* one thread is creating the file      */
#define ST_ACTIVE 2 /* recording                            */
#define ST_PASS 3   /* not recording (no CONTEND_DIR, error) */

/* Words one timed record can take: TIME (2) + the record (at most 3). */
#define ROOM_WORDS 5u
/* Words of the longest SITE record: head, kind/line, three strings. */
#define SITE_WORDS (2u + (3u * (CONTEND_REGION_STRING_MAX + 1u) + 7u) / 8u)
/* Longest wait for another thread's creation of the file (2 s; it takes
 * tens of µs). */
#define START_WAIT_NS 2000000000ull
/* Open sampled function entries remembered per thread. */
#define KEPT_MAX 32

/* ------------------------------------------------------------------------ */
/* State                                                                     */

static struct {
    int configured;
    int enabled;        /* CONTEND_DIR is set                          */
    int clock_tsc;
    int functions;      /* CONTEND_FUNCTIONS=1                          */
    uint32_t every;     /* CONTEND_FUNCTION_EVERY, >= 1                 */
    uint64_t tsc_hz;
    char dir[PATH_MAX];
    char path[PATH_MAX];
    int fd;
    dev_t dev;
    ino_t ino;
    int forked;         /* the next file belongs to a fork child        */
    int key_ok;
    pthread_key_t key;
    int atfork_done;
} R = {.fd = -1, .every = 1};

static int reg_state;                /* atomic: ST_*                          */
static int reg_recording;            /* atomic: state == ST_ACTIVE            */
static int reg_hooks;                /* atomic: function hooks record         */
static uint32_t reg_generation = 1;  /* atomic: bumped in fork children       */
static int reg_wait_gave_up;         /* atomic: a start-up wait timed out     */
static contend_region_header *reg_hdr;

struct reg_thread {
    uint64_t *cur;       /* next free word of the chunk (NULL: none)          */
    uint64_t *end;       /* one past the chunk's last word                    */
    uint64_t last;       /* ticks of the previous timed record                */
    uint64_t *chunk;
    uint32_t tid;
    uint32_t seq;        /* next chunk sequence number                        */
    uint32_t countdown;  /* function calls to skip before the next recorded   */
    uint32_t kept_n;     /* entries in kept[]                                 */
    uint8_t guard;       /* inside the recorder, or stopped (1)               */
    uint8_t stopped;     /* recording failed for this thread                  */
    uint8_t key_set;
    uint8_t exit_rounds;
    struct {
        uint64_t fn, frame;
    } kept[KEPT_MAX];    /* recorded, still open function entries (sampling) */
};

static _Thread_local struct reg_thread reg_tls __attribute__((tls_model("initial-exec")));

/* ------------------------------------------------------------------------ */
/* Clock                                                                     */

static uint64_t monotonic_ns(void)
{
    return contend_clock_monotonic_ns();
}

REG_INLINE uint64_t reg_now(void)
{
    return contend_clock_read(R.clock_tsc);
}

static void calibrate(contend_region_calibration *c)
{
    contend_clock_point(R.clock_tsc, &c->ticks, &c->monotonic_ns, &c->realtime_ns);
    c->reserved = 0;
}

static void clock_pair(uint64_t *ticks, uint64_t *mono)
{
    contend_clock_pair(R.clock_tsc, ticks, mono);
}

/* ------------------------------------------------------------------------ */
/* Configuration (parsed once; a bad value is named and ignored)              */

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

static void parse_config(void)
{
    if (R.configured)
        return;
    R.configured = 1;
    const char *dir = getenv("CONTEND_DIR");
    if (!dir || !*dir)
        return;
    char *end = R.dir + sizeof R.dir;
    char *p = R.dir;
    if (dir[0] != '/') {
        if (!getcwd(R.dir, sizeof R.dir - 2))
            return;
        p = contend_append(R.dir + strlen(R.dir), end, "/");
    }
    p = contend_append(p, end, dir);
    if ((size_t)(p - R.dir) > sizeof R.dir - 64)
        return;
    const char *clock = getenv("CONTEND_CLOCK");
#if REG_HAVE_TSC && defined(__x86_64__)
    R.clock_tsc = clock && strcmp(clock, "tsc") == 0;
#else
    (void)clock;
#endif
    uint64_t v;
    const char *hz = getenv("CONTEND_TSC_HZ");
    if (hz && *hz && parse_u64(hz, &v))
        R.tsc_hz = v;
    const char *fns = getenv("CONTEND_FUNCTIONS");
    R.functions = fns && strcmp(fns, "1") == 0;
    const char *every = getenv("CONTEND_FUNCTION_EVERY");
    if (every && *every) {
        if (parse_u64(every, &v) && v >= 1 && v <= UINT32_MAX)
            R.every = (uint32_t)v;
        else
            contend_say("ignoring bad CONTEND_FUNCTION_EVERY=", every, "; recording every call");
    }
    R.enabled = 1;
}

/* ------------------------------------------------------------------------ */
/* The file                                                                  */

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* Faults `len` bytes in now; 0 when done or not supported, -1 when the
 * kernel cannot provide the pages (ENOSPC on a full file system). */
static int populate(void *addr, size_t len)
{
    int r = contend_raw_madvise(addr, len, MADV_POPULATE_WRITE);
    if (r != 0 && errno == EINVAL)
        return 0; /* kernel before 5.14: pages fault on first store */
    return r;
}

/* "<dir>/<sub>/<pid>[.<n>]<ext>" */
static void build_path(char *out, const char *sub, uint32_t pid, unsigned n, const char *ext)
{
    char *end = out + PATH_MAX;
    char *p = contend_append(out, end, R.dir);
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

/* The exec generation of this image: the n of the newest
 * maps/<pid>[.<n>].maps the lock collector wrote, so that region trace
 * and maps snapshots share a name (0 when there is none). */
static unsigned image_generation(uint32_t pid)
{
    char path[PATH_MAX];
    struct stat st;
    unsigned found = 0;
    for (unsigned n = 0; n < 10000; n++) {
        build_path(path, "maps", pid, n, ".maps");
        if (stat(path, &st) != 0)
            break;
        found = n;
    }
    return found;
}

static void say_errno(const char *what, const char *path, int err)
{
    const char *desc = strerrordesc_np(err);
    char msg[PATH_MAX + 64];
    char *end = msg + sizeof msg;
    char *p = contend_append(msg, end, path);
    p = contend_append(p, end, ": ");
    contend_append(p, end, desc ? desc : "error");
    contend_say(what, msg, "; regions and functions of this process are not recorded");
}

/* Creates this process's region trace and maps its header. 0 on success. */
static int create_file(void)
{
    uint32_t pid = (uint32_t)getpid();
    char path[PATH_MAX];
    contend_append(contend_append(path, path + PATH_MAX, R.dir), path + PATH_MAX, "/regions");
    if (mkdir(path, 0777) != 0 && errno != EEXIST) {
        say_errno("cannot create directory ", path, errno);
        return -1;
    }
    int fd = -1;
    for (unsigned n = image_generation(pid); n < 10000; n++) {
        build_path(path, "regions", pid, n, ".creg");
        fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd >= 0 || errno != EEXIST)
            break;
    }
    if (fd < 0) {
        say_errno("cannot create ", path, errno);
        return -1;
    }
    char zero = 0;
    struct stat st;
    void *map = MAP_FAILED;
    if (pwrite(fd, &zero, 1, CONTEND_REGION_HEADER_SIZE - 1) != 1 || fstat(fd, &st) != 0 ||
        (map = contend_raw_mmap(NULL, CONTEND_REGION_HEADER_SIZE, PROT_READ | PROT_WRITE,
                                MAP_SHARED, fd, 0)) == MAP_FAILED ||
        populate(map, CONTEND_REGION_HEADER_SIZE) != 0) {
        int err = errno;
        if (map != MAP_FAILED)
            contend_raw_munmap(map, CONTEND_REGION_HEADER_SIZE);
        unlink(path);
        close(fd);
        say_errno("cannot set up ", path, err);
        return -1;
    }
    contend_region_header *h = map;
    memcpy(h->magic, CONTEND_REGION_MAGIC, 8);
    h->version = CONTEND_REGION_VERSION;
    h->header_size = CONTEND_REGION_HEADER_SIZE;
    h->endian_check = CONTEND_REGION_ENDIAN_CHECK;
    h->pointer_size = (uint16_t)sizeof(void *);
    h->clock = R.clock_tsc ? CONTEND_REGION_CLOCK_TSC : CONTEND_REGION_CLOCK_MONOTONIC;
    h->chunk_size = CONTEND_REGION_CHUNK_SIZE;
    h->pid = pid;
    h->ppid = (uint32_t)getppid();
    h->flags = (R.forked ? CONTEND_REGION_FLAG_FORKED : 0) |
               (R.functions ? CONTEND_REGION_FLAG_FUNCTIONS : 0);
    h->data_offset = CONTEND_REGION_HEADER_SIZE;
    h->function_every = R.every;
    h->ticks_per_second = R.tsc_hz;
    calibrate(&h->start);
    ssize_t n = readlink("/proc/self/exe", h->exe_path, sizeof h->exe_path - 1);
    if (n > 0)
        h->exe_path[n] = 0;
    memcpy(R.path, path, sizeof R.path);
    R.fd = fd;
    R.dev = st.st_dev;
    R.ino = st.st_ino;
    __atomic_store_n(&reg_hdr, h, __ATOMIC_RELEASE);
    return 0;
}

/* Our file descriptor if it still is ours (the program may have closed or
 * reused the number), else a fresh one by path (*tmp = 1: close it). */
static int file_fd(int *tmp)
{
    struct stat st;
    *tmp = 0;
    if (R.fd >= 0 && fstat(R.fd, &st) == 0 && st.st_dev == R.dev && st.st_ino == R.ino)
        return R.fd;
    int fd = open(R.path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0 || st.st_dev != R.dev || st.st_ino != R.ino) {
        close(fd);
        return -1;
    }
    *tmp = 1;
    return fd;
}

static void set_state(int st)
{
    __atomic_store_n(&reg_state, st, __ATOMIC_RELEASE);
    __atomic_store_n(&reg_recording, st == ST_ACTIVE, __ATOMIC_RELEASE);
}

static long futex(int *addr, int op, int val, const struct timespec *timeout)
{
    /* the next syscall() in the chain, past the collector's own syscall()
     * interposer (futex.c), so never recorded as the program's futex wait;
     * not a cancellation point; errno is kept by the caller (make_room) */
    return contend_syscall6(SYS_futex, (long)addr, op, val, (long)timeout, 0, 0);
}

/*
 * Another thread is creating the file: wait until it has (1: recording,
 * 0: not). Bounded, so that it cannot deadlock: the creator takes no lock
 * and calls only system calls, but it may itself be stopped for long, e.g.
 * by a signal handler of the program that waits for something this thread
 * holds; after START_WAIT_NS in all this thread gives up, passes through,
 * and no later thread waits again (the executions so lost are flagged in
 * the header, CONTEND_REGION_FLAG_START_LOST). A waiter in a signal handler
 * is safe too (futex and clock_gettime are async-signal-safe; the creator
 * is never the interrupted thread itself, whose guard would be set). A
 * fork() child never waits for a creator it did not inherit: fork_child
 * resets the state.
 */
static int wait_for_creator(void)
{
    uint64_t deadline = 0;
    for (;;) {
        int st = __atomic_load_n(&reg_state, __ATOMIC_ACQUIRE);
        if (st != ST_INIT)
            return st == ST_ACTIVE;
        uint64_t now = monotonic_ns();
        if (!deadline)
            deadline = now + START_WAIT_NS;
        if (now >= deadline || __atomic_load_n(&reg_wait_gave_up, __ATOMIC_RELAXED)) {
            /* Dekker with start(): either the creator sees the flag, or
             * this thread sees its final state (and the destructor looks
             * at the flag again) */
            __atomic_store_n(&reg_wait_gave_up, 1, __ATOMIC_SEQ_CST);
            __atomic_thread_fence(__ATOMIC_SEQ_CST);
            return __atomic_load_n(&reg_state, __ATOMIC_SEQ_CST) == ST_ACTIVE;
        }
        uint64_t left = deadline - now;
        if (left > 100000000u)
            left = 100000000u; /* look again every 100 ms at most */
        struct timespec ts = {(time_t)(left / 1000000000u), (long)(left % 1000000000u)};
        futex(&reg_state, FUTEX_WAIT_PRIVATE, ST_INIT, &ts); /* EINTR, EAGAIN: look again */
    }
}

/* First use in the process: create the file. Returns 1 if recording. */
static int start(void)
{
    int st = __atomic_load_n(&reg_state, __ATOMIC_ACQUIRE);
    if (st == ST_PASS)
        return 0;
    if (st == ST_ACTIVE)
        return 1;
    int expected = ST_NONE;
    if (!__atomic_compare_exchange_n(&reg_state, &expected, ST_INIT, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return expected == ST_INIT ? wait_for_creator() : expected == ST_ACTIVE;
    parse_config();
    int ok = R.enabled && create_file() == 0;
    if (!ok)
        __atomic_store_n(&reg_hooks, 0, __ATOMIC_RELEASE); /* hooks: back to one load */
    set_state(ok ? ST_ACTIVE : ST_PASS);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (ok && __atomic_load_n(&reg_wait_gave_up, __ATOMIC_SEQ_CST))
        __atomic_fetch_or(&reg_hdr->flags, (uint64_t)CONTEND_REGION_FLAG_START_LOST,
                          __ATOMIC_RELAXED);
    futex(&reg_state, FUTEX_WAKE_PRIVATE, INT_MAX, NULL);
    return ok;
}

/* ------------------------------------------------------------------------ */
/* Chunks                                                                    */

static void release_chunk(struct reg_thread *t)
{
    if (t->chunk)
        contend_raw_munmap(t->chunk, CONTEND_REGION_CHUNK_SIZE);
    t->chunk = t->cur = t->end = NULL;
}

static int claim_chunk(struct reg_thread *t)
{
    release_chunk(t);
    if (t->exit_rounds >= PTHREAD_DESTRUCTOR_ITERATIONS)
        return 0; /* nothing would unmap a new chunk again */
    contend_region_header *h = __atomic_load_n(&reg_hdr, __ATOMIC_ACQUIRE);
    uint64_t size = CONTEND_REGION_CHUNK_SIZE;
    uint32_t idx = __atomic_fetch_add(&h->chunks_claimed, 1u, __ATOMIC_RELAXED);
    uint64_t off = CONTEND_REGION_HEADER_SIZE + (uint64_t)idx * size;
    int tmp;
    int fd = file_fd(&tmp);
    if (fd < 0)
        return 0;
    void *m = MAP_FAILED;
    if (contend_write_zeros(fd, off, size) == 0)
        m = contend_raw_mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)off);
    if (tmp)
        close(fd);
    if (m == MAP_FAILED)
        return 0;
    if (populate(m, size) != 0) {
        contend_raw_munmap(m, size);
        return 0;
    }
    if (!t->tid)
        t->tid = (uint32_t)contend_syscall6(SYS_gettid, 0, 0, 0, 0, 0, 0);
    contend_region_chunk_header *ch = m;
    ch->tid = t->tid;
    ch->sequence = t->seq++;
    ch->flags = 0;
    clock_pair(&ch->base_ticks, &ch->monotonic_ns);
    __atomic_store_n(&ch->magic, CONTEND_REGION_CHUNK_MAGIC, __ATOMIC_RELEASE);
    t->chunk = m;
    t->cur = (uint64_t *)m + CONTEND_REGION_CHUNK_HEADER_SIZE / 8;
    t->end = (uint64_t *)m + size / 8;
    t->last = ch->base_ticks;
    if (!t->key_set && R.key_ok && pthread_setspecific(R.key, t) == 0)
        t->key_set = 1;
    return 1;
}

/* The slow half of every call: the file, a chunk with room for `words`.
 * Called with the guard set; errno kept. 1 when the thread may write. */
static int make_room(struct reg_thread *t, size_t words)
{
    int saved = errno;
    int ok = 1;
    /* The file's creation and a chunk's claim call open and pwrite,
     * cancellation points: a pending pthread_cancel must not act inside a
     * region mark (which is not one), nor leave the file half made. */
    int cancel_state;
    int cancel_set = pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state) == 0;
    if (!__atomic_load_n(&reg_recording, __ATOMIC_ACQUIRE) && !start())
        ok = 0; /* not recording (this thread may try again: a fork child) */
    else if ((!t->cur || (size_t)(t->end - t->cur) < words) && !claim_chunk(t)) {
        ok = 0;
        t->stopped = 1; /* no room (disk full, thread exiting): stop here */
    }
    if (cancel_set)
        pthread_setcancelstate(cancel_state, &cancel_state);
    errno = saved;
    return ok;
}

/* pthread key destructor: the thread is exiting. */
static void thread_exit(void *value)
{
    (void)value;
    struct reg_thread *t = &reg_tls;
    uint8_t saved = t->guard;
    t->guard = 1;
    REG_FENCE();
    release_chunk(t);
    t->key_set = 0;
    if (t->exit_rounds < 255)
        t->exit_rounds++;
    REG_FENCE();
    t->guard = saved;
}

/* ------------------------------------------------------------------------ */
/* Records                                                                   */

/* Writes a timed record at `ticks` with `n` (0..2) words after the head.
 * Room for ROOM_WORDS words is there. */
REG_INLINE void put(struct reg_thread *t, uint32_t tag, uint32_t site, uint64_t ticks,
                    uint64_t w1, uint64_t w2, int n)
{
    uint64_t *p = t->cur;
    uint64_t dt = ticks - t->last;
    if (REG_UNLIKELY(dt > UINT32_MAX)) {
        /* also when ticks precede the chunk's base (END timed before a
         * chunk claim) or another CPU's TSC is a hair behind */
        p[1] = ticks;
        __atomic_store_n(&p[0], (uint64_t)CONTEND_REGION_TAG_TIME, __ATOMIC_RELEASE);
        p += 2;
        dt = 0;
    }
    if (n > 0)
        p[1] = w1;
    if (n > 1)
        p[2] = w2;
    __atomic_store_n(&p[0], (uint64_t)tag | ((uint64_t)site << 8) | (dt << 32), __ATOMIC_RELEASE);
    t->cur = p + 1 + n;
    t->last = ticks;
}

/* Copies `s` (at most CONTEND_REGION_STRING_MAX bytes) and its NUL. */
static char *copy_string(char *dst, const char *s)
{
    size_t i = 0;
    if (s)
        for (; s[i] && i < CONTEND_REGION_STRING_MAX; i++)
            dst[i] = s[i];
    dst[i] = 0;
    return dst + i + 1;
}

/* The site's id in this process's file, defining it (SITE record) on its
 * first use. 0 when it cannot be recorded. Guard set, room for SITE_WORDS
 * + ROOM_WORDS words. */
static uint32_t intern(struct reg_thread *t, struct contend_region_site *site)
{
    uint32_t gen = __atomic_load_n(&reg_generation, __ATOMIC_RELAXED);
    uint32_t id = __atomic_load_n(&site->id, __ATOMIC_ACQUIRE);
    if (id && __atomic_load_n(&site->reserved, __ATOMIC_ACQUIRE) == gen)
        return id;
    contend_region_header *h = __atomic_load_n(&reg_hdr, __ATOMIC_ACQUIRE);
    uint32_t mine = __atomic_add_fetch(&h->sites_defined, 1u, __ATOMIC_RELAXED);
    if (mine > CONTEND_REGION_SITE_MAX) {
        __atomic_fetch_or(&h->flags, (uint64_t)CONTEND_REGION_FLAG_SITES_FULL, __ATOMIC_RELAXED);
        return 0;
    }
    /* Define it in this thread's chunk first, then publish the id: a
     * thread that sees the id can rely on the definition being in the
     * file (or about to be: the head word is stored with release). Two
     * threads may define the same site at once; the reader keeps either
     * definition (they are equal) and the id that was published. */
    uint64_t *p = t->cur;
    char *s = (char *)(p + 2);
    s = copy_string(s, site->name);
    s = copy_string(s, site->file);
    s = copy_string(s, site->function);
    size_t bytes = (size_t)(s - (char *)(p + 2));
    size_t words = 1 + (bytes + 7) / 8;
    memset(s, 0, words * 8 - 8 - bytes); /* pad to a whole word */
    p[1] = (uint64_t)site->kind | ((uint64_t)site->line << 32);
    __atomic_store_n(&p[0], (uint64_t)CONTEND_REGION_TAG_SITE | ((uint64_t)mine << 8) |
                                ((uint64_t)words << 32),
                     __ATOMIC_RELEASE);
    t->cur = p + 1 + words;
    __atomic_store_n(&site->reserved, gen, __ATOMIC_RELAXED);
    __atomic_store_n(&site->id, mine, __ATOMIC_RELEASE);
    return mine;
}

/* The slow path of a region call: returns the site id with room for the
 * record, or 0 (pass through). Guard set. */
static __attribute__((noinline, cold)) uint32_t region_slow(struct reg_thread *t,
                                                           struct contend_region_site *site)
{
    if (t->stopped || !make_room(t, SITE_WORDS + ROOM_WORDS))
        return 0;
    return intern(t, site);
}

/* The site id if it is current and the thread has room, else 0. */
REG_INLINE uint32_t region_fast(struct reg_thread *t, struct contend_region_site *site)
{
    uint32_t id = __atomic_load_n(&site->id, __ATOMIC_RELAXED);
    if (REG_LIKELY(id && t->cur && (size_t)(t->end - t->cur) >= ROOM_WORDS &&
                   __atomic_load_n(&site->reserved, __ATOMIC_RELAXED) ==
                       __atomic_load_n(&reg_generation, __ATOMIC_RELAXED)))
        return id;
    return region_slow(t, site);
}

static void region_begin(struct contend_region_site *site)
{
    struct reg_thread *t = &reg_tls;
    if (REG_UNLIKELY(t->guard))
        return;
    t->guard = 1;
    REG_FENCE();
    uint32_t id = region_fast(t, site);
    if (REG_LIKELY(id))
        put(t, CONTEND_REGION_TAG_BEGIN, id, reg_now(), 0, 0, 0);
    REG_FENCE();
    t->guard = 0;
}

static void region_begin_key(struct contend_region_site *site, uint64_t key)
{
    struct reg_thread *t = &reg_tls;
    if (REG_UNLIKELY(t->guard))
        return;
    t->guard = 1;
    REG_FENCE();
    uint32_t id = region_fast(t, site);
    if (REG_LIKELY(id))
        put(t, CONTEND_REGION_TAG_BEGIN_KEY, id, reg_now(), key, 0, 1);
    REG_FENCE();
    t->guard = 0;
}

static void region_end(struct contend_region_site *site)
{
    uint64_t ticks = reg_now(); /* first: the END's own work is not inside */
    struct reg_thread *t = &reg_tls;
    if (REG_UNLIKELY(t->guard))
        return;
    t->guard = 1;
    REG_FENCE();
    uint32_t id = region_fast(t, site);
    if (REG_LIKELY(id))
        put(t, CONTEND_REGION_TAG_END, id, ticks, 0, 0, 0);
    REG_FENCE();
    t->guard = 0;
}

REG_EXPORT const struct contend_region_api contend_region_api_v1 = {
    CONTEND_REGION_API_VERSION,
    (uint32_t)sizeof(struct contend_region_api),
    region_begin,
    region_begin_key,
    region_end,
};

/* ------------------------------------------------------------------------ */
/* -finstrument-functions hooks                                              */

/* Room for a function record; 0 to pass through. Guard set. */
REG_INLINE int fn_room(struct reg_thread *t)
{
    if (REG_LIKELY(t->cur && (size_t)(t->end - t->cur) >= ROOM_WORDS))
        return 1;
    return !t->stopped && make_room(t, ROOM_WORDS);
}

/*
 * With CONTEND_FUNCTION_EVERY=N > 1 one call in N per thread is recorded
 * (Mosli Bouksiaa et al., Section 3.2.3, sampling mode): the entry decides,
 * and the recorded entries still open are remembered (function, frame) so
 * that exactly their exits are recorded. Entries whose frame lies below the
 * exiting function's (deeper in the stack) were left by longjmp or an
 * exception and are forgotten.
 */
static int sample_enter(struct reg_thread *t, uint64_t fn, uint64_t frame)
{
    /* a new call is below every live frame (inlined functions share their
     * caller's frame, so an equal frame stays) */
    while (t->kept_n && t->kept[t->kept_n - 1].frame < frame)
        t->kept_n--;
    if (t->countdown) {
        t->countdown--;
        return 0;
    }
    if (t->kept_n == KEPT_MAX)
        return 0;
    t->countdown = R.every - 1;
    t->kept[t->kept_n].fn = fn;
    t->kept[t->kept_n].frame = frame;
    t->kept_n++;
    return 1;
}

/* The kept entry this exit ends: of the kept entries of `fn` whose frame is
 * at or below the exit's (an optimised function may call its exit hook
 * after its epilogue, above its entry hook's frame), the one with the
 * highest frame; it and everything kept after it are forgotten. */
static int sample_exit(struct reg_thread *t, uint64_t fn, uint64_t frame)
{
    int best = -1;
    for (int i = (int)t->kept_n - 1; i >= 0; i--) {
        if (t->kept[i].fn == fn && t->kept[i].frame <= frame &&
            (best < 0 || t->kept[i].frame > t->kept[best].frame))
            best = i;
    }
    if (best < 0)
        return 0;
    t->kept_n = (uint32_t)best;
    return 1;
}

REG_EXPORT void __cyg_profile_func_enter(void *fn, void *call_site)
{
    (void)call_site;
    if (REG_LIKELY(!__atomic_load_n(&reg_hooks, __ATOMIC_RELAXED)))
        return;
    uint64_t frame = (uint64_t)(uintptr_t)__builtin_dwarf_cfa();
    struct reg_thread *t = &reg_tls;
    if (REG_UNLIKELY(t->guard))
        return;
    t->guard = 1;
    REG_FENCE();
    if ((R.every <= 1 || sample_enter(t, (uint64_t)(uintptr_t)fn, frame)) && fn_room(t))
        put(t, CONTEND_REGION_TAG_ENTER, 0, reg_now(), (uint64_t)(uintptr_t)fn, frame, 2);
    REG_FENCE();
    t->guard = 0;
}

REG_EXPORT void __cyg_profile_func_exit(void *fn, void *call_site)
{
    (void)call_site;
    if (REG_LIKELY(!__atomic_load_n(&reg_hooks, __ATOMIC_RELAXED)))
        return;
    uint64_t ticks = reg_now();
    uint64_t frame = (uint64_t)(uintptr_t)__builtin_dwarf_cfa();
    struct reg_thread *t = &reg_tls;
    if (REG_UNLIKELY(t->guard))
        return;
    t->guard = 1;
    REG_FENCE();
    if ((R.every <= 1 || sample_exit(t, (uint64_t)(uintptr_t)fn, frame)) && fn_room(t))
        put(t, CONTEND_REGION_TAG_EXIT, 0, ticks, (uint64_t)(uintptr_t)fn, frame, 2);
    REG_FENCE();
    t->guard = 0;
}

/* ------------------------------------------------------------------------ */
/* Initialisation, exit, fork                                                */

static void fork_prepare(void)
{
    reg_tls.guard |= 2; /* nothing recorded between fork's handlers */
}

static void fork_parent(void)
{
    reg_tls.guard &= (uint8_t)~2u;
}

static void fork_child(void)
{
    struct reg_thread *t = &reg_tls;
    int saved = errno;
    t->guard = 3;
    REG_FENCE();
    /* Our copies of the parent's mappings: drop them (the parent's stay). */
    release_chunk(t);
    t->seq = 0;
    t->tid = 0;
    t->kept_n = 0;
    t->exit_rounds = 0;
    t->stopped = 0;
    contend_region_header *old = __atomic_exchange_n(&reg_hdr, NULL, __ATOMIC_ACQ_REL);
    if (old)
        contend_raw_munmap(old, CONTEND_REGION_HEADER_SIZE);
    struct stat st;
    if (R.fd >= 0 && fstat(R.fd, &st) == 0 && st.st_dev == R.dev && st.st_ino == R.ino)
        close(R.fd);
    R.fd = -1;
    R.forked = 1;
    __atomic_store_n(&reg_wait_gave_up, 0, __ATOMIC_RELAXED);
    /* Every site is defined again in the child's own file. */
    __atomic_add_fetch(&reg_generation, 1u, __ATOMIC_RELAXED);
    set_state(ST_NONE);
    errno = saved;
    REG_FENCE();
    t->guard = 0;
}

__attribute__((constructor)) static void regions_constructor(void)
{
    struct reg_thread *t = &reg_tls;
    uint8_t saved = t->guard;
    t->guard = 1;
    int err = errno;
    parse_config();
    if (R.enabled) {
        if (!R.key_ok)
            R.key_ok = pthread_key_create(&R.key, thread_exit) == 0;
        if (!R.atfork_done)
            R.atfork_done = pthread_atfork(fork_prepare, fork_parent, fork_child) == 0;
        if (R.functions)
            __atomic_store_n(&reg_hooks, 1, __ATOMIC_RELEASE);
    }
    errno = err;
    t->guard = saved;
}

__attribute__((destructor)) static void regions_destructor(void)
{
    if (!__atomic_load_n(&reg_recording, __ATOMIC_ACQUIRE))
        return;
    contend_region_header *h = __atomic_load_n(&reg_hdr, __ATOMIC_ACQUIRE);
    if (!h)
        return;
    int err = errno;
    calibrate(&h->end);
    if (__atomic_load_n(&reg_wait_gave_up, __ATOMIC_SEQ_CST))
        __atomic_fetch_or(&h->flags, (uint64_t)CONTEND_REGION_FLAG_START_LOST, __ATOMIC_RELAXED);
    __atomic_fetch_or(&h->flags, (uint64_t)CONTEND_REGION_FLAG_FINISHED, __ATOMIC_RELEASE);
    errno = err;
    /* Nothing is unmapped: other threads may still be recording. */
}
