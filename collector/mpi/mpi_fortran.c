/*
 * contend MPI recorder: Open MPI's Fortran entry points (mpif.h and the
 * `mpi` module; not mpi_f08).
 *
 * Open MPI 4.1's Fortran bindings (libmpi_mpifh) call PMPI_* directly, so
 * the C wrappers never see a Fortran call. This file defines the Fortran
 * symbols in all four manglings (mpi_send_, mpi_send__, mpi_send,
 * MPI_SEND), converts the arguments the way Open MPI's own bindings do
 * (handles with the f2c and c2f functions, MPI_BOTTOM / MPI_IN_PLACE and
 * MPI_STATUS(ES)_IGNORE by the addresses of libmpi's sentinel common
 * blocks, 0-based indices to 1-based, LOGICAL flags as 1/0) and records
 * through the same core functions as the C entry points. Written-back
 * values (requests, statuses, indices, flags) follow Open MPI's bindings:
 * only after a successful call.
 *
 * Only built for Open MPI: MPICH's Fortran bindings call the C MPI_*
 * functions, which the C wrappers catch.
 */
#include <stdlib.h>
#include <string.h>

#include "mpi_core.h"

#define F_ALIASES(lower, UPPER, params)                                                     \
    CM_PUBLIC void lower##__ params __attribute__((alias(#lower "_")));                      \
    CM_PUBLIC void lower params __attribute__((alias(#lower "_")));                          \
    CM_PUBLIC void UPPER params __attribute__((alias(#lower "_")));

/* Every entry point begins here. In a process whose MPI library is not
 * Open MPI (`contend record --mpi-impl openmpi` for an MPICH program) the
 * handles, sentinels and status layout above mean nothing: the call is
 * passed on unchanged to the next definition of the same entry point (the
 * program's own MPI library's Fortran binding), so the program runs as
 * without the recorder. Fortran passes every argument by reference, so
 * the argument list is the parameters as they came. */
#define F_BEGIN(name, args)                                                                 \
    cm_resolve();                                                                            \
    if (CM_UNLIKELY(!cm_abi_ok())) {                                                         \
        static cm_fortran_fn next_;                                                          \
        cm_fortran_fn fn_ = __atomic_load_n(&next_, __ATOMIC_ACQUIRE);                       \
        if (!fn_) {                                                                          \
            fn_ = cm_fortran_next(name);                                                     \
            __atomic_store_n(&next_, fn_, __ATOMIC_RELEASE);                                 \
        }                                                                                    \
        fn_ args;                                                                            \
        return;                                                                              \
    }                                                                                        \
    cm_fortran_seen()

/* MPI_BOTTOM / MPI_IN_PLACE sentinels to their C values. */
static inline void *fbuf(void *p)
{
    if (p && p == cm_f_bottom)
        return MPI_BOTTOM;
    if (p && p == cm_f_in_place)
        return MPI_IN_PLACE;
    return p;
}

static inline int status_ignored(const MPI_Fint *st) { return !st || (void *)st == cm_f_status_ignore; }
static inline int statuses_ignored(const MPI_Fint *st)
{
    return !st || (void *)st == cm_f_statuses_ignore;
}

#define F_STATUS_INTS (sizeof(MPI_Status) / sizeof(MPI_Fint))

static inline void status_out(int rc, const MPI_Status *c, MPI_Fint *f)
{
    if (rc == MPI_SUCCESS && !status_ignored(f))
        cm_r.Status_c2f(c, f);
}

static inline void set_ierr(MPI_Fint *ierr, int rc)
{
    if (ierr)
        *ierr = (MPI_Fint)rc;
}

/* ------------------------------------------------------------------------ */
/* Init / Finalize                                                           */

CM_PUBLIC void mpi_init_(MPI_Fint *ierr)
{
    F_BEGIN("mpi_init_", (ierr));
    int argc = 0;
    char **argv = NULL;
    set_ierr(ierr, core_init(OP_INIT, &argc, &argv, 0, NULL, CM_SITE()));
}
F_ALIASES(mpi_init, MPI_INIT, (MPI_Fint * ierr))

CM_PUBLIC void mpi_init_thread_(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr)
{
    F_BEGIN("mpi_init_thread_", (required, provided, ierr));
    int argc = 0, prov = 0;
    char **argv = NULL;
    int rc = core_init(OP_INIT_THREAD, &argc, &argv, (int)*required, &prov, CM_SITE());
    if (rc == MPI_SUCCESS)
        *provided = (MPI_Fint)prov;
    set_ierr(ierr, rc);
}
F_ALIASES(mpi_init_thread, MPI_INIT_THREAD,
          (MPI_Fint * required, MPI_Fint *provided, MPI_Fint *ierr))

CM_PUBLIC void mpi_finalize_(MPI_Fint *ierr)
{
    F_BEGIN("mpi_finalize_", (ierr));
    set_ierr(ierr, core_finalize(CM_SITE()));
}
F_ALIASES(mpi_finalize, MPI_FINALIZE, (MPI_Fint * ierr))

/* ------------------------------------------------------------------------ */
/* Point-to-point                                                            */

#define F_SEND(lower, UPPER, OP)                                                            \
    CM_PUBLIC void lower##_(void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *dest,     \
                            MPI_Fint *tag, MPI_Fint *comm, MPI_Fint *ierr)                  \
    {                                                                                       \
        F_BEGIN(#lower "_", (buf, count, type, dest, tag, comm, ierr));                                                                          \
        set_ierr(ierr, core_send(OP, fbuf(buf), (int)*count, cm_r.Type_f2c(*type),          \
                                 (int)*dest, (int)*tag, cm_r.Comm_f2c(*comm), CM_SITE()));   \
    }                                                                                       \
    F_ALIASES(lower, UPPER,                                                                 \
              (void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *dest, MPI_Fint *tag,   \
               MPI_Fint *comm, MPI_Fint *ierr))
F_SEND(mpi_send, MPI_SEND, OP_SEND)
F_SEND(mpi_ssend, MPI_SSEND, OP_SSEND)
F_SEND(mpi_bsend, MPI_BSEND, OP_BSEND)
F_SEND(mpi_rsend, MPI_RSEND, OP_RSEND)

#define F_ISEND(lower, UPPER, OP)                                                           \
    CM_PUBLIC void lower##_(void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *dest,     \
                            MPI_Fint *tag, MPI_Fint *comm, MPI_Fint *request,               \
                            MPI_Fint *ierr)                                                 \
    {                                                                                       \
        F_BEGIN(#lower "_", (buf, count, type, dest, tag, comm, request, ierr));                                                                          \
        MPI_Request c_req;                                                                  \
        int rc = core_isend(OP, fbuf(buf), (int)*count, cm_r.Type_f2c(*type), (int)*dest,   \
                            (int)*tag, cm_r.Comm_f2c(*comm), &c_req, CM_SITE());            \
        if (rc == MPI_SUCCESS)                                                              \
            *request = cm_r.Request_c2f(c_req);                                             \
        set_ierr(ierr, rc);                                                                 \
    }                                                                                       \
    F_ALIASES(lower, UPPER,                                                                 \
              (void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *dest, MPI_Fint *tag,   \
               MPI_Fint *comm, MPI_Fint *request, MPI_Fint *ierr))
F_ISEND(mpi_isend, MPI_ISEND, OP_ISEND)
F_ISEND(mpi_issend, MPI_ISSEND, OP_ISSEND)
F_ISEND(mpi_ibsend, MPI_IBSEND, OP_IBSEND)
F_ISEND(mpi_irsend, MPI_IRSEND, OP_IRSEND)

CM_PUBLIC void mpi_irecv_(void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *source,
                          MPI_Fint *tag, MPI_Fint *comm, MPI_Fint *request, MPI_Fint *ierr)
{
    F_BEGIN("mpi_irecv_", (buf, count, type, source, tag, comm, request, ierr));
    MPI_Request c_req;
    int rc = core_irecv(fbuf(buf), (int)*count, cm_r.Type_f2c(*type), (int)*source, (int)*tag,
                        cm_r.Comm_f2c(*comm), &c_req, CM_SITE());
    if (rc == MPI_SUCCESS)
        *request = cm_r.Request_c2f(c_req);
    set_ierr(ierr, rc);
}
F_ALIASES(mpi_irecv, MPI_IRECV,
          (void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *source, MPI_Fint *tag,
           MPI_Fint *comm, MPI_Fint *request, MPI_Fint *ierr))

CM_PUBLIC void mpi_recv_(void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *source,
                         MPI_Fint *tag, MPI_Fint *comm, MPI_Fint *status, MPI_Fint *ierr)
{
    F_BEGIN("mpi_recv_", (buf, count, type, source, tag, comm, status, ierr));
    MPI_Status c_st;
    int rc = core_recv(fbuf(buf), (int)*count, cm_r.Type_f2c(*type), (int)*source, (int)*tag,
                       cm_r.Comm_f2c(*comm), status_ignored(status) ? MPI_STATUS_IGNORE : &c_st,
                       CM_SITE());
    status_out(rc, &c_st, status);
    set_ierr(ierr, rc);
}
F_ALIASES(mpi_recv, MPI_RECV,
          (void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *source, MPI_Fint *tag,
           MPI_Fint *comm, MPI_Fint *status, MPI_Fint *ierr))

CM_PUBLIC void mpi_sendrecv_(void *sbuf, MPI_Fint *scount, MPI_Fint *stype, MPI_Fint *dest,
                             MPI_Fint *stag, void *rbuf, MPI_Fint *rcount, MPI_Fint *rtype,
                             MPI_Fint *source, MPI_Fint *rtag, MPI_Fint *comm, MPI_Fint *status,
                             MPI_Fint *ierr)
{
    F_BEGIN("mpi_sendrecv_", (sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm, status, ierr));
    MPI_Status c_st;
    int rc = core_sendrecv(fbuf(sbuf), (int)*scount, cm_r.Type_f2c(*stype), (int)*dest,
                           (int)*stag, fbuf(rbuf), (int)*rcount, cm_r.Type_f2c(*rtype),
                           (int)*source, (int)*rtag, cm_r.Comm_f2c(*comm),
                           status_ignored(status) ? MPI_STATUS_IGNORE : &c_st, CM_SITE());
    status_out(rc, &c_st, status);
    set_ierr(ierr, rc);
}
F_ALIASES(mpi_sendrecv, MPI_SENDRECV,
          (void *sbuf, MPI_Fint *scount, MPI_Fint *stype, MPI_Fint *dest, MPI_Fint *stag,
           void *rbuf, MPI_Fint *rcount, MPI_Fint *rtype, MPI_Fint *source, MPI_Fint *rtag,
           MPI_Fint *comm, MPI_Fint *status, MPI_Fint *ierr))

CM_PUBLIC void mpi_sendrecv_replace_(void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *dest,
                                     MPI_Fint *stag, MPI_Fint *source, MPI_Fint *rtag,
                                     MPI_Fint *comm, MPI_Fint *status, MPI_Fint *ierr)
{
    F_BEGIN("mpi_sendrecv_replace_", (buf, count, type, dest, stag, source, rtag, comm, status, ierr));
    MPI_Status c_st;
    int rc = core_sendrecv_replace(fbuf(buf), (int)*count, cm_r.Type_f2c(*type), (int)*dest,
                                   (int)*stag, (int)*source, (int)*rtag, cm_r.Comm_f2c(*comm),
                                   status_ignored(status) ? MPI_STATUS_IGNORE : &c_st,
                                   CM_SITE());
    status_out(rc, &c_st, status);
    set_ierr(ierr, rc);
}
F_ALIASES(mpi_sendrecv_replace, MPI_SENDRECV_REPLACE,
          (void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *dest, MPI_Fint *stag,
           MPI_Fint *source, MPI_Fint *rtag, MPI_Fint *comm, MPI_Fint *status, MPI_Fint *ierr))

CM_PUBLIC void mpi_probe_(MPI_Fint *source, MPI_Fint *tag, MPI_Fint *comm, MPI_Fint *status,
                          MPI_Fint *ierr)
{
    F_BEGIN("mpi_probe_", (source, tag, comm, status, ierr));
    MPI_Status c_st;
    int rc = core_probe((int)*source, (int)*tag, cm_r.Comm_f2c(*comm),
                        status_ignored(status) ? MPI_STATUS_IGNORE : &c_st, CM_SITE());
    status_out(rc, &c_st, status);
    set_ierr(ierr, rc);
}
F_ALIASES(mpi_probe, MPI_PROBE,
          (MPI_Fint * source, MPI_Fint *tag, MPI_Fint *comm, MPI_Fint *status, MPI_Fint *ierr))

CM_PUBLIC void mpi_iprobe_(MPI_Fint *source, MPI_Fint *tag, MPI_Fint *comm, MPI_Fint *flag,
                           MPI_Fint *status, MPI_Fint *ierr)
{
    F_BEGIN("mpi_iprobe_", (source, tag, comm, flag, status, ierr));
    MPI_Status c_st;
    int c_flag = 0;
    int rc = core_iprobe((int)*source, (int)*tag, cm_r.Comm_f2c(*comm), &c_flag,
                         status_ignored(status) ? MPI_STATUS_IGNORE : &c_st, CM_SITE());
    if (rc == MPI_SUCCESS) {
        *flag = c_flag ? 1 : 0;
        if (c_flag)
            status_out(rc, &c_st, status);
    }
    set_ierr(ierr, rc);
}
F_ALIASES(mpi_iprobe, MPI_IPROBE,
          (MPI_Fint * source, MPI_Fint *tag, MPI_Fint *comm, MPI_Fint *flag, MPI_Fint *status,
           MPI_Fint *ierr))

/* Matched probes and receives: MPI_Message handles converted with
 * MPI_Message_f2c/c2f, written back only after a successful call. */
CM_PUBLIC void mpi_mprobe_(MPI_Fint *source, MPI_Fint *tag, MPI_Fint *comm, MPI_Fint *message,
                           MPI_Fint *status, MPI_Fint *ierr)
{
    F_BEGIN("mpi_mprobe_", (source, tag, comm, message, status, ierr));
    MPI_Status c_st;
    MPI_Message c_msg;
    int rc = core_mprobe((int)*source, (int)*tag, cm_r.Comm_f2c(*comm), &c_msg,
                         status_ignored(status) ? MPI_STATUS_IGNORE : &c_st, CM_SITE());
    if (rc == MPI_SUCCESS) {
        *message = cm_r.Message_c2f(c_msg);
        status_out(rc, &c_st, status);
    }
    set_ierr(ierr, rc);
}
F_ALIASES(mpi_mprobe, MPI_MPROBE,
          (MPI_Fint * source, MPI_Fint *tag, MPI_Fint *comm, MPI_Fint *message, MPI_Fint *status,
           MPI_Fint *ierr))

CM_PUBLIC void mpi_improbe_(MPI_Fint *source, MPI_Fint *tag, MPI_Fint *comm, MPI_Fint *flag,
                            MPI_Fint *message, MPI_Fint *status, MPI_Fint *ierr)
{
    F_BEGIN("mpi_improbe_", (source, tag, comm, flag, message, status, ierr));
    MPI_Status c_st;
    MPI_Message c_msg;
    int c_flag = 0;
    int rc = core_improbe((int)*source, (int)*tag, cm_r.Comm_f2c(*comm), &c_flag, &c_msg,
                          status_ignored(status) ? MPI_STATUS_IGNORE : &c_st, CM_SITE());
    if (rc == MPI_SUCCESS) {
        *flag = c_flag ? 1 : 0;
        if (c_flag) {
            *message = cm_r.Message_c2f(c_msg);
            status_out(rc, &c_st, status);
        }
    }
    set_ierr(ierr, rc);
}
F_ALIASES(mpi_improbe, MPI_IMPROBE,
          (MPI_Fint * source, MPI_Fint *tag, MPI_Fint *comm, MPI_Fint *flag, MPI_Fint *message,
           MPI_Fint *status, MPI_Fint *ierr))

CM_PUBLIC void mpi_mrecv_(void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *message,
                          MPI_Fint *status, MPI_Fint *ierr)
{
    F_BEGIN("mpi_mrecv_", (buf, count, type, message, status, ierr));
    MPI_Status c_st;
    MPI_Message c_msg = cm_r.Message_f2c(*message);
    int rc = core_mrecv(fbuf(buf), (int)*count, cm_r.Type_f2c(*type), &c_msg,
                        status_ignored(status) ? MPI_STATUS_IGNORE : &c_st, CM_SITE());
    if (rc == MPI_SUCCESS) {
        *message = cm_r.Message_c2f(c_msg);
        status_out(rc, &c_st, status);
    }
    set_ierr(ierr, rc);
}
F_ALIASES(mpi_mrecv, MPI_MRECV,
          (void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *message, MPI_Fint *status,
           MPI_Fint *ierr))

CM_PUBLIC void mpi_imrecv_(void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *message,
                           MPI_Fint *request, MPI_Fint *ierr)
{
    F_BEGIN("mpi_imrecv_", (buf, count, type, message, request, ierr));
    MPI_Message c_msg = cm_r.Message_f2c(*message);
    MPI_Request c_req;
    int rc = core_imrecv(fbuf(buf), (int)*count, cm_r.Type_f2c(*type), &c_msg, &c_req, CM_SITE());
    if (rc == MPI_SUCCESS) {
        *message = cm_r.Message_c2f(c_msg);
        *request = cm_r.Request_c2f(c_req);
    }
    set_ierr(ierr, rc);
}
F_ALIASES(mpi_imrecv, MPI_IMRECV,
          (void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *message, MPI_Fint *request,
           MPI_Fint *ierr))

/* ------------------------------------------------------------------------ */
/* Wait / Test                                                               */

CM_PUBLIC void mpi_wait_(MPI_Fint *request, MPI_Fint *status, MPI_Fint *ierr)
{
    F_BEGIN("mpi_wait_", (request, status, ierr));
    MPI_Request c_req = cm_r.Request_f2c(*request);
    MPI_Status c_st;
    int rc = core_wait(&c_req, status_ignored(status) ? MPI_STATUS_IGNORE : &c_st, CM_SITE());
    if (rc == MPI_SUCCESS) {
        *request = cm_r.Request_c2f(c_req);
        status_out(rc, &c_st, status);
    }
    set_ierr(ierr, rc);
}
F_ALIASES(mpi_wait, MPI_WAIT, (MPI_Fint * request, MPI_Fint *status, MPI_Fint *ierr))

CM_PUBLIC void mpi_test_(MPI_Fint *request, MPI_Fint *flag, MPI_Fint *status, MPI_Fint *ierr)
{
    F_BEGIN("mpi_test_", (request, flag, status, ierr));
    MPI_Request c_req = cm_r.Request_f2c(*request);
    MPI_Status c_st;
    int c_flag = 0;
    int rc = core_test(&c_req, &c_flag, status_ignored(status) ? MPI_STATUS_IGNORE : &c_st,
                       CM_SITE());
    if (rc == MPI_SUCCESS) {
        *request = cm_r.Request_c2f(c_req);
        *flag = c_flag ? 1 : 0;
        if (c_flag)
            status_out(rc, &c_st, status);
    }
    set_ierr(ierr, rc);
}
F_ALIASES(mpi_test, MPI_TEST,
          (MPI_Fint * request, MPI_Fint *flag, MPI_Fint *status, MPI_Fint *ierr))

/* C copies of a Fortran request array and, when wanted, statuses. */
struct farrays {
    MPI_Request req_local[32];
    MPI_Status st_local[32];
    MPI_Request *req;
    MPI_Status *st; /* MPI_STATUSES_IGNORE when not wanted */
    void *heap;
};

static int farrays_init(struct farrays *a, int n, const MPI_Fint *freqs, int want_st)
{
    a->heap = NULL;
    a->req = a->req_local;
    a->st = want_st ? a->st_local : MPI_STATUSES_IGNORE;
    if (n > 32) {
        a->heap = malloc((size_t)n * (sizeof(MPI_Request) + (want_st ? sizeof(MPI_Status) : 0)));
        if (!a->heap)
            return -1;
        a->req = a->heap;
        if (want_st)
            a->st = (MPI_Status *)(void *)(a->req + n);
    }
    for (int i = 0; i < n; i++)
        a->req[i] = cm_r.Request_f2c(freqs[i]);
    return 0;
}

static void farrays_back(const struct farrays *a, int n, MPI_Fint *freqs)
{
    for (int i = 0; i < n; i++)
        freqs[i] = cm_r.Request_c2f(a->req[i]);
}

CM_PUBLIC void mpi_waitall_(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *statuses,
                            MPI_Fint *ierr)
{
    F_BEGIN("mpi_waitall_", (count, requests, statuses, ierr));
    int n = (int)*count;
    struct farrays a;
    if (farrays_init(&a, n < 0 ? 0 : n, requests, !statuses_ignored(statuses)) != 0) {
        set_ierr(ierr, MPI_ERR_NO_MEM);
        return;
    }
    int rc = core_waitall(n, a.req, a.st, CM_SITE());
    if (rc == MPI_SUCCESS) {
        farrays_back(&a, n, requests);
        if (!statuses_ignored(statuses))
            for (int i = 0; i < n; i++)
                cm_r.Status_c2f(&a.st[i], &statuses[(size_t)i * F_STATUS_INTS]);
    }
    free(a.heap);
    set_ierr(ierr, rc);
}
F_ALIASES(mpi_waitall, MPI_WAITALL,
          (MPI_Fint * count, MPI_Fint *requests, MPI_Fint *statuses, MPI_Fint *ierr))

CM_PUBLIC void mpi_testall_(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *flag,
                            MPI_Fint *statuses, MPI_Fint *ierr)
{
    F_BEGIN("mpi_testall_", (count, requests, flag, statuses, ierr));
    int n = (int)*count;
    struct farrays a;
    if (farrays_init(&a, n < 0 ? 0 : n, requests, !statuses_ignored(statuses)) != 0) {
        set_ierr(ierr, MPI_ERR_NO_MEM);
        return;
    }
    int c_flag = 0;
    int rc = core_testall(n, a.req, &c_flag, a.st, CM_SITE());
    if (rc == MPI_SUCCESS) {
        *flag = c_flag ? 1 : 0;
        if (c_flag) {
            farrays_back(&a, n, requests);
            if (!statuses_ignored(statuses))
                for (int i = 0; i < n; i++)
                    cm_r.Status_c2f(&a.st[i], &statuses[(size_t)i * F_STATUS_INTS]);
        }
    }
    free(a.heap);
    set_ierr(ierr, rc);
}
F_ALIASES(mpi_testall, MPI_TESTALL,
          (MPI_Fint * count, MPI_Fint *requests, MPI_Fint *flag, MPI_Fint *statuses,
           MPI_Fint *ierr))

CM_PUBLIC void mpi_waitany_(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *index,
                            MPI_Fint *status, MPI_Fint *ierr)
{
    F_BEGIN("mpi_waitany_", (count, requests, index, status, ierr));
    int n = (int)*count;
    struct farrays a;
    if (farrays_init(&a, n < 0 ? 0 : n, requests, 0) != 0) {
        set_ierr(ierr, MPI_ERR_NO_MEM);
        return;
    }
    MPI_Status c_st;
    int c_index = MPI_UNDEFINED;
    int rc = core_waitany(n, a.req, &c_index,
                          status_ignored(status) ? MPI_STATUS_IGNORE : &c_st, CM_SITE());
    if (rc == MPI_SUCCESS) {
        if (c_index != MPI_UNDEFINED && c_index >= 0 && c_index < n) {
            requests[c_index] = cm_r.Request_c2f(a.req[c_index]);
            *index = (MPI_Fint)(c_index + 1);
        } else {
            *index = (MPI_Fint)c_index;
        }
        status_out(rc, &c_st, status);
    }
    free(a.heap);
    set_ierr(ierr, rc);
}
F_ALIASES(mpi_waitany, MPI_WAITANY,
          (MPI_Fint * count, MPI_Fint *requests, MPI_Fint *index, MPI_Fint *status,
           MPI_Fint *ierr))

CM_PUBLIC void mpi_testany_(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *index,
                            MPI_Fint *flag, MPI_Fint *status, MPI_Fint *ierr)
{
    F_BEGIN("mpi_testany_", (count, requests, index, flag, status, ierr));
    int n = (int)*count;
    struct farrays a;
    if (farrays_init(&a, n < 0 ? 0 : n, requests, 0) != 0) {
        set_ierr(ierr, MPI_ERR_NO_MEM);
        return;
    }
    MPI_Status c_st;
    int c_index = MPI_UNDEFINED, c_flag = 0;
    int rc = core_testany(n, a.req, &c_index, &c_flag,
                          status_ignored(status) ? MPI_STATUS_IGNORE : &c_st, CM_SITE());
    if (rc == MPI_SUCCESS) {
        if (c_index != MPI_UNDEFINED && c_index >= 0 && c_index < n) {
            requests[c_index] = cm_r.Request_c2f(a.req[c_index]);
            *index = (MPI_Fint)(c_index + 1);
        } else {
            *index = (MPI_Fint)c_index;
        }
        *flag = c_flag ? 1 : 0;
        if (c_flag)
            status_out(rc, &c_st, status);
    }
    free(a.heap);
    set_ierr(ierr, rc);
}
F_ALIASES(mpi_testany, MPI_TESTANY,
          (MPI_Fint * count, MPI_Fint *requests, MPI_Fint *index, MPI_Fint *flag,
           MPI_Fint *status, MPI_Fint *ierr))

static void some_f(int test, MPI_Fint *incount, MPI_Fint *requests, MPI_Fint *outcount,
                   MPI_Fint *indices, MPI_Fint *statuses, MPI_Fint *ierr, uint64_t site)
{
    int n = (int)*incount;
    struct farrays a;
    int *c_idx = NULL;
    if (farrays_init(&a, n < 0 ? 0 : n, requests, !statuses_ignored(statuses)) != 0 ||
        !(c_idx = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1)))) {
        free(a.heap);
        set_ierr(ierr, MPI_ERR_NO_MEM);
        return;
    }
    int c_out = 0;
    int rc = test ? core_testsome(n, a.req, &c_out, c_idx, a.st, site)
                  : core_waitsome(n, a.req, &c_out, c_idx, a.st, site);
    if (rc == MPI_SUCCESS) {
        *outcount = (MPI_Fint)c_out;
        if (c_out != MPI_UNDEFINED) {
            for (int k = 0; k < c_out && k < n; k++) {
                int i = c_idx[k];
                if (i >= 0 && i < n)
                    requests[i] = cm_r.Request_c2f(a.req[i]);
                indices[k] = (MPI_Fint)(i + 1);
                if (!statuses_ignored(statuses))
                    cm_r.Status_c2f(&a.st[k], &statuses[(size_t)k * F_STATUS_INTS]);
            }
        }
    }
    free(c_idx);
    free(a.heap);
    set_ierr(ierr, rc);
}

CM_PUBLIC void mpi_waitsome_(MPI_Fint *incount, MPI_Fint *requests, MPI_Fint *outcount,
                             MPI_Fint *indices, MPI_Fint *statuses, MPI_Fint *ierr)
{
    F_BEGIN("mpi_waitsome_", (incount, requests, outcount, indices, statuses, ierr));
    some_f(0, incount, requests, outcount, indices, statuses, ierr, CM_SITE());
}
F_ALIASES(mpi_waitsome, MPI_WAITSOME,
          (MPI_Fint * incount, MPI_Fint *requests, MPI_Fint *outcount, MPI_Fint *indices,
           MPI_Fint *statuses, MPI_Fint *ierr))

CM_PUBLIC void mpi_testsome_(MPI_Fint *incount, MPI_Fint *requests, MPI_Fint *outcount,
                             MPI_Fint *indices, MPI_Fint *statuses, MPI_Fint *ierr)
{
    F_BEGIN("mpi_testsome_", (incount, requests, outcount, indices, statuses, ierr));
    some_f(1, incount, requests, outcount, indices, statuses, ierr, CM_SITE());
}
F_ALIASES(mpi_testsome, MPI_TESTSOME,
          (MPI_Fint * incount, MPI_Fint *requests, MPI_Fint *outcount, MPI_Fint *indices,
           MPI_Fint *statuses, MPI_Fint *ierr))

/* ------------------------------------------------------------------------ */
/* Collectives                                                               */

CM_PUBLIC void mpi_barrier_(MPI_Fint *comm, MPI_Fint *ierr)
{
    F_BEGIN("mpi_barrier_", (comm, ierr));
    set_ierr(ierr, core_barrier(cm_r.Comm_f2c(*comm), NULL, CM_SITE()));
}
F_ALIASES(mpi_barrier, MPI_BARRIER, (MPI_Fint * comm, MPI_Fint *ierr))

CM_PUBLIC void mpi_bcast_(void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *root,
                          MPI_Fint *comm, MPI_Fint *ierr)
{
    F_BEGIN("mpi_bcast_", (buf, count, type, root, comm, ierr));
    set_ierr(ierr, core_bcast(fbuf(buf), (int)*count, cm_r.Type_f2c(*type), (int)*root,
                              cm_r.Comm_f2c(*comm), NULL, CM_SITE()));
}
F_ALIASES(mpi_bcast, MPI_BCAST,
          (void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *root, MPI_Fint *comm,
           MPI_Fint *ierr))

CM_PUBLIC void mpi_reduce_(void *sbuf, void *rbuf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *op,
                           MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr)
{
    F_BEGIN("mpi_reduce_", (sbuf, rbuf, count, type, op, root, comm, ierr));
    set_ierr(ierr, core_reduce(fbuf(sbuf), fbuf(rbuf), (int)*count, cm_r.Type_f2c(*type),
                               cm_r.Op_f2c(*op), (int)*root, cm_r.Comm_f2c(*comm), NULL, CM_SITE()));
}
F_ALIASES(mpi_reduce, MPI_REDUCE,
          (void *sbuf, void *rbuf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *op, MPI_Fint *root,
           MPI_Fint *comm, MPI_Fint *ierr))

#define F_ALLRED(lower, UPPER, OP)                                                          \
    CM_PUBLIC void lower##_(void *sbuf, void *rbuf, MPI_Fint *count, MPI_Fint *type,        \
                            MPI_Fint *op, MPI_Fint *comm, MPI_Fint *ierr)                   \
    {                                                                                       \
        F_BEGIN(#lower "_", (sbuf, rbuf, count, type, op, comm, ierr));                                                                          \
        set_ierr(ierr, core_allreduce_like(OP, fbuf(sbuf), fbuf(rbuf), (int)*count,         \
                                           cm_r.Type_f2c(*type), cm_r.Op_f2c(*op),          \
                                           cm_r.Comm_f2c(*comm), NULL, CM_SITE()));               \
    }                                                                                       \
    F_ALIASES(lower, UPPER,                                                                 \
              (void *sbuf, void *rbuf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *op,       \
               MPI_Fint *comm, MPI_Fint *ierr))
F_ALLRED(mpi_allreduce, MPI_ALLREDUCE, OP_ALLREDUCE)
F_ALLRED(mpi_scan, MPI_SCAN, OP_SCAN)
F_ALLRED(mpi_exscan, MPI_EXSCAN, OP_EXSCAN)
F_ALLRED(mpi_reduce_scatter_block, MPI_REDUCE_SCATTER_BLOCK, OP_REDUCE_SCATTER_BLOCK)

CM_PUBLIC void mpi_reduce_scatter_(void *sbuf, void *rbuf, MPI_Fint *rcounts, MPI_Fint *type,
                                   MPI_Fint *op, MPI_Fint *comm, MPI_Fint *ierr)
{
    F_BEGIN("mpi_reduce_scatter_", (sbuf, rbuf, rcounts, type, op, comm, ierr));
    set_ierr(ierr, core_reduce_scatter(fbuf(sbuf), fbuf(rbuf), rcounts, cm_r.Type_f2c(*type),
                                       cm_r.Op_f2c(*op), cm_r.Comm_f2c(*comm), NULL, CM_SITE()));
}
F_ALIASES(mpi_reduce_scatter, MPI_REDUCE_SCATTER,
          (void *sbuf, void *rbuf, MPI_Fint *rcounts, MPI_Fint *type, MPI_Fint *op,
           MPI_Fint *comm, MPI_Fint *ierr))

#define F_GATHER(lower, UPPER, OP)                                                          \
    CM_PUBLIC void lower##_(void *sbuf, MPI_Fint *scount, MPI_Fint *stype, void *rbuf,      \
                            MPI_Fint *rcount, MPI_Fint *rtype, MPI_Fint *root,              \
                            MPI_Fint *comm, MPI_Fint *ierr)                                 \
    {                                                                                       \
        F_BEGIN(#lower "_", (sbuf, scount, stype, rbuf, rcount, rtype, root, comm, ierr));                                                                          \
        set_ierr(ierr, core_gather_like(OP, fbuf(sbuf), (int)*scount, cm_r.Type_f2c(*stype), \
                                        fbuf(rbuf), (int)*rcount, cm_r.Type_f2c(*rtype),     \
                                        (int)*root, cm_r.Comm_f2c(*comm), NULL, CM_SITE()));       \
    }                                                                                       \
    F_ALIASES(lower, UPPER,                                                                 \
              (void *sbuf, MPI_Fint *scount, MPI_Fint *stype, void *rbuf, MPI_Fint *rcount, \
               MPI_Fint *rtype, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr))
F_GATHER(mpi_gather, MPI_GATHER, OP_GATHER)
F_GATHER(mpi_scatter, MPI_SCATTER, OP_SCATTER)

#define F_ALLGATHER(lower, UPPER, OP)                                                       \
    CM_PUBLIC void lower##_(void *sbuf, MPI_Fint *scount, MPI_Fint *stype, void *rbuf,      \
                            MPI_Fint *rcount, MPI_Fint *rtype, MPI_Fint *comm,              \
                            MPI_Fint *ierr)                                                 \
    {                                                                                       \
        F_BEGIN(#lower "_", (sbuf, scount, stype, rbuf, rcount, rtype, comm, ierr));                                                                          \
        set_ierr(ierr, core_gather_like(OP, fbuf(sbuf), (int)*scount, cm_r.Type_f2c(*stype), \
                                        fbuf(rbuf), (int)*rcount, cm_r.Type_f2c(*rtype), 0,  \
                                        cm_r.Comm_f2c(*comm), NULL, CM_SITE()));                   \
    }                                                                                       \
    F_ALIASES(lower, UPPER,                                                                 \
              (void *sbuf, MPI_Fint *scount, MPI_Fint *stype, void *rbuf, MPI_Fint *rcount, \
               MPI_Fint *rtype, MPI_Fint *comm, MPI_Fint *ierr))
F_ALLGATHER(mpi_allgather, MPI_ALLGATHER, OP_ALLGATHER)
F_ALLGATHER(mpi_alltoall, MPI_ALLTOALL, OP_ALLTOALL)

CM_PUBLIC void mpi_gatherv_(void *sbuf, MPI_Fint *scount, MPI_Fint *stype, void *rbuf,
                            MPI_Fint *rcounts, MPI_Fint *displs, MPI_Fint *rtype, MPI_Fint *root,
                            MPI_Fint *comm, MPI_Fint *ierr)
{
    F_BEGIN("mpi_gatherv_", (sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm, ierr));
    set_ierr(ierr, core_gatherv(OP_GATHERV, fbuf(sbuf), (int)*scount, cm_r.Type_f2c(*stype),
                                fbuf(rbuf), rcounts, displs, cm_r.Type_f2c(*rtype), (int)*root,
                                cm_r.Comm_f2c(*comm), NULL, CM_SITE()));
}
F_ALIASES(mpi_gatherv, MPI_GATHERV,
          (void *sbuf, MPI_Fint *scount, MPI_Fint *stype, void *rbuf, MPI_Fint *rcounts,
           MPI_Fint *displs, MPI_Fint *rtype, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr))

CM_PUBLIC void mpi_allgatherv_(void *sbuf, MPI_Fint *scount, MPI_Fint *stype, void *rbuf,
                               MPI_Fint *rcounts, MPI_Fint *displs, MPI_Fint *rtype,
                               MPI_Fint *comm, MPI_Fint *ierr)
{
    F_BEGIN("mpi_allgatherv_", (sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm, ierr));
    set_ierr(ierr, core_gatherv(OP_ALLGATHERV, fbuf(sbuf), (int)*scount, cm_r.Type_f2c(*stype),
                                fbuf(rbuf), rcounts, displs, cm_r.Type_f2c(*rtype), 0,
                                cm_r.Comm_f2c(*comm), NULL, CM_SITE()));
}
F_ALIASES(mpi_allgatherv, MPI_ALLGATHERV,
          (void *sbuf, MPI_Fint *scount, MPI_Fint *stype, void *rbuf, MPI_Fint *rcounts,
           MPI_Fint *displs, MPI_Fint *rtype, MPI_Fint *comm, MPI_Fint *ierr))

CM_PUBLIC void mpi_scatterv_(void *sbuf, MPI_Fint *scounts, MPI_Fint *displs, MPI_Fint *stype,
                             void *rbuf, MPI_Fint *rcount, MPI_Fint *rtype, MPI_Fint *root,
                             MPI_Fint *comm, MPI_Fint *ierr)
{
    F_BEGIN("mpi_scatterv_", (sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm, ierr));
    set_ierr(ierr, core_scatterv(fbuf(sbuf), scounts, displs, cm_r.Type_f2c(*stype), fbuf(rbuf),
                                 (int)*rcount, cm_r.Type_f2c(*rtype), (int)*root,
                                 cm_r.Comm_f2c(*comm), NULL, CM_SITE()));
}
F_ALIASES(mpi_scatterv, MPI_SCATTERV,
          (void *sbuf, MPI_Fint *scounts, MPI_Fint *displs, MPI_Fint *stype, void *rbuf,
           MPI_Fint *rcount, MPI_Fint *rtype, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr))

CM_PUBLIC void mpi_alltoallv_(void *sbuf, MPI_Fint *scounts, MPI_Fint *sdispls, MPI_Fint *stype,
                              void *rbuf, MPI_Fint *rcounts, MPI_Fint *rdispls, MPI_Fint *rtype,
                              MPI_Fint *comm, MPI_Fint *ierr)
{
    F_BEGIN("mpi_alltoallv_", (sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm, ierr));
    set_ierr(ierr, core_alltoallv(fbuf(sbuf), scounts, sdispls, cm_r.Type_f2c(*stype),
                                  fbuf(rbuf), rcounts, rdispls, cm_r.Type_f2c(*rtype),
                                  cm_r.Comm_f2c(*comm), NULL, CM_SITE()));
}
F_ALIASES(mpi_alltoallv, MPI_ALLTOALLV,
          (void *sbuf, MPI_Fint *scounts, MPI_Fint *sdispls, MPI_Fint *stype, void *rbuf,
           MPI_Fint *rcounts, MPI_Fint *rdispls, MPI_Fint *rtype, MPI_Fint *comm,
           MPI_Fint *ierr))

CM_PUBLIC void mpi_alltoallw_(void *sbuf, MPI_Fint *scounts, MPI_Fint *sdispls, MPI_Fint *stypes,
                              void *rbuf, MPI_Fint *rcounts, MPI_Fint *rdispls,
                              MPI_Fint *rtypes, MPI_Fint *comm, MPI_Fint *ierr)
{
    F_BEGIN("mpi_alltoallw_", (sbuf, scounts, sdispls, stypes, rbuf, rcounts, rdispls, rtypes, comm, ierr));
    MPI_Comm c = cm_r.Comm_f2c(*comm);
    int inter = 0, size = 0;
    cm_r.Comm_test_inter(c, &inter);
    if (inter) {
        MPI_Group g;
        if (cm_r.Comm_remote_group(c, &g) == MPI_SUCCESS) {
            cm_r.Group_size(g, &size);
            cm_r.Group_free(&g);
        }
    } else {
        cm_r.Comm_size(c, &size);
    }
    if (size < 0)
        size = 0;
    MPI_Datatype *t = malloc(sizeof(MPI_Datatype) * (size_t)(2 * size + 1));
    if (!t) {
        set_ierr(ierr, MPI_ERR_NO_MEM);
        return;
    }
    void *s = fbuf(sbuf);
    for (int i = 0; i < size; i++) {
        t[size + i] = cm_r.Type_f2c(rtypes[i]);
        t[i] = s == MPI_IN_PLACE ? t[size + i] : cm_r.Type_f2c(stypes[i]);
    }
    set_ierr(ierr, core_alltoallw(s, scounts, sdispls, t, fbuf(rbuf), rcounts, rdispls, t + size,
                                  c, NULL, CM_SITE()));
    free(t);
}
F_ALIASES(mpi_alltoallw, MPI_ALLTOALLW,
          (void *sbuf, MPI_Fint *scounts, MPI_Fint *sdispls, MPI_Fint *stypes, void *rbuf,
           MPI_Fint *rcounts, MPI_Fint *rdispls, MPI_Fint *rtypes, MPI_Fint *comm,
           MPI_Fint *ierr))

/* ------------------------------------------------------------------------ */
/* Communicators                                                             */

CM_PUBLIC void mpi_comm_split_(MPI_Fint *comm, MPI_Fint *color, MPI_Fint *key, MPI_Fint *newcomm,
                               MPI_Fint *ierr)
{
    F_BEGIN("mpi_comm_split_", (comm, color, key, newcomm, ierr));
    MPI_Comm c_new;
    int rc = core_comm_split(cm_r.Comm_f2c(*comm), (int)*color, (int)*key, &c_new, CM_SITE());
    if (rc == MPI_SUCCESS)
        *newcomm = cm_r.Comm_c2f(c_new);
    set_ierr(ierr, rc);
}
F_ALIASES(mpi_comm_split, MPI_COMM_SPLIT,
          (MPI_Fint * comm, MPI_Fint *color, MPI_Fint *key, MPI_Fint *newcomm, MPI_Fint *ierr))

CM_PUBLIC void mpi_comm_dup_(MPI_Fint *comm, MPI_Fint *newcomm, MPI_Fint *ierr)
{
    F_BEGIN("mpi_comm_dup_", (comm, newcomm, ierr));
    MPI_Comm c_new;
    int rc = core_comm_dup(cm_r.Comm_f2c(*comm), &c_new, CM_SITE());
    if (rc == MPI_SUCCESS)
        *newcomm = cm_r.Comm_c2f(c_new);
    set_ierr(ierr, rc);
}
F_ALIASES(mpi_comm_dup, MPI_COMM_DUP, (MPI_Fint * comm, MPI_Fint *newcomm, MPI_Fint *ierr))

CM_PUBLIC void mpi_comm_create_(MPI_Fint *comm, MPI_Fint *group, MPI_Fint *newcomm,
                                MPI_Fint *ierr)
{
    F_BEGIN("mpi_comm_create_", (comm, group, newcomm, ierr));
    MPI_Comm c_new;
    int rc = core_comm_create(cm_r.Comm_f2c(*comm), cm_r.Group_f2c(*group), &c_new, CM_SITE());
    if (rc == MPI_SUCCESS)
        *newcomm = cm_r.Comm_c2f(c_new);
    set_ierr(ierr, rc);
}
F_ALIASES(mpi_comm_create, MPI_COMM_CREATE,
          (MPI_Fint * comm, MPI_Fint *group, MPI_Fint *newcomm, MPI_Fint *ierr))

/* Topology and split-type communicators: recorded as communicators only.
 * Fortran LOGICAL arrays are passed as ints (gfortran: 4 bytes, .TRUE. = 1;
 * Open MPI's own binding converts any non-zero to 1, as here). */
static int *logicals(const MPI_Fint *f, int n, int *local, int nlocal)
{
    int *c = n <= nlocal ? local : malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    if (c)
        for (int i = 0; i < n; i++)
            c[i] = f[i] != 0;
    return c;
}

CM_PUBLIC void mpi_comm_split_type_(MPI_Fint *comm, MPI_Fint *type, MPI_Fint *key, MPI_Fint *info,
                                    MPI_Fint *newcomm, MPI_Fint *ierr)
{
    F_BEGIN("mpi_comm_split_type_", (comm, type, key, info, newcomm, ierr));
    MPI_Comm c_new;
    int rc = core_comm_split_type(cm_r.Comm_f2c(*comm), (int)*type, (int)*key,
                                  cm_r.Info_f2c(*info), &c_new);
    if (rc == MPI_SUCCESS)
        *newcomm = cm_r.Comm_c2f(c_new);
    set_ierr(ierr, rc);
}
F_ALIASES(mpi_comm_split_type, MPI_COMM_SPLIT_TYPE,
          (MPI_Fint * comm, MPI_Fint *type, MPI_Fint *key, MPI_Fint *info, MPI_Fint *newcomm,
           MPI_Fint *ierr))

CM_PUBLIC void mpi_cart_create_(MPI_Fint *comm, MPI_Fint *ndims, MPI_Fint *dims, MPI_Fint *periods,
                                MPI_Fint *reorder, MPI_Fint *newcomm, MPI_Fint *ierr)
{
    F_BEGIN("mpi_cart_create_", (comm, ndims, dims, periods, reorder, newcomm, ierr));
    int n = (int)*ndims, local[16];
    int *c_periods = logicals(periods, n, local, 16);
    if (!c_periods) {
        set_ierr(ierr, MPI_ERR_NO_MEM);
        return;
    }
    MPI_Comm c_new;
    int rc = core_cart_create(cm_r.Comm_f2c(*comm), n, dims, c_periods, *reorder != 0, &c_new);
    if (rc == MPI_SUCCESS)
        *newcomm = cm_r.Comm_c2f(c_new);
    if (c_periods != local)
        free(c_periods);
    set_ierr(ierr, rc);
}
F_ALIASES(mpi_cart_create, MPI_CART_CREATE,
          (MPI_Fint * comm, MPI_Fint *ndims, MPI_Fint *dims, MPI_Fint *periods, MPI_Fint *reorder,
           MPI_Fint *newcomm, MPI_Fint *ierr))

CM_PUBLIC void mpi_cart_sub_(MPI_Fint *comm, MPI_Fint *remain, MPI_Fint *newcomm, MPI_Fint *ierr)
{
    F_BEGIN("mpi_cart_sub_", (comm, remain, newcomm, ierr));
    MPI_Comm c = cm_r.Comm_f2c(*comm);
    int n = 0, local[16];
    if (cm_r.Cartdim_get(c, &n) != MPI_SUCCESS)
        n = 0;
    int *c_remain = logicals(remain, n, local, 16);
    if (!c_remain) {
        set_ierr(ierr, MPI_ERR_NO_MEM);
        return;
    }
    MPI_Comm c_new;
    int rc = core_cart_sub(c, c_remain, &c_new);
    if (rc == MPI_SUCCESS)
        *newcomm = cm_r.Comm_c2f(c_new);
    if (c_remain != local)
        free(c_remain);
    set_ierr(ierr, rc);
}
F_ALIASES(mpi_cart_sub, MPI_CART_SUB,
          (MPI_Fint * comm, MPI_Fint *remain, MPI_Fint *newcomm, MPI_Fint *ierr))

CM_PUBLIC void mpi_request_free_(MPI_Fint *request, MPI_Fint *ierr)
{
    F_BEGIN("mpi_request_free_", (request, ierr));
    MPI_Request c_req = cm_r.Request_f2c(*request);
    int rc = core_request_free(&c_req, CM_SITE());
    if (rc == MPI_SUCCESS)
        *request = cm_r.Request_c2f(c_req);
    set_ierr(ierr, rc);
}
F_ALIASES(mpi_request_free, MPI_REQUEST_FREE, (MPI_Fint * request, MPI_Fint *ierr))

/* Persistent requests */

#define F_SEND_INIT(lower, UPPER, OP)                                                       \
    CM_PUBLIC void lower##_(void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *dest,     \
                            MPI_Fint *tag, MPI_Fint *comm, MPI_Fint *request,               \
                            MPI_Fint *ierr)                                                 \
    {                                                                                       \
        F_BEGIN(#lower "_", (buf, count, type, dest, tag, comm, request, ierr));                                                                          \
        MPI_Request c_req;                                                                  \
        int rc = core_send_init(OP, fbuf(buf), (int)*count, cm_r.Type_f2c(*type),          \
                                (int)*dest, (int)*tag, cm_r.Comm_f2c(*comm), &c_req,        \
                                CM_SITE());                                                 \
        if (rc == MPI_SUCCESS)                                                              \
            *request = cm_r.Request_c2f(c_req);                                             \
        set_ierr(ierr, rc);                                                                 \
    }                                                                                       \
    F_ALIASES(lower, UPPER,                                                                 \
              (void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *dest, MPI_Fint *tag,   \
               MPI_Fint *comm, MPI_Fint *request, MPI_Fint *ierr))
F_SEND_INIT(mpi_send_init, MPI_SEND_INIT, OP_SEND_INIT)
F_SEND_INIT(mpi_ssend_init, MPI_SSEND_INIT, OP_SSEND_INIT)
F_SEND_INIT(mpi_bsend_init, MPI_BSEND_INIT, OP_BSEND_INIT)
F_SEND_INIT(mpi_rsend_init, MPI_RSEND_INIT, OP_RSEND_INIT)

CM_PUBLIC void mpi_recv_init_(void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *source,
                              MPI_Fint *tag, MPI_Fint *comm, MPI_Fint *request, MPI_Fint *ierr)
{
    F_BEGIN("mpi_recv_init_", (buf, count, type, source, tag, comm, request, ierr));
    MPI_Request c_req;
    int rc = core_recv_init(fbuf(buf), (int)*count, cm_r.Type_f2c(*type), (int)*source,
                            (int)*tag, cm_r.Comm_f2c(*comm), &c_req, CM_SITE());
    if (rc == MPI_SUCCESS)
        *request = cm_r.Request_c2f(c_req);
    set_ierr(ierr, rc);
}
F_ALIASES(mpi_recv_init, MPI_RECV_INIT,
          (void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *source, MPI_Fint *tag,
           MPI_Fint *comm, MPI_Fint *request, MPI_Fint *ierr))

CM_PUBLIC void mpi_start_(MPI_Fint *request, MPI_Fint *ierr)
{
    F_BEGIN("mpi_start_", (request, ierr));
    MPI_Request c_req = cm_r.Request_f2c(*request);
    int rc = core_start(&c_req, CM_SITE());
    if (rc == MPI_SUCCESS)
        *request = cm_r.Request_c2f(c_req);
    set_ierr(ierr, rc);
}
F_ALIASES(mpi_start, MPI_START, (MPI_Fint * request, MPI_Fint *ierr))

CM_PUBLIC void mpi_startall_(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *ierr)
{
    F_BEGIN("mpi_startall_", (count, requests, ierr));
    int n = (int)*count;
    struct farrays a;
    if (farrays_init(&a, n < 0 ? 0 : n, requests, 0) != 0) {
        set_ierr(ierr, MPI_ERR_NO_MEM);
        return;
    }
    int rc = core_startall(n, a.req, CM_SITE());
    if (rc == MPI_SUCCESS)
        farrays_back(&a, n, requests);
    free(a.heap);
    set_ierr(ierr, rc);
}
F_ALIASES(mpi_startall, MPI_STARTALL, (MPI_Fint * count, MPI_Fint *requests, MPI_Fint *ierr))

CM_PUBLIC void mpi_comm_free_(MPI_Fint *comm, MPI_Fint *ierr)
{
    F_BEGIN("mpi_comm_free_", (comm, ierr));
    MPI_Comm c = cm_r.Comm_f2c(*comm);
    int rc = core_comm_free(&c, CM_SITE());
    if (rc == MPI_SUCCESS)
        *comm = cm_r.Comm_c2f(c);
    set_ierr(ierr, rc);
}
F_ALIASES(mpi_comm_free, MPI_COMM_FREE, (MPI_Fint * comm, MPI_Fint *ierr))

/* ------------------------------------------------------------------------ */
/* MPI_Abort, MPI_Comm_create_group, nonblocking collectives                 */

CM_PUBLIC void mpi_abort_(MPI_Fint *comm, MPI_Fint *errorcode, MPI_Fint *ierr)
{
    F_BEGIN("mpi_abort_", (comm, errorcode, ierr));
    set_ierr(ierr, core_abort(cm_r.Comm_f2c(*comm), (int)*errorcode, CM_SITE()));
}
F_ALIASES(mpi_abort, MPI_ABORT, (MPI_Fint * comm, MPI_Fint *errorcode, MPI_Fint *ierr))

CM_PUBLIC void mpi_comm_create_group_(MPI_Fint *comm, MPI_Fint *group, MPI_Fint *tag,
                                      MPI_Fint *newcomm, MPI_Fint *ierr)
{
    F_BEGIN("mpi_comm_create_group_", (comm, group, tag, newcomm, ierr));
    MPI_Comm c_new;
    int rc = core_comm_create_group(cm_r.Comm_f2c(*comm), cm_r.Group_f2c(*group), (int)*tag,
                                    &c_new, CM_SITE());
    if (rc == MPI_SUCCESS)
        *newcomm = cm_r.Comm_c2f(c_new);
    set_ierr(ierr, rc);
}
F_ALIASES(mpi_comm_create_group, MPI_COMM_CREATE_GROUP,
          (MPI_Fint * comm, MPI_Fint *group, MPI_Fint *tag, MPI_Fint *newcomm, MPI_Fint *ierr))

/* The request of a nonblocking collective back to Fortran. */
static inline void request_out(int rc, MPI_Request c_req, MPI_Fint *request, MPI_Fint *ierr)
{
    if (rc == MPI_SUCCESS)
        *request = cm_r.Request_c2f(c_req);
    set_ierr(ierr, rc);
}

CM_PUBLIC void mpi_ibarrier_(MPI_Fint *comm, MPI_Fint *request, MPI_Fint *ierr)
{
    F_BEGIN("mpi_ibarrier_", (comm, request, ierr));
    MPI_Request r;
    request_out(core_barrier(cm_r.Comm_f2c(*comm), &r, CM_SITE()), r, request, ierr);
}
F_ALIASES(mpi_ibarrier, MPI_IBARRIER, (MPI_Fint * comm, MPI_Fint *request, MPI_Fint *ierr))

CM_PUBLIC void mpi_ibcast_(void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *root,
                           MPI_Fint *comm, MPI_Fint *request, MPI_Fint *ierr)
{
    F_BEGIN("mpi_ibcast_", (buf, count, type, root, comm, request, ierr));
    MPI_Request r;
    request_out(core_bcast(fbuf(buf), (int)*count, cm_r.Type_f2c(*type), (int)*root,
                           cm_r.Comm_f2c(*comm), &r, CM_SITE()),
                r, request, ierr);
}
F_ALIASES(mpi_ibcast, MPI_IBCAST,
          (void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *root, MPI_Fint *comm,
           MPI_Fint *request, MPI_Fint *ierr))

CM_PUBLIC void mpi_ireduce_(void *sbuf, void *rbuf, MPI_Fint *count, MPI_Fint *type,
                            MPI_Fint *op, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *request,
                            MPI_Fint *ierr)
{
    F_BEGIN("mpi_ireduce_", (sbuf, rbuf, count, type, op, root, comm, request, ierr));
    MPI_Request r;
    request_out(core_reduce(fbuf(sbuf), fbuf(rbuf), (int)*count, cm_r.Type_f2c(*type),
                            cm_r.Op_f2c(*op), (int)*root, cm_r.Comm_f2c(*comm), &r, CM_SITE()),
                r, request, ierr);
}
F_ALIASES(mpi_ireduce, MPI_IREDUCE,
          (void *sbuf, void *rbuf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *op, MPI_Fint *root,
           MPI_Fint *comm, MPI_Fint *request, MPI_Fint *ierr))

#define F_IALLRED(lower, UPPER, OP)                                                         \
    CM_PUBLIC void lower##_(void *sbuf, void *rbuf, MPI_Fint *count, MPI_Fint *type,        \
                            MPI_Fint *op, MPI_Fint *comm, MPI_Fint *request, MPI_Fint *ierr) \
    {                                                                                       \
        F_BEGIN(#lower "_", (sbuf, rbuf, count, type, op, comm, request, ierr));            \
        MPI_Request r;                                                                      \
        request_out(core_allreduce_like(OP, fbuf(sbuf), fbuf(rbuf), (int)*count,           \
                                        cm_r.Type_f2c(*type), cm_r.Op_f2c(*op),             \
                                        cm_r.Comm_f2c(*comm), &r, CM_SITE()),               \
                    r, request, ierr);                                                      \
    }                                                                                       \
    F_ALIASES(lower, UPPER,                                                                 \
              (void *sbuf, void *rbuf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *op,       \
               MPI_Fint *comm, MPI_Fint *request, MPI_Fint *ierr))
F_IALLRED(mpi_iallreduce, MPI_IALLREDUCE, OP_ALLREDUCE)
F_IALLRED(mpi_iscan, MPI_ISCAN, OP_SCAN)
F_IALLRED(mpi_iexscan, MPI_IEXSCAN, OP_EXSCAN)

#define F_IGATHER(lower, UPPER, OP)                                                         \
    CM_PUBLIC void lower##_(void *sbuf, MPI_Fint *scount, MPI_Fint *stype, void *rbuf,      \
                            MPI_Fint *rcount, MPI_Fint *rtype, MPI_Fint *root,              \
                            MPI_Fint *comm, MPI_Fint *request, MPI_Fint *ierr)              \
    {                                                                                       \
        F_BEGIN(#lower "_",                                                                 \
                (sbuf, scount, stype, rbuf, rcount, rtype, root, comm, request, ierr));     \
        MPI_Request r;                                                                      \
        request_out(core_gather_like(OP, fbuf(sbuf), (int)*scount, cm_r.Type_f2c(*stype),   \
                                     fbuf(rbuf), (int)*rcount, cm_r.Type_f2c(*rtype),       \
                                     (int)*root, cm_r.Comm_f2c(*comm), &r, CM_SITE()),      \
                    r, request, ierr);                                                      \
    }                                                                                       \
    F_ALIASES(lower, UPPER,                                                                 \
              (void *sbuf, MPI_Fint *scount, MPI_Fint *stype, void *rbuf, MPI_Fint *rcount, \
               MPI_Fint *rtype, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *request,          \
               MPI_Fint *ierr))
F_IGATHER(mpi_igather, MPI_IGATHER, OP_GATHER)
F_IGATHER(mpi_iscatter, MPI_ISCATTER, OP_SCATTER)

#define F_IALLGATHER(lower, UPPER, OP)                                                      \
    CM_PUBLIC void lower##_(void *sbuf, MPI_Fint *scount, MPI_Fint *stype, void *rbuf,      \
                            MPI_Fint *rcount, MPI_Fint *rtype, MPI_Fint *comm,              \
                            MPI_Fint *request, MPI_Fint *ierr)                              \
    {                                                                                       \
        F_BEGIN(#lower "_", (sbuf, scount, stype, rbuf, rcount, rtype, comm, request, ierr)); \
        MPI_Request r;                                                                      \
        request_out(core_gather_like(OP, fbuf(sbuf), (int)*scount, cm_r.Type_f2c(*stype),   \
                                     fbuf(rbuf), (int)*rcount, cm_r.Type_f2c(*rtype), 0,    \
                                     cm_r.Comm_f2c(*comm), &r, CM_SITE()),                  \
                    r, request, ierr);                                                      \
    }                                                                                       \
    F_ALIASES(lower, UPPER,                                                                 \
              (void *sbuf, MPI_Fint *scount, MPI_Fint *stype, void *rbuf, MPI_Fint *rcount, \
               MPI_Fint *rtype, MPI_Fint *comm, MPI_Fint *request, MPI_Fint *ierr))
F_IALLGATHER(mpi_iallgather, MPI_IALLGATHER, OP_ALLGATHER)
F_IALLGATHER(mpi_ialltoall, MPI_IALLTOALL, OP_ALLTOALL)

/* ------------------------------------------------------------------------ */
/* The mpi_f08 bindings                                                      */

/* Open MPI's mpi_f08 module procedures (libmpi_usempif08) call
 * libmpi_mpifh's ompi_<name>_f, the C implementation behind its mpif.h
 * entry points, with the same arguments (handles as integers, the same
 * sentinels): the entry points above, under those names, record them too.
 * Their call site is inside the f08 module: rec_enter moves it to the
 * user's line (user_site). The declared type is not the target's (the
 * alias only names the same code), hence the pragma. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wattribute-alias"
#define F08(stem) CM_PUBLIC void ompi_##stem##_f(void) __attribute__((alias("mpi_" #stem "_")));
F08(abort)
F08(allgather)
F08(allgatherv)
F08(allreduce)
F08(alltoall)
F08(alltoallv)
F08(alltoallw)
F08(barrier)
F08(bcast)
F08(bsend)
F08(bsend_init)
F08(cart_create)
F08(cart_sub)
F08(comm_create)
F08(comm_create_group)
F08(comm_dup)
F08(comm_free)
F08(comm_split)
F08(comm_split_type)
F08(exscan)
F08(finalize)
F08(gather)
F08(gatherv)
F08(iallgather)
F08(iallreduce)
F08(ialltoall)
F08(ibarrier)
F08(ibcast)
F08(ibsend)
F08(iexscan)
F08(igather)
F08(improbe)
F08(imrecv)
F08(init)
F08(init_thread)
F08(iprobe)
F08(irecv)
F08(ireduce)
F08(irsend)
F08(iscan)
F08(iscatter)
F08(isend)
F08(issend)
F08(mprobe)
F08(mrecv)
F08(probe)
F08(recv)
F08(recv_init)
F08(reduce)
F08(reduce_scatter)
F08(reduce_scatter_block)
F08(request_free)
F08(rsend)
F08(rsend_init)
F08(scan)
F08(scatter)
F08(scatterv)
F08(send)
F08(send_init)
F08(sendrecv)
F08(sendrecv_replace)
F08(ssend)
F08(ssend_init)
F08(start)
F08(startall)
F08(test)
F08(testall)
F08(testany)
F08(testsome)
F08(wait)
F08(waitall)
F08(waitany)
F08(waitsome)
#undef F08
#pragma GCC diagnostic pop
