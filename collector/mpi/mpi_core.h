/*
 * contend MPI recorder: the recording core shared by the C wrappers
 * (mpi_wrap.c) and the Open MPI Fortran entry points (mpi_fortran.c).
 * Compiled once per MPI implementation (its mpi.h decides the ABI).
 *
 * Every core_* function calls the real PMPI_* function exactly once with
 * the caller's arguments (a local status replaces MPI_STATUS_IGNORE, which
 * writes back nothing the caller did not ask for) and returns its return
 * code; `site` is the caller's return address.
 */
#ifndef CONTEND_MPI_CORE_H
#define CONTEND_MPI_CORE_H

#include <mpi.h>
#include <stdint.h>

#include "mpi_rec.h"

/* Operation codes (contend_trace::mpi::MpiOp; never renumbered; the ones
 * added after the first version follow OP_REQUEST_FREE). */
enum cm_op {
    OP_INIT = 1, OP_INIT_THREAD = 2, OP_FINALIZE = 3,
    OP_SEND = 10, OP_SSEND = 11, OP_BSEND = 12, OP_RSEND = 13, OP_RECV = 14,
    OP_SENDRECV = 15, OP_SENDRECV_REPLACE = 16,
    OP_ISEND = 20, OP_ISSEND = 21, OP_IBSEND = 22, OP_IRSEND = 23, OP_IRECV = 24,
    OP_WAIT = 30, OP_WAITALL = 31, OP_WAITANY = 32, OP_WAITSOME = 33,
    OP_TEST = 34, OP_TESTALL = 35, OP_TESTANY = 36, OP_TESTSOME = 37,
    OP_PROBE = 40, OP_IPROBE = 41, OP_MPROBE = 42, OP_IMPROBE = 43, OP_MRECV = 44, OP_IMRECV = 45,
    OP_BARRIER = 50, OP_BCAST = 51, OP_REDUCE = 52, OP_ALLREDUCE = 53, OP_GATHER = 54,
    OP_GATHERV = 55, OP_SCATTER = 56, OP_SCATTERV = 57, OP_ALLGATHER = 58,
    OP_ALLGATHERV = 59, OP_ALLTOALL = 60, OP_ALLTOALLV = 61, OP_ALLTOALLW = 62,
    OP_REDUCE_SCATTER = 63, OP_REDUCE_SCATTER_BLOCK = 64, OP_SCAN = 65, OP_EXSCAN = 66,
    OP_COMM_SPLIT = 80, OP_COMM_DUP = 81, OP_COMM_CREATE = 82, OP_COMM_FREE = 83,
    OP_SEND_INIT = 90, OP_SSEND_INIT = 91, OP_BSEND_INIT = 92, OP_RSEND_INIT = 93,
    OP_RECV_INIT = 94, OP_START = 95, OP_STARTALL = 96, OP_REQUEST_FREE = 97,
    OP_ABORT = 4,
    OP_COMM_CREATE_GROUP = 84, OP_INTERCOMM_CREATE = 85, OP_COMM_IDUP = 86,
    OP_IBARRIER = 100, OP_IBCAST = 101, OP_IREDUCE = 102, OP_IALLREDUCE = 103, OP_IGATHER = 104,
    OP_IGATHERV = 105, OP_ISCATTER = 106, OP_ISCATTERV = 107, OP_IALLGATHER = 108,
    OP_IALLGATHERV = 109, OP_IALLTOALL = 110, OP_IALLTOALLV = 111, OP_IALLTOALLW = 112,
    OP_IREDUCE_SCATTER = 113, OP_IREDUCE_SCATTER_BLOCK = 114, OP_ISCAN = 115, OP_IEXSCAN = 116,
};

/* The real functions (PMPI_*), resolved on first use. */
struct cm_real {
#define CM_REAL_FIELD(name) __typeof__(PMPI_##name) *name;
#include "mpi_funcs.h"
#undef CM_REAL_FIELD
};
CM_HIDDEN extern struct cm_real cm_r;
/* Resolves cm_r once (any thread; idempotent). Aborts with a message if
 * the MPI library cannot be found at all (the program could not run).
 * Inline: every wrapper calls it, and after the first call it is one load
 * (cm_resolve_slow does the work). */
CM_HIDDEN extern int cm_resolved; /* atomic: 0 no, 1 yes */
CM_HIDDEN void cm_resolve_slow(void);
static inline __attribute__((always_inline)) void cm_resolve(void)
{
    if (CM_LIKELY(__atomic_load_n(&cm_resolved, __ATOMIC_ACQUIRE)))
        return;
    cm_resolve_slow();
}
/* Open MPI's Fortran sentinel addresses (NULL elsewhere). */
CM_HIDDEN extern void *cm_f_status_ignore, *cm_f_statuses_ignore, *cm_f_in_place, *cm_f_bottom;

CM_HIDDEN int core_init(int op, int *argc, char ***argv, int required, int *provided, uint64_t site);
CM_HIDDEN int core_finalize(uint64_t site);
CM_HIDDEN int core_send(int op, const void *buf, int count, MPI_Datatype type, int dest, int tag,
                        MPI_Comm comm, uint64_t site);
CM_HIDDEN int core_recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                        MPI_Status *status, uint64_t site);
CM_HIDDEN int core_sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag,
                            void *rbuf, int rcount, MPI_Datatype rtype, int source, int rtag,
                            MPI_Comm comm, MPI_Status *status, uint64_t site);
CM_HIDDEN int core_sendrecv_replace(void *buf, int count, MPI_Datatype type, int dest, int stag,
                                    int source, int rtag, MPI_Comm comm, MPI_Status *status,
                                    uint64_t site);
CM_HIDDEN int core_isend(int op, const void *buf, int count, MPI_Datatype type, int dest, int tag,
                         MPI_Comm comm, MPI_Request *req, uint64_t site);
CM_HIDDEN int core_irecv(void *buf, int count, MPI_Datatype type, int source, int tag,
                         MPI_Comm comm, MPI_Request *req, uint64_t site);
CM_HIDDEN int core_wait(MPI_Request *req, MPI_Status *status, uint64_t site);
CM_HIDDEN int core_test(MPI_Request *req, int *flag, MPI_Status *status, uint64_t site);
CM_HIDDEN int core_waitall(int n, MPI_Request *reqs, MPI_Status *statuses, uint64_t site);
CM_HIDDEN int core_testall(int n, MPI_Request *reqs, int *flag, MPI_Status *statuses,
                           uint64_t site);
CM_HIDDEN int core_waitany(int n, MPI_Request *reqs, int *index, MPI_Status *status,
                           uint64_t site);
CM_HIDDEN int core_testany(int n, MPI_Request *reqs, int *index, int *flag, MPI_Status *status,
                           uint64_t site);
CM_HIDDEN int core_waitsome(int n, MPI_Request *reqs, int *outcount, int *indices,
                            MPI_Status *statuses, uint64_t site);
CM_HIDDEN int core_testsome(int n, MPI_Request *reqs, int *outcount, int *indices,
                            MPI_Status *statuses, uint64_t site);
CM_HIDDEN int core_probe(int source, int tag, MPI_Comm comm, MPI_Status *status, uint64_t site);
CM_HIDDEN int core_iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status,
                          uint64_t site);
/* Matched probes and receives: the recorder follows each MPI_Message an
 * (I)mprobe returned to the (I)mrecv that takes it, so the receive is
 * recorded with the message's communicator, source and tag. */
CM_HIDDEN int core_mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message,
                          MPI_Status *status, uint64_t site);
CM_HIDDEN int core_improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,
                           MPI_Status *status, uint64_t site);
CM_HIDDEN int core_mrecv(void *buf, int count, MPI_Datatype type, MPI_Message *message,
                         MPI_Status *status, uint64_t site);
CM_HIDDEN int core_imrecv(void *buf, int count, MPI_Datatype type, MPI_Message *message,
                          MPI_Request *req, uint64_t site);
/* Collectives: req NULL for the blocking call, else the nonblocking form
 * (MPI_Ibarrier, ...), whose request goes to *req. */
CM_HIDDEN int core_barrier(MPI_Comm comm, MPI_Request *req, uint64_t site);
CM_HIDDEN int core_bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm,
                         MPI_Request *req, uint64_t site);
CM_HIDDEN int core_reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
                          int root, MPI_Comm comm, MPI_Request *req, uint64_t site);
/* Allreduce, Scan, Exscan, Reduce_scatter_block (count = recvcount) */
CM_HIDDEN int core_allreduce_like(int op, const void *sbuf, void *rbuf, int count,
                                  MPI_Datatype type, MPI_Op mop, MPI_Comm comm, MPI_Request *req, uint64_t site);
CM_HIDDEN int core_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                  MPI_Datatype type, MPI_Op mop, MPI_Comm comm, MPI_Request *req, uint64_t site);
/* Gather, Scatter, Allgather, Alltoall */
CM_HIDDEN int core_gather_like(int op, const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                               int rcount, MPI_Datatype rtype, int root, MPI_Comm comm,
                               MPI_Request *req, uint64_t site);
CM_HIDDEN int core_gatherv(int op, const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                           const int *rcounts, const int *displs, MPI_Datatype rtype, int root,
                           MPI_Comm comm, MPI_Request *req, uint64_t site); /* Gatherv, Allgatherv (root -1) */
CM_HIDDEN int core_scatterv(const void *sbuf, const int *scounts, const int *displs,
                            MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
                            int root, MPI_Comm comm, MPI_Request *req, uint64_t site);
CM_HIDDEN int core_alltoallv(const void *sbuf, const int *scounts, const int *sdispls,
                             MPI_Datatype stype, void *rbuf, const int *rcounts,
                             const int *rdispls, MPI_Datatype rtype, MPI_Comm comm,
                             MPI_Request *req, uint64_t site);
CM_HIDDEN int core_alltoallw(const void *sbuf, const int *scounts, const int *sdispls,
                             const MPI_Datatype *stypes, void *rbuf, const int *rcounts,
                             const int *rdispls, const MPI_Datatype *rtypes, MPI_Comm comm,
                             MPI_Request *req, uint64_t site);
CM_HIDDEN int core_comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm,
                              uint64_t site);
CM_HIDDEN int core_comm_dup(MPI_Comm comm, MPI_Comm *newcomm, uint64_t site);
CM_HIDDEN int core_comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm, uint64_t site);
CM_HIDDEN int core_comm_free(MPI_Comm *comm, uint64_t site);
/* Created over a group (not the whole parent): an id from the members,
 * the tag and the occurrence (comm_created_group). */
CM_HIDDEN int core_comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm,
                                     uint64_t site);
CM_HIDDEN int core_intercomm_create(MPI_Comm local, int local_leader, MPI_Comm peer,
                                    int remote_leader, int tag, MPI_Comm *newcomm, uint64_t site);
/* Nonblocking: the communicator is registered by the call completing the
 * request. */
CM_HIDDEN int core_comm_idup(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *req, uint64_t site);
/* Records the call, then calls PMPI_Abort (which does not return). */
CM_HIDDEN int core_abort(MPI_Comm comm, int errorcode, uint64_t site);
/* Communicator creation that is not an event (no operation code):
 * MPI_Comm_split_type, MPI_Cart_create, MPI_Cart_sub,
 * MPI_Dist_graph_create_adjacent. The new communicator gets its id the
 * same way as from Comm_split (collective over the parent), and its
 * members are recorded, so later calls on it match across ranks. */
CM_HIDDEN int core_comm_split_type(MPI_Comm comm, int type, int key, MPI_Info info,
                                   MPI_Comm *newcomm);
CM_HIDDEN int core_cart_create(MPI_Comm comm, int ndims, const int *dims, const int *periods,
                               int reorder, MPI_Comm *newcomm);
CM_HIDDEN int core_cart_sub(MPI_Comm comm, const int *remain, MPI_Comm *newcomm);
/* Persistent requests: *_init record the envelope (kept by handle), each
 * MPI_Start / MPI_Startall activation posts it with a fresh request id
 * (a START record), completed by Wait / Test like Isend / Irecv. */
CM_HIDDEN int core_send_init(int op, const void *buf, int count, MPI_Datatype type, int dest,
                             int tag, MPI_Comm comm, MPI_Request *req, uint64_t site);
CM_HIDDEN int core_recv_init(void *buf, int count, MPI_Datatype type, int source, int tag,
                             MPI_Comm comm, MPI_Request *req, uint64_t site);
CM_HIDDEN int core_start(MPI_Request *req, uint64_t site);
CM_HIDDEN int core_startall(int n, MPI_Request *reqs, uint64_t site);
/* MPI_Request_free: recorded (OP_REQUEST_FREE) for a persistent request
 * created by a wrapped *_init call; any other request is only forgotten. */
CM_HIDDEN int core_request_free(MPI_Request *req, uint64_t site);

/* Notes that a Fortran entry point was used (header flag). */
CM_HIDDEN void cm_fortran_seen(void);
/* 1 when the loaded MPI library is the one this recorder was built for
 * (after cm_resolve). */
CM_HIDDEN int cm_abi_ok(void);
/* A Fortran entry point of the program's own MPI library, passed the
 * arguments unchanged (old-style call: every Fortran argument is a
 * pointer). */
typedef void (*cm_fortran_fn)();
/* The next definition of Fortran entry point `name` (`mpi_send_`) after
 * the recorder's, in any of the usual manglings; never NULL (a function
 * that says so and aborts, when the program's MPI library has none: the
 * program could not have been linked without one). */
CM_HIDDEN cm_fortran_fn cm_fortran_next(const char *name);

#define CM_SITE() ((uint64_t)(uintptr_t)__builtin_return_address(0))

#endif /* CONTEND_MPI_CORE_H */
