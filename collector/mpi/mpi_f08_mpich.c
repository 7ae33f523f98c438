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
 * the recorder's C wrappers of the same calls (two of them, MPI_Init and
 * MPI_Init_thread, to functions here that also note the Fortran caller).
 * Nothing else in the process changes: no PMPI_* symbol is exported
 * (other callers of PMPI_*, tools included, reach libmpich as before),
 * and the binding keeps doing its own argument conversion (handles,
 * sentinels, LOGICALs, indices), so the program gets exactly
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

/*
 * The imports rewritten: PMPI name, replacement. Apart from MPI_Init and
 * MPI_Init_thread (above: they also note that a Fortran binding called),
 * the replacement is the recorder's own C wrapper of the same call
 * (mpi_wrap.c), which records through the same core function with the
 * return address into libmpichfort as its call site.
 */
static const struct {
    const char *name;
    void (*fn)(void);
} f08_imports[] = {
#define F08_IMPORT(Name, fn) {"PMPI_" #Name, (void (*)(void))fn}
    F08_IMPORT(Init, f08_init),
    F08_IMPORT(Init_thread, f08_init_thread),
    F08_IMPORT(Finalize, MPI_Finalize),
    F08_IMPORT(Abort, MPI_Abort),
    F08_IMPORT(Barrier, MPI_Barrier),
    F08_IMPORT(Ibarrier, MPI_Ibarrier),
    F08_IMPORT(Wait, MPI_Wait),
    F08_IMPORT(Waitall, MPI_Waitall),
    F08_IMPORT(Waitany, MPI_Waitany),
    F08_IMPORT(Waitsome, MPI_Waitsome),
    F08_IMPORT(Test, MPI_Test),
    F08_IMPORT(Testall, MPI_Testall),
    F08_IMPORT(Testany, MPI_Testany),
    F08_IMPORT(Testsome, MPI_Testsome),
    F08_IMPORT(Probe, MPI_Probe),
    F08_IMPORT(Iprobe, MPI_Iprobe),
    F08_IMPORT(Mprobe, MPI_Mprobe),
    F08_IMPORT(Improbe, MPI_Improbe),
    F08_IMPORT(Start, MPI_Start),
    F08_IMPORT(Startall, MPI_Startall),
    F08_IMPORT(Request_free, MPI_Request_free),
    F08_IMPORT(Comm_split, MPI_Comm_split),
    F08_IMPORT(Comm_dup, MPI_Comm_dup),
    F08_IMPORT(Comm_create, MPI_Comm_create),
    F08_IMPORT(Comm_free, MPI_Comm_free),
    F08_IMPORT(Comm_create_group, MPI_Comm_create_group),
    F08_IMPORT(Intercomm_create, MPI_Intercomm_create),
    F08_IMPORT(Comm_idup, MPI_Comm_idup),
    F08_IMPORT(Comm_split_type, MPI_Comm_split_type),
    F08_IMPORT(Cart_create, MPI_Cart_create),
    F08_IMPORT(Cart_sub, MPI_Cart_sub),
    F08_IMPORT(Dist_graph_create_adjacent, MPI_Dist_graph_create_adjacent),
#undef F08_IMPORT
};
#define N_F08_IMPORTS (sizeof f08_imports / sizeof f08_imports[0])

/* Compile-time checks that the two replacements of this file have the PMPI
 * signatures (the MPI_* wrappers have them by mpi.h). */
#define F08_SAME_TYPE(Name, fn)                                                             \
    _Static_assert(__builtin_types_compatible_p(__typeof__(&PMPI_##Name), __typeof__(&fn)), \
                   "f08 replacement for PMPI_" #Name " has another signature")
F08_SAME_TYPE(Init, f08_init);
F08_SAME_TYPE(Init_thread, f08_init_thread);

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
