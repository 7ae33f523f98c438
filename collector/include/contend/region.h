/*
 * contend/region.h: mark blocks of code for contend's interference (SCI)
 * analysis (Mosli Bouksiaa et al., "Using differential execution analysis
 * to identify thread interference", TPDS 2019: manual instrumentation,
 * Section 3).
 *
 *     #include <contend/region.h>
 *
 *     CONTEND_REGION_BEGIN("parse");
 *     parse(line);
 *     CONTEND_REGION_END("parse");
 *
 *     CONTEND_REGION_BEGIN_KEY("lookup", table_size);   // compared per key
 *     lookup(table, key);
 *     CONTEND_REGION_END("lookup");
 *
 * Compile with `-I "$(contend include-dir)"`; there is no library to link.
 * The name is a string literal; a region is identified by its name (the
 * same name at several BEGIN sites is one region). BEGIN_KEY marks a block
 * whose work depends on a parameter: executions with different keys are
 * compared only with each other (the paper's feedback loop, Section 3.4).
 * An END closes the innermost open region of that name in the thread;
 * regions nest (inclusive durations; the report also gives the exclusive
 * excess). See docs/sci.md.
 *
 * Cost. A program built with this header runs unchanged when it is not
 * recorded: the first use in each translation unit looks the recorder up
 * once (dlsym(RTLD_DEFAULT, ...): found only when `contend record`
 * preloaded its collector), and every later use is one load and one
 * branch. While recorded, a BEGIN + END pair costs two timestamps and a
 * few stores into a per-thread buffer (docs/benchmarks.md). Define
 * CONTEND_NO_REGIONS before including the header to compile the marks out
 * entirely.
 *
 * Requirements: C99 or C++11, GCC or Clang (atomic builtins), Linux with
 * glibc (dlsym is in libc from glibc 2.34; older glibc needs -ldl).
 * Async-signal-safe once a site has been used (its first use interns it).
 */
#ifndef CONTEND_REGION_H
#define CONTEND_REGION_H

#ifdef CONTEND_NO_REGIONS

#define CONTEND_REGION_BEGIN(name) ((void)0)
#define CONTEND_REGION_BEGIN_KEY(name, key) ((void)(key))
#define CONTEND_REGION_END(name) ((void)0)

#else /* !CONTEND_NO_REGIONS */

#include <dlfcn.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One use of a macro: a static object per use site, never freed. `id` is
 * written by the recorder (the site's number in the trace, 0 until then). */
struct contend_region_site {
    const char *name;
    const char *file;
    const char *function;
    uint32_t line;
    uint32_t kind; /* 1 BEGIN, 2 END, 3 BEGIN_KEY (region_format.h) */
    uint32_t id;
    uint32_t reserved;
};

/* What the recorder exports under the name CONTEND_REGION_API_SYMBOL. */
struct contend_region_api {
    uint32_t version; /* CONTEND_REGION_API_VERSION */
    uint32_t size;    /* sizeof(struct contend_region_api) */
    void (*begin)(struct contend_region_site *site);
    void (*begin_key)(struct contend_region_site *site, uint64_t key);
    void (*end)(struct contend_region_site *site);
};

#define CONTEND_REGION_API_VERSION 1u
#define CONTEND_REGION_API_SYMBOL "contend_region_api_v1"

/* Per translation unit: NULL = not looked up yet, (api *)1 = no recorder
 * in this process, else the recorder's table. */
static const struct contend_region_api *contend__region_api __attribute__((unused));

static __attribute__((unused, noinline, cold)) const struct contend_region_api *
contend__region_lookup(void)
{
#ifdef RTLD_DEFAULT
    void *sym = dlsym(RTLD_DEFAULT, CONTEND_REGION_API_SYMBOL);
#else
    void *sym = dlsym((void *)0, CONTEND_REGION_API_SYMBOL);
#endif
    const struct contend_region_api *api = (const struct contend_region_api *)sym;
    if (!api || api->version != CONTEND_REGION_API_VERSION ||
        api->size < sizeof(struct contend_region_api))
        api = (const struct contend_region_api *)(uintptr_t)1;
    __atomic_store_n(&contend__region_api, api, __ATOMIC_RELEASE);
    return api;
}

static inline __attribute__((unused, always_inline)) const struct contend_region_api *
contend__region_get(void)
{
    const struct contend_region_api *api =
        __atomic_load_n(&contend__region_api, __ATOMIC_ACQUIRE);
    if (__builtin_expect(api == 0, 0))
        api = contend__region_lookup();
    return api;
}

#define CONTEND__REGION_ABSENT(api) \
    (__builtin_expect((uintptr_t)(api) == (uintptr_t)1, 1))

#ifdef __cplusplus
}
#endif

/* `"" name ""` accepts only a string literal. */
#define CONTEND__REGION_SITE(var, name, kind)                                     \
    static struct contend_region_site var = {"" name "", __FILE__, __func__,      \
                                             (uint32_t)__LINE__, (kind), 0u, 0u}

#define CONTEND_REGION_BEGIN(name)                                                \
    do {                                                                          \
        const struct contend_region_api *contend__a = contend__region_get();      \
        if (!CONTEND__REGION_ABSENT(contend__a)) {                                \
            CONTEND__REGION_SITE(contend__s, name, 1u);                           \
            contend__a->begin(&contend__s);                                       \
        }                                                                         \
    } while (0)

#define CONTEND_REGION_BEGIN_KEY(name, key)                                       \
    do {                                                                          \
        const struct contend_region_api *contend__a = contend__region_get();      \
        if (!CONTEND__REGION_ABSENT(contend__a)) {                                \
            CONTEND__REGION_SITE(contend__s, name, 3u);                           \
            contend__a->begin_key(&contend__s, (uint64_t)(key));                  \
        }                                                                         \
    } while (0)

#define CONTEND_REGION_END(name)                                                  \
    do {                                                                          \
        const struct contend_region_api *contend__a = contend__region_get();      \
        if (!CONTEND__REGION_ABSENT(contend__a)) {                                \
            CONTEND__REGION_SITE(contend__s, name, 2u);                           \
            contend__a->end(&contend__s);                                         \
        }                                                                         \
    } while (0)

#endif /* CONTEND_NO_REGIONS */

#endif /* CONTEND_REGION_H */
