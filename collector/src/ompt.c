/*
 * The OpenMP tool interface (OMPT, OpenMP 5.0 Section 4): an OpenMP
 * runtime that implements it (LLVM's libomp; GCC's libgomp up to at least
 * GCC 13 does not) looks up `ompt_start_tool` in the process at start-up;
 * the collector's returns a tool that registers the callbacks below, and
 * each callback writes one OpenMP record (trace_format.h, "OpenMP
 * records"):
 *
 *   mutex_acquire / mutex_acquired / mutex_released: critical sections
 *     (named or not), omp_set_lock / omp_set_nest_lock / omp_test_lock,
 *     atomic and ordered regions: wait = acquire -> acquired, hold =
 *     acquired -> released;
 *   sync_region_wait begin/end: the waits in implicit and explicit
 *     barriers, taskwait and taskgroup;
 *   implicit_task begin/end and parallel_begin/end: each thread's part of
 *     a parallel region, whose start and the begin of its wait in the
 *     region's implicit barrier give the thread's work time (the load
 *     imbalance).
 *
 * The OMPT types are declared here from the specification (a stable ABI),
 * so the collector builds without any OpenMP headers. Nothing here
 * allocates, locks or does IO; the callbacks' records go through
 * contend_emit_ext. OMP_TOOL=disabled (the runtime's switch) or
 * CONTEND_OMPT=0 leaves the runtime without the tool.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"

/* ---- OMPT declarations (OpenMP 5.0, Section 4.4) ---- */
typedef union ompt_data_t {
    uint64_t value;
    void *ptr;
} ompt_data_t;
typedef void (*ompt_interface_fn_t)(void);
typedef ompt_interface_fn_t (*ompt_function_lookup_t)(const char *name);
typedef void (*ompt_callback_t)(void);
typedef int (*ompt_set_callback_t)(int event, ompt_callback_t callback);
typedef int (*ompt_initialize_t)(ompt_function_lookup_t lookup, int initial_device_num,
                                 ompt_data_t *tool_data);
typedef void (*ompt_finalize_t)(ompt_data_t *tool_data);
typedef struct ompt_start_tool_result_t {
    ompt_initialize_t initialize;
    ompt_finalize_t finalize;
    ompt_data_t tool_data;
} ompt_start_tool_result_t;

enum {
    OMPT_CB_PARALLEL_BEGIN = 3,
    OMPT_CB_PARALLEL_END = 4,
    OMPT_CB_IMPLICIT_TASK = 7,
    OMPT_CB_SYNC_REGION_WAIT = 16,
    OMPT_CB_MUTEX_RELEASED = 17,
    OMPT_CB_MUTEX_ACQUIRE = 26,
    OMPT_CB_MUTEX_ACQUIRED = 27,
};
enum { OMPT_SCOPE_BEGIN = 1, OMPT_SCOPE_END = 2 };
enum { OMPT_TASK_INITIAL = 1 };
/* ompt_set_result_t: 0 error, 1 never, 2 impossible, 3.. some or all */
#define OMPT_SET_OK(r) ((r) >= 3)

/* ---- records ---- */

/* Parallel region instances, numbered from 1 (an object of 0 would be an
 * empty table slot). */
static uint64_t parallel_count;
/* collector.h: set by tool_initialize, read by gomp.c */
CONTEND_HIDDEN int contend_ompt_active;
/* Objects of events whose region is unknown. */
#define NO_REGION CONTEND_OMP_NO_REGION

/* One OpenMP record (collector.h, shared with gomp.c); an object of 0
 * becomes NO_REGION. */
CONTEND_INLINE void omp_record(uint32_t event, uint32_t kind, uint32_t value, const void *obj,
                               const void *site, int first)
{
    contend_omp_record(event, kind, value, obj ? obj : NO_REGION, site, first);
}

/* A site for records without a code pointer: the runtime's call. */
#define RA_OR_CALLER(ra) ((ra) ? (ra) : __builtin_return_address(0))

static void on_mutex_acquire(int kind, unsigned hint, unsigned impl, uint64_t wait_id,
                             const void *ra)
{
    (void)hint, (void)impl;
    omp_record(CONTEND_OMP_MUTEX_ACQUIRE, (uint32_t)kind, 0, (const void *)(uintptr_t)wait_id,
               RA_OR_CALLER(ra), 1);
}

static void on_mutex_acquired(int kind, uint64_t wait_id, const void *ra)
{
    omp_record(CONTEND_OMP_MUTEX_ACQUIRED, (uint32_t)kind, 0, (const void *)(uintptr_t)wait_id,
               RA_OR_CALLER(ra), 0);
}

static void on_mutex_released(int kind, uint64_t wait_id, const void *ra)
{
    omp_record(CONTEND_OMP_MUTEX_RELEASED, (uint32_t)kind, 0, (const void *)(uintptr_t)wait_id,
               RA_OR_CALLER(ra), 1);
}

static void on_sync_region_wait(int kind, int endpoint, ompt_data_t *parallel_data,
                                ompt_data_t *task_data, const void *ra)
{
    uint64_t region = task_data && task_data->value ? task_data->value
                      : parallel_data                ? parallel_data->value
                                                     : 0;
    omp_record(endpoint == OMPT_SCOPE_BEGIN ? CONTEND_OMP_SYNC_WAIT_BEGIN
                                            : CONTEND_OMP_SYNC_WAIT_END,
               (uint32_t)kind, 0, (const void *)(uintptr_t)region, RA_OR_CALLER(ra),
               endpoint == OMPT_SCOPE_BEGIN);
}

static void on_implicit_task(int endpoint, ompt_data_t *parallel_data, ompt_data_t *task_data,
                             unsigned actual_parallelism, unsigned index, int flags)
{
    (void)actual_parallelism;
    if (flags & OMPT_TASK_INITIAL)
        return;
    uint64_t region = 0;
    if (endpoint == OMPT_SCOPE_BEGIN) {
        region = parallel_data ? parallel_data->value : 0;
        if (task_data)
            task_data->value = region;
    } else if (task_data) {
        region = task_data->value;
    }
    omp_record(endpoint == OMPT_SCOPE_BEGIN ? CONTEND_OMP_TASK_BEGIN : CONTEND_OMP_TASK_END, 0,
               index, (const void *)(uintptr_t)region, __builtin_return_address(0),
               endpoint == OMPT_SCOPE_BEGIN);
}

static void on_parallel_begin(ompt_data_t *encountering_task_data, const void *frame,
                              ompt_data_t *parallel_data, unsigned requested, int flags,
                              const void *ra)
{
    (void)encountering_task_data, (void)frame, (void)flags;
    uint64_t region = __atomic_add_fetch(&parallel_count, 1, __ATOMIC_RELAXED);
    if (parallel_data)
        parallel_data->value = region;
    omp_record(CONTEND_OMP_PARALLEL_BEGIN, 0, requested, (const void *)(uintptr_t)region,
               RA_OR_CALLER(ra), 1);
}

static void on_parallel_end(ompt_data_t *parallel_data, ompt_data_t *encountering_task_data,
                            int flags, const void *ra)
{
    (void)encountering_task_data, (void)flags;
    uint64_t region = parallel_data ? parallel_data->value : 0;
    omp_record(CONTEND_OMP_PARALLEL_END, 0, 0, (const void *)(uintptr_t)region,
               RA_OR_CALLER(ra), 0);
}

/* ---- the tool ---- */

static int tool_initialize(ompt_function_lookup_t lookup, int initial_device_num,
                           ompt_data_t *tool_data)
{
    (void)initial_device_num, (void)tool_data;
    /* from now on the GOMP_* entry points (libomp exports them too) pass
     * straight through: the runtime reports through OMPT (gomp.c) */
    __atomic_store_n(&contend_ompt_active, 1, __ATOMIC_RELEASE);
    ompt_set_callback_t set = (ompt_set_callback_t)lookup("ompt_set_callback");
    if (!set)
        return 0;
    int ok = 0;
    ok |= OMPT_SET_OK(set(OMPT_CB_MUTEX_ACQUIRE, (ompt_callback_t)on_mutex_acquire));
    ok |= OMPT_SET_OK(set(OMPT_CB_MUTEX_ACQUIRED, (ompt_callback_t)on_mutex_acquired));
    ok |= OMPT_SET_OK(set(OMPT_CB_MUTEX_RELEASED, (ompt_callback_t)on_mutex_released));
    ok |= OMPT_SET_OK(set(OMPT_CB_SYNC_REGION_WAIT, (ompt_callback_t)on_sync_region_wait));
    ok |= OMPT_SET_OK(set(OMPT_CB_IMPLICIT_TASK, (ompt_callback_t)on_implicit_task));
    ok |= OMPT_SET_OK(set(OMPT_CB_PARALLEL_BEGIN, (ompt_callback_t)on_parallel_begin));
    ok |= OMPT_SET_OK(set(OMPT_CB_PARALLEL_END, (ompt_callback_t)on_parallel_end));
    return ok; /* nonzero keeps the tool */
}

static void tool_finalize(ompt_data_t *tool_data)
{
    (void)tool_data;
}

static ompt_start_tool_result_t tool = {tool_initialize, tool_finalize, {0}};

CONTEND_EXPORT ompt_start_tool_result_t *ompt_start_tool(unsigned int omp_version,
                                                         const char *runtime_version)
{
    (void)omp_version, (void)runtime_version;
    const char *off = getenv("CONTEND_OMPT");
    if (off && strcmp(off, "0") == 0)
        return NULL;
    return &tool;
}
