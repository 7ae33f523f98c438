/*
 * contend MPI recorder: the trace file and its per-thread chunks (see
 * mpi_rec.h). No stdio, no allocation on the recording path; a failure
 * stops recording (on the thread, or for the process) and is said once on
 * stderr, it never stops the program.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mpi_rec.h"
#include "contend/raw_mm.h"
#include "contend/zero_fill.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

CM_HIDDEN _Thread_local struct cm_thread cm_tls __attribute__((tls_model("initial-exec")));
CM_HIDDEN int cm_recording;
CM_HIDDEN uint64_t cm_clock_skew;
CM_HIDDEN int cm_clock_tsc;
CM_HIDDEN uint64_t cm_tsc_hz;

/* The trace clock is chosen once, before the program's first MPI call
 * (MPI_Init's own timestamps are on it): the launcher's choice, as the
 * lock collector makes it. */
__attribute__((constructor)) static void clock_setup(void)
{
    /* only with the launcher's frequency: a run shorter than 1 ms has too
     * few calibration points for a slope of its own */
    cm_clock_tsc = contend_clock_tsc_wanted(getenv("CONTEND_CLOCK"), getenv("CONTEND_TSC_HZ"),
                                            &cm_tsc_hz) &&
                   cm_tsc_hz > 0;
}

void cm_clock_point(uint64_t *ticks, uint64_t *mono, uint64_t *real)
{
    contend_clock_sample(cm_clock_tsc, ticks, mono, real);
    *mono += cm_clock_skew;
    if (!cm_clock_tsc)
        *ticks = *mono;
}

static struct {
    char dir[PATH_MAX];
    int dir_done;
    char path[PATH_MAX];
    int fd;
    dev_t dev;
    ino_t ino;
    contend_mpi_header *hdr;
    uint32_t chunk_size;
    pthread_key_t key;
    int key_ok;
} T = {.fd = -1};


static void say_errno(const char *what, const char *path, int err)
{
    const char *desc = strerrordesc_np(err);
    char msg[PATH_MAX + 64];
    char *end = msg + sizeof msg;
    char *p = contend_append(msg, end, path);
    p = contend_append(p, end, ": ");
    contend_append(p, end, desc ? desc : "error");
    contend_say(what, msg, "; recording no MPI calls, the program runs unchanged");
}

const char *cm_config_dir(void)
{
    if (T.dir_done)
        return T.dir[0] ? T.dir : NULL;
    T.dir_done = 1;
    const char *dir = getenv("CONTEND_DIR");
    if (!dir || !*dir)
        return NULL;
    char *end = T.dir + sizeof T.dir;
    char *p = T.dir;
    if (dir[0] != '/') {
        if (!getcwd(T.dir, sizeof T.dir - 2)) {
            T.dir[0] = 0;
            return NULL;
        }
        p = contend_append(T.dir + strlen(T.dir), end, "/");
    }
    p = contend_append(p, end, dir);
    if ((size_t)(p - T.dir) > sizeof T.dir - 64) {
        contend_say("CONTEND_DIR is too long: ", dir, "; recording no MPI calls");
        T.dir[0] = 0;
        return NULL;
    }
    return T.dir;
}

static uint32_t chunk_size_from_env(void)
{
    uint32_t size = CONTEND_MPI_DEFAULT_CHUNK_SIZE;
    const char *kb = getenv("CONTEND_MPI_CHUNK_KB");
    if (kb && *kb) {
        char *e;
        unsigned long v = strtoul(kb, &e, 10);
        if (*e == 0 && v >= 4 && v <= 65536 && (v & (v - 1)) == 0)
            size = (uint32_t)(v * 1024u);
        else
            contend_say("ignoring bad CONTEND_MPI_CHUNK_KB=", kb, NULL);
    }
    long page = sysconf(_SC_PAGESIZE);
    if (page > 0 && size < (uint64_t)page)
        size = (uint32_t)page;
    return size;
}

/* ------------------------------------------------------------------------ */
/* Memory-map snapshots                                                      */

/*
 * `contend record --mpi` preloads only this library, so it writes the
 * snapshots of /proc/self/maps that symbolise call sites itself, in the
 * lock collector's format (docs/trace-format.md, maps/<pid>.maps): a line
 * "# snapshot <n> <monotonic_ns>" and the maps text, appended. One at
 * MPI_Init (the program and MPI's components are loaded by then) and one
 * at MPI_Finalize. If the lock collector is loaded too it owns the file.
 */
static char maps_path[PATH_MAX];
static uint64_t maps_count;
static int maps_busy;

static void maps_open(const char *dir)
{
    char path[PATH_MAX];
    char *end = path + sizeof path;
    contend_append(contend_append(path, end, dir), end, "/maps");
    if (mkdir(path, 0777) != 0 && errno != EEXIST)
        return;
    uint64_t pid = (uint64_t)getpid();
    for (unsigned n = 0; n < 1000; n++) {
        char *p = contend_append(contend_append(path, end, dir), end, "/maps/");
        p = contend_append_u64(p, end, pid);
        if (n) {
            p = contend_append(p, end, ".");
            p = contend_append_u64(p, end, n);
        }
        contend_append(p, end, ".maps");
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd >= 0) {
            close(fd);
            memcpy(maps_path, path, sizeof path);
            return;
        }
        if (errno != EEXIST)
            return;
    }
}

void cm_maps_snapshot(void)
{
    if (!maps_path[0] || __atomic_exchange_n(&maps_busy, 1, __ATOMIC_ACQUIRE))
        return;
    int saved = errno;
    int out = open(maps_path, O_WRONLY | O_APPEND | O_CLOEXEC);
    int in = out >= 0 ? open("/proc/self/maps", O_RDONLY | O_CLOEXEC) : -1;
    if (in >= 0) {
        char buf[8192];
        char *end = buf + 128;
        char *p = contend_append(buf, end, "# snapshot ");
        p = contend_append_u64(p, end, maps_count++);
        p = contend_append(p, end, " ");
        p = contend_append_u64(p, end, cm_now_ns());
        p = contend_append(p, end, "\n");
        ssize_t ignored = write(out, buf, (size_t)(p - buf));
        (void)ignored;
        for (;;) {
            ssize_t n = read(in, buf, sizeof buf);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            if (write(out, buf, (size_t)n) != n)
                break;
        }
        close(in);
    }
    if (out >= 0)
        close(out);
    errno = saved;
    __atomic_store_n(&maps_busy, 0, __ATOMIC_RELEASE);
}

static void thread_exit(void *value);
static void fork_child(void) { __atomic_store_n(&cm_recording, 0, __ATOMIC_RELEASE); }

int cm_trace_open(const struct cm_rank_info *info)
{
    const char *dir = cm_config_dir();
    if (!dir)
        return -1;
    char path[PATH_MAX];
    char *end = path + sizeof path;
    contend_append(path, end, dir);
    if (mkdir(path, 0777) != 0 && errno != EEXIST) {
        say_errno("cannot create directory ", path, errno);
        return -1;
    }
    contend_append(contend_append(path, end, dir), end, "/mpi");
    if (mkdir(path, 0777) != 0 && errno != EEXIST) {
        say_errno("cannot create directory ", path, errno);
        return -1;
    }
    char *p = contend_append(path + strlen(path), end, "/rank-");
    p = contend_append_u64(p, end, info->rank);
    contend_append(p, end, ".cmpi");
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        say_errno("cannot create ", path, errno);
        return -1;
    }
    char zero = 0;
    void *map = MAP_FAILED;
    struct stat st;
    if (pwrite(fd, &zero, 1, CONTEND_MPI_HEADER_SIZE - 1) != 1 || fstat(fd, &st) != 0 ||
        (map = contend_raw_mmap(NULL, CONTEND_MPI_HEADER_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) ==
            MAP_FAILED ||
        contend_raw_madvise(map, CONTEND_MPI_HEADER_SIZE, MADV_POPULATE_WRITE) != 0) {
        int err = errno;
        if (err == EINVAL && map != MAP_FAILED)
            goto populated; /* kernel before 5.14: no populate */
        if (map != MAP_FAILED)
            contend_raw_munmap(map, CONTEND_MPI_HEADER_SIZE);
        unlink(path);
        close(fd);
        say_errno("cannot set up ", path, err);
        return -1;
    }
populated:;
    contend_mpi_header *h = map;
    T.chunk_size = chunk_size_from_env();
    h->version = CONTEND_MPI_VERSION;
    h->header_size = CONTEND_MPI_HEADER_SIZE;
    h->endian_check = CONTEND_MPI_ENDIAN_CHECK;
    h->pointer_size = (uint16_t)sizeof(void *);
    h->implementation = info->implementation;
    h->chunk_size = T.chunk_size;
    h->chunks_claimed = 0;
    h->pid = (uint32_t)getpid();
    h->world_rank = info->rank;
    h->world_size = info->size;
    h->thread_level = info->thread_level;
    h->flags = 0;
    h->data_offset = CONTEND_MPI_HEADER_SIZE;
    h->clock = (uint16_t)(cm_clock_tsc ? CONTEND_MPI_CLOCK_TSC : CONTEND_MPI_CLOCK_MONOTONIC);
    h->ticks_per_second = cm_clock_tsc ? cm_tsc_hz : 1000000000u;
    cm_clock_point(&h->start_ticks, &h->start_monotonic_ns, &h->start_realtime_ns);
    contend_append(h->host, h->host + sizeof h->host, info->host ? info->host : "");
    contend_append(h->library, h->library + sizeof h->library, info->library ? info->library : "");
    ssize_t len = readlink("/proc/self/exe", h->exe_path, sizeof h->exe_path - 1);
    h->exe_path[len > 0 ? len : 0] = 0;
    __atomic_thread_fence(__ATOMIC_RELEASE);
    memcpy(h->magic, CONTEND_MPI_MAGIC, 8);

    memcpy(T.path, path, sizeof path);
    T.fd = fd;
    T.dev = st.st_dev;
    T.ino = st.st_ino;
    T.hdr = h;
    if (!T.key_ok && pthread_key_create(&T.key, thread_exit) == 0)
        T.key_ok = 1;
    static int atfork_done;
    if (!atfork_done) {
        atfork_done = 1;
        pthread_atfork(NULL, NULL, fork_child);
    }
    const char *preload = getenv("LD_PRELOAD");
    if (!preload || !strstr(preload, "libcontend_lock"))
        maps_open(dir); /* else the lock collector writes them */
    cm_maps_snapshot();
    __atomic_store_n(&cm_recording, 1, __ATOMIC_RELEASE);
    return 0;
}

void cm_set_flag(uint64_t flag)
{
    contend_mpi_header *h = __atomic_load_n(&T.hdr, __ATOMIC_ACQUIRE);
    if (h && !(__atomic_load_n(&h->flags, __ATOMIC_RELAXED) & flag))
        __atomic_fetch_or(&h->flags, flag, __ATOMIC_RELEASE);
}

void cm_set_offset(int final, int64_t offset, uint64_t at, uint64_t rtt)
{
    contend_mpi_header *h = T.hdr;
    if (!h)
        return;
    if (final) {
        h->offset_final_ns = offset;
        h->offset_final_at_ns = at;
        h->offset_final_rtt_ns = rtt;
        cm_set_flag(CONTEND_MPI_FLAG_FINAL_OFFSET);
    } else {
        h->offset_init_ns = offset;
        h->offset_init_at_ns = at;
        h->offset_init_rtt_ns = rtt;
    }
}

void cm_clock_end(void)
{
    contend_mpi_header *h = T.hdr;
    if (!h)
        return;
    cm_clock_point(&h->end_ticks, &h->end_monotonic_ns, NULL);
    cm_set_flag(CONTEND_MPI_FLAG_END_CLOCK);
}

void cm_stop(void)
{
    __atomic_store_n(&cm_recording, 0, __ATOMIC_RELEASE);
}

/* ------------------------------------------------------------------------ */
/* Chunks                                                                    */

static void release_chunk(struct cm_thread *ts)
{
    if (ts->chunk)
        contend_raw_munmap(ts->chunk, T.chunk_size);
    ts->chunk = ts->cur = ts->end = NULL;
}

static void thread_exit(void *value)
{
    (void)value;
    struct cm_thread *ts = &cm_tls;
    release_chunk(ts);
    ts->key_set = 0;
    if (ts->exit_rounds < 255)
        ts->exit_rounds++;
}

/* The file descriptor, reopened by path if the program closed ours. */
static int trace_fd(int *tmp)
{
    struct stat st;
    *tmp = 0;
    if (T.fd >= 0 && fstat(T.fd, &st) == 0 && st.st_dev == T.dev && st.st_ino == T.ino)
        return T.fd;
    int fd = open(T.path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0 || st.st_dev != T.dev || st.st_ino != T.ino) {
        close(fd);
        return -1;
    }
    *tmp = 1;
    return fd;
}

/* A fresh chunk for the thread; 0 on failure (recording stops on it). */
static int claim_chunk(struct cm_thread *ts)
{
    release_chunk(ts);
    if (ts->exit_rounds >= PTHREAD_DESTRUCTOR_ITERATIONS)
        return 0;
    contend_mpi_header *h = T.hdr;
    uint64_t size = T.chunk_size;
    uint32_t idx = __atomic_fetch_add(&h->chunks_claimed, 1u, __ATOMIC_RELAXED);
    uint64_t off = CONTEND_MPI_HEADER_SIZE + (uint64_t)idx * size;
    int tmp;
    int fd = trace_fd(&tmp);
    if (fd < 0)
        return 0;
    /* the chunk written with zeros, then mapped (contend/zero_fill.h) */
    void *m = MAP_FAILED;
    if (contend_write_zeros(fd, off, size) == 0)
        m = contend_raw_mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)off);
    if (tmp)
        close(fd);
    if (m == MAP_FAILED)
        return 0;
    /* fault the whole chunk in now: a store to an unbacked page of a full
     * disk would raise SIGBUS in the program */
    if (contend_raw_madvise(m, size, MADV_POPULATE_WRITE) != 0 && errno != EINVAL) {
        contend_raw_munmap(m, size);
        return 0;
    }
    if (!ts->tid)
        ts->tid = (uint32_t)syscall(SYS_gettid);
    contend_mpi_chunk_header *ch = m;
    ch->tid = ts->tid;
    ch->sequence = ts->seq++;
    ch->flags = 0;
    uint64_t base, mono;
    contend_clock_pair_sample(cm_clock_tsc, &base, &mono);
    mono += cm_clock_skew;
    ch->base_ticks = cm_clock_tsc ? base : mono;
    ch->monotonic_ns = mono;
    __atomic_store_n(&ch->magic, CONTEND_MPI_CHUNK_MAGIC, __ATOMIC_RELEASE);
    ts->chunk = m;
    ts->cur = (uint64_t *)m + CONTEND_MPI_CHUNK_HEADER_SIZE / 8;
    ts->end = (uint64_t *)m + size / 8;
    ts->last = ch->base_ticks;
    ts->last_site = 0; /* every chunk names its first site */
    if (!ts->key_set && T.key_ok && pthread_setspecific(T.key, ts) == 0)
        ts->key_set = 1;
    return 1;
}

/* The slow path of cm_room: a new chunk (or none: recording stops on
 * the thread). */
int cm_room_slow(struct cm_thread *ts, uint32_t words)
{
    if (ts->disabled)
        return 0;
    int saved = errno;
    int ok = words + CONTEND_MPI_CHUNK_HEADER_SIZE / 8 <= T.chunk_size / 8 && claim_chunk(ts);
    errno = saved;
    if (!ok) {
        release_chunk(ts);
        ts->disabled = 1;
        cm_set_flag(CONTEND_MPI_FLAG_CHUNKS_FAILED);
    }
    return ok;
}
