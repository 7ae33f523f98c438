/*
 * contend region-trace format, version 1.
 *
 * The one definition of the on-disk layout of a per-process region trace
 * (`<recording>/regions/<pid>[.<n>].creg`): the manual regions of
 * `contend/region.h` (CONTEND_REGION_BEGIN/END) and the function entries
 * and exits of programs built with -finstrument-functions, recorded by the
 * preloaded collector (collector/src/regions.c) for the interference (SCI)
 * analysis (Mosli Bouksiaa et al., TPDS 2019, Section 3.2). The Rust module
 * `contend_trace::region_format` mirrors it constant for constant and is
 * checked against it by crates/contend-trace/tests/it/format_layout.rs;
 * the prose specification is docs/trace-format.md ("Region traces").
 *
 * Rules (as for the lock trace):
 *  - little-endian, 8-byte words; records are whole words;
 *  - record tags are only ever added, never reused or renumbered;
 *  - a zero word is "no record here": the file is sparse (zero filled) and
 *    a writer stores the head word of a record last, so a record that was
 *    being written when the process died is simply absent.
 *
 * File: a 4096-byte header, then chunks of `chunk_size` bytes, each owned
 * by one thread: a 64-byte chunk header and the thread's records.
 *
 * Record head word:
 *   bits  0..7   tag
 *   bits  8..31  site id (region records; 0 otherwise)
 *   bits 32..63  for timed records: ticks since the thread's previous timed
 *                record (the chunk's base_ticks for the first one); for a
 *                SITE record: the number of payload words that follow
 * Timed records and the words that follow the head:
 *   BEGIN      (none)
 *   BEGIN_KEY  key
 *   END        (none)
 *   ENTER      function address, frame
 *   EXIT       function address, frame
 *   TIME       absolute ticks (dt field 0): the next timed record's dt
 *              counts from here
 * `frame` is the instrumented function's stack pointer at the hook call
 * (the hook's canonical frame address), which lets a reader tell frames
 * left by longjmp or an exception from live ones (docs/sci.md, "Nesting").
 *
 * A SITE record defines a region site id (handed out once per macro use,
 * by the first thread that reaches it) before its first use in the
 * thread that defined it; other threads may use the id earlier in their
 * own chunks, so readers collect every SITE record of the file first.
 * Payload: word 0 = kind | line << 32, then the NUL-terminated strings
 * name, file, function, padded with zeros to a whole word.
 */
#ifndef CONTEND_REGION_FORMAT_H
#define CONTEND_REGION_FORMAT_H

#include <stdint.h>

#define CONTEND_REGION_MAGIC "CNTDREGN" /* 8 bytes, no NUL stored */
#define CONTEND_REGION_VERSION 1u
#define CONTEND_REGION_ENDIAN_CHECK 0x01020304u
#define CONTEND_REGION_HEADER_SIZE 4096u
#define CONTEND_REGION_CHUNK_SIZE (128u * 1024u)

/* Clock of the tick values (same meaning as in the lock trace). */
#define CONTEND_REGION_CLOCK_TSC 1u       /* x86 rdtsc ticks              */
#define CONTEND_REGION_CLOCK_MONOTONIC 2u /* CLOCK_MONOTONIC nanoseconds  */

/* Header flags (contend_region_header.flags, updated atomically). */
#define CONTEND_REGION_FLAG_FINISHED 1u  /* the process ran its exit path */
#define CONTEND_REGION_FLAG_FORKED 2u    /* this process is a fork() child */
#define CONTEND_REGION_FLAG_FUNCTIONS 4u /* function hooks were recorded   */
#define CONTEND_REGION_FLAG_SITES_FULL 8u /* site ids ran out: later sites
                                            were not recorded             */
#define CONTEND_REGION_FLAG_START_LOST 16u /* creating the file took longer
                                            than other threads wait (2 s):
                                            their marks meanwhile were not
                                            recorded                      */

/* Record tags. */
#define CONTEND_REGION_TAG_TIME 1u
#define CONTEND_REGION_TAG_SITE 2u
#define CONTEND_REGION_TAG_BEGIN 3u
#define CONTEND_REGION_TAG_BEGIN_KEY 4u
#define CONTEND_REGION_TAG_END 5u
#define CONTEND_REGION_TAG_ENTER 6u
#define CONTEND_REGION_TAG_EXIT 7u

/* Kinds of site (payload word 0 of a SITE record, low half). */
#define CONTEND_REGION_SITE_BEGIN 1u
#define CONTEND_REGION_SITE_END 2u
#define CONTEND_REGION_SITE_BEGIN_KEY 3u

/* Largest site id (24 bits); 0 is never a site. */
#define CONTEND_REGION_SITE_MAX 0xffffffu
/* Longest string stored in a SITE record, bytes without the NUL. */
#define CONTEND_REGION_STRING_MAX 255u

#define CONTEND_REGION_CHUNK_MAGIC 0x4e474552u /* "REGN" */
#define CONTEND_REGION_CHUNK_HEADER_SIZE 64u

/* The same instant on the trace clock and on the system clocks. */
typedef struct contend_region_calibration {
    uint64_t ticks;        /* trace clock                          */
    uint64_t monotonic_ns; /* CLOCK_MONOTONIC, ns                  */
    uint64_t realtime_ns;  /* CLOCK_REALTIME, ns since the epoch   */
    uint64_t reserved;
} contend_region_calibration;

typedef struct contend_region_header {
    char magic[8];                     /*    0 "CNTDREGN"                 */
    uint32_t version;                  /*    8 CONTEND_REGION_VERSION     */
    uint32_t header_size;              /*   12 CONTEND_REGION_HEADER_SIZE */
    uint32_t endian_check;             /*   16                            */
    uint16_t pointer_size;             /*   20 sizeof(void *)             */
    uint16_t clock;                    /*   22 CONTEND_REGION_CLOCK_*     */
    uint32_t chunk_size;               /*   24 bytes                      */
    uint32_t chunks_claimed;           /*   28 atomic                     */
    uint32_t pid;                      /*   32                            */
    uint32_t ppid;                     /*   36                            */
    uint64_t flags;                    /*   40 atomic; FLAG_*             */
    uint64_t data_offset;              /*   48 first chunk                */
    uint32_t function_every;           /*   56 1 call in N recorded (1)   */
    uint32_t sites_defined;            /*   60 atomic; site ids handed out */
    contend_region_calibration start;  /*   64 at the first region call   */
    contend_region_calibration end;    /*   96 valid if FLAG_FINISHED     */
    uint64_t ticks_per_second;         /*  128 launcher's estimate, 0 = none */
    uint8_t reserved[512 - 136];       /*  136                            */
    char exe_path[1024];               /*  512 NUL-terminated, truncated  */
    uint8_t tail[4096 - 1536];         /* 1536                            */
} contend_region_header;

typedef struct contend_region_chunk_header {
    uint32_t magic;        /*  0 CONTEND_REGION_CHUNK_MAGIC (stored last) */
    uint32_t tid;          /*  4 kernel thread id                         */
    uint32_t sequence;     /*  8 0, 1, 2, ... within the thread           */
    uint32_t flags;        /* 12 reserved, 0                              */
    uint64_t base_ticks;   /* 16 time base of the first timed record      */
    uint64_t monotonic_ns; /* 24 CLOCK_MONOTONIC at base_ticks            */
    uint64_t reserved[4];  /* 32                                          */
} contend_region_chunk_header;

_Static_assert(sizeof(contend_region_calibration) == 32, "calibration is 32 bytes");
_Static_assert(sizeof(contend_region_header) == CONTEND_REGION_HEADER_SIZE,
               "region header is 4096 bytes");
_Static_assert(sizeof(contend_region_chunk_header) == CONTEND_REGION_CHUNK_HEADER_SIZE,
               "region chunk header is 64 bytes");

#endif /* CONTEND_REGION_FORMAT_H */
