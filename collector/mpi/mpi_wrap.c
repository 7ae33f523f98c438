/*
 * contend MPI recorder: the PMPI wrappers (C entry points) and the
 * recording core they share with the Fortran entry points.
 *
 * Compiled once per MPI implementation with that implementation's mpi.h
 * (CONTEND_MPI_OMPI or CONTEND_MPI_MPICH). The library is NOT linked
 * against libmpi: every PMPI_* function is looked up at first use (see
 * cm_resolve), so the library can be preloaded into every process of a
 * launch (mpirun, shells, python) and finds libmpi even when it was
 * loaded late or without global visibility (mpi4py). Open MPI's
 * predefined handles (MPI_COMM_WORLD, MPI_BYTE, ...) are addresses of
 * libmpi data and are looked up the same way.
 *
 * What is recorded for each call (format: mpi_trace_format.h): ENTER
 * before the real call with the posting information (communicator id, peer
 * as a world rank, tag, bytes), the COMPLETION records of receives and
 * requests the call finished, COMM records of communicators it created,
 * and EXIT after it returned. A call that never returns leaves its ENTER:
 * the reader sees where the rank died.
 *
 * Never changing the program: the real function is called exactly once
 * with the caller's arguments, except that a local status replaces
 * MPI_STATUS(ES)_IGNORE so receives are known (nothing is written back
 * the caller did not ask for); the return value and errno are the real
 * call's; no error handler is touched; no communication is added on one
 * node (communicator ids are derived, not agreed on; see comm_child_id),
 * and across nodes only the clock-offset ping-pong at MPI_Init and
 * MPI_Finalize (on a private duplicate of MPI_COMM_WORLD).
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <unwind.h>

#include "mpi_core.h"

#if defined(CONTEND_MPI_OMPI)
#define CM_IMPL CONTEND_MPI_IMPL_OPENMPI
#define CM_IMPL_NAME "Open MPI"
#define CM_LIB_NAME "libmpi.so"
static struct {
    void *comm_world, *comm_self, *comm_null, *request_null, *byte, *datatype_null;
    void *message_no_proc;
} S;
#define W_MESSAGE_NO_PROC ((MPI_Message)S.message_no_proc)
#define W_COMM_WORLD ((MPI_Comm)S.comm_world)
#define W_COMM_NULL ((MPI_Comm)S.comm_null)
#define W_COMM_SELF ((MPI_Comm)S.comm_self)
#define W_REQUEST_NULL ((MPI_Request)S.request_null)
#define W_BYTE ((MPI_Datatype)S.byte)
#define W_DATATYPE_NULL ((MPI_Datatype)S.datatype_null)
#define HKEY(h) ((uint64_t)(uintptr_t)(h))
static inline uint64_t status_bytes(const MPI_Status *s) { return (uint64_t)s->_ucount; }
static inline int status_cancelled(const MPI_Status *s) { return s->_cancelled != 0; }
#elif defined(CONTEND_MPI_MPICH)
#define CM_IMPL CONTEND_MPI_IMPL_MPICH
#define CM_IMPL_NAME "MPICH"
#define CM_LIB_NAME "libmpich.so"
#define W_COMM_WORLD MPI_COMM_WORLD
#define W_COMM_NULL MPI_COMM_NULL
#define W_COMM_SELF MPI_COMM_SELF
#define W_REQUEST_NULL MPI_REQUEST_NULL
#define W_BYTE MPI_BYTE
#define W_DATATYPE_NULL MPI_DATATYPE_NULL
#define W_MESSAGE_NO_PROC MPI_MESSAGE_NO_PROC
#define HKEY(h) ((uint64_t)(uint32_t)(h))
static inline uint64_t status_bytes(const MPI_Status *s)
{
    return ((uint64_t)((unsigned)s->count_hi_and_cancelled >> 1) << 32) | (unsigned)s->count_lo;
}
static inline int status_cancelled(const MPI_Status *s) { return s->count_hi_and_cancelled & 1; }
#else
#error "define CONTEND_MPI_OMPI or CONTEND_MPI_MPICH"
#endif

CM_HIDDEN struct cm_real cm_r;
CM_HIDDEN void *cm_f_status_ignore, *cm_f_statuses_ignore, *cm_f_in_place, *cm_f_bottom;

/* ------------------------------------------------------------------------ */
/* Finding the MPI library                                                   */

CM_HIDDEN int cm_resolved;   /* atomic: 0 no, 1 yes (mpi_core.h)        */
static int abi_ok;           /* the loaded MPI is the one we were built for */
static void *mpi_handle;     /* dlopen(RTLD_NOLOAD) handle, or NULL         */

static int find_lib(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    const char *name = info->dlpi_name;
    if (!name || !*name)
        return 0;
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    if (strncmp(base, CM_LIB_NAME, strlen(CM_LIB_NAME)) == 0 ||
        strncmp(base, "libmpi.so", 9) == 0) {
        void *h = dlopen(name, RTLD_NOLOAD | RTLD_LAZY);
        if (h && dlsym(h, "PMPI_Init")) {
            *(void **)data = h;
            return 1;
        }
        if (h)
            dlclose(h);
    }
    return 0;
}

/* Data symbols (Open MPI's predefined handles): the global scope first.
 * An executable linked against libmpi holds copy-relocated copies of the
 * ones it uses, and libmpi itself then uses those copies, not its own. */
static void *lookup_data(const char *name)
{
    void *p = dlsym(RTLD_DEFAULT, name);
    if (!p && mpi_handle)
        p = dlsym(mpi_handle, name);
    return p;
}

static void *lookup(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);
    if (!p && mpi_handle)
        p = dlsym(mpi_handle, name);
    return p;
}

/* The address ranges (executable segments) of the MPI libraries' Fortran
 * bindings: MPICH's (its mpif.h/mpi-module and mpi_f08 entry points call
 * the C MPI_* functions, so a call reaches the C wrappers from inside
 * libmpichfort) and Open MPI's mpi_f08 module (its procedures call
 * libmpi_mpifh's ompi_*_f, which mpi_fortran.c interposes). A call site
 * inside them is the binding, not the user's line: rec_enter then takes
 * the first frame above them (fortran_caller). Found once, in cm_resolve. */
#define FORT_RANGES 8
static struct {
    uintptr_t lo, hi;
} fort_ranges[FORT_RANGES];
static int n_fort_ranges;
static uintptr_t self_lo, self_hi; /* this library's executable segment */

static int find_fortran_bindings(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    const char *name = info->dlpi_name;
    if (!name || !*name)
        return 0;
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    int binding = strncmp(base, "libmpichfort", 12) == 0 ||
                  strncmp(base, "libmpi_usempif08", 16) == 0 ||
                  strncmp(base, "libmpi_usempi_ignore_tkr", 24) == 0 ||
                  strncmp(base, "libmpi_mpifh", 12) == 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if ((uintptr_t)find_fortran_bindings >= lo && (uintptr_t)find_fortran_bindings < hi) {
            self_lo = lo;
            self_hi = hi;
        } else if (binding && n_fort_ranges < FORT_RANGES) {
            fort_ranges[n_fort_ranges].lo = lo;
            fort_ranges[n_fort_ranges].hi = hi;
            n_fort_ranges++;
        }
    }
    return 0;
}

static int in_fortran_binding(uintptr_t a)
{
    for (int i = 0; i < n_fort_ranges; i++)
        if (a >= fort_ranges[i].lo && a < fort_ranges[i].hi)
            return 1;
    return 0;
}

struct caller_walk {
    int seen;         /* passed a frame inside a binding */
    uintptr_t found;  /* the first frame above it, outside it and us */
};

static _Unwind_Reason_Code caller_step(struct _Unwind_Context *ctx, void *arg)
{
    struct caller_walk *w = arg;
    uintptr_t ip = (uintptr_t)_Unwind_GetIP(ctx);
    if (!ip)
        return _URC_END_OF_STACK;
    int ours = ip >= self_lo && ip < self_hi;
    if (in_fortran_binding(ip)) {
        w->seen = 1;
    } else if (w->seen && !ours) {
        w->found = ip;
        return _URC_END_OF_STACK;
    }
    return _URC_NO_REASON;
}

/* The call site to record for a call from `site`: `site` itself, unless
 * it lies in a Fortran binding library, then the return address into the
 * binding's caller (the user's Fortran line), found by unwinding the
 * stack with the unwinder's tables (no frame pointers needed). This slow
 * path is taken only for calls that came through a binding. */
static uint64_t user_site(uint64_t site)
{
    if (CM_LIKELY(n_fort_ranges == 0 || !in_fortran_binding((uintptr_t)site)))
        return site;
    struct caller_walk w = {0, 0};
    _Unwind_Backtrace(caller_step, &w);
    return w.found ? (uint64_t)w.found : site;
}

void cm_resolve_slow(void)
{
    if (CM_LIKELY(__atomic_load_n(&cm_resolved, __ATOMIC_ACQUIRE)))
        return;
    int saved = errno;
    if (!dlsym(RTLD_NEXT, "PMPI_Init")) {
        /* libmpi not in the global scope (dlopen'ed RTLD_LOCAL, e.g. by
         * mpi4py): find it among the loaded objects */
        void *h = NULL;
        dl_iterate_phdr(find_lib, &h);
        mpi_handle = h;
    }
#define CM_REAL_FIELD(name) cm_r.name = (__typeof__(cm_r.name))lookup("PMPI_" #name);
#include "mpi_funcs.h"
#undef CM_REAL_FIELD
    dl_iterate_phdr(find_fortran_bindings, NULL);
    if (!cm_r.Init || !cm_r.Finalize || !cm_r.Send) {
        contend_say("cannot find the MPI library's PMPI functions (is the program an MPI program?)",
               NULL, NULL);
        abort();
    }
    int ompi = lookup_data("ompi_mpi_comm_world") != NULL;
#if defined(CONTEND_MPI_OMPI)
    S.comm_world = lookup_data("ompi_mpi_comm_world");
    S.comm_self = lookup_data("ompi_mpi_comm_self");
    S.comm_null = lookup_data("ompi_mpi_comm_null");
    S.request_null = lookup_data("ompi_request_null");
    S.byte = lookup_data("ompi_mpi_byte");
    S.datatype_null = lookup_data("ompi_mpi_datatype_null");
    S.message_no_proc = lookup_data("ompi_message_no_proc");
    cm_f_status_ignore = lookup_data("mpi_fortran_status_ignore_");
    cm_f_statuses_ignore = lookup_data("mpi_fortran_statuses_ignore_");
    cm_f_in_place = lookup_data("mpi_fortran_in_place_");
    cm_f_bottom = lookup_data("mpi_fortran_bottom_");
    abi_ok = ompi && S.comm_world && S.comm_self && S.comm_null && S.request_null && S.byte &&
             S.datatype_null;
#else
    abi_ok = !ompi;
#endif
    if (!abi_ok && cm_config_dir())
        contend_say("the program's MPI library is not ", CM_IMPL_NAME,
               ", which this recorder was built for; recording no MPI calls");
    errno = saved;
    __atomic_store_n(&cm_resolved, 1, __ATOMIC_RELEASE);
}

/* ------------------------------------------------------------------------ */
/* Small helpers                                                             */

static int32_t world_rank = -1, world_size;
static MPI_Group world_group;
static uint64_t next_request_id = 1; /* under req_lock */

static inline void spin_lock(int *l)
{
    while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(l, __ATOMIC_RELAXED))
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#else
            ;
#endif
}
static inline void spin_unlock(int *l) { __atomic_store_n(l, 0, __ATOMIC_RELEASE); }

static inline uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

#if defined(CONTEND_MPI_MPICH)
/* MPICH's builtin datatype handles carry their size: kind 01 in bits
 * 30-31, the size in bytes in bits 8-15 (MPI_INT is 0x4c000405, MPI_DOUBLE
 * 0x4c00080b; mpi.h), which is where PMPI_Type_size takes it from too.
 * Decoding the handle spares a call per posting (PMPI_Type_size checks
 * its arguments and takes the library's handle path). 1 once after_init
 * has checked the decoding against PMPI_Type_size. */
static int builtin_sizes;
#define BUILTIN_TYPE(t) (((uint32_t)(t) >> 30) == 1u)
#define BUILTIN_SIZE(t) (((uint32_t)(t) >> 8) & 0xffu)

/* Whether decoding builtin handles gives PMPI_Type_size's answer. */
static int builtin_sizes_ok(void)
{
    const MPI_Datatype probe[] = {MPI_BYTE, MPI_CHAR, MPI_INT, MPI_LONG, MPI_DOUBLE,
                                  MPI_LONG_DOUBLE, MPI_2INT, MPI_AINT, MPI_C_DOUBLE_COMPLEX};
    for (size_t i = 0; i < sizeof probe / sizeof probe[0]; i++) {
        int s = -1;
        if (!BUILTIN_TYPE(probe[i]) || cm_r.Type_size(probe[i], &s) != MPI_SUCCESS ||
            s != (int)BUILTIN_SIZE(probe[i]))
            return 0;
    }
    return 1;
}
#endif

static inline uint64_t tbytes(int count, MPI_Datatype t)
{
    if (count <= 0 || t == W_DATATYPE_NULL)
        return 0;
#if defined(CONTEND_MPI_MPICH)
    if (CM_LIKELY(builtin_sizes) && BUILTIN_TYPE(t))
        return (uint64_t)count * BUILTIN_SIZE(t);
#endif
    int s = 0;
    if (cm_r.Type_size(t, &s) != MPI_SUCCESS || s < 0)
        return 0;
    return (uint64_t)count * (uint64_t)s;
}

static inline int32_t norm_tag(int tag) { return tag == MPI_ANY_TAG ? CONTEND_MPI_ANY_TAG : tag; }

/* The thread's state if this call is to be recorded (sets busy), else NULL. */
static inline struct cm_thread *begin(void)
{
    struct cm_thread *ts = &cm_tls;
    if (CM_LIKELY(__atomic_load_n(&cm_recording, __ATOMIC_ACQUIRE) && !ts->busy)) {
        ts->busy = 1;
        return ts;
    }
    return NULL;
}
static inline void end(struct cm_thread *ts) { ts->busy = 0; }

static inline void rec_enter(struct cm_thread *ts, int op, uint64_t t, uint64_t site,
                             const uint64_t *fields, uint32_t n)
{
    cm_record_enter(ts, (uint32_t)op, t, user_site(site), fields, n);
}

/* EXIT; the compact form (no return-code word) for MPI_SUCCESS without
 * flags, the common case. Inlined into every wrapper (a call, its saved
 * registers and a second branch on n cost as much as the record). */
static inline __attribute__((always_inline)) void
rec_exit(struct cm_thread *ts, int op, uint64_t t, int rc, uint32_t flags, const uint64_t *extra,
         uint32_t n)
{
    uint64_t p[2];
    if (rc == MPI_SUCCESS && flags == 0) {
        if (n)
            p[0] = extra[0];
        cm_record(ts, CONTEND_MPI_REC_EXIT, (uint32_t)op | CONTEND_MPI_SMALL_COMPACT, 1, t, 0, p,
                  n ? 1 : 0);
        return;
    }
    p[0] = CONTEND_MPI_RCFLAGS(rc, flags);
    if (n)
        p[1] = extra[0];
    cm_record(ts, CONTEND_MPI_REC_EXIT, (uint32_t)op, 1, t, 0, p, n ? 2 : 1);
}

static inline __attribute__((always_inline)) void
rec_completion(struct cm_thread *ts, uint32_t flags, int32_t source, uint64_t req,
               int32_t tag, uint64_t bytes)
{
    if (source < 0) {
        flags |= CONTEND_MPI_COMPL_NO_SOURCE;
        source = 0;
    }
    uint64_t p[3] = {req, (uint64_t)(uint32_t)tag, bytes};
    cm_record(ts, CONTEND_MPI_REC_COMPLETION, flags, 0, 0, (uint32_t)source, p, 3);
}

/* ------------------------------------------------------------------------ */
/* Communicators                                                             */

#define COMM_SLOTS 1024u
#define COMM_RECORD_RANKS 512u

struct comm_ent {
    uint64_t key;      /* HKEY(handle); 0 = free                          */
    int state;         /* 0 free, 1 used, 2 deleted (probe on)            */
    uint32_t gen;      /* bumped when the slot is reused                  */
    uint64_t id;
    int32_t size;      /* local group size                                */
    int32_t myrank;    /* this process's local rank                       */
    int inter;
    uint32_t *ranks;   /* world ranks of the local group                  */
    int32_t rsize;
    uint32_t *remote;  /* world ranks of the remote group (intercomms)    */
    uint64_t children; /* creation calls made on this communicator        */
};

static struct comm_ent comms[COMM_SLOTS];
static int comm_lock;
static uint32_t local_comm_counter;

static struct comm_ent *comm_find_locked(uint64_t key)
{
    uint32_t h = (uint32_t)(mix64(key) % COMM_SLOTS);
    for (uint32_t i = 0; i < COMM_SLOTS; i++) {
        struct comm_ent *e = &comms[(h + i) % COMM_SLOTS];
        if (e->state == 0)
            return NULL;
        if (e->state == 1 && e->key == key)
            return e;
    }
    return NULL;
}

static struct comm_ent *comm_slot_locked(uint64_t key)
{
    uint32_t h = (uint32_t)(mix64(key) % COMM_SLOTS);
    for (uint32_t i = 0; i < COMM_SLOTS; i++) {
        struct comm_ent *e = &comms[(h + i) % COMM_SLOTS];
        if (e->state != 1)
            return e;
    }
    return NULL;
}

static int32_t xlate(const uint32_t *ranks, int32_t n, int r)
{
    if (r >= 0 && r < n)
        return ranks ? (int32_t)ranks[r] : r;
    return CONTEND_MPI_PEER_UNKNOWN;
}

/* Peer rank of `e` to world rank (or PEER_*). */
static int32_t peer_of(const struct comm_ent *e, int r)
{
    if (r == MPI_PROC_NULL)
        return CONTEND_MPI_PEER_NULL;
    if (r == MPI_ANY_SOURCE)
        return CONTEND_MPI_PEER_ANY;
    if (!e)
        return CONTEND_MPI_PEER_UNKNOWN;
    return e->inter ? xlate(e->remote, e->rsize, r) : xlate(e->ranks, e->size, r);
}

/* World ranks of a group, or NULL. */
static uint32_t *group_world_ranks(MPI_Group g, int n)
{
    if (n <= 0)
        return NULL;
    int *in = malloc(sizeof(int) * (size_t)n * 2);
    if (!in)
        return NULL;
    int *out = in + n;
    for (int i = 0; i < n; i++)
        in[i] = i;
    if (cm_r.Group_translate_ranks(g, n, in, world_group, out) != MPI_SUCCESS) {
        free(in);
        return NULL;
    }
    uint32_t *r = malloc(sizeof(uint32_t) * (size_t)n);
    if (r)
        for (int i = 0; i < n; i++)
            r[i] = out[i] < 0 ? UINT32_MAX : (uint32_t)out[i];
    free(in);
    return r;
}

/* Describes communicator c into *e (not yet in the table). 0 ok. */
static int comm_describe(MPI_Comm c, struct comm_ent *e)
{
    memset(e, 0, sizeof *e);
    e->key = HKEY(c);
    if (cm_r.Comm_size(c, &e->size) != MPI_SUCCESS || cm_r.Comm_rank(c, &e->myrank) != MPI_SUCCESS)
        return -1;
    cm_r.Comm_test_inter(c, &e->inter);
    MPI_Group g;
    if (cm_r.Comm_group(c, &g) == MPI_SUCCESS) {
        e->ranks = group_world_ranks(g, e->size);
        cm_r.Group_free(&g);
    }
    if (e->inter && cm_r.Comm_remote_group(c, &g) == MPI_SUCCESS) {
        cm_r.Group_size(g, &e->rsize);
        e->remote = group_world_ranks(g, e->rsize);
        cm_r.Group_free(&g);
    }
    return 0;
}

static void comm_record(struct cm_thread *ts, const struct comm_ent *e)
{
    if (!ts)
        return;
    uint64_t p[2 + COMM_RECORD_RANKS / 2];
    int32_t first = 0;
    do {
        uint32_t n = (uint32_t)(e->size - first);
        if (n > COMM_RECORD_RANKS)
            n = COMM_RECORD_RANKS;
        p[0] = e->id;
        p[1] = (uint64_t)(uint32_t)e->size | ((uint64_t)(uint32_t)first << 32);
        for (uint32_t k = 0; k < (n + 1) / 2; k++) {
            uint32_t a = e->ranks ? e->ranks[first + 2 * k] : (uint32_t)(first + 2 * k);
            uint32_t b = 0;
            if (2 * k + 1 < n)
                b = e->ranks ? e->ranks[first + 2 * k + 1] : (uint32_t)(first + 2 * k + 1);
            p[2 + k] = (uint64_t)a | ((uint64_t)b << 32);
        }
        cm_record(ts, CONTEND_MPI_REC_COMM, 0, 0, 0, n, p, 2 + (n + 1) / 2);
        first += (int32_t)n;
    } while (first < e->size);
}

/* Inserts a described communicator; records its members. Returns its id. */
static uint64_t comm_insert(struct cm_thread *ts, struct comm_ent *d)
{
    spin_lock(&comm_lock);
    /* the same handle again (registered meanwhile by another thread, or a
     * handle the library reused after a free we did not see): replace */
    struct comm_ent *slot = comm_find_locked(d->key);
    if (!slot)
        slot = comm_slot_locked(d->key);
    if (slot) {
        uint32_t gen = slot->gen + 1;
        free(slot->ranks);
        free(slot->remote);
        *slot = *d;
        slot->gen = gen;
        slot->state = 1;
    }
    spin_unlock(&comm_lock);
    if (!slot) {
        free(d->ranks);
        free(d->remote);
    }
    comm_record(ts, d);
    return d->id;
}

/* The id of a communicator the recorder did not see created: local to
 * this rank (its world rank in bits 32..62). */
static uint64_t comm_register_unknown(struct cm_thread *ts, MPI_Comm c)
{
    struct comm_ent d;
    if (comm_describe(c, &d) != 0)
        return CONTEND_MPI_COMM_LOCAL_BIT | ((uint64_t)(uint32_t)world_rank << 32);
    d.id = CONTEND_MPI_COMM_LOCAL_BIT | ((uint64_t)(uint32_t)world_rank << 32) |
           __atomic_add_fetch(&local_comm_counter, 1, __ATOMIC_RELAXED);
    return comm_insert(ts, &d);
}

/* Id of `c` and world rank of its rank `peer` (peer may be any int). */
static uint64_t comm_peer(struct cm_thread *ts, MPI_Comm c, int peer, int32_t *wpeer)
{
    if (CM_LIKELY(c == W_COMM_WORLD)) {
        if (wpeer)
            *wpeer = (peer >= 0 && peer < world_size) ? peer
                     : peer == MPI_PROC_NULL          ? CONTEND_MPI_PEER_NULL
                     : peer == MPI_ANY_SOURCE         ? CONTEND_MPI_PEER_ANY
                                                      : CONTEND_MPI_PEER_UNKNOWN;
        return CONTEND_MPI_COMM_WORLD_ID;
    }
    uint64_t key = HKEY(c);
    for (int attempt = 0; attempt < 2; attempt++) {
        spin_lock(&comm_lock);
        struct comm_ent *e = comm_find_locked(key);
        if (e) {
            uint64_t id = e->id;
            if (wpeer)
                *wpeer = peer_of(e, peer);
            spin_unlock(&comm_lock);
            return id;
        }
        spin_unlock(&comm_lock);
        if (attempt == 0)
            comm_register_unknown(ts, c);
    }
    if (wpeer)
        *wpeer = peer_of(NULL, peer);
    return CONTEND_MPI_COMM_LOCAL_BIT | ((uint64_t)(uint32_t)world_rank << 32);
}

/* Root argument of a collective as a world rank (-1: none / PROC_NULL). */
static int32_t root_world(struct cm_thread *ts, MPI_Comm c, int root)
{
    if (root == MPI_ROOT)
        return world_rank;
    int32_t w;
    comm_peer(ts, c, root, &w);
    return w >= 0 ? w : -1;
}

/* Size and own local rank of c (collective byte counts). */
static void comm_shape(MPI_Comm c, int *size, int *rank)
{
    if (c == W_COMM_WORLD) {
        *size = world_size;
        *rank = world_rank;
        return;
    }
    *size = 0;
    *rank = -1;
    int inter = 0;
    cm_r.Comm_test_inter(c, &inter);
    if (inter) {
        /* the counts arrays of intercommunicator collectives are per
         * remote rank */
        MPI_Group g;
        if (cm_r.Comm_remote_group(c, &g) == MPI_SUCCESS) {
            cm_r.Group_size(g, size);
            cm_r.Group_free(&g);
        }
    } else {
        cm_r.Comm_size(c, size);
    }
    cm_r.Comm_rank(c, rank);
}

/*
 * Id of a communicator created by a collective call on `parent`, the same
 * on every member without any communication: every member of the parent
 * makes the creation calls on it in the same order (MPI's rule for
 * collectives), so (parent id, number of earlier creation calls on the
 * parent, smallest world rank of the new group) names it; disjoint groups
 * of one Comm_split differ in their smallest member.
 */
static uint64_t comm_child_id(uint64_t parent, uint64_t seq, const struct comm_ent *d)
{
    uint32_t lo = UINT32_MAX;
    for (int32_t i = 0; i < d->size; i++) {
        uint32_t r = d->ranks ? d->ranks[i] : (uint32_t)i;
        if (r < lo)
            lo = r;
    }
    uint64_t id = mix64(parent * 0x9e3779b97f4a7c15ull ^ mix64(seq + 0x51) ^ mix64((uint64_t)lo + 0x7f));
    id &= ~CONTEND_MPI_COMM_LOCAL_BIT;
    if (id <= CONTEND_MPI_COMM_SELF_ID)
        id += 2;
    return id;
}

/* Before a creation call: the parent's id and its creation counter
 * (incremented, by every member alike). */
static uint64_t comm_parent_begin(struct cm_thread *ts, MPI_Comm parent, uint64_t *seq)
{
    uint64_t id = comm_peer(ts, parent, 0, NULL);
    uint64_t key = HKEY(parent);
    static uint64_t world_children;
    *seq = 0;
    if (parent == W_COMM_WORLD) {
        *seq = __atomic_fetch_add(&world_children, 1, __ATOMIC_RELAXED);
        return id;
    }
    spin_lock(&comm_lock);
    struct comm_ent *e = comm_find_locked(key);
    if (e)
        *seq = e->children++;
    spin_unlock(&comm_lock);
    return id;
}

/* After a successful creation call: registers the new communicator. */
static uint64_t comm_created(struct cm_thread *ts, uint64_t parent_id, uint64_t seq, MPI_Comm c)
{
    if (c == W_COMM_NULL)
        return CONTEND_MPI_COMM_NULL_ID;
    struct comm_ent d;
    if (comm_describe(c, &d) != 0)
        return CONTEND_MPI_COMM_NULL_ID;
    d.id = comm_child_id(parent_id, seq, &d);
    return comm_insert(ts, &d);
}

/* ------------------------------------------------------------------------ */
/* Requests                                                                  */

#define REQ_SLOTS 16384u

/* What a request is (req_ent.recv). */
#define REQ_SEND 0u
#define REQ_RECV 1u
#define REQ_COLLECTIVE 2u /* a nonblocking collective                  */
#define REQ_IDUP 3u       /* MPI_Comm_idup: registers its communicator */

struct req_ent {
    uint64_t key; /* HKEY(request); 0 = free */
    uint64_t id;
    uint64_t bytes;
    uint64_t comm_key;
    int32_t peer; /* world rank / PEER_* */
    int32_t tag;
    uint32_t recv; /* REQ_* */
    uint32_t comm_gen;
    /* REQ_IDUP: where the new communicator is, its parent's id and the
     * parent's creation count (its id, as for Comm_dup) */
    MPI_Comm *newcomm;
    uint64_t parent_id;
    uint64_t seq;
};

static struct req_ent reqs[REQ_SLOTS];
static int req_lock;
/* 1 when the thread level MPI provides is below MPI_THREAD_MULTIPLE (set
 * after MPI_Init, from MPI_Query_thread): one thread at a time calls MPI,
 * ordered by the program's own synchronisation, so the request table is
 * used without its lock (two atomic operations fewer per Isend / Irecv
 * and per completed request). */
static int req_unlocked;

static inline void req_table_lock(void)
{
    if (!req_unlocked)
        spin_lock(&req_lock);
}
static inline void req_table_unlock(void)
{
    if (!req_unlocked)
        spin_unlock(&req_lock);
}

static inline uint32_t req_hash(uint64_t key) { return (uint32_t)(mix64(key) & (REQ_SLOTS - 1)); }

/* Enters request r (kind REQ_*) and returns its id (0: not recorded). */
static uint64_t req_insert_ex(MPI_Request r, uint32_t kind, int32_t peer, int32_t tag,
                              uint64_t bytes, MPI_Comm c, MPI_Comm *newcomm, uint64_t parent_id,
                              uint64_t seq)
{
    uint64_t key = HKEY(r);
    if (key == 0 || r == W_REQUEST_NULL)
        return 0;
    uint64_t ckey = HKEY(c);
    /* Handles are not unique: Open MPI returns one static, already
     * complete request (ompi_request_empty) for every send that completed
     * at once, MPICH shares builtin complete requests. Entries with the
     * same handle are kept in posting order (linear probing keeps it) and
     * completed oldest first. */
    req_table_lock();
    uint64_t id = next_request_id++;
    uint32_t h = req_hash(key);
    struct req_ent *slot = NULL;
    for (uint32_t i = 0; i < REQ_SLOTS / 4; i++) {
        struct req_ent *e = &reqs[(h + i) & (REQ_SLOTS - 1)];
        if (e->key == 0) {
            slot = e;
            break;
        }
    }
    if (slot) {
        slot->key = key;
        slot->id = id;
        slot->bytes = bytes;
        slot->comm_key = ckey;
        slot->peer = peer;
        slot->tag = tag;
        slot->recv = kind;
        slot->comm_gen = 0;
        slot->newcomm = newcomm;
        slot->parent_id = parent_id;
        slot->seq = seq;
    }
    req_table_unlock();
    if (!slot) {
        cm_set_flag(CONTEND_MPI_FLAG_REQUESTS_FULL);
        return 0;
    }
    return id;
}

static uint64_t req_insert(MPI_Request r, int recv, int32_t peer, int32_t tag, uint64_t bytes,
                           MPI_Comm c)
{
    return req_insert_ex(r, recv ? REQ_RECV : REQ_SEND, peer, tag, bytes, c, NULL, 0, 0);
}

/* Removes the oldest entry of request `key` into *out; 0 if unknown.
 * Linear probing with backward-shift deletion (no tombstones, order of
 * equal keys kept). */
static int req_take(uint64_t key, struct req_ent *out)
{
    if (key == 0)
        return 0;
    req_table_lock();
    uint32_t i = req_hash(key);
    int found = 0;
    for (uint32_t n = 0; n < REQ_SLOTS / 4; n++, i = (i + 1) & (REQ_SLOTS - 1)) {
        if (reqs[i].key == 0)
            break;
        if (reqs[i].key == key) {
            found = 1;
            break;
        }
    }
    if (found) {
        *out = reqs[i];
        uint32_t hole = i;
        for (uint32_t j = (i + 1) & (REQ_SLOTS - 1); reqs[j].key != 0; j = (j + 1) & (REQ_SLOTS - 1)) {
            uint32_t home = req_hash(reqs[j].key);
            /* move j into the hole if its home is not in (hole, j] */
            int between = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
            if (!between) {
                reqs[hole] = reqs[j];
                hole = j;
            }
        }
        reqs[hole].key = 0;
    }
    req_table_unlock();
    return found;
}

/* Records the completion of request `key` (copied before the call) with
 * its status (NULL: none available). */
static void complete(struct cm_thread *ts, uint64_t key, const MPI_Status *st)
{
    struct req_ent e;
    if (!req_take(key, &e))
        return; /* not created by a wrapped call (persistent, ...) */
    if (e.recv == REQ_COLLECTIVE || e.recv == REQ_IDUP) {
        /* the communicator Comm_idup made exists from its completion on */
        if (e.recv == REQ_IDUP && e.newcomm && *e.newcomm != W_COMM_NULL)
            comm_created(ts, e.parent_id, e.seq, *e.newcomm);
        rec_completion(ts, CONTEND_MPI_COMPL_COLLECTIVE, CONTEND_MPI_PEER_NULL, e.id, 0, 0);
        return;
    }
    uint32_t flags = 0;
    if (st && status_cancelled(st))
        flags |= CONTEND_MPI_COMPL_CANCELLED;
    if (e.recv == REQ_SEND) {
        rec_completion(ts, flags, e.peer, e.id, e.tag, e.bytes);
        return;
    }
    flags |= CONTEND_MPI_COMPL_RECV;
    if (!st) {
        rec_completion(ts, flags, CONTEND_MPI_PEER_UNKNOWN, e.id, e.tag, 0);
        return;
    }
    int32_t src = CONTEND_MPI_PEER_NULL;
    if (st->MPI_SOURCE != MPI_PROC_NULL) {
        if (e.comm_key == HKEY(W_COMM_WORLD)) {
            src = (st->MPI_SOURCE >= 0 && st->MPI_SOURCE < world_size) ? st->MPI_SOURCE
                                                                       : CONTEND_MPI_PEER_UNKNOWN;
        } else {
            spin_lock(&comm_lock);
            struct comm_ent *c = comm_find_locked(e.comm_key);
            src = c ? peer_of(c, st->MPI_SOURCE) : CONTEND_MPI_PEER_UNKNOWN;
            spin_unlock(&comm_lock);
        }
    }
    rec_completion(ts, flags, src, e.id, norm_tag(st->MPI_TAG), status_bytes(st));
}

/* Completion of a blocking receive (request 0). */
static void complete_recv(struct cm_thread *ts, MPI_Comm c, const MPI_Status *st)
{
    int32_t src = CONTEND_MPI_PEER_NULL;
    if (st->MPI_SOURCE != MPI_PROC_NULL)
        comm_peer(ts, c, st->MPI_SOURCE, &src);
    uint32_t flags = CONTEND_MPI_COMPL_RECV;
    if (status_cancelled(st))
        flags |= CONTEND_MPI_COMPL_CANCELLED;
    rec_completion(ts, flags, src, 0, norm_tag(st->MPI_TAG), status_bytes(st));
}

/* ------------------------------------------------------------------------ */
/* Init, Finalize, clock offsets                                             */

static MPI_Comm priv_comm; /* private duplicate of world (clock sync) */
static int sync_clocks;    /* decided the same way on every rank      */
static int sync_forced;    /* CONTEND_MPI_CLOCK_SYNC=always           */
static char host0[256];

static int env_int(const char *name, long *v)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return 0;
    char *e;
    *v = strtol(s, &e, 10);
    return *e == 0;
}

/* Clock offsets are measured only when ranks may be on several nodes. */
static int want_clock_sync(void)
{
    const char *force = getenv("CONTEND_MPI_CLOCK_SYNC");
    if (force && strcmp(force, "always") == 0) {
        sync_forced = 1;
        return world_size > 1;
    }
    if (force && strcmp(force, "never") == 0)
        return 0;
    if (world_size <= 1)
        return 0;
    long local, size;
    if (env_int("OMPI_COMM_WORLD_LOCAL_SIZE", &local) && env_int("OMPI_COMM_WORLD_SIZE", &size))
        return local != size;
    if (env_int("MPI_LOCALNRANKS", &local) && env_int("PMI_SIZE", &size))
        return local != size;
    return 1;
}

#define SYNC_ROUNDS 10

/* Ping-pong with rank 0 on the private communicator: each rank's offset
 * to rank 0's clock from the round with the smallest round trip
 * (offset = rank 0's midpoint - own time). Ranks on rank 0's host: 0. */
static void clock_sync(int final)
{
    if (!sync_clocks || priv_comm == W_COMM_NULL)
        return;
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    if (!final) {
        if (world_rank == 0)
            memcpy(host0, host, sizeof host0);
        cm_r.Bcast(host0, (int)sizeof host0, W_BYTE, 0, priv_comm);
    }
    /* CONTEND_MPI_CLOCK_SYNC=always measures on rank 0's host too (tests) */
    char same = strcmp(host, host0) == 0 && !sync_forced;
    char *flags = NULL;
    if (world_rank == 0)
        flags = calloc((size_t)world_size, 1);
    cm_r.Gather(&same, 1, W_BYTE, flags, 1, W_BYTE, 0, priv_comm);
    if (world_rank == 0) {
        for (int r = 1; r < world_size; r++) {
            if (!flags || flags[r])
                continue;
            uint64_t best_rtt = UINT64_MAX, result[3] = {0, 0, 0};
            for (int k = 0; k < SYNC_ROUNDS; k++) {
                uint64_t t0 = cm_now_ns(), tr = 0;
                cm_r.Send(&t0, 8, W_BYTE, r, 1, priv_comm);
                cm_r.Recv(&tr, 8, W_BYTE, r, 2, priv_comm, MPI_STATUS_IGNORE);
                uint64_t t1 = cm_now_ns();
                if (t1 - t0 < best_rtt) {
                    best_rtt = t1 - t0;
                    result[0] = (uint64_t)((int64_t)(t0 + (t1 - t0) / 2) - (int64_t)tr);
                    result[1] = best_rtt;
                    result[2] = (uint64_t)k;
                }
            }
            cm_r.Send(result, 24, W_BYTE, r, 3, priv_comm);
        }
        free(flags);
        cm_set_offset(final, 0, cm_now_ns(), 0);
    } else if (!same) {
        uint64_t times[SYNC_ROUNDS], result[3];
        for (int k = 0; k < SYNC_ROUNDS; k++) {
            uint64_t t0;
            cm_r.Recv(&t0, 8, W_BYTE, 0, 1, priv_comm, MPI_STATUS_IGNORE);
            times[k] = cm_now_ns();
            cm_r.Send(&times[k], 8, W_BYTE, 0, 2, priv_comm);
        }
        cm_r.Recv(result, 24, W_BYTE, 0, 3, priv_comm, MPI_STATUS_IGNORE);
        cm_set_offset(final, (int64_t)result[0], times[result[2] % SYNC_ROUNDS], result[1]);
    } else {
        cm_set_offset(final, 0, cm_now_ns(), 0);
    }
}

static char library_version[MPI_MAX_LIBRARY_VERSION_STRING + 1];

static void after_init(int op, uint64_t t0, uint64_t t1, int rc, int provided, uint64_t site)
{
    if (rc != MPI_SUCCESS || !abi_ok || !cm_config_dir())
        return;
    int rank = -1, size = 0;
    if (cm_r.Comm_rank(W_COMM_WORLD, &rank) != MPI_SUCCESS ||
        cm_r.Comm_size(W_COMM_WORLD, &size) != MPI_SUCCESS || rank < 0)
        return;
    world_rank = rank;
    world_size = size;
    if (cm_r.Comm_group(W_COMM_WORLD, &world_group) != MPI_SUCCESS)
        return;
    int level = MPI_THREAD_MULTIPLE;
    if (cm_r.Query_thread && cm_r.Query_thread(&level) == MPI_SUCCESS &&
        level < MPI_THREAD_MULTIPLE)
        req_unlocked = 1;
#if defined(CONTEND_MPI_MPICH)
    builtin_sizes = builtin_sizes_ok();
#endif
    int len = 0;
    cm_r.Get_library_version(library_version, &len);
    library_version[len > 0 && len <= MPI_MAX_LIBRARY_VERSION_STRING ? len : 0] = 0;
    char *nl = strchr(library_version, '\n');
    if (nl)
        *nl = 0;
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    struct cm_rank_info info = {
        .rank = (uint32_t)rank,
        .size = (uint32_t)size,
        .thread_level = provided,
        .implementation = CM_IMPL,
        .host = host,
        .library = library_version,
    };
    /* decided before the file is opened, identically on every rank */
    sync_clocks = want_clock_sync();
    priv_comm = W_COMM_NULL;
    if (sync_clocks && cm_r.Comm_dup(W_COMM_WORLD, &priv_comm) != MPI_SUCCESS)
        priv_comm = W_COMM_NULL;
    int opened = cm_trace_open(&info) == 0;
    struct cm_thread *ts = &cm_tls;
    if (opened) {
        rec_enter(ts, op, t0, site, NULL, 0);
        struct comm_ent w = {.id = CONTEND_MPI_COMM_WORLD_ID, .size = size};
        comm_record(ts, &w);
        uint32_t me = (uint32_t)rank;
        struct comm_ent s = {.id = CONTEND_MPI_COMM_SELF_ID, .size = 1, .ranks = &me};
        comm_record(ts, &s);
        rec_exit(ts, op, t1, rc, 0, NULL, 0);
    }
    /* MPI_COMM_SELF gets its fixed id (not recorded again) */
    struct comm_ent self;
    if (comm_describe(W_COMM_SELF, &self) == 0) {
        self.id = CONTEND_MPI_COMM_SELF_ID;
        comm_insert(NULL, &self);
    }
    /* every rank takes part in the ping-pong, recording or not */
    clock_sync(0);
}

/* CONTEND_MPI_TEST_CLOCK_SKEW_NS=N: odd ranks (by the launcher's
 * OMPI_COMM_WORLD_RANK / PMI_RANK) run their clock N ns ahead, to test the
 * clock-offset correction on one machine. */
static void test_clock_skew(void)
{
    long skew, rank;
    if (!env_int("CONTEND_MPI_TEST_CLOCK_SKEW_NS", &skew) || skew <= 0)
        return;
    if (!env_int("OMPI_COMM_WORLD_RANK", &rank) && !env_int("PMI_RANK", &rank))
        return;
    if (rank % 2 == 1)
        cm_clock_skew = (uint64_t)skew;
}

int core_init(int op, int *argc, char ***argv, int required, int *provided, uint64_t site)
{
    cm_resolve();
    test_clock_skew();
    uint64_t t0 = cm_now();
    int rc = op == OP_INIT ? cm_r.Init(argc, argv)
                           : cm_r.Init_thread(argc, argv, required, provided);
    uint64_t t1 = cm_now();
    int saved = errno;
    after_init(op, t0, t1, rc, op == OP_INIT ? -1 : (provided ? *provided : -1), site);
    errno = saved;
    return rc;
}

int core_finalize(uint64_t site)
{
    cm_resolve();
    struct cm_thread *ts = begin();
    uint64_t t0 = cm_now();
    int saved = errno;
    if (ts)
        rec_enter(ts, OP_FINALIZE, t0, site, NULL, 0);
    if (abi_ok && world_rank >= 0) {
        clock_sync(1);
        if (priv_comm != W_COMM_NULL)
            cm_r.Comm_free(&priv_comm);
        cm_r.Group_free(&world_group);
    }
    cm_maps_snapshot();
    cm_clock_end();
    errno = saved;
    int rc = cm_r.Finalize();
    uint64_t t1 = cm_now();
    saved = errno;
    if (ts) {
        rec_exit(ts, OP_FINALIZE, t1, rc, 0, NULL, 0);
        if (rc == MPI_SUCCESS)
            cm_set_flag(CONTEND_MPI_FLAG_FINALIZED);
        end(ts);
    }
    if (rc == MPI_SUCCESS)
        cm_stop();
    errno = saved;
    return rc;
}

int cm_abi_ok(void) { return abi_ok; }

static void no_fortran_binding(void)
{
    contend_say("the program's MPI library has no Fortran binding for a call the recorder "
                "received; cannot pass it on",
                NULL, NULL);
    abort();
}

cm_fortran_fn cm_fortran_next(const char *name)
{
    char alt[128];
    size_t n = strlen(name);
    if (n == 0 || n + 2 >= sizeof alt)
        return (cm_fortran_fn)no_fortran_binding;
    void *p = dlsym(RTLD_NEXT, name);
    /* mpi_send_: also mpi_send__, mpi_send, MPI_SEND */
    if (!p) {
        memcpy(alt, name, n);
        alt[n] = '_';
        alt[n + 1] = 0;
        p = dlsym(RTLD_NEXT, alt);
    }
    if (!p && name[n - 1] == '_') {
        memcpy(alt, name, n - 1);
        alt[n - 1] = 0;
        p = dlsym(RTLD_NEXT, alt);
        for (size_t i = 0; !p && i < n - 1; i++)
            alt[i] = (char)(alt[i] >= 'a' && alt[i] <= 'z' ? alt[i] - 'a' + 'A' : alt[i]);
        if (!p)
            p = dlsym(RTLD_NEXT, alt);
    }
    if (!p && mpi_handle)
        p = dlsym(mpi_handle, name);
    cm_fortran_fn f;
    memcpy(&f, &p, sizeof f);
    return f ? f : (cm_fortran_fn)no_fortran_binding;
}

void cm_fortran_seen(void)
{
    static int seen;
    if (!__atomic_load_n(&seen, __ATOMIC_RELAXED) &&
        __atomic_load_n(&cm_recording, __ATOMIC_ACQUIRE)) {
        __atomic_store_n(&seen, 1, __ATOMIC_RELAXED);
        cm_set_flag(CONTEND_MPI_FLAG_FORTRAN);
    }
}

/* ------------------------------------------------------------------------ */
/* Point-to-point                                                            */

/* The wrapper skeleton: resolve, pass through unless recording. */
#define PASS_UNLESS_RECORDING(call)                                                          \
    cm_resolve();                                                                            \
    struct cm_thread *ts = begin();                                                          \
    if (!ts)                                                                                 \
        return call;                                                                         \
    int saved_errno = errno

#define CALL_TIMED(call)                                                                     \
    errno = saved_errno;                                                                     \
    int rc = call;                                                                           \
    uint64_t t1 = cm_now();                                                                  \
    saved_errno = errno

#define DONE()                                                                               \
    end(ts);                                                                                 \
    errno = saved_errno;                                                                     \
    return rc

int core_send(int op, const void *buf, int count, MPI_Datatype type, int dest, int tag,
              MPI_Comm comm, uint64_t site)
{
    cm_resolve();
    __typeof__(cm_r.Send) fn = op == OP_SSEND ? cm_r.Ssend
                               : op == OP_BSEND ? cm_r.Bsend
                               : op == OP_RSEND ? cm_r.Rsend
                                                : cm_r.Send;
    PASS_UNLESS_RECORDING(fn(buf, count, type, dest, tag, comm));
    int32_t wp;
    uint64_t f[3];
    f[0] = comm_peer(ts, comm, dest, &wp);
    f[1] = CONTEND_MPI_PEERTAG(wp, tag);
    f[2] = tbytes(count, type);
    uint64_t t0 = cm_now();
    rec_enter(ts, op, t0, site, f, 3);
    CALL_TIMED(fn(buf, count, type, dest, tag, comm));
    rec_exit(ts, op, t1, rc, 0, NULL, 0);
    DONE();
}

int core_recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
              MPI_Status *status, uint64_t site)
{
    PASS_UNLESS_RECORDING(cm_r.Recv(buf, count, type, source, tag, comm, status));
    MPI_Status local;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &local : status;
    int32_t wp;
    uint64_t f[3];
    f[0] = comm_peer(ts, comm, source, &wp);
    f[1] = CONTEND_MPI_PEERTAG(wp, norm_tag(tag));
    f[2] = tbytes(count, type);
    uint64_t t0 = cm_now();
    rec_enter(ts, OP_RECV, t0, site, f, 3);
    CALL_TIMED(cm_r.Recv(buf, count, type, source, tag, comm, st));
    if (rc == MPI_SUCCESS)
        complete_recv(ts, comm, st);
    rec_exit(ts, OP_RECV, t1, rc, 0, NULL, 0);
    DONE();
}

int core_sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag,
                  void *rbuf, int rcount, MPI_Datatype rtype, int source, int rtag, MPI_Comm comm,
                  MPI_Status *status, uint64_t site)
{
    PASS_UNLESS_RECORDING(cm_r.Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype,
                                        source, rtag, comm, status));
    MPI_Status local;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &local : status;
    int32_t wd, ws;
    uint64_t f[5];
    f[0] = comm_peer(ts, comm, dest, &wd);
    comm_peer(ts, comm, source, &ws);
    f[1] = CONTEND_MPI_PEERTAG(wd, stag);
    f[2] = tbytes(scount, stype);
    f[3] = CONTEND_MPI_PEERTAG(ws, norm_tag(rtag));
    f[4] = tbytes(rcount, rtype);
    uint64_t t0 = cm_now();
    rec_enter(ts, OP_SENDRECV, t0, site, f, 5);
    CALL_TIMED(cm_r.Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag,
                             comm, st));
    if (rc == MPI_SUCCESS)
        complete_recv(ts, comm, st);
    rec_exit(ts, OP_SENDRECV, t1, rc, 0, NULL, 0);
    DONE();
}

int core_sendrecv_replace(void *buf, int count, MPI_Datatype type, int dest, int stag, int source,
                          int rtag, MPI_Comm comm, MPI_Status *status, uint64_t site)
{
    PASS_UNLESS_RECORDING(
        cm_r.Sendrecv_replace(buf, count, type, dest, stag, source, rtag, comm, status));
    MPI_Status local;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &local : status;
    int32_t wd, ws;
    uint64_t f[5];
    f[0] = comm_peer(ts, comm, dest, &wd);
    comm_peer(ts, comm, source, &ws);
    f[1] = CONTEND_MPI_PEERTAG(wd, stag);
    f[2] = tbytes(count, type);
    f[3] = CONTEND_MPI_PEERTAG(ws, norm_tag(rtag));
    f[4] = f[2];
    uint64_t t0 = cm_now();
    rec_enter(ts, OP_SENDRECV_REPLACE, t0, site, f, 5);
    CALL_TIMED(cm_r.Sendrecv_replace(buf, count, type, dest, stag, source, rtag, comm, st));
    if (rc == MPI_SUCCESS)
        complete_recv(ts, comm, st);
    rec_exit(ts, OP_SENDRECV_REPLACE, t1, rc, 0, NULL, 0);
    DONE();
}

int core_isend(int op, const void *buf, int count, MPI_Datatype type, int dest, int tag,
               MPI_Comm comm, MPI_Request *req, uint64_t site)
{
    cm_resolve();
    __typeof__(cm_r.Isend) fn = op == OP_ISSEND ? cm_r.Issend
                                : op == OP_IBSEND ? cm_r.Ibsend
                                : op == OP_IRSEND ? cm_r.Irsend
                                                  : cm_r.Isend;
    PASS_UNLESS_RECORDING(fn(buf, count, type, dest, tag, comm, req));
    int32_t wp;
    uint64_t f[3];
    f[0] = comm_peer(ts, comm, dest, &wp);
    f[1] = CONTEND_MPI_PEERTAG(wp, tag);
    f[2] = tbytes(count, type);
    uint64_t t0 = cm_now();
    rec_enter(ts, op, t0, site, f, 3);
    CALL_TIMED(fn(buf, count, type, dest, tag, comm, req));
    uint64_t id = 0;
    if (rc == MPI_SUCCESS && req)
        id = req_insert(*req, 0, wp, tag, f[2], comm);
    rec_exit(ts, op, t1, rc, 0, &id, 1);
    DONE();
}

int core_irecv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
               MPI_Request *req, uint64_t site)
{
    PASS_UNLESS_RECORDING(cm_r.Irecv(buf, count, type, source, tag, comm, req));
    int32_t wp;
    uint64_t f[3];
    f[0] = comm_peer(ts, comm, source, &wp);
    f[1] = CONTEND_MPI_PEERTAG(wp, norm_tag(tag));
    f[2] = tbytes(count, type);
    uint64_t t0 = cm_now();
    rec_enter(ts, OP_IRECV, t0, site, f, 3);
    CALL_TIMED(cm_r.Irecv(buf, count, type, source, tag, comm, req));
    uint64_t id = 0;
    if (rc == MPI_SUCCESS && req)
        id = req_insert(*req, 1, wp, norm_tag(tag), f[2], comm);
    rec_exit(ts, OP_IRECV, t1, rc, 0, &id, 1);
    DONE();
}

/* The message a probe found (its status), recorded as a COMPLETION with
 * the PROBE flag: the analysis needs it to tie a blocking probe to the
 * receive that follows it. */
static void probe_found(struct cm_thread *ts, MPI_Comm c, const MPI_Status *st)
{
    int32_t src = CONTEND_MPI_PEER_NULL;
    if (st->MPI_SOURCE != MPI_PROC_NULL)
        comm_peer(ts, c, st->MPI_SOURCE, &src);
    rec_completion(ts, CONTEND_MPI_COMPL_RECV | CONTEND_MPI_COMPL_PROBE, src, 0,
                   norm_tag(st->MPI_TAG), status_bytes(st));
}

int core_probe(int source, int tag, MPI_Comm comm, MPI_Status *status, uint64_t site)
{
    PASS_UNLESS_RECORDING(cm_r.Probe(source, tag, comm, status));
    MPI_Status local;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &local : status;
    int32_t wp;
    uint64_t f[2];
    f[0] = comm_peer(ts, comm, source, &wp);
    f[1] = CONTEND_MPI_PEERTAG(wp, norm_tag(tag));
    uint64_t t0 = cm_now();
    rec_enter(ts, OP_PROBE, t0, site, f, 2);
    CALL_TIMED(cm_r.Probe(source, tag, comm, st));
    if (rc == MPI_SUCCESS)
        probe_found(ts, comm, st);
    rec_exit(ts, OP_PROBE, t1, rc, 0, NULL, 0);
    DONE();
}

int core_iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status, uint64_t site)
{
    PASS_UNLESS_RECORDING(cm_r.Iprobe(source, tag, comm, flag, status));
    MPI_Status local;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &local : status;
    int32_t wp;
    uint64_t f[2];
    f[0] = comm_peer(ts, comm, source, &wp);
    f[1] = CONTEND_MPI_PEERTAG(wp, norm_tag(tag));
    uint64_t t0 = cm_now();
    rec_enter(ts, OP_IPROBE, t0, site, f, 2);
    CALL_TIMED(cm_r.Iprobe(source, tag, comm, flag, st));
    int found = rc == MPI_SUCCESS && flag && *flag;
    if (found)
        probe_found(ts, comm, st);
    rec_exit(ts, OP_IPROBE, t1, rc, found ? 1u : 0u, NULL, 0);
    DONE();
}

/* Messages an (I)mprobe returned and no (I)mrecv has taken yet: handle ->
 * communicator, source (world rank), tag. A small table searched whole:
 * programs hold few matched messages at a time. Full: the receive is
 * recorded with an unknown source (nothing else changes). */
#define MSG_SLOTS 256u

struct msg_ent {
    uint64_t key; /* HKEY(message); 0 = free */
    MPI_Comm comm;
    uint64_t comm_id;
    int32_t src;
    int32_t tag;
};

static struct msg_ent msgs[MSG_SLOTS];
static int msg_lock;

static void msg_put(MPI_Message m, MPI_Comm comm, uint64_t comm_id, int32_t src, int32_t tag)
{
    uint64_t key = HKEY(m);
    if (key == 0 || m == W_MESSAGE_NO_PROC)
        return;
    spin_lock(&msg_lock);
    struct msg_ent *slot = NULL;
    for (uint32_t i = 0; i < MSG_SLOTS; i++) {
        if (msgs[i].key == key) { /* a handle reused after a take we missed */
            slot = &msgs[i];
            break;
        }
        if (!slot && msgs[i].key == 0)
            slot = &msgs[i];
    }
    if (slot) {
        slot->key = key;
        slot->comm = comm;
        slot->comm_id = comm_id;
        slot->src = src;
        slot->tag = tag;
    }
    spin_unlock(&msg_lock);
}

/* Takes message m out of the table into *out: 1 known, 0 not. */
static int msg_take(MPI_Message m, struct msg_ent *out)
{
    uint64_t key = HKEY(m);
    if (key == 0)
        return 0;
    int found = 0;
    spin_lock(&msg_lock);
    for (uint32_t i = 0; i < MSG_SLOTS; i++) {
        if (msgs[i].key == key) {
            *out = msgs[i];
            msgs[i].key = 0;
            found = 1;
            break;
        }
    }
    spin_unlock(&msg_lock);
    return found;
}

/* After a successful (I)mprobe that found a message. */
static void mprobe_found(struct cm_thread *ts, MPI_Comm comm, uint64_t comm_id, MPI_Message m,
                         const MPI_Status *st)
{
    probe_found(ts, comm, st);
    int32_t src = CONTEND_MPI_PEER_NULL;
    if (st->MPI_SOURCE != MPI_PROC_NULL)
        comm_peer(ts, comm, st->MPI_SOURCE, &src);
    msg_put(m, comm, comm_id, src, norm_tag(st->MPI_TAG));
}

int core_mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status,
                uint64_t site)
{
    PASS_UNLESS_RECORDING(cm_r.Mprobe(source, tag, comm, message, status));
    MPI_Status local;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &local : status;
    int32_t wp;
    uint64_t f[2];
    f[0] = comm_peer(ts, comm, source, &wp);
    f[1] = CONTEND_MPI_PEERTAG(wp, norm_tag(tag));
    uint64_t t0 = cm_now();
    rec_enter(ts, OP_MPROBE, t0, site, f, 2);
    CALL_TIMED(cm_r.Mprobe(source, tag, comm, message, st));
    if (rc == MPI_SUCCESS && message)
        mprobe_found(ts, comm, f[0], *message, st);
    rec_exit(ts, OP_MPROBE, t1, rc, 0, NULL, 0);
    DONE();
}

int core_improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,
                 MPI_Status *status, uint64_t site)
{
    PASS_UNLESS_RECORDING(cm_r.Improbe(source, tag, comm, flag, message, status));
    MPI_Status local;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &local : status;
    int32_t wp;
    uint64_t f[2];
    f[0] = comm_peer(ts, comm, source, &wp);
    f[1] = CONTEND_MPI_PEERTAG(wp, norm_tag(tag));
    uint64_t t0 = cm_now();
    rec_enter(ts, OP_IMPROBE, t0, site, f, 2);
    CALL_TIMED(cm_r.Improbe(source, tag, comm, flag, message, st));
    int found = rc == MPI_SUCCESS && flag && *flag && message;
    if (found)
        mprobe_found(ts, comm, f[0], *message, st);
    rec_exit(ts, OP_IMPROBE, t1, rc, found ? 1u : 0u, NULL, 0);
    DONE();
}

/* The envelope of the message an (I)mrecv takes: *known 1 with its
 * communicator, 0 for a handle the recorder did not see returned (then
 * the source is unknown). MPI_MESSAGE_NO_PROC: MPI_PROC_NULL on world. */
static struct msg_ent mrecv_envelope(const MPI_Message *message, int *known)
{
    struct msg_ent m = {0};
    *known = 0;
    m.comm = W_COMM_WORLD;
    m.comm_id = CONTEND_MPI_COMM_WORLD_ID;
    m.src = CONTEND_MPI_PEER_UNKNOWN;
    m.tag = CONTEND_MPI_ANY_TAG;
    if (!message)
        return m;
    if (*message == W_MESSAGE_NO_PROC) {
        m.src = CONTEND_MPI_PEER_NULL;
        *known = 1;
        return m;
    }
    if (msg_take(*message, &m))
        *known = 1;
    return m;
}

int core_mrecv(void *buf, int count, MPI_Datatype type, MPI_Message *message, MPI_Status *status,
               uint64_t site)
{
    PASS_UNLESS_RECORDING(cm_r.Mrecv(buf, count, type, message, status));
    MPI_Status local;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &local : status;
    int known;
    struct msg_ent m = mrecv_envelope(message, &known);
    uint64_t f[3];
    f[0] = m.comm_id;
    f[1] = CONTEND_MPI_PEERTAG(m.src, m.tag);
    f[2] = tbytes(count, type);
    uint64_t t0 = cm_now();
    rec_enter(ts, OP_MRECV, t0, site, f, 3);
    CALL_TIMED(cm_r.Mrecv(buf, count, type, message, st));
    if (rc == MPI_SUCCESS) {
        if (known)
            complete_recv(ts, m.comm, st);
        else
            rec_completion(ts, CONTEND_MPI_COMPL_RECV, CONTEND_MPI_PEER_UNKNOWN, 0,
                           norm_tag(st->MPI_TAG), status_bytes(st));
    }
    rec_exit(ts, OP_MRECV, t1, rc, 0, NULL, 0);
    DONE();
}

int core_imrecv(void *buf, int count, MPI_Datatype type, MPI_Message *message, MPI_Request *req,
                uint64_t site)
{
    PASS_UNLESS_RECORDING(cm_r.Imrecv(buf, count, type, message, req));
    int known;
    struct msg_ent m = mrecv_envelope(message, &known);
    uint64_t f[3];
    f[0] = m.comm_id;
    f[1] = CONTEND_MPI_PEERTAG(m.src, m.tag);
    f[2] = tbytes(count, type);
    uint64_t t0 = cm_now();
    rec_enter(ts, OP_IMRECV, t0, site, f, 3);
    CALL_TIMED(cm_r.Imrecv(buf, count, type, message, req));
    uint64_t id = 0;
    /* an unknown message's status source cannot be translated: its
     * request gets MPI_COMM_NULL's key, which no communicator entry has */
    if (rc == MPI_SUCCESS && req)
        id = req_insert(*req, 1, m.src, m.tag, f[2], known ? m.comm : W_COMM_NULL);
    rec_exit(ts, OP_IMRECV, t1, rc, 0, &id, 1);
    DONE();
}

/* ------------------------------------------------------------------------ */
/* Completion: Wait*, Test*                                                  */

#define STACK_REQS 32

/* Scratch for the request copy and substituted statuses of one call. */
struct scratch {
    uint64_t keys_local[STACK_REQS];
    MPI_Status st_local[STACK_REQS];
    uint64_t *keys;
    MPI_Status *st;
    void *heap;
};

/* 0 ok; -1 no memory (the call then passes through unrecorded). */
static int scratch_init(struct scratch *s, int n, MPI_Request *reqs, MPI_Status *statuses,
                        int want_st)
{
    s->heap = NULL;
    s->keys = s->keys_local;
    s->st = statuses;
    int need_st = want_st && statuses == MPI_STATUSES_IGNORE;
    if (n > STACK_REQS) {
        s->heap = malloc((size_t)n * (sizeof(uint64_t) + (need_st ? sizeof(MPI_Status) : 0)));
        if (!s->heap)
            return -1;
        s->keys = s->heap;
        if (need_st)
            s->st = (MPI_Status *)(void *)(s->keys + n);
    } else if (need_st) {
        s->st = s->st_local;
    }
    for (int i = 0; i < n; i++)
        s->keys[i] = reqs[i] == W_REQUEST_NULL ? 0 : HKEY(reqs[i]);
    return 0;
}

static void scratch_free(struct scratch *s) { free(s->heap); }

/* Whether request i of an all/some call completed, given rc. */
static int completed_in(int rc, const MPI_Status *st)
{
    if (rc == MPI_SUCCESS)
        return 1;
    if (rc == MPI_ERR_IN_STATUS)
        return st->MPI_ERROR != MPI_ERR_PENDING;
    return 0;
}

static void wait_enter(struct cm_thread *ts, int op, uint64_t t0, uint64_t site, int n)
{
    uint64_t f = (uint64_t)(uint32_t)n;
    rec_enter(ts, op, t0, site, &f, 1);
}

int core_wait(MPI_Request *req, MPI_Status *status, uint64_t site)
{
    PASS_UNLESS_RECORDING(cm_r.Wait(req, status));
    uint64_t key = (req && *req != W_REQUEST_NULL) ? HKEY(*req) : 0;
    /* a substituted status only where a completion is recorded from it
     * (not for a null request) */
    MPI_Status local;
    MPI_Status *st = status == MPI_STATUS_IGNORE && key ? &local : status;
    uint64_t t0 = cm_now();
    wait_enter(ts, OP_WAIT, t0, site, 1);
    CALL_TIMED(cm_r.Wait(req, st));
    if (rc == MPI_SUCCESS && key)
        complete(ts, key, st);
    rec_exit(ts, OP_WAIT, t1, rc, 0, NULL, 0);
    DONE();
}

int core_test(MPI_Request *req, int *flag, MPI_Status *status, uint64_t site)
{
    PASS_UNLESS_RECORDING(cm_r.Test(req, flag, status));
    uint64_t key = (req && *req != W_REQUEST_NULL) ? HKEY(*req) : 0;
    /* a substituted status only where a completion is recorded from it
     * (not for a null request) */
    MPI_Status local;
    MPI_Status *st = status == MPI_STATUS_IGNORE && key ? &local : status;
    uint64_t t0 = cm_now();
    wait_enter(ts, OP_TEST, t0, site, 1);
    CALL_TIMED(cm_r.Test(req, flag, st));
    int done = rc == MPI_SUCCESS && flag && *flag;
    if (done && key)
        complete(ts, key, st);
    rec_exit(ts, OP_TEST, t1, rc, done ? 1u : 0u, NULL, 0);
    DONE();
}

static int waitall_like(int op, int n, MPI_Request *reqs, int *flag, MPI_Status *statuses,
                        uint64_t site)
{
#define REAL_ALL(st) (op == OP_WAITALL ? cm_r.Waitall(n, reqs, st) : cm_r.Testall(n, reqs, flag, st))
    PASS_UNLESS_RECORDING(REAL_ALL(statuses));
    struct scratch s;
    if (n < 0 || scratch_init(&s, n, reqs, statuses, 1) != 0) {
        end(ts);
        errno = saved_errno;
        return REAL_ALL(statuses);
    }
    uint64_t t0 = cm_now();
    wait_enter(ts, op, t0, site, n);
    CALL_TIMED(REAL_ALL(s.st));
    int done = op == OP_WAITALL || (flag && *flag);
    if (done || rc == MPI_ERR_IN_STATUS)
        for (int i = 0; i < n; i++)
            if (s.keys[i] && completed_in(rc, &s.st[i]))
                complete(ts, s.keys[i], &s.st[i]);
    rec_exit(ts, op, t1, rc, (rc == MPI_SUCCESS && done) ? 1u : 0u, NULL, 0);
    scratch_free(&s);
    DONE();
#undef REAL_ALL
}

int core_waitall(int n, MPI_Request *reqs, MPI_Status *statuses, uint64_t site)
{
    return waitall_like(OP_WAITALL, n, reqs, NULL, statuses, site);
}

int core_testall(int n, MPI_Request *reqs, int *flag, MPI_Status *statuses, uint64_t site)
{
    return waitall_like(OP_TESTALL, n, reqs, flag, statuses, site);
}

static int waitany_like(int op, int n, MPI_Request *reqs, int *index, int *flag,
                        MPI_Status *status, uint64_t site)
{
#define REAL_ANY(st)                                                                          \
    (op == OP_WAITANY ? cm_r.Waitany(n, reqs, index, st) : cm_r.Testany(n, reqs, index, flag, st))
    PASS_UNLESS_RECORDING(REAL_ANY(status));
    struct scratch s;
    if (n < 0 || scratch_init(&s, n, reqs, NULL, 0) != 0) {
        end(ts);
        errno = saved_errno;
        return REAL_ANY(status);
    }
    MPI_Status local;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &local : status;
    uint64_t t0 = cm_now();
    wait_enter(ts, op, t0, site, n);
    CALL_TIMED(REAL_ANY(st));
    int done = rc == MPI_SUCCESS && (op == OP_WAITANY || (flag && *flag)) && index &&
               *index != MPI_UNDEFINED && *index >= 0 && *index < n;
    if (done && s.keys[*index])
        complete(ts, s.keys[*index], st);
    rec_exit(ts, op, t1, rc, done ? 1u : 0u, NULL, 0);
    scratch_free(&s);
    DONE();
#undef REAL_ANY
}

int core_waitany(int n, MPI_Request *reqs, int *index, MPI_Status *status, uint64_t site)
{
    return waitany_like(OP_WAITANY, n, reqs, index, NULL, status, site);
}

int core_testany(int n, MPI_Request *reqs, int *index, int *flag, MPI_Status *status,
                 uint64_t site)
{
    return waitany_like(OP_TESTANY, n, reqs, index, flag, status, site);
}

static int waitsome_like(int op, int n, MPI_Request *reqs, int *outcount, int *indices,
                         MPI_Status *statuses, uint64_t site)
{
#define REAL_SOME(st)                                                                         \
    (op == OP_WAITSOME ? cm_r.Waitsome(n, reqs, outcount, indices, st)                        \
                       : cm_r.Testsome(n, reqs, outcount, indices, st))
    PASS_UNLESS_RECORDING(REAL_SOME(statuses));
    struct scratch s;
    if (n < 0 || scratch_init(&s, n, reqs, statuses, 1) != 0) {
        end(ts);
        errno = saved_errno;
        return REAL_SOME(statuses);
    }
    uint64_t t0 = cm_now();
    wait_enter(ts, op, t0, site, n);
    CALL_TIMED(REAL_SOME(s.st));
    int some = 0;
    if ((rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS) && outcount && indices &&
        *outcount != MPI_UNDEFINED) {
        for (int k = 0; k < *outcount && k < n; k++) {
            int i = indices[k];
            if (i >= 0 && i < n && s.keys[i] && completed_in(rc, &s.st[k])) {
                complete(ts, s.keys[i], &s.st[k]);
                some = 1;
            }
        }
    }
    rec_exit(ts, op, t1, rc, some ? 1u : 0u, NULL, 0);
    scratch_free(&s);
    DONE();
#undef REAL_SOME
}

int core_waitsome(int n, MPI_Request *reqs, int *outcount, int *indices, MPI_Status *statuses,
                  uint64_t site)
{
    return waitsome_like(OP_WAITSOME, n, reqs, outcount, indices, statuses, site);
}

int core_testsome(int n, MPI_Request *reqs, int *outcount, int *indices, MPI_Status *statuses,
                  uint64_t site)
{
    return waitsome_like(OP_TESTSOME, n, reqs, outcount, indices, statuses, site);
}

/* ------------------------------------------------------------------------ */
/* Collectives                                                               */

/* The nonblocking form of a blocking collective's operation code. */
static int nonblocking_op(int op)
{
    switch (op) {
    case OP_ALLREDUCE: return OP_IALLREDUCE;
    case OP_SCAN: return OP_ISCAN;
    case OP_EXSCAN: return OP_IEXSCAN;
    case OP_REDUCE_SCATTER_BLOCK: return OP_IREDUCE_SCATTER_BLOCK;
    case OP_GATHER: return OP_IGATHER;
    case OP_SCATTER: return OP_ISCATTER;
    case OP_ALLGATHER: return OP_IALLGATHER;
    case OP_ALLTOALL: return OP_IALLTOALL;
    case OP_GATHERV: return OP_IGATHERV;
    case OP_ALLGATHERV: return OP_IALLGATHERV;
    default: return op;
    }
}

static void coll_enter(struct cm_thread *ts, int op, uint64_t t0, uint64_t site, MPI_Comm comm,
                       int32_t root, uint64_t sent, uint64_t recvd)
{
    uint64_t f[4];
    f[0] = comm_peer(ts, comm, 0, NULL);
    f[1] = (uint64_t)(uint32_t)root;
    f[2] = sent;
    f[3] = recvd;
    rec_enter(ts, op, t0, site, f, 4);
}

/* A collective: blocking (req NULL), or its nonblocking form (req: where
 * the request goes, op: the nonblocking operation), whose request is
 * entered into the request table so that the Wait / Test completing it
 * records a collective COMPLETION. */
#define COLL_REQ(op, call, root, sent, recvd, req)                                            \
    do {                                                                                      \
        PASS_UNLESS_RECORDING(call);                                                          \
        int32_t wroot = (root);                                                               \
        uint64_t sent_ = (sent), recvd_ = (recvd);                                            \
        uint64_t t0 = cm_now();                                                               \
        coll_enter(ts, op, t0, site, comm, wroot, sent_, recvd_);                             \
        CALL_TIMED(call);                                                                     \
        if (req) {                                                                            \
            uint64_t id = rc == MPI_SUCCESS ? req_insert_ex(*(req), REQ_COLLECTIVE, -1, 0, 0,   \
                                                            comm, NULL, 0, 0)                 \
                                            : 0;                                              \
            rec_exit(ts, op, t1, rc, 0, &id, 1);                                              \
        } else {                                                                              \
            rec_exit(ts, op, t1, rc, 0, NULL, 0);                                             \
        }                                                                                     \
        DONE();                                                                               \
    } while (0)

static uint64_t sum_bytes(const int *counts, int n, MPI_Datatype t)
{
    if (!counts || n <= 0)
        return 0;
    uint64_t total = 0;
    for (int i = 0; i < n; i++)
        if (counts[i] > 0)
            total += (uint64_t)counts[i];
    return total ? tbytes(1, t) * total : 0;
}

static int is_root(struct cm_thread *ts, MPI_Comm comm, int root)
{
    (void)ts;
    if (root == MPI_ROOT)
        return 1;
    int size, rank;
    comm_shape(comm, &size, &rank);
    return root == rank;
}

int core_barrier(MPI_Comm comm, MPI_Request *req, uint64_t site)
{
    COLL_REQ(req ? OP_IBARRIER : OP_BARRIER, req ? cm_r.Ibarrier(comm, req) : cm_r.Barrier(comm),
             -1, 0, 0, req);
}

int core_bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm,
               MPI_Request *req, uint64_t site)
{
    COLL_REQ(req ? OP_IBCAST : OP_BCAST,
             req ? cm_r.Ibcast(buf, count, type, root, comm, req)
                 : cm_r.Bcast(buf, count, type, root, comm),
             root_world(ts, comm, root), is_root(ts, comm, root) ? tbytes(count, type) : 0,
             is_root(ts, comm, root) ? 0 : tbytes(count, type), req);
}

int core_reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op mop, int root,
                MPI_Comm comm, MPI_Request *req, uint64_t site)
{
    COLL_REQ(req ? OP_IREDUCE : OP_REDUCE,
             req ? cm_r.Ireduce(sbuf, rbuf, count, type, mop, root, comm, req)
                 : cm_r.Reduce(sbuf, rbuf, count, type, mop, root, comm),
             root_world(ts, comm, root), tbytes(count, type),
             is_root(ts, comm, root) ? tbytes(count, type) : 0, req);
}

int core_allreduce_like(int op, const void *sbuf, void *rbuf, int count, MPI_Datatype type,
                        MPI_Op mop, MPI_Comm comm, MPI_Request *req, uint64_t site)
{
    int size = 0, rank = 0;
    if (op == OP_REDUCE_SCATTER_BLOCK && __atomic_load_n(&cm_recording, __ATOMIC_ACQUIRE))
        comm_shape(comm, &size, &rank);
#define ALLRED_CALL                                                                           \
    (op == OP_ALLREDUCE   ? cm_r.Allreduce(sbuf, rbuf, count, type, mop, comm)                \
     : op == OP_SCAN      ? cm_r.Scan(sbuf, rbuf, count, type, mop, comm)                     \
     : op == OP_EXSCAN    ? cm_r.Exscan(sbuf, rbuf, count, type, mop, comm)                   \
                          : cm_r.Reduce_scatter_block(sbuf, rbuf, count, type, mop, comm))
#define IALLRED_CALL                                                                          \
    (op == OP_ALLREDUCE   ? cm_r.Iallreduce(sbuf, rbuf, count, type, mop, comm, req)          \
     : op == OP_SCAN      ? cm_r.Iscan(sbuf, rbuf, count, type, mop, comm, req)               \
     : op == OP_EXSCAN    ? cm_r.Iexscan(sbuf, rbuf, count, type, mop, comm, req)             \
                          : cm_r.Ireduce_scatter_block(sbuf, rbuf, count, type, mop, comm, req))
    COLL_REQ(req ? nonblocking_op(op) : op, req ? IALLRED_CALL : ALLRED_CALL, -1,
             op == OP_REDUCE_SCATTER_BLOCK ? tbytes(count, type) * (uint64_t)(size > 0 ? size : 0)
                                           : tbytes(count, type),
             tbytes(count, type), req);
#undef ALLRED_CALL
#undef IALLRED_CALL
}

int core_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, MPI_Datatype type,
                        MPI_Op mop, MPI_Comm comm, MPI_Request *req, uint64_t site)
{
    int size = 0, rank = -1;
    if (__atomic_load_n(&cm_recording, __ATOMIC_ACQUIRE))
        comm_shape(comm, &size, &rank);
    COLL_REQ(req ? OP_IREDUCE_SCATTER : OP_REDUCE_SCATTER,
             req ? cm_r.Ireduce_scatter(sbuf, rbuf, rcounts, type, mop, comm, req)
                 : cm_r.Reduce_scatter(sbuf, rbuf, rcounts, type, mop, comm),
             -1, sum_bytes(rcounts, size, type),
             (rank >= 0 && rank < size && rcounts) ? tbytes(rcounts[rank], type) : 0, req);
}

int core_gather_like(int op, const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                     int rcount, MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *req,
                     uint64_t site)
{
    int size = 0, rank = -1;
    if (__atomic_load_n(&cm_recording, __ATOMIC_ACQUIRE))
        comm_shape(comm, &size, &rank);
    int rooted = op == OP_GATHER || op == OP_SCATTER;
    int me_root = rooted && (root == MPI_ROOT || root == rank);
    uint64_t p = (uint64_t)(size > 0 ? size : 0);
    uint64_t sent = 0, recvd = 0;
    int in_place = sbuf == MPI_IN_PLACE;
    switch (op) {
    case OP_GATHER:
        sent = in_place ? 0 : tbytes(scount, stype);
        recvd = me_root ? tbytes(rcount, rtype) * p : 0;
        break;
    case OP_SCATTER:
        sent = me_root ? tbytes(scount, stype) * p : 0;
        recvd = rbuf == MPI_IN_PLACE ? 0 : tbytes(rcount, rtype);
        break;
    case OP_ALLGATHER:
        sent = in_place ? tbytes(rcount, rtype) : tbytes(scount, stype);
        recvd = tbytes(rcount, rtype) * p;
        break;
    default: /* OP_ALLTOALL */
        sent = in_place ? tbytes(rcount, rtype) * p : tbytes(scount, stype) * p;
        recvd = tbytes(rcount, rtype) * p;
        break;
    }
#define GATHER_CALL                                                                           \
    (op == OP_GATHER     ? cm_r.Gather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm)  \
     : op == OP_SCATTER  ? cm_r.Scatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm) \
     : op == OP_ALLGATHER ? cm_r.Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm)    \
                          : cm_r.Alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm))
#define IGATHER_CALL                                                                          \
    (op == OP_GATHER ? cm_r.Igather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm, req)  \
     : op == OP_SCATTER                                                                         \
         ? cm_r.Iscatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm, req)             \
     : op == OP_ALLGATHER ? cm_r.Iallgather(sbuf, scount, stype, rbuf, rcount, rtype, comm, req) \
                          : cm_r.Ialltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm, req))
    COLL_REQ(req ? nonblocking_op(op) : op, req ? IGATHER_CALL : GATHER_CALL,
             rooted ? root_world(ts, comm, root) : -1, sent, recvd, req);
#undef GATHER_CALL
#undef IGATHER_CALL
}

int core_gatherv(int op, const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                 const int *rcounts, const int *displs, MPI_Datatype rtype, int root,
                 MPI_Comm comm, MPI_Request *req, uint64_t site)
{
    int size = 0, rank = -1;
    if (__atomic_load_n(&cm_recording, __ATOMIC_ACQUIRE))
        comm_shape(comm, &size, &rank);
    int rooted = op == OP_GATHERV;
    int me_root = !rooted || root == MPI_ROOT || root == rank;
    uint64_t recvd = me_root ? sum_bytes(rcounts, size, rtype) : 0;
    uint64_t sent = sbuf == MPI_IN_PLACE
                        ? ((!rooted && rank >= 0 && rank < size && rcounts) ? tbytes(rcounts[rank], rtype) : 0)
                        : tbytes(scount, stype);
#define GATHERV_CALL                                                                           \
    (op == OP_GATHERV                                                                          \
         ? cm_r.Gatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm)         \
         : cm_r.Allgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm))
#define IGATHERV_CALL                                                                          \
    (op == OP_GATHERV                                                                           \
         ? cm_r.Igatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm, req)    \
         : cm_r.Iallgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm, req))
    COLL_REQ(req ? nonblocking_op(op) : op, req ? IGATHERV_CALL : GATHERV_CALL,
             rooted ? root_world(ts, comm, root) : -1, sent, recvd, req);
#undef GATHERV_CALL
#undef IGATHERV_CALL
}

int core_scatterv(const void *sbuf, const int *scounts, const int *displs, MPI_Datatype stype,
                  void *rbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm,
                  MPI_Request *req, uint64_t site)
{
    int size = 0, rank = -1;
    if (__atomic_load_n(&cm_recording, __ATOMIC_ACQUIRE))
        comm_shape(comm, &size, &rank);
    int me_root = root == MPI_ROOT || root == rank;
    COLL_REQ(req ? OP_ISCATTERV : OP_SCATTERV,
             req ? cm_r.Iscatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm,
                                  req)
                 : cm_r.Scatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm),
             root_world(ts, comm, root), me_root ? sum_bytes(scounts, size, stype) : 0,
             rbuf == MPI_IN_PLACE ? 0 : tbytes(rcount, rtype), req);
}

int core_alltoallv(const void *sbuf, const int *scounts, const int *sdispls, MPI_Datatype stype,
                   void *rbuf, const int *rcounts, const int *rdispls, MPI_Datatype rtype,
                   MPI_Comm comm, MPI_Request *req, uint64_t site)
{
    int size = 0, rank = -1;
    if (__atomic_load_n(&cm_recording, __ATOMIC_ACQUIRE))
        comm_shape(comm, &size, &rank);
    uint64_t recvd = sum_bytes(rcounts, size, rtype);
    COLL_REQ(req ? OP_IALLTOALLV : OP_ALLTOALLV,
             req ? cm_r.Ialltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype,
                                   comm, req)
                 : cm_r.Alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype,
                                  comm),
             -1, sbuf == MPI_IN_PLACE ? recvd : sum_bytes(scounts, size, stype), recvd, req);
}

int core_alltoallw(const void *sbuf, const int *scounts, const int *sdispls,
                   const MPI_Datatype *stypes, void *rbuf, const int *rcounts, const int *rdispls,
                   const MPI_Datatype *rtypes, MPI_Comm comm, MPI_Request *req, uint64_t site)
{
    int size = 0, rank = -1;
    uint64_t sent = 0, recvd = 0;
    if (__atomic_load_n(&cm_recording, __ATOMIC_ACQUIRE)) {
        comm_shape(comm, &size, &rank);
        for (int i = 0; i < size; i++) {
            if (rcounts && rtypes)
                recvd += tbytes(rcounts[i], rtypes[i]);
            if (sbuf != MPI_IN_PLACE && scounts && stypes)
                sent += tbytes(scounts[i], stypes[i]);
        }
        if (sbuf == MPI_IN_PLACE)
            sent = recvd;
    }
    COLL_REQ(req ? OP_IALLTOALLW : OP_ALLTOALLW,
             req ? cm_r.Ialltoallw(sbuf, scounts, sdispls, stypes, rbuf, rcounts, rdispls, rtypes,
                                   comm, req)
                 : cm_r.Alltoallw(sbuf, scounts, sdispls, stypes, rbuf, rcounts, rdispls, rtypes,
                                  comm),
             -1, sent, recvd, req);
}

/* ------------------------------------------------------------------------ */
/* Communicator creation                                                     */

static int creation(int op, MPI_Comm parent, int color, int key, MPI_Group group,
                    MPI_Comm *newcomm, uint64_t site)
{
#define CREATE_CALL                                                                           \
    (op == OP_COMM_SPLIT ? cm_r.Comm_split(parent, color, key, newcomm)                       \
     : op == OP_COMM_DUP ? cm_r.Comm_dup(parent, newcomm)                                     \
                         : cm_r.Comm_create(parent, group, newcomm))
    cm_resolve();
    if (!__atomic_load_n(&cm_recording, __ATOMIC_ACQUIRE))
        return CREATE_CALL;
    /* the bookkeeping runs even on a nested or failed thread: the creation
     * counters must advance alike on every member */
    struct cm_thread *ts = begin();
    int saved_errno = errno;
    uint64_t seq;
    uint64_t pid = comm_parent_begin(ts, parent, &seq);
    uint64_t t0 = cm_now();
    if (ts)
        rec_enter(ts, op, t0, site, &pid, 1);
    errno = saved_errno;
    int rc = CREATE_CALL;
    uint64_t t1 = cm_now();
    saved_errno = errno;
    uint64_t id = CONTEND_MPI_COMM_NULL_ID;
    if (rc == MPI_SUCCESS && newcomm)
        id = comm_created(ts, pid, seq, *newcomm);
    if (ts) {
        rec_exit(ts, op, t1, rc, 0, &id, 1);
        end(ts);
    }
    errno = saved_errno;
    return rc;
#undef CREATE_CALL
}

int core_comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm, uint64_t site)
{
    return creation(OP_COMM_SPLIT, comm, color, key, (MPI_Group)0, newcomm, site);
}

int core_comm_dup(MPI_Comm comm, MPI_Comm *newcomm, uint64_t site)
{
    return creation(OP_COMM_DUP, comm, 0, 0, (MPI_Group)0, newcomm, site);
}

int core_comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm, uint64_t site)
{
    return creation(OP_COMM_CREATE, comm, 0, 0, group, newcomm, site);
}

int core_comm_free(MPI_Comm *comm, uint64_t site)
{
    PASS_UNLESS_RECORDING(cm_r.Comm_free(comm));
    uint64_t key = comm ? HKEY(*comm) : 0;
    uint64_t id = comm ? comm_peer(ts, *comm, 0, NULL) : CONTEND_MPI_COMM_NULL_ID;
    uint64_t t0 = cm_now();
    rec_enter(ts, OP_COMM_FREE, t0, site, &id, 1);
    CALL_TIMED(cm_r.Comm_free(comm));
    if (rc == MPI_SUCCESS && key) {
        spin_lock(&comm_lock);
        struct comm_ent *e = comm_find_locked(key);
        if (e) {
            free(e->ranks);
            free(e->remote);
            e->ranks = e->remote = NULL;
            e->state = 2;
        }
        spin_unlock(&comm_lock);
    }
    rec_exit(ts, OP_COMM_FREE, t1, rc, 0, NULL, 0);
    DONE();
}

/* Occurrences of a creation key on this rank (MPI_Comm_create_group,
 * MPI_Intercomm_create: collective over a group, not over the parent, so
 * the parent's creation counter is not the same on all members; the k-th
 * creation with the same parent, tag and members is). */
#define OCC_SLOTS 512u
static uint64_t occ_keys[OCC_SLOTS];
static uint64_t occ_counts[OCC_SLOTS];
static int occ_lock;

static uint64_t occurrence(uint64_t key)
{
    key |= 1; /* never 0 (free) */
    uint64_t n = 0;
    spin_lock(&occ_lock);
    uint32_t h = (uint32_t)(mix64(key) % OCC_SLOTS);
    for (uint32_t i = 0; i < OCC_SLOTS; i++) {
        uint32_t j = (h + i) % OCC_SLOTS;
        if (occ_keys[j] == key || occ_keys[j] == 0) {
            occ_keys[j] = key;
            n = occ_counts[j]++;
            break;
        }
    }
    spin_unlock(&occ_lock);
    return n;
}

/* A hash of a set of world ranks (order-independent). */
static uint64_t rank_set_hash(const uint32_t *ranks, int32_t n, uint64_t h)
{
    uint64_t sum = 0, x = 0;
    for (int32_t i = 0; i < n; i++) {
        uint64_t v = mix64((uint64_t)(ranks ? ranks[i] : (uint32_t)i) + 0x9e37);
        sum += v;
        x ^= v;
    }
    return mix64(h ^ mix64(sum) ^ (x << 1) ^ (uint64_t)n);
}

/* After MPI_Comm_create_group / MPI_Intercomm_create: registers the new
 * communicator under an id every member computes alike from (kind, tag,
 * the members' world ranks: for an intercommunicator both groups, k-th
 * such creation). An intercommunicator's members are recorded as the
 * sorted union of both groups, the same list on both sides. */
static uint64_t comm_created_group(struct cm_thread *ts, uint64_t kind, int tag, MPI_Comm c)
{
    if (c == W_COMM_NULL)
        return CONTEND_MPI_COMM_NULL_ID;
    struct comm_ent d;
    if (comm_describe(c, &d) != 0)
        return CONTEND_MPI_COMM_NULL_ID;
    uint64_t h = mix64(kind * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uint32_t)tag);
    if (!d.inter) {
        h = rank_set_hash(d.ranks, d.size, h);
        d.id = comm_child_id(h, occurrence(h), &d);
        return comm_insert(ts, &d);
    }
    /* both sides must agree: the groups combined symmetrically, and the
     * members (for the id and the record) as the sorted union */
    uint64_t a = rank_set_hash(d.ranks, d.size, 0), b = rank_set_hash(d.remote, d.rsize, 0);
    h = mix64(h ^ (a + b) ^ mix64(a ^ b));
    int32_t n = d.size + d.rsize;
    uint32_t *all = (d.ranks && d.remote) ? malloc(sizeof(uint32_t) * (size_t)n) : NULL;
    struct comm_ent shown = d;
    if (all) {
        memcpy(all, d.ranks, sizeof(uint32_t) * (size_t)d.size);
        memcpy(all + d.size, d.remote, sizeof(uint32_t) * (size_t)d.rsize);
        for (int32_t i = 1; i < n; i++)
            for (int32_t j = i; j > 0 && all[j - 1] > all[j]; j--) {
                uint32_t t = all[j];
                all[j] = all[j - 1];
                all[j - 1] = t;
            }
        shown.ranks = all;
        shown.size = n;
    }
    d.id = comm_child_id(h, occurrence(h), &shown);
    shown.id = d.id;
    comm_record(ts, &shown);
    free(all);
    /* the table keeps the local group (peers translate through the
     * remote one); recorded above */
    return comm_insert(NULL, &d);
}

int core_comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm,
                           uint64_t site)
{
    cm_resolve();
    if (!__atomic_load_n(&cm_recording, __ATOMIC_ACQUIRE))
        return cm_r.Comm_create_group(comm, group, tag, newcomm);
    struct cm_thread *ts = begin();
    int saved_errno = errno;
    uint64_t pid = comm_peer(ts, comm, 0, NULL);
    uint64_t t0 = cm_now();
    if (ts)
        rec_enter(ts, OP_COMM_CREATE_GROUP, t0, site, &pid, 1);
    errno = saved_errno;
    int rc = cm_r.Comm_create_group(comm, group, tag, newcomm);
    uint64_t t1 = cm_now();
    saved_errno = errno;
    uint64_t id = CONTEND_MPI_COMM_NULL_ID;
    if (rc == MPI_SUCCESS && newcomm)
        id = comm_created_group(ts, 1, tag, *newcomm);
    if (ts) {
        rec_exit(ts, OP_COMM_CREATE_GROUP, t1, rc, 0, &id, 1);
        end(ts);
    }
    errno = saved_errno;
    return rc;
}

int core_intercomm_create(MPI_Comm local, int local_leader, MPI_Comm peer, int remote_leader,
                          int tag, MPI_Comm *newcomm, uint64_t site)
{
    cm_resolve();
    if (!__atomic_load_n(&cm_recording, __ATOMIC_ACQUIRE))
        return cm_r.Intercomm_create(local, local_leader, peer, remote_leader, tag, newcomm);
    struct cm_thread *ts = begin();
    int saved_errno = errno;
    uint64_t lid = comm_peer(ts, local, 0, NULL);
    uint64_t t0 = cm_now();
    if (ts)
        rec_enter(ts, OP_INTERCOMM_CREATE, t0, site, &lid, 1);
    errno = saved_errno;
    int rc = cm_r.Intercomm_create(local, local_leader, peer, remote_leader, tag, newcomm);
    uint64_t t1 = cm_now();
    saved_errno = errno;
    uint64_t id = CONTEND_MPI_COMM_NULL_ID;
    if (rc == MPI_SUCCESS && newcomm)
        id = comm_created_group(ts, 2, tag, *newcomm);
    if (ts) {
        rec_exit(ts, OP_INTERCOMM_CREATE, t1, rc, 0, &id, 1);
        end(ts);
    }
    errno = saved_errno;
    return rc;
}

int core_comm_idup(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *req, uint64_t site)
{
    cm_resolve();
    if (!__atomic_load_n(&cm_recording, __ATOMIC_ACQUIRE))
        return cm_r.Comm_idup(comm, newcomm, req);
    /* the creation counter advances alike on every member, recorded or
     * not (as for Comm_dup) */
    struct cm_thread *ts = begin();
    int saved_errno = errno;
    uint64_t seq;
    uint64_t pid = comm_parent_begin(ts, comm, &seq);
    uint64_t t0 = cm_now();
    if (ts)
        rec_enter(ts, OP_COMM_IDUP, t0, site, &pid, 1);
    errno = saved_errno;
    int rc = cm_r.Comm_idup(comm, newcomm, req);
    uint64_t t1 = cm_now();
    saved_errno = errno;
    uint64_t id = 0;
    if (rc == MPI_SUCCESS && req && newcomm)
        id = req_insert_ex(*req, REQ_IDUP, -1, 0, 0, comm, newcomm, pid, seq);
    if (ts) {
        rec_exit(ts, OP_COMM_IDUP, t1, rc, 0, &id, 1);
        end(ts);
    }
    errno = saved_errno;
    return rc;
}

/* MPI_Abort: the ENTER record (in the trace's shared mapping, so it
 * survives the process) says the rank ended inside it; the maps are
 * written for the call sites. */
int core_abort(MPI_Comm comm, int errorcode, uint64_t site)
{
    cm_resolve();
    struct cm_thread *ts = begin();
    if (ts) {
        int saved_errno = errno;
        uint64_t f[2];
        f[0] = comm_peer(ts, comm, 0, NULL);
        f[1] = (uint64_t)(uint32_t)errorcode;
        rec_enter(ts, OP_ABORT, cm_now(), site, f, 2);
        cm_maps_snapshot();
        errno = saved_errno;
        end(ts);
    }
    return cm_r.Abort(comm, errorcode);
}

/* ------------------------------------------------------------------------ */
/* The C entry points                                                        */

CM_PUBLIC int MPI_Init(int *argc, char ***argv)
{
    return core_init(OP_INIT, argc, argv, 0, NULL, CM_SITE());
}
CM_PUBLIC int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    return core_init(OP_INIT_THREAD, argc, argv, required, provided, CM_SITE());
}
CM_PUBLIC int MPI_Finalize(void) { return core_finalize(CM_SITE()); }

#define SEND_WRAPPER(Name, OP)                                                                \
    CM_PUBLIC int MPI_##Name(const void *buf, int count, MPI_Datatype type, int dest, int tag, \
                             MPI_Comm comm)                                                   \
    {                                                                                         \
        return core_send(OP, buf, count, type, dest, tag, comm, CM_SITE());                   \
    }
SEND_WRAPPER(Send, OP_SEND)
SEND_WRAPPER(Ssend, OP_SSEND)
SEND_WRAPPER(Bsend, OP_BSEND)
SEND_WRAPPER(Rsend, OP_RSEND)

#define ISEND_WRAPPER(Name, OP)                                                               \
    CM_PUBLIC int MPI_##Name(const void *buf, int count, MPI_Datatype type, int dest, int tag, \
                             MPI_Comm comm, MPI_Request *req)                                 \
    {                                                                                         \
        return core_isend(OP, buf, count, type, dest, tag, comm, req, CM_SITE());             \
    }
ISEND_WRAPPER(Isend, OP_ISEND)
ISEND_WRAPPER(Issend, OP_ISSEND)
ISEND_WRAPPER(Ibsend, OP_IBSEND)
ISEND_WRAPPER(Irsend, OP_IRSEND)

CM_PUBLIC int MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag,
                       MPI_Comm comm, MPI_Status *status)
{
    return core_recv(buf, count, type, source, tag, comm, status, CM_SITE());
}
CM_PUBLIC int MPI_Irecv(void *buf, int count, MPI_Datatype type, int source, int tag,
                        MPI_Comm comm, MPI_Request *req)
{
    return core_irecv(buf, count, type, source, tag, comm, req, CM_SITE());
}
CM_PUBLIC int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag,
                           void *rbuf, int rcount, MPI_Datatype rtype, int source, int rtag,
                           MPI_Comm comm, MPI_Status *status)
{
    return core_sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm,
                         status, CM_SITE());
}
CM_PUBLIC int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype type, int dest, int stag,
                                   int source, int rtag, MPI_Comm comm, MPI_Status *status)
{
    return core_sendrecv_replace(buf, count, type, dest, stag, source, rtag, comm, status,
                                 CM_SITE());
}
CM_PUBLIC int MPI_Wait(MPI_Request *req, MPI_Status *status)
{
    return core_wait(req, status, CM_SITE());
}
CM_PUBLIC int MPI_Test(MPI_Request *req, int *flag, MPI_Status *status)
{
    return core_test(req, flag, status, CM_SITE());
}
CM_PUBLIC int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status statuses[])
{
    return core_waitall(n, reqs, statuses, CM_SITE());
}
CM_PUBLIC int MPI_Testall(int n, MPI_Request reqs[], int *flag, MPI_Status statuses[])
{
    return core_testall(n, reqs, flag, statuses, CM_SITE());
}
CM_PUBLIC int MPI_Waitany(int n, MPI_Request reqs[], int *index, MPI_Status *status)
{
    return core_waitany(n, reqs, index, status, CM_SITE());
}
CM_PUBLIC int MPI_Testany(int n, MPI_Request reqs[], int *index, int *flag, MPI_Status *status)
{
    return core_testany(n, reqs, index, flag, status, CM_SITE());
}
CM_PUBLIC int MPI_Waitsome(int n, MPI_Request reqs[], int *outcount, int indices[],
                           MPI_Status statuses[])
{
    return core_waitsome(n, reqs, outcount, indices, statuses, CM_SITE());
}
CM_PUBLIC int MPI_Testsome(int n, MPI_Request reqs[], int *outcount, int indices[],
                           MPI_Status statuses[])
{
    return core_testsome(n, reqs, outcount, indices, statuses, CM_SITE());
}
CM_PUBLIC int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    return core_probe(source, tag, comm, status, CM_SITE());
}
CM_PUBLIC int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
{
    return core_iprobe(source, tag, comm, flag, status, CM_SITE());
}
CM_PUBLIC int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message,
                         MPI_Status *status)
{
    return core_mprobe(source, tag, comm, message, status, CM_SITE());
}
CM_PUBLIC int MPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,
                          MPI_Status *status)
{
    return core_improbe(source, tag, comm, flag, message, status, CM_SITE());
}
CM_PUBLIC int MPI_Mrecv(void *buf, int count, MPI_Datatype type, MPI_Message *message,
                        MPI_Status *status)
{
    return core_mrecv(buf, count, type, message, status, CM_SITE());
}
CM_PUBLIC int MPI_Imrecv(void *buf, int count, MPI_Datatype type, MPI_Message *message,
                         MPI_Request *request)
{
    return core_imrecv(buf, count, type, message, request, CM_SITE());
}
CM_PUBLIC int MPI_Barrier(MPI_Comm comm) { return core_barrier(comm, NULL, CM_SITE()); }
CM_PUBLIC int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm)
{
    return core_bcast(buf, count, type, root, comm, NULL, CM_SITE());
}
CM_PUBLIC int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
                         int root, MPI_Comm comm)
{
    return core_reduce(sbuf, rbuf, count, type, op, root, comm, NULL, CM_SITE());
}
CM_PUBLIC int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
                            MPI_Comm comm)
{
    return core_allreduce_like(OP_ALLREDUCE, sbuf, rbuf, count, type, op, comm, NULL, CM_SITE());
}
CM_PUBLIC int MPI_Scan(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
                       MPI_Comm comm)
{
    return core_allreduce_like(OP_SCAN, sbuf, rbuf, count, type, op, comm, NULL, CM_SITE());
}
CM_PUBLIC int MPI_Exscan(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
                         MPI_Comm comm)
{
    return core_allreduce_like(OP_EXSCAN, sbuf, rbuf, count, type, op, comm, NULL, CM_SITE());
}
CM_PUBLIC int MPI_Reduce_scatter_block(const void *sbuf, void *rbuf, int count, MPI_Datatype type,
                                       MPI_Op op, MPI_Comm comm)
{
    return core_allreduce_like(OP_REDUCE_SCATTER_BLOCK, sbuf, rbuf, count, type, op, comm,
                               NULL, CM_SITE());
}
CM_PUBLIC int MPI_Reduce_scatter(const void *sbuf, void *rbuf, const int rcounts[],
                                 MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    return core_reduce_scatter(sbuf, rbuf, rcounts, type, op, comm, NULL, CM_SITE());
}

#define GATHER_WRAPPER(Name, OP)                                                              \
    CM_PUBLIC int MPI_##Name(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,    \
                             int rcount, MPI_Datatype rtype, int root, MPI_Comm comm)         \
    {                                                                                         \
        return core_gather_like(OP, sbuf, scount, stype, rbuf, rcount, rtype, root, comm,     \
                                NULL, CM_SITE());                                                   \
    }
GATHER_WRAPPER(Gather, OP_GATHER)
GATHER_WRAPPER(Scatter, OP_SCATTER)

#define ALLGATHER_WRAPPER(Name, OP)                                                           \
    CM_PUBLIC int MPI_##Name(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,    \
                             int rcount, MPI_Datatype rtype, MPI_Comm comm)                   \
    {                                                                                         \
        return core_gather_like(OP, sbuf, scount, stype, rbuf, rcount, rtype, 0, comm,        \
                                NULL, CM_SITE());                                                   \
    }
ALLGATHER_WRAPPER(Allgather, OP_ALLGATHER)
ALLGATHER_WRAPPER(Alltoall, OP_ALLTOALL)

CM_PUBLIC int MPI_Gatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                          const int rcounts[], const int displs[], MPI_Datatype rtype, int root,
                          MPI_Comm comm)
{
    return core_gatherv(OP_GATHERV, sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm,
                        NULL, CM_SITE());
}
CM_PUBLIC int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                             const int rcounts[], const int displs[], MPI_Datatype rtype,
                             MPI_Comm comm)
{
    return core_gatherv(OP_ALLGATHERV, sbuf, scount, stype, rbuf, rcounts, displs, rtype, 0, comm,
                        NULL, CM_SITE());
}
CM_PUBLIC int MPI_Scatterv(const void *sbuf, const int scounts[], const int displs[],
                           MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
                           int root, MPI_Comm comm)
{
    return core_scatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm,
                         NULL, CM_SITE());
}
CM_PUBLIC int MPI_Alltoallv(const void *sbuf, const int scounts[], const int sdispls[],
                            MPI_Datatype stype, void *rbuf, const int rcounts[],
                            const int rdispls[], MPI_Datatype rtype, MPI_Comm comm)
{
    return core_alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm,
                          NULL, CM_SITE());
}
CM_PUBLIC int MPI_Alltoallw(const void *sbuf, const int scounts[], const int sdispls[],
                            const MPI_Datatype stypes[], void *rbuf, const int rcounts[],
                            const int rdispls[], const MPI_Datatype rtypes[], MPI_Comm comm)
{
    return core_alltoallw(sbuf, scounts, sdispls, stypes, rbuf, rcounts, rdispls, rtypes, comm,
                          NULL, CM_SITE());
}
CM_PUBLIC int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
    return core_comm_split(comm, color, key, newcomm, CM_SITE());
}
CM_PUBLIC int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
    return core_comm_dup(comm, newcomm, CM_SITE());
}
CM_PUBLIC int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
{
    return core_comm_create(comm, group, newcomm, CM_SITE());
}
CM_PUBLIC int MPI_Comm_free(MPI_Comm *comm) { return core_comm_free(comm, CM_SITE()); }
CM_PUBLIC int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm)
{
    return core_comm_create_group(comm, group, tag, newcomm, CM_SITE());
}
CM_PUBLIC int MPI_Intercomm_create(MPI_Comm local, int local_leader, MPI_Comm peer,
                                   int remote_leader, int tag, MPI_Comm *newcomm)
{
    return core_intercomm_create(local, local_leader, peer, remote_leader, tag, newcomm,
                                 CM_SITE());
}
CM_PUBLIC int MPI_Comm_idup(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *req)
{
    return core_comm_idup(comm, newcomm, req, CM_SITE());
}
CM_PUBLIC int MPI_Abort(MPI_Comm comm, int errorcode) { return core_abort(comm, errorcode, CM_SITE()); }

/* Nonblocking collectives */
CM_PUBLIC int MPI_Ibarrier(MPI_Comm comm, MPI_Request *req)
{
    return core_barrier(comm, req, CM_SITE());
}
CM_PUBLIC int MPI_Ibcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm,
                         MPI_Request *req)
{
    return core_bcast(buf, count, type, root, comm, req, CM_SITE());
}
CM_PUBLIC int MPI_Ireduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
                          int root, MPI_Comm comm, MPI_Request *req)
{
    return core_reduce(sbuf, rbuf, count, type, op, root, comm, req, CM_SITE());
}
#define IALLRED_WRAPPER(Name, OP)                                                             \
    CM_PUBLIC int MPI_##Name(const void *sbuf, void *rbuf, int count, MPI_Datatype type,      \
                             MPI_Op op, MPI_Comm comm, MPI_Request *req)                      \
    {                                                                                         \
        return core_allreduce_like(OP, sbuf, rbuf, count, type, op, comm, req, CM_SITE());    \
    }
IALLRED_WRAPPER(Iallreduce, OP_ALLREDUCE)
IALLRED_WRAPPER(Iscan, OP_SCAN)
IALLRED_WRAPPER(Iexscan, OP_EXSCAN)
IALLRED_WRAPPER(Ireduce_scatter_block, OP_REDUCE_SCATTER_BLOCK)
CM_PUBLIC int MPI_Ireduce_scatter(const void *sbuf, void *rbuf, const int rcounts[],
                                  MPI_Datatype type, MPI_Op op, MPI_Comm comm, MPI_Request *req)
{
    return core_reduce_scatter(sbuf, rbuf, rcounts, type, op, comm, req, CM_SITE());
}
#define IGATHER_WRAPPER(Name, OP)                                                             \
    CM_PUBLIC int MPI_##Name(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,    \
                             int rcount, MPI_Datatype rtype, int root, MPI_Comm comm,         \
                             MPI_Request *req)                                                \
    {                                                                                         \
        return core_gather_like(OP, sbuf, scount, stype, rbuf, rcount, rtype, root, comm,     \
                                req, CM_SITE());                                              \
    }
IGATHER_WRAPPER(Igather, OP_GATHER)
IGATHER_WRAPPER(Iscatter, OP_SCATTER)
#define IALLGATHER_WRAPPER(Name, OP)                                                          \
    CM_PUBLIC int MPI_##Name(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,    \
                             int rcount, MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req) \
    {                                                                                         \
        return core_gather_like(OP, sbuf, scount, stype, rbuf, rcount, rtype, 0, comm, req,   \
                                CM_SITE());                                                   \
    }
IALLGATHER_WRAPPER(Iallgather, OP_ALLGATHER)
IALLGATHER_WRAPPER(Ialltoall, OP_ALLTOALL)
CM_PUBLIC int MPI_Igatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                           const int rcounts[], const int displs[], MPI_Datatype rtype, int root,
                           MPI_Comm comm, MPI_Request *req)
{
    return core_gatherv(OP_GATHERV, sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm,
                        req, CM_SITE());
}
CM_PUBLIC int MPI_Iallgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                              const int rcounts[], const int displs[], MPI_Datatype rtype,
                              MPI_Comm comm, MPI_Request *req)
{
    return core_gatherv(OP_ALLGATHERV, sbuf, scount, stype, rbuf, rcounts, displs, rtype, 0, comm,
                        req, CM_SITE());
}
CM_PUBLIC int MPI_Iscatterv(const void *sbuf, const int scounts[], const int displs[],
                            MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
                            int root, MPI_Comm comm, MPI_Request *req)
{
    return core_scatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm, req,
                         CM_SITE());
}
CM_PUBLIC int MPI_Ialltoallv(const void *sbuf, const int scounts[], const int sdispls[],
                             MPI_Datatype stype, void *rbuf, const int rcounts[],
                             const int rdispls[], MPI_Datatype rtype, MPI_Comm comm,
                             MPI_Request *req)
{
    return core_alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm, req,
                          CM_SITE());
}
CM_PUBLIC int MPI_Ialltoallw(const void *sbuf, const int scounts[], const int sdispls[],
                             const MPI_Datatype stypes[], void *rbuf, const int rcounts[],
                             const int rdispls[], const MPI_Datatype rtypes[], MPI_Comm comm,
                             MPI_Request *req)
{
    return core_alltoallw(sbuf, scounts, sdispls, stypes, rbuf, rcounts, rdispls, rtypes, comm,
                          req, CM_SITE());
}

/* Creation calls recorded as communicators only (not events). */
#define UNTRACKED_CREATION(parent, call, newcomm)                                             \
    do {                                                                                      \
        cm_resolve();                                                                         \
        if (!__atomic_load_n(&cm_recording, __ATOMIC_ACQUIRE))                                \
            return call;                                                                      \
        struct cm_thread *ts = begin();                                                       \
        int saved_errno = errno;                                                              \
        uint64_t seq;                                                                         \
        uint64_t pid = comm_parent_begin(ts, parent, &seq);                                   \
        errno = saved_errno;                                                                  \
        int rc = call;                                                                        \
        saved_errno = errno;                                                                  \
        if (rc == MPI_SUCCESS && (newcomm))                                                   \
            comm_created(ts, pid, seq, *(newcomm));                                           \
        if (ts)                                                                               \
            end(ts);                                                                          \
        errno = saved_errno;                                                                  \
        return rc;                                                                            \
    } while (0)

int core_comm_split_type(MPI_Comm comm, int type, int key, MPI_Info info, MPI_Comm *newcomm)
{
    UNTRACKED_CREATION(comm, cm_r.Comm_split_type(comm, type, key, info, newcomm), newcomm);
}

int core_cart_create(MPI_Comm comm, int ndims, const int *dims, const int *periods, int reorder,
                     MPI_Comm *newcomm)
{
    UNTRACKED_CREATION(comm, cm_r.Cart_create(comm, ndims, dims, periods, reorder, newcomm),
                       newcomm);
}

int core_cart_sub(MPI_Comm comm, const int *remain, MPI_Comm *newcomm)
{
    UNTRACKED_CREATION(comm, cm_r.Cart_sub(comm, remain, newcomm), newcomm);
}

CM_PUBLIC int MPI_Comm_split_type(MPI_Comm comm, int type, int key, MPI_Info info,
                                  MPI_Comm *newcomm)
{
    return core_comm_split_type(comm, type, key, info, newcomm);
}

CM_PUBLIC int MPI_Cart_create(MPI_Comm comm, int ndims, const int dims[], const int periods[],
                              int reorder, MPI_Comm *newcomm)
{
    return core_cart_create(comm, ndims, dims, periods, reorder, newcomm);
}

CM_PUBLIC int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm)
{
    return core_cart_sub(comm, remain_dims, newcomm);
}

CM_PUBLIC int MPI_Dist_graph_create_adjacent(MPI_Comm comm, int indegree, const int sources[],
                                             const int sourceweights[], int outdegree,
                                             const int destinations[], const int destweights[],
                                             MPI_Info info, int reorder, MPI_Comm *newcomm)
{
    UNTRACKED_CREATION(comm,
                       cm_r.Dist_graph_create_adjacent(comm, indegree, sources, sourceweights,
                                                       outdegree, destinations, destweights, info,
                                                       reorder, newcomm),
                       newcomm);
}

/* ------------------------------------------------------------------------ */
/* Persistent requests                                                       */

/* Persistent requests created by a wrapped *_init call, by handle: the
 * envelope each MPI_Start / MPI_Startall activation posts. Each activation
 * gets a fresh request id in the request table (req_insert), so the
 * Wait / Test completion logic is the same as for Isend / Irecv. The entry
 * stays while the request is inactive and is removed by MPI_Request_free. */
#define PREQ_SLOTS 4096u

struct preq_ent {
    uint64_t key; /* HKEY(request) */
    int state;    /* 0 free, 1 used, 2 deleted (probe on) */
    uint32_t flags; /* CONTEND_MPI_START_* */
    int32_t peer; /* world rank / PEER_* */
    int32_t tag;
    uint64_t bytes;
    uint64_t comm_id;
    MPI_Comm comm;
};

static struct preq_ent preqs[PREQ_SLOTS];
static int preq_lock;

/* The entry of `key` (locked), or NULL. */
static struct preq_ent *preq_find_locked(uint64_t key)
{
    uint32_t h = (uint32_t)(mix64(key) & (PREQ_SLOTS - 1));
    for (uint32_t i = 0; i < PREQ_SLOTS; i++) {
        struct preq_ent *e = &preqs[(h + i) & (PREQ_SLOTS - 1)];
        if (e->state == 0)
            return NULL;
        if (e->state == 1 && e->key == key)
            return e;
    }
    return NULL;
}

static void preq_put(MPI_Request r, uint32_t flags, int32_t peer, int32_t tag, uint64_t bytes,
                     uint64_t comm_id, MPI_Comm comm)
{
    uint64_t key = HKEY(r);
    if (key == 0 || r == W_REQUEST_NULL)
        return;
    spin_lock(&preq_lock);
    struct preq_ent *e = preq_find_locked(key); /* a stale entry of a reused handle */
    if (!e) {
        uint32_t h = (uint32_t)(mix64(key) & (PREQ_SLOTS - 1));
        for (uint32_t i = 0; i < PREQ_SLOTS; i++) {
            struct preq_ent *c = &preqs[(h + i) & (PREQ_SLOTS - 1)];
            if (c->state != 1) {
                e = c;
                break;
            }
        }
    }
    if (e) {
        e->key = key;
        e->state = 1;
        e->flags = flags;
        e->peer = peer;
        e->tag = tag;
        e->bytes = bytes;
        e->comm_id = comm_id;
        e->comm = comm;
    }
    spin_unlock(&preq_lock);
    if (!e)
        cm_set_flag(CONTEND_MPI_FLAG_REQUESTS_FULL);
}

/* Copies the entry of `key` into *out (out may be NULL); 0 if unknown. */
static int preq_get(uint64_t key, struct preq_ent *out)
{
    if (key == 0)
        return 0;
    spin_lock(&preq_lock);
    struct preq_ent *e = preq_find_locked(key);
    if (e && out)
        *out = *e;
    spin_unlock(&preq_lock);
    return e != NULL;
}

static void preq_remove(uint64_t key)
{
    spin_lock(&preq_lock);
    struct preq_ent *e = preq_find_locked(key);
    if (e)
        e->state = 2;
    spin_unlock(&preq_lock);
}

static int persistent_init(int op, const void *buf, int count, MPI_Datatype type, int peer,
                           int tag, MPI_Comm comm, MPI_Request *req, uint64_t site)
{
    cm_resolve();
    int recv = op == OP_RECV_INIT;
#define REAL_INIT(b)                                                                         \
    (op == OP_SSEND_INIT   ? cm_r.Ssend_init(b, count, type, peer, tag, comm, req)           \
     : op == OP_BSEND_INIT ? cm_r.Bsend_init(b, count, type, peer, tag, comm, req)           \
     : op == OP_RSEND_INIT ? cm_r.Rsend_init(b, count, type, peer, tag, comm, req)           \
     : op == OP_RECV_INIT  ? cm_r.Recv_init((void *)(uintptr_t)(b), count, type, peer, tag,  \
                                            comm, req)                                       \
                           : cm_r.Send_init(b, count, type, peer, tag, comm, req))
    PASS_UNLESS_RECORDING(REAL_INIT(buf));
    int32_t wp;
    uint64_t f[3];
    int32_t t = recv ? norm_tag(tag) : tag;
    f[0] = comm_peer(ts, comm, peer, &wp);
    f[1] = CONTEND_MPI_PEERTAG(wp, t);
    f[2] = tbytes(count, type);
    uint64_t t0 = cm_now();
    rec_enter(ts, op, t0, site, f, 3);
    CALL_TIMED(REAL_INIT(buf));
#undef REAL_INIT
    uint32_t flags = recv                 ? CONTEND_MPI_START_RECV
                     : op == OP_SSEND_INIT ? CONTEND_MPI_START_SYNC
                     : op == OP_BSEND_INIT ? CONTEND_MPI_START_BUFFERED
                     : op == OP_RSEND_INIT ? CONTEND_MPI_START_READY
                                           : 0u;
    if (rc == MPI_SUCCESS && req)
        preq_put(*req, flags, wp, t, f[2], f[0], comm);
    rec_exit(ts, op, t1, rc, 0, NULL, 0);
    DONE();
}

int core_send_init(int op, const void *buf, int count, MPI_Datatype type, int dest, int tag,
                   MPI_Comm comm, MPI_Request *req, uint64_t site)
{
    return persistent_init(op, buf, count, type, dest, tag, comm, req, site);
}

int core_recv_init(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                   MPI_Request *req, uint64_t site)
{
    return persistent_init(OP_RECV_INIT, buf, count, type, source, tag, comm, req, site);
}

/* One activation of persistent request `r` (just started): a fresh request
 * id in the request table and a START record with its envelope. */
static void started(struct cm_thread *ts, MPI_Request r)
{
    struct preq_ent e;
    if (r == W_REQUEST_NULL || !preq_get(HKEY(r), &e))
        return; /* not created by a wrapped *_init call */
    int recv = (e.flags & CONTEND_MPI_START_RECV) != 0;
    uint64_t id = req_insert(r, recv, e.peer, e.tag, e.bytes, e.comm);
    if (id == 0)
        return;
    uint64_t p[4] = {e.comm_id, id, (uint64_t)(uint32_t)e.tag, e.bytes};
    cm_record(ts, CONTEND_MPI_REC_START, e.flags, 0, 0, (uint32_t)e.peer, p, 4);
}

int core_start(MPI_Request *req, uint64_t site)
{
    PASS_UNLESS_RECORDING(cm_r.Start(req));
    uint64_t f[1] = {1};
    uint64_t t0 = cm_now();
    rec_enter(ts, OP_START, t0, site, f, 1);
    CALL_TIMED(cm_r.Start(req));
    if (rc == MPI_SUCCESS && req)
        started(ts, *req);
    rec_exit(ts, OP_START, t1, rc, 0, NULL, 0);
    DONE();
}

int core_startall(int n, MPI_Request *reqs_in, uint64_t site)
{
    PASS_UNLESS_RECORDING(cm_r.Startall(n, reqs_in));
    uint64_t f[1] = {(uint64_t)(n < 0 ? 0 : n)};
    uint64_t t0 = cm_now();
    rec_enter(ts, OP_STARTALL, t0, site, f, 1);
    CALL_TIMED(cm_r.Startall(n, reqs_in));
    /* MPI_Startall leaves the (persistent) handles as they were */
    if (rc == MPI_SUCCESS && reqs_in)
        for (int i = 0; i < n; i++)
            started(ts, reqs_in[i]);
    rec_exit(ts, OP_STARTALL, t1, rc, 0, NULL, 0);
    DONE();
}

int core_request_free(MPI_Request *req, uint64_t site)
{
    cm_resolve();
    uint64_t key = 0;
    if (__atomic_load_n(&cm_recording, __ATOMIC_ACQUIRE) && req && *req != W_REQUEST_NULL)
        key = HKEY(*req);
    /* freeing a persistent request is an event; other requests are only
     * forgotten */
    struct cm_thread *ts = key && preq_get(key, NULL) ? begin() : NULL;
    int saved = errno;
    if (ts)
        rec_enter(ts, OP_REQUEST_FREE, cm_now(), site, NULL, 0);
    errno = saved;
    int rc = cm_r.Request_free(req);
    saved = errno;
    uint64_t t1 = ts ? cm_now() : 0;
    if (rc == MPI_SUCCESS && key) {
        /* an active request's completion no call will report */
        struct req_ent gone;
        int persistent = preq_get(key, NULL);
        if (persistent) {
            while (req_take(key, &gone))
                ; /* an activation still in the table */
            preq_remove(key);
        } else {
            req_take(key, &gone);
        }
    }
    if (ts) {
        rec_exit(ts, OP_REQUEST_FREE, t1, rc, 0, NULL, 0);
        end(ts);
    }
    errno = saved;
    return rc;
}

CM_PUBLIC int MPI_Request_free(MPI_Request *req) { return core_request_free(req, CM_SITE()); }

#define PINIT_WRAPPER(NAME, OP)                                                              \
    CM_PUBLIC int MPI_##NAME(const void *buf, int count, MPI_Datatype type, int dest, int tag, \
                             MPI_Comm comm, MPI_Request *req)                                \
    {                                                                                        \
        return core_send_init(OP, buf, count, type, dest, tag, comm, req, CM_SITE());        \
    }
PINIT_WRAPPER(Send_init, OP_SEND_INIT)
PINIT_WRAPPER(Ssend_init, OP_SSEND_INIT)
PINIT_WRAPPER(Bsend_init, OP_BSEND_INIT)
PINIT_WRAPPER(Rsend_init, OP_RSEND_INIT)

CM_PUBLIC int MPI_Recv_init(void *buf, int count, MPI_Datatype type, int source, int tag,
                            MPI_Comm comm, MPI_Request *req)
{
    return core_recv_init(buf, count, type, source, tag, comm, req, CM_SITE());
}
CM_PUBLIC int MPI_Start(MPI_Request *req) { return core_start(req, CM_SITE()); }
CM_PUBLIC int MPI_Startall(int n, MPI_Request reqs_in[])
{
    return core_startall(n, reqs_in, CM_SITE());
}
