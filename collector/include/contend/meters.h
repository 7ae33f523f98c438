/*
 * contend meters blackboard, layout version 1.
 *
 * The one definition of the shared-memory region `contend meters` (the
 * meter daemon) publishes its meters in (`/dev/shm/contend-meters`, or the
 * name given with --blackboard), after the RCRdaemon blackboard of Fowler
 * et al., "Adaptive Threading Using Counter-Based Performance
 * Introspection", RENCI 2011. The Rust module `contend_meters::layout`
 * mirrors it constant for constant (crates/contend-meters/tests/it/
 * layout.rs compiles a program with this header and compares every offset
 * and size); the prose specification is docs/meters.md.
 *
 * No library to link: include this header and call the inline functions.
 * They never block the daemon and never allocate; every function returns
 * 0 (or a slot number, or a state) on success and -1 with errno set on
 * failure, and changes nothing else of the caller's state.
 *
 *   struct contend_meters bb;
 *   if (contend_meters_open(&bb, NULL, 0) == 0) {      // default name
 *       int slot = contend_meters_find(&bb, "memory_latency",
 *                                      CONTEND_SCOPE_MACHINE, 0);
 *       struct contend_meter_value v;
 *       if (slot >= 0 && contend_meters_read(&bb, slot, &v) == 0
 *           && v.trigger_state == CONTEND_TRIGGER_HIGH)
 *           ... memory is saturated: park a worker ...
 *       contend_meters_close(&bb);
 *   }
 *
 * Rules: little-endian, naturally aligned; every field the daemon changes
 * after creation is a whole 4- or 8-byte word, accessed atomically. Each
 * meter slot and each application slot has a seqlock sequence word: odd
 * while its one writer changes the slot; a reader copies the slot between
 * two equal, even reads of it.
 */
#ifndef CONTEND_METERS_H
#define CONTEND_METERS_H

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CONTEND_METERS_MAGIC "CNTDMETR" /* 8 bytes, no NUL stored */
#define CONTEND_METERS_VERSION 1u
#define CONTEND_METERS_ENDIAN_CHECK 0x01020304u
#define CONTEND_METERS_HEADER_SIZE 512u
#define CONTEND_METERS_SLOT_SIZE 256u
#define CONTEND_METERS_APP_SLOT_SIZE 128u
#define CONTEND_METERS_DEFAULT_NAME "contend-meters"

/* Header flags. */
#define CONTEND_METERS_FLAG_CLOSED 1u /* the daemon stopped; name removed */

/* Meter slot flags. */
#define CONTEND_METER_FLAG_VALUE 1u     /* the slot holds a value          */
#define CONTEND_METER_FLAG_ENDED 2u     /* its source (process) ended      */
#define CONTEND_METER_FLAG_ESTIMATED 4u /* estimated (calibration curve)   */

/* Scope kinds (contend_meter_slot.scope). */
#define CONTEND_SCOPE_MACHINE 0u
#define CONTEND_SCOPE_NODE 1u    /* scope_id: NUMA node                  */
#define CONTEND_SCOPE_CPU 2u     /* scope_id: CPU                        */
#define CONTEND_SCOPE_PROCESS 3u /* scope_id: pid                        */
#define CONTEND_SCOPE_LOCK 4u    /* scope_id: pid, object: lock address  */

/* Trigger states (hysteresis: docs/meters.md, "Triggers"). */
#define CONTEND_TRIGGER_NONE 0u  /* no trigger levels                     */
#define CONTEND_TRIGGER_CLEAR 1u /* below high since last at/below low    */
#define CONTEND_TRIGGER_HIGH 2u  /* reached high, not yet back to low     */

struct contend_meters_header {
    char magic[8];            /*   0 */
    uint32_t version;         /*   8 */
    uint32_t header_size;     /*  12 */
    uint32_t endian_check;    /*  16 */
    uint32_t meter_slot_size; /*  20 */
    uint32_t meter_slots;     /*  24 */
    uint32_t app_slot_size;   /*  28 */
    uint32_t app_slots;       /*  32 */
    uint32_t flags;           /*  36 atomic */
    uint64_t meter_table;     /*  40 offset of meter slot 0 */
    uint64_t app_table;       /*  48 offset of application slot 0 */
    uint64_t writer_pid;      /*  56 */
    uint64_t generation;      /*  64 CLOCK_REALTIME ns at creation */
    uint64_t interval_ns;     /*  72 */
    uint64_t heartbeat_ns;    /*  80 CLOCK_MONOTONIC of the last tick, atomic */
    uint32_t meters_used;     /*  88 slots 0..n-1 published, atomic */
    uint32_t reserved0;       /*  92 */
    uint64_t window_ns;       /*  96 short-term window */
    char host[64];            /* 104 */
    uint8_t reserved[344];    /* 168 .. 512 */
};

struct contend_meter_slot {
    uint64_t seq;             /*   0 seqlock */
    char name[32];            /*   8 "memory_latency" */
    char unit[16];            /*  40 "ns", "bytes/s" */
    uint32_t scope;           /*  56 CONTEND_SCOPE_* */
    uint32_t scope_id;        /*  60 */
    uint64_t object;          /*  64 lock address (lock scope) */
    char label[32];           /*  72 process command, lock name */
    uint32_t trigger_state;   /* 104 CONTEND_TRIGGER_* */
    uint32_t flags;           /* 108 CONTEND_METER_FLAG_* */
    double value;             /* 112 last value */
    double avg;               /* 120 short-term average */
    double min;               /* 128 short-term minimum */
    double max;               /* 136 short-term maximum */
    double high;              /* 144 high trigger level (NaN: none) */
    double low;               /* 152 low trigger level (NaN: none) */
    uint64_t updates;         /* 160 values published */
    uint64_t trigger_changes; /* 168 */
    uint64_t time_ns;         /* 176 CLOCK_MONOTONIC of the value */
    uint64_t window_samples;  /* 184 */
    uint8_t reserved[64];     /* 192 .. 256 */
};

struct contend_meters_app_slot {
    uint64_t seq;             /*   0 seqlock */
    uint64_t pid;             /*   8 owner (0: free; claimed by CAS) */
    char phase[48];           /*  16 current phase name */
    uint32_t threads_running; /*  64 */
    uint32_t threads_waiting; /*  68 */
    uint64_t time_ns;         /*  72 CLOCK_MONOTONIC of the publication */
    uint64_t updates;         /*  80 */
    uint8_t reserved[40];     /*  88 .. 128 */
};

_Static_assert(sizeof(struct contend_meters_header) == CONTEND_METERS_HEADER_SIZE,
               "header size");
_Static_assert(sizeof(struct contend_meter_slot) == CONTEND_METERS_SLOT_SIZE, "slot size");
_Static_assert(sizeof(struct contend_meters_app_slot) == CONTEND_METERS_APP_SLOT_SIZE,
               "application slot size");

/* A consistent copy of one meter's values. */
struct contend_meter_value {
    double value, avg, min, max, high, low;
    uint64_t updates, trigger_changes, time_ns, window_samples;
    uint32_t trigger_state, flags;
};

/* A mapped blackboard. */
struct contend_meters {
    unsigned char *base;
    size_t size;
    int writable;
    char path[256];
};

/* Path of a blackboard name: no '/' → /dev/shm/NAME, else the path. */
static inline int contend_meters_path(const char *name, char *out, size_t len)
{
    int n;
    if (name == NULL)
        name = CONTEND_METERS_DEFAULT_NAME;
    n = strchr(name, '/') ? snprintf(out, len, "%s", name)
                          : snprintf(out, len, "/dev/shm/%s", name);
    if (n < 0 || (size_t)n >= len) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

/*
 * Maps the blackboard `name` (NULL: the default), read-only or, with
 * `writable`, read-write (to publish application state). Errors (errno):
 * ENOENT no daemon under that name; EPROTO not a blackboard, another
 * layout version or byte order; others from open/fstat/mmap.
 */
static inline int contend_meters_open(struct contend_meters *b, const char *name, int writable)
{
    struct stat st;
    int fd, saved;
    const struct contend_meters_header *h;
    memset(b, 0, sizeof *b);
    if (contend_meters_path(name, b->path, sizeof b->path) != 0)
        return -1;
    fd = open(b->path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0) {
        saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    if ((size_t)st.st_size < CONTEND_METERS_HEADER_SIZE) {
        close(fd);
        errno = EPROTO;
        return -1;
    }
    b->size = (size_t)st.st_size;
    b->base = mmap(NULL, b->size, PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED, fd, 0);
    saved = errno;
    close(fd);
    if (b->base == MAP_FAILED) {
        b->base = NULL;
        errno = saved;
        return -1;
    }
    b->writable = writable;
    h = (const struct contend_meters_header *)b->base;
    if (memcmp(h->magic, CONTEND_METERS_MAGIC, 8) != 0 || h->version != CONTEND_METERS_VERSION ||
        h->endian_check != CONTEND_METERS_ENDIAN_CHECK ||
        h->meter_slot_size != CONTEND_METERS_SLOT_SIZE ||
        h->app_slot_size != CONTEND_METERS_APP_SLOT_SIZE ||
        h->meter_table != CONTEND_METERS_HEADER_SIZE ||
        h->app_table + (uint64_t)h->app_slots * CONTEND_METERS_APP_SLOT_SIZE > b->size ||
        h->meter_table + (uint64_t)h->meter_slots * CONTEND_METERS_SLOT_SIZE > b->size) {
        munmap(b->base, b->size);
        b->base = NULL;
        errno = EPROTO;
        return -1;
    }
    return 0;
}

/* Unmaps it. */
static inline void contend_meters_close(struct contend_meters *b)
{
    int saved = errno;
    if (b->base != NULL)
        munmap(b->base, b->size);
    b->base = NULL;
    errno = saved;
}

static inline const struct contend_meters_header *contend_meters_header_of(
    const struct contend_meters *b)
{
    return (const struct contend_meters_header *)b->base;
}

/* Meter slots published (0..n-1). */
static inline uint32_t contend_meters_count(const struct contend_meters *b)
{
    const struct contend_meters_header *h = contend_meters_header_of(b);
    uint32_t n = atomic_load_explicit((_Atomic uint32_t *)&h->meters_used, memory_order_acquire);
    return n < h->meter_slots ? n : h->meter_slots;
}

/* 1 when the daemon stopped (readers should open the name again). */
static inline int contend_meters_closed(const struct contend_meters *b)
{
    const struct contend_meters_header *h = contend_meters_header_of(b);
    return (atomic_load_explicit((_Atomic uint32_t *)&h->flags, memory_order_acquire) &
            CONTEND_METERS_FLAG_CLOSED) != 0;
}

static inline struct contend_meter_slot *contend_meters_slot(const struct contend_meters *b,
                                                             uint32_t slot)
{
    return (struct contend_meter_slot *)(b->base + CONTEND_METERS_HEADER_SIZE +
                                         (size_t)slot * CONTEND_METERS_SLOT_SIZE);
}

/*
 * The slot of meter `name` with this scope, or -1 (errno ENOENT). Names,
 * units and scopes of a slot do not change while it is in use.
 */
static inline int contend_meters_find(const struct contend_meters *b, const char *name,
                                      uint32_t scope, uint32_t scope_id)
{
    uint32_t i, n = contend_meters_count(b);
    for (i = 0; i < n; i++) {
        const struct contend_meter_slot *s = contend_meters_slot(b, i);
        if (strncmp(s->name, name, sizeof s->name) == 0 && s->scope == scope &&
            s->scope_id == scope_id)
            return (int)i;
    }
    errno = ENOENT;
    return -1;
}

static inline uint64_t contend_meters_load64_(const void *p)
{
    return atomic_load_explicit((_Atomic uint64_t *)p, memory_order_relaxed);
}

static inline uint32_t contend_meters_load32_(const void *p)
{
    return atomic_load_explicit((_Atomic uint32_t *)p, memory_order_relaxed);
}

static inline double contend_meters_loadf_(const void *p)
{
    uint64_t u = contend_meters_load64_(p);
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/*
 * A consistent copy of meter `slot` (seqlock; never blocks the daemon).
 * Errors: EINVAL slot not published; ENODATA no value yet; EAGAIN the
 * writer kept changing it for 100000 tries (the daemon, publishing a slot
 * once an interval, never does).
 */
static inline int contend_meters_read(const struct contend_meters *b, int slot,
                                      struct contend_meter_value *out)
{
    const struct contend_meter_slot *s;
    int tries;
    if (slot < 0 || (uint32_t)slot >= contend_meters_count(b)) {
        errno = EINVAL;
        return -1;
    }
    s = contend_meters_slot(b, (uint32_t)slot);
    for (tries = 0; tries < 100000; tries++) {
        uint64_t s1 = atomic_load_explicit((_Atomic uint64_t *)&s->seq, memory_order_acquire);
        uint64_t s2;
        if (s1 & 1u)
            continue;
        out->value = contend_meters_loadf_(&s->value);
        out->avg = contend_meters_loadf_(&s->avg);
        out->min = contend_meters_loadf_(&s->min);
        out->max = contend_meters_loadf_(&s->max);
        out->high = contend_meters_loadf_(&s->high);
        out->low = contend_meters_loadf_(&s->low);
        out->updates = contend_meters_load64_(&s->updates);
        out->trigger_changes = contend_meters_load64_(&s->trigger_changes);
        out->time_ns = contend_meters_load64_(&s->time_ns);
        out->window_samples = contend_meters_load64_(&s->window_samples);
        out->trigger_state = contend_meters_load32_(&s->trigger_state);
        out->flags = contend_meters_load32_(&s->flags);
        atomic_thread_fence(memory_order_acquire);
        s2 = atomic_load_explicit((_Atomic uint64_t *)&s->seq, memory_order_relaxed);
        if (s1 == s2) {
            if (!(out->flags & CONTEND_METER_FLAG_VALUE)) {
                errno = ENODATA;
                return -1;
            }
            return 0;
        }
    }
    errno = EAGAIN;
    return -1;
}

/*
 * Claims an application slot for this process (writable mapping only);
 * returns its number, or -1 (EROFS read-only mapping, ENOSPC all taken).
 */
static inline int contend_meters_claim_app(const struct contend_meters *b)
{
    const struct contend_meters_header *h = contend_meters_header_of(b);
    uint32_t i;
    uint64_t me = (uint64_t)getpid();
    if (!b->writable) {
        errno = EROFS;
        return -1;
    }
    for (i = 0; i < h->app_slots; i++) {
        struct contend_meters_app_slot *a =
            (struct contend_meters_app_slot *)(b->base + h->app_table +
                                               (size_t)i * CONTEND_METERS_APP_SLOT_SIZE);
        uint64_t free_pid = 0;
        if (atomic_compare_exchange_strong((_Atomic uint64_t *)&a->pid, &free_pid, me))
            return (int)i;
    }
    errno = ENOSPC;
    return -1;
}

/*
 * Publishes this process's state in its claimed slot (the seed's
 * "application code optionally writes a summary of application state"):
 * the current phase name (truncated to 47 bytes) and the threads running
 * and waiting. One writer per slot: call it from one thread at a time.
 */
static inline void contend_meters_publish_app(const struct contend_meters *b, int slot,
                                              const char *phase, uint32_t running,
                                              uint32_t waiting)
{
    const struct contend_meters_header *h = contend_meters_header_of(b);
    struct contend_meters_app_slot *a =
        (struct contend_meters_app_slot *)(b->base + h->app_table +
                                           (size_t)slot * CONTEND_METERS_APP_SLOT_SIZE);
    char buf[48];
    uint64_t words[6], s;
    struct timespec ts;
    size_t i;
    int saved = errno;
    memset(buf, 0, sizeof buf);
    strncpy(buf, phase ? phase : "", sizeof buf - 1);
    memcpy(words, buf, sizeof buf);
    clock_gettime(CLOCK_MONOTONIC, &ts);
    s = atomic_load_explicit((_Atomic uint64_t *)&a->seq, memory_order_relaxed);
    atomic_store_explicit((_Atomic uint64_t *)&a->seq, s | 1u, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    for (i = 0; i < 6; i++)
        atomic_store_explicit((_Atomic uint64_t *)(void *)(a->phase + 8 * i), words[i],
                              memory_order_relaxed);
    atomic_store_explicit((_Atomic uint32_t *)&a->threads_running, running, memory_order_relaxed);
    atomic_store_explicit((_Atomic uint32_t *)&a->threads_waiting, waiting, memory_order_relaxed);
    atomic_store_explicit((_Atomic uint64_t *)&a->time_ns,
                          (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec,
                          memory_order_relaxed);
    atomic_store_explicit((_Atomic uint64_t *)&a->updates,
                          contend_meters_load64_(&a->updates) + 1u, memory_order_relaxed);
    atomic_store_explicit((_Atomic uint64_t *)&a->seq, (s | 1u) + 1u, memory_order_release);
    errno = saved;
}

#endif /* CONTEND_METERS_H */
