/*
 * contend MPI recorder: MPICH's mpi_f08 Fortran bindings (MPICH only).
 *
 * MPICH's `use mpi_f08` entry points live in libmpichfort. Those with a
 * choice buffer (mpi_send_f08ts_, mpi_recv_f08ts_, mpi_allreduce_f08ts_,
 * ...) convert the Fortran descriptor in C and call the C functions
 * (MPI_Send, ...), which mpi_wrap.c interposes. The others (mpi_init_f08_,
 * mpi_finalize_f08_, mpi_barrier_f08_, mpi_wait*_f08_, mpi_test*_f08_,
 * mpi_probe_f08_, mpi_start_f08_, mpi_comm_split_f08_, ...) call PMPI_*
 * directly (nm/objdump of Debian's libmpichfort.so.12, MPICH 4.0.2), so no
 * MPI_* wrapper sees them: an f08 program recorded nothing, not even its
 * MPI_Init.
 *
 * The interception point is libmpichfort's own imports: when the library
 * is mapped, this file's constructor rewrites its relocated references
 * (PLT slots, R_X86_64_JUMP_SLOT / R_AARCH64_JUMP_SLOT, and GOT entries,
 * GLOB_DAT) to the PMPI functions listed below so that they point to
 * hidden functions here, which record through the same core functions as
 * the C wrappers. Nothing else in the process changes: no PMPI_* symbol
 * is exported (other callers of PMPI_*, tools included, reach libmpich as
 * before), and the binding keeps doing its own argument conversion
 * (handles, sentinels, LOGICALs, indices), so the program gets exactly
 * the return values, written-back arguments and ierror it got without
 * the recorder. The call site recorded is the return address into
 * libmpichfort, which rec_enter moves to the user's Fortran line
 * (user_site: libmpichfort is a binding range).
 *
 * Only libmpichfort is patched, and only this recorder (built against
 * MPICH's mpi.h) does it, so the signatures below are the ones the binding
 * was compiled against. A libmpichfort loaded later with dlopen is not
 * patched (Fortran programs link it at start).
 */
#include <elf.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mpi_core.h"

/* ------------------------------------------------------------------------ */
/* The replacements: C signatures of MPICH's PMPI functions                  */

static int f08_init(int *argc, char ***argv)
{
    int rc = core_init(OP_INIT, argc, argv, 0, NULL, CM_SITE());
    cm_fortran_seen();
    return rc;
}
static int f08_init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = core_init(OP_INIT_THREAD, argc, argv, required, provided, CM_SITE());
    cm_fortran_seen();
    return rc;
}
static int f08_finalize(void) { return core_finalize(CM_SITE()); }
static int f08_abort(MPI_Comm comm, int errorcode) { return core_abort(comm, errorcode, CM_SITE()); }
static int f08_barrier(MPI_Comm comm) { return core_barrier(comm, NULL, CM_SITE()); }
static int f08_ibarrier(MPI_Comm comm, MPI_Request *req)
{
    return core_barrier(comm, req, CM_SITE());
}
static int f08_wait(MPI_Request *req, MPI_Status *status)
{
    return core_wait(req, status, CM_SITE());
}
static int f08_waitall(int n, MPI_Request reqs[], MPI_Status statuses[])
{
    return core_waitall(n, reqs, statuses, CM_SITE());
}
static int f08_waitany(int n, MPI_Request reqs[], int *index, MPI_Status *status)
{
    return core_waitany(n, reqs, index, status, CM_SITE());
}
static int f08_waitsome(int n, MPI_Request reqs[], int *outcount, int indices[],
                        MPI_Status statuses[])
{
    return core_waitsome(n, reqs, outcount, indices, statuses, CM_SITE());
}
static int f08_test(MPI_Request *req, int *flag, MPI_Status *status)
{
    return core_test(req, flag, status, CM_SITE());
}
static int f08_testall(int n, MPI_Request reqs[], int *flag, MPI_Status statuses[])
{
    return core_testall(n, reqs, flag, statuses, CM_SITE());
}
static int f08_testany(int n, MPI_Request reqs[], int *index, int *flag, MPI_Status *status)
{
    return core_testany(n, reqs, index, flag, status, CM_SITE());
}
static int f08_testsome(int n, MPI_Request reqs[], int *outcount, int indices[],
                        MPI_Status statuses[])
{
    return core_testsome(n, reqs, outcount, indices, statuses, CM_SITE());
}
static int f08_probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    return core_probe(source, tag, comm, status, CM_SITE());
}
static int f08_iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
{
    return core_iprobe(source, tag, comm, flag, status, CM_SITE());
}
static int f08_mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message,
                      MPI_Status *status)
{
    return core_mprobe(source, tag, comm, message, status, CM_SITE());
}
static int f08_improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,
                       MPI_Status *status)
{
    return core_improbe(source, tag, comm, flag, message, status, CM_SITE());
}
static int f08_start(MPI_Request *req) { return core_start(req, CM_SITE()); }
static int f08_startall(int n, MPI_Request reqs[]) { return core_startall(n, reqs, CM_SITE()); }
static int f08_request_free(MPI_Request *req) { return core_request_free(req, CM_SITE()); }
static int f08_comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
    return core_comm_split(comm, color, key, newcomm, CM_SITE());
}
static int f08_comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
    return core_comm_dup(comm, newcomm, CM_SITE());
}
static int f08_comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
{
    return core_comm_create(comm, group, newcomm, CM_SITE());
}
static int f08_comm_free(MPI_Comm *comm) { return core_comm_free(comm, CM_SITE()); }
static int f08_comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm)
{
    return core_comm_create_group(comm, group, tag, newcomm, CM_SITE());
}
static int f08_intercomm_create(MPI_Comm local, int local_leader, MPI_Comm peer,
                                int remote_leader, int tag, MPI_Comm *newcomm)
{
    return core_intercomm_create(local, local_leader, peer, remote_leader, tag, newcomm,
                                 CM_SITE());
}
static int f08_comm_idup(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *req)
{
    return core_comm_idup(comm, newcomm, req, CM_SITE());
}
static int f08_comm_split_type(MPI_Comm comm, int type, int key, MPI_Info info, MPI_Comm *newcomm)
{
    return core_comm_split_type(comm, type, key, info, newcomm);
}
static int f08_cart_create(MPI_Comm comm, int ndims, const int dims[], const int periods[],
                           int reorder, MPI_Comm *newcomm)
{
    return core_cart_create(comm, ndims, dims, periods, reorder, newcomm);
}
static int f08_cart_sub(MPI_Comm comm, const int remain[], MPI_Comm *newcomm)
{
    return core_cart_sub(comm, remain, newcomm);
}
/* Recorded as a communicator only, by the C wrapper (mpi_wrap.c). */
static int f08_dist_graph_create_adjacent(MPI_Comm comm, int indegree, const int sources[],
                                          const int sourceweights[], int outdegree,
                                          const int destinations[], const int destweights[],
                                          MPI_Info info, int reorder, MPI_Comm *newcomm)
{
    return MPI_Dist_graph_create_adjacent(comm, indegree, sources, sourceweights, outdegree,
                                          destinations, destweights, info, reorder, newcomm);
}

/* The imports rewritten: PMPI name, replacement. */
static const struct {
    const char *name;
    void (*fn)(void);
} f08_imports[] = {
#define F08_IMPORT(Name, fn) {"PMPI_" #Name, (void (*)(void))fn}
    F08_IMPORT(Init, f08_init),
    F08_IMPORT(Init_thread, f08_init_thread),
    F08_IMPORT(Finalize, f08_finalize),
    F08_IMPORT(Abort, f08_abort),
    F08_IMPORT(Barrier, f08_barrier),
    F08_IMPORT(Ibarrier, f08_ibarrier),
    F08_IMPORT(Wait, f08_wait),
    F08_IMPORT(Waitall, f08_waitall),
    F08_IMPORT(Waitany, f08_waitany),
    F08_IMPORT(Waitsome, f08_waitsome),
    F08_IMPORT(Test, f08_test),
    F08_IMPORT(Testall, f08_testall),
    F08_IMPORT(Testany, f08_testany),
    F08_IMPORT(Testsome, f08_testsome),
    F08_IMPORT(Probe, f08_probe),
    F08_IMPORT(Iprobe, f08_iprobe),
    F08_IMPORT(Mprobe, f08_mprobe),
    F08_IMPORT(Improbe, f08_improbe),
    F08_IMPORT(Start, f08_start),
    F08_IMPORT(Startall, f08_startall),
    F08_IMPORT(Request_free, f08_request_free),
    F08_IMPORT(Comm_split, f08_comm_split),
    F08_IMPORT(Comm_dup, f08_comm_dup),
    F08_IMPORT(Comm_create, f08_comm_create),
    F08_IMPORT(Comm_free, f08_comm_free),
    F08_IMPORT(Comm_create_group, f08_comm_create_group),
    F08_IMPORT(Intercomm_create, f08_intercomm_create),
    F08_IMPORT(Comm_idup, f08_comm_idup),
    F08_IMPORT(Comm_split_type, f08_comm_split_type),
    F08_IMPORT(Cart_create, f08_cart_create),
    F08_IMPORT(Cart_sub, f08_cart_sub),
    F08_IMPORT(Dist_graph_create_adjacent, f08_dist_graph_create_adjacent),
#undef F08_IMPORT
};
#define N_F08_IMPORTS (sizeof f08_imports / sizeof f08_imports[0])

/* Compile-time checks that the replacements have the PMPI signatures. */
#define F08_SAME_TYPE(Name, fn)                                                             \
    _Static_assert(__builtin_types_compatible_p(__typeof__(&PMPI_##Name), __typeof__(&fn)), \
                   "f08 replacement for PMPI_" #Name " has another signature")
F08_SAME_TYPE(Init, f08_init);
F08_SAME_TYPE(Init_thread, f08_init_thread);
F08_SAME_TYPE(Finalize, f08_finalize);
F08_SAME_TYPE(Abort, f08_abort);
F08_SAME_TYPE(Barrier, f08_barrier);
F08_SAME_TYPE(Ibarrier, f08_ibarrier);
F08_SAME_TYPE(Wait, f08_wait);
F08_SAME_TYPE(Waitall, f08_waitall);
F08_SAME_TYPE(Waitany, f08_waitany);
F08_SAME_TYPE(Waitsome, f08_waitsome);
F08_SAME_TYPE(Test, f08_test);
F08_SAME_TYPE(Testall, f08_testall);
F08_SAME_TYPE(Testany, f08_testany);
F08_SAME_TYPE(Testsome, f08_testsome);
F08_SAME_TYPE(Probe, f08_probe);
F08_SAME_TYPE(Iprobe, f08_iprobe);
F08_SAME_TYPE(Mprobe, f08_mprobe);
F08_SAME_TYPE(Improbe, f08_improbe);
F08_SAME_TYPE(Start, f08_start);
F08_SAME_TYPE(Startall, f08_startall);
F08_SAME_TYPE(Request_free, f08_request_free);
F08_SAME_TYPE(Comm_split, f08_comm_split);
F08_SAME_TYPE(Comm_dup, f08_comm_dup);
F08_SAME_TYPE(Comm_create, f08_comm_create);
F08_SAME_TYPE(Comm_free, f08_comm_free);
F08_SAME_TYPE(Comm_create_group, f08_comm_create_group);
F08_SAME_TYPE(Intercomm_create, f08_intercomm_create);
F08_SAME_TYPE(Comm_idup, f08_comm_idup);
F08_SAME_TYPE(Comm_split_type, f08_comm_split_type);
F08_SAME_TYPE(Cart_create, f08_cart_create);
F08_SAME_TYPE(Cart_sub, f08_cart_sub);
F08_SAME_TYPE(Dist_graph_create_adjacent, f08_dist_graph_create_adjacent);

/* ------------------------------------------------------------------------ */
/* Rewriting libmpichfort's imports                                          */

#if defined(__x86_64__)
#define F08_R_JUMP_SLOT R_X86_64_JUMP_SLOT
#define F08_R_GLOB_DAT R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define F08_R_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define F08_R_GLOB_DAT R_AARCH64_GLOB_DAT
#endif

#if defined(F08_R_JUMP_SLOT)
/* A dynamic-section address: already relocated by ld.so on glibc (an
 * absolute address), a file offset elsewhere. */
static uintptr_t dyn_addr(const struct dl_phdr_info *info, ElfW(Addr) a)
{
    return a >= info->dlpi_addr ? (uintptr_t)a : info->dlpi_addr + (uintptr_t)a;
}

/* Writes `value` into the slot at `slot`, making its page writable for
 * the moment when the dynamic linker made it read-only after relocation
 * (PT_GNU_RELRO: ld.so protects the whole pages from the segment's start
 * rounded down to its end rounded down; the page holding its end stays
 * writable). */
static void write_slot(const struct dl_phdr_info *info, uintptr_t slot, uintptr_t value)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t ro_lo = 0, ro_hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_GNU_RELRO) {
            uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
            ro_lo = lo & ~(page - 1);
            ro_hi = (lo + ph->p_memsz) & ~(page - 1);
        }
    }
    if (slot >= ro_lo && slot < ro_hi) {
        void *p = (void *)(slot & ~(page - 1));
        if (mprotect(p, page, PROT_READ | PROT_WRITE) != 0)
            return; /* left unpatched: the call stays unrecorded */
        __atomic_store_n((uintptr_t *)slot, value, __ATOMIC_RELEASE);
        mprotect(p, page, PROT_READ);
        return;
    }
    __atomic_store_n((uintptr_t *)slot, value, __ATOMIC_RELEASE);
}

static void patch_relocs(const struct dl_phdr_info *info, const ElfW(Rela) *rel, size_t size,
                         const ElfW(Sym) *symtab, const char *strtab)
{
    if (!rel || !symtab || !strtab)
        return;
    for (size_t k = 0; k < size / sizeof *rel; k++) {
        unsigned type = (unsigned)ELF64_R_TYPE(rel[k].r_info);
        if (type != F08_R_JUMP_SLOT && type != F08_R_GLOB_DAT)
            continue;
        const char *name = strtab + symtab[ELF64_R_SYM(rel[k].r_info)].st_name;
        if (strncmp(name, "PMPI_", 5) != 0)
            continue;
        for (size_t j = 0; j < N_F08_IMPORTS; j++) {
            if (strcmp(name, f08_imports[j].name) == 0) {
                uintptr_t v;
                memcpy(&v, &f08_imports[j].fn, sizeof v);
                write_slot(info, info->dlpi_addr + rel[k].r_offset, v);
                break;
            }
        }
    }
}

static int patch_mpichfort(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    const char *name = info->dlpi_name;
    if (!name || !*name)
        return 0;
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    if (strncmp(base, "libmpichfort.so", 15) != 0)
        return 0;
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    if (!dyn)
        return 0;
    const ElfW(Rela) *jmprel = NULL, *rela = NULL;
    size_t jmprel_size = 0, rela_size = 0;
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    int rela_kind = 1;
    for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_JMPREL:
            jmprel = (const ElfW(Rela) *)dyn_addr(info, d->d_un.d_ptr);
            break;
        case DT_PLTRELSZ:
            jmprel_size = d->d_un.d_val;
            break;
        case DT_PLTREL:
            rela_kind = d->d_un.d_val == DT_RELA;
            break;
        case DT_RELA:
            rela = (const ElfW(Rela) *)dyn_addr(info, d->d_un.d_ptr);
            break;
        case DT_RELASZ:
            rela_size = d->d_un.d_val;
            break;
        case DT_SYMTAB:
            symtab = (const ElfW(Sym) *)dyn_addr(info, d->d_un.d_ptr);
            break;
        case DT_STRTAB:
            strtab = (const char *)dyn_addr(info, d->d_un.d_ptr);
            break;
        default:
            break;
        }
    }
    if (!rela_kind)
        return 1; /* REL relocations: not used on x86-64 or aarch64 */
    patch_relocs(info, jmprel, jmprel_size, symtab, strtab);
    patch_relocs(info, rela, rela_size, symtab, strtab);
    return 1;
}

/* Runs when the recorder is loaded (LD_PRELOAD): every library the
 * program links is then mapped and relocated, none has run yet. Only
 * processes that map libmpichfort are touched. */
__attribute__((constructor)) static void f08_patch_imports(void)
{
    dl_iterate_phdr(patch_mpichfort, NULL);
}
#endif
