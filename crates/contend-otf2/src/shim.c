/*
 * A thin layer over libotf2 for contend's OTF2 export: one archive, one
 * event writer at a time, the global definitions at the end. Every
 * function returns 0 on success or the OTF2 error code, whose text
 * cotf2_error_text() gives. The records and definitions are exactly
 * OTF2's; this file only fixes the arguments contend does not vary
 * (attribute lists, flags, paradigms) and maps contend's MPI operation
 * codes (docs/trace-format.md) to OTF2's collective operations.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <otf2/otf2.h>

typedef struct cotf2 {
    OTF2_Archive *archive;
    OTF2_EvtWriter *evt;
    OTF2_GlobalDefWriter *defs;
} cotf2;

static OTF2_FlushType pre_flush(void *user, OTF2_FileType type, OTF2_LocationRef location,
                                void *caller, bool final)
{
    (void)user;
    (void)type;
    (void)location;
    (void)caller;
    (void)final;
    return OTF2_FLUSH;
}

static OTF2_TimeStamp post_flush(void *user, OTF2_FileType type, OTF2_LocationRef location)
{
    (void)user;
    (void)type;
    (void)location;
    return 0;
}

static const OTF2_FlushCallbacks flush_callbacks = {
    .otf2_pre_flush = pre_flush,
    .otf2_post_flush = post_flush,
};

const char *cotf2_error_text(int code)
{
    return OTF2_Error_GetDescription((OTF2_ErrorCode)code);
}

/* Opens the archive `dir`/`name`.otf2 for writing; *out is the handle. */
int cotf2_open(const char *dir, const char *name, cotf2 **out)
{
    cotf2 *c = calloc(1, sizeof *c);
    if (!c)
        return OTF2_ERROR_MEM_ALLOC_FAILED;
    c->archive = OTF2_Archive_Open(dir, name, OTF2_FILEMODE_WRITE, 1024 * 1024, 4 * 1024 * 1024,
                                   OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
    if (!c->archive) {
        free(c);
        return OTF2_ERROR_FILE_CAN_NOT_OPEN;
    }
    OTF2_ErrorCode e = OTF2_Archive_SetFlushCallbacks(c->archive, &flush_callbacks, NULL);
    if (e == OTF2_SUCCESS)
        e = OTF2_Archive_SetSerialCollectiveCallbacks(c->archive);
    if (e == OTF2_SUCCESS)
        e = OTF2_Archive_SetCreator(c->archive, "contend");
    if (e == OTF2_SUCCESS)
        e = OTF2_Archive_OpenEvtFiles(c->archive);
    if (e != OTF2_SUCCESS) {
        OTF2_Archive_Close(c->archive);
        free(c);
        return e;
    }
    *out = c;
    return OTF2_SUCCESS;
}

int cotf2_begin_location(cotf2 *c, uint64_t location)
{
    c->evt = OTF2_Archive_GetEvtWriter(c->archive, location);
    return c->evt ? OTF2_SUCCESS : OTF2_ERROR_INVALID_CALL;
}

int cotf2_end_location(cotf2 *c)
{
    OTF2_ErrorCode e = OTF2_Archive_CloseEvtWriter(c->archive, c->evt);
    c->evt = NULL;
    return e;
}

int cotf2_enter(cotf2 *c, uint64_t t, uint32_t region)
{
    return OTF2_EvtWriter_Enter(c->evt, NULL, t, region);
}

int cotf2_leave(cotf2 *c, uint64_t t, uint32_t region)
{
    return OTF2_EvtWriter_Leave(c->evt, NULL, t, region);
}

int cotf2_mpi_send(cotf2 *c, uint64_t t, uint32_t receiver, uint32_t comm, uint32_t tag,
                   uint64_t bytes)
{
    return OTF2_EvtWriter_MpiSend(c->evt, NULL, t, receiver, comm, tag, bytes);
}

int cotf2_mpi_isend(cotf2 *c, uint64_t t, uint32_t receiver, uint32_t comm, uint32_t tag,
                    uint64_t bytes, uint64_t request)
{
    return OTF2_EvtWriter_MpiIsend(c->evt, NULL, t, receiver, comm, tag, bytes, request);
}

int cotf2_mpi_isend_complete(cotf2 *c, uint64_t t, uint64_t request)
{
    return OTF2_EvtWriter_MpiIsendComplete(c->evt, NULL, t, request);
}

int cotf2_mpi_irecv_request(cotf2 *c, uint64_t t, uint64_t request)
{
    return OTF2_EvtWriter_MpiIrecvRequest(c->evt, NULL, t, request);
}

int cotf2_mpi_recv(cotf2 *c, uint64_t t, uint32_t sender, uint32_t comm, uint32_t tag,
                   uint64_t bytes)
{
    return OTF2_EvtWriter_MpiRecv(c->evt, NULL, t, sender, comm, tag, bytes);
}

int cotf2_mpi_irecv(cotf2 *c, uint64_t t, uint32_t sender, uint32_t comm, uint32_t tag,
                    uint64_t bytes, uint64_t request)
{
    return OTF2_EvtWriter_MpiIrecv(c->evt, NULL, t, sender, comm, tag, bytes, request);
}

int cotf2_collective_begin(cotf2 *c, uint64_t t)
{
    return OTF2_EvtWriter_MpiCollectiveBegin(c->evt, NULL, t);
}

/* contend's MPI operation code (crates/contend-trace/src/mpi.rs) → OTF2's. */
static int collective_op(uint16_t code, OTF2_CollectiveOp *op)
{
    switch (code) {
    case 50: *op = OTF2_COLLECTIVE_OP_BARRIER; return 1;
    case 51: *op = OTF2_COLLECTIVE_OP_BCAST; return 1;
    case 52: *op = OTF2_COLLECTIVE_OP_REDUCE; return 1;
    case 53: *op = OTF2_COLLECTIVE_OP_ALLREDUCE; return 1;
    case 54: *op = OTF2_COLLECTIVE_OP_GATHER; return 1;
    case 55: *op = OTF2_COLLECTIVE_OP_GATHERV; return 1;
    case 56: *op = OTF2_COLLECTIVE_OP_SCATTER; return 1;
    case 57: *op = OTF2_COLLECTIVE_OP_SCATTERV; return 1;
    case 58: *op = OTF2_COLLECTIVE_OP_ALLGATHER; return 1;
    case 59: *op = OTF2_COLLECTIVE_OP_ALLGATHERV; return 1;
    case 60: *op = OTF2_COLLECTIVE_OP_ALLTOALL; return 1;
    case 61: *op = OTF2_COLLECTIVE_OP_ALLTOALLV; return 1;
    case 62: *op = OTF2_COLLECTIVE_OP_ALLTOALLW; return 1;
    case 63: *op = OTF2_COLLECTIVE_OP_REDUCE_SCATTER; return 1;
    case 64: *op = OTF2_COLLECTIVE_OP_REDUCE_SCATTER_BLOCK; return 1;
    case 65: *op = OTF2_COLLECTIVE_OP_SCAN; return 1;
    case 66: *op = OTF2_COLLECTIVE_OP_EXSCAN; return 1;
    default: return 0;
    }
}

/* root = UINT32_MAX: a collective without a root. */
int cotf2_collective_end(cotf2 *c, uint64_t t, uint16_t op_code, uint32_t comm, uint32_t root,
                         uint64_t sent, uint64_t received)
{
    OTF2_CollectiveOp op;
    if (!collective_op(op_code, &op))
        return OTF2_ERROR_INVALID_ARGUMENT;
    return OTF2_EvtWriter_MpiCollectiveEnd(c->evt, NULL, t, op, comm,
                                           root == UINT32_MAX ? OTF2_COLLECTIVE_ROOT_NONE : root,
                                           sent, received);
}

/* paradigm codes of cotf2_region and cotf2_lock: 0 MPI, 1 pthread,
 * 2 OpenMP, 3 unknown (futex calls). */
static int paradigm_of(int code, OTF2_Paradigm *p)
{
    switch (code) {
    case 0: *p = OTF2_PARADIGM_MPI; return 1;
    case 1: *p = OTF2_PARADIGM_PTHREAD; return 1;
    case 2: *p = OTF2_PARADIGM_OPENMP; return 1;
    case 3: *p = OTF2_PARADIGM_UNKNOWN; return 1;
    default: return 0;
    }
}

/* paradigm: the lock's model (1 pthread, 2 OpenMP) */
int cotf2_lock(cotf2 *c, uint64_t t, int acquire, int paradigm, uint32_t lock, uint32_t order)
{
    OTF2_Paradigm p;
    if (!paradigm_of(paradigm, &p))
        return OTF2_ERROR_INVALID_ARGUMENT;
    if (acquire)
        return OTF2_EvtWriter_ThreadAcquireLock(c->evt, NULL, t, p, lock, order);
    return OTF2_EvtWriter_ThreadReleaseLock(c->evt, NULL, t, p, lock, order);
}

/* The events are written: close them, write the (empty) local
 * definitions of each location, open the global definitions. */
int cotf2_begin_definitions(cotf2 *c, const uint64_t *locations, size_t n, uint64_t first,
                            uint64_t last)
{
    OTF2_ErrorCode e = OTF2_Archive_CloseEvtFiles(c->archive);
    if (e == OTF2_SUCCESS)
        e = OTF2_Archive_OpenDefFiles(c->archive);
    for (size_t i = 0; e == OTF2_SUCCESS && i < n; i++) {
        OTF2_DefWriter *w = OTF2_Archive_GetDefWriter(c->archive, locations[i]);
        if (!w)
            return OTF2_ERROR_INVALID_CALL;
        e = OTF2_Archive_CloseDefWriter(c->archive, w);
    }
    if (e == OTF2_SUCCESS)
        e = OTF2_Archive_CloseDefFiles(c->archive);
    if (e != OTF2_SUCCESS)
        return e;
    c->defs = OTF2_Archive_GetGlobalDefWriter(c->archive);
    if (!c->defs)
        return OTF2_ERROR_INVALID_CALL;
    return OTF2_GlobalDefWriter_WriteClockProperties(c->defs, 1000000000, first,
                                                     last >= first ? last - first + 1 : 1,
                                                     OTF2_UNDEFINED_TIMESTAMP);
}

int cotf2_string(cotf2 *c, uint32_t id, const char *s)
{
    return OTF2_GlobalDefWriter_WriteString(c->defs, id, s);
}

/* role: 0 function, 1 point to point, 2 barrier, 3 one to all,
 * 4 all to one, 5 all to all, 6 other collective, 7 critical, 8 atomic,
 * 9 ordered, 10 implicit barrier, 11 task wait;
 * paradigm: 0 MPI, 1 pthread, 2 OpenMP, 3 unknown. */
int cotf2_region(cotf2 *c, uint32_t id, uint32_t name, int role, int paradigm)
{
    static const OTF2_RegionRole roles[] = {
        OTF2_REGION_ROLE_FUNCTION,     OTF2_REGION_ROLE_POINT2POINT,  OTF2_REGION_ROLE_BARRIER,
        OTF2_REGION_ROLE_COLL_ONE2ALL, OTF2_REGION_ROLE_COLL_ALL2ONE, OTF2_REGION_ROLE_COLL_ALL2ALL,
        OTF2_REGION_ROLE_COLL_OTHER,   OTF2_REGION_ROLE_CRITICAL,     OTF2_REGION_ROLE_ATOMIC,
        OTF2_REGION_ROLE_ORDERED,      OTF2_REGION_ROLE_IMPLICIT_BARRIER,
        OTF2_REGION_ROLE_TASK_WAIT,
    };
    OTF2_Paradigm p;
    if (role < 0 || role >= (int)(sizeof roles / sizeof roles[0]) || !paradigm_of(paradigm, &p))
        return OTF2_ERROR_INVALID_ARGUMENT;
    return OTF2_GlobalDefWriter_WriteRegion(c->defs, id, name, name, 0, roles[role], p,
                                            OTF2_REGION_FLAG_NONE, 0, 0, 0);
}

/* parent = UINT32_MAX: the root. */
int cotf2_system_tree_node(cotf2 *c, uint32_t id, uint32_t name, uint32_t class_name,
                           uint32_t parent)
{
    return OTF2_GlobalDefWriter_WriteSystemTreeNode(
        c->defs, id, name, class_name, parent == UINT32_MAX ? OTF2_UNDEFINED_SYSTEM_TREE_NODE : parent);
}

int cotf2_location_group(cotf2 *c, uint32_t id, uint32_t name, uint32_t node)
{
    return OTF2_GlobalDefWriter_WriteLocationGroup(c->defs, id, name,
                                                   OTF2_LOCATION_GROUP_TYPE_PROCESS, node,
                                                   OTF2_UNDEFINED_LOCATION_GROUP);
}

int cotf2_location(cotf2 *c, uint64_t id, uint32_t name, uint64_t events, uint32_t group)
{
    return OTF2_GlobalDefWriter_WriteLocation(c->defs, id, name, OTF2_LOCATION_TYPE_CPU_THREAD,
                                              events, group);
}

/* kind: 0 MPI locations, 1 MPI communicator group, 2 MPI_COMM_SELF. */
int cotf2_group(cotf2 *c, uint32_t id, uint32_t name, int kind, uint32_t n,
                const uint64_t *members)
{
    OTF2_GroupType type = kind == 0   ? OTF2_GROUP_TYPE_COMM_LOCATIONS
                          : kind == 1 ? OTF2_GROUP_TYPE_COMM_GROUP
                                      : OTF2_GROUP_TYPE_COMM_SELF;
    return OTF2_GlobalDefWriter_WriteGroup(c->defs, id, name, type, OTF2_PARADIGM_MPI,
                                           OTF2_GROUP_FLAG_NONE, n, members);
}

int cotf2_comm(cotf2 *c, uint32_t id, uint32_t name, uint32_t group)
{
    return OTF2_GlobalDefWriter_WriteComm(c->defs, id, name, group, OTF2_UNDEFINED_COMM,
                                          OTF2_COMM_FLAG_NONE);
}

/* Closes the archive (writing the anchor file) and frees the handle. */
int cotf2_close(cotf2 *c)
{
    OTF2_ErrorCode e = OTF2_SUCCESS;
    if (c->evt)
        OTF2_Archive_CloseEvtWriter(c->archive, c->evt);
    if (c->defs)
        e = OTF2_Archive_CloseGlobalDefWriter(c->archive, c->defs);
    OTF2_ErrorCode closed = OTF2_Archive_Close(c->archive);
    free(c);
    return e != OTF2_SUCCESS ? e : closed;
}
