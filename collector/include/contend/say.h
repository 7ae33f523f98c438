/*
 * Text helpers of contend's in-process libraries (the lock collector and
 * the MPI recorder): building a line without stdio or allocation, and
 * writing "contend: ..." to standard error with write(2), errno kept.
 * Internal to those libraries; each includes its own copy (static inline),
 * so nothing here is exported from either.
 */
#ifndef CONTEND_SAY_H
#define CONTEND_SAY_H

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <unistd.h>

/* Appends `s` at `dst`, never past `end - 1`; NUL-terminates; returns the
 * new end of the text. */
static inline char *contend_append(char *dst, char *end, const char *s)
{
    while (*s && dst < end - 1)
        *dst++ = *s++;
    *dst = 0;
    return dst;
}

/* Appends `v` in decimal, like contend_append. */
static inline char *contend_append_u64(char *dst, char *end, uint64_t v)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n && dst < end - 1)
        *dst++ = tmp[--n];
    *dst = 0;
    return dst;
}

/* One line "contend: a b c" on standard error (b, c may be NULL). */
static inline void contend_say(const char *a, const char *b, const char *c)
{
    char line[PATH_MAX + 256];
    char *end = line + sizeof line - 1; /* room for the newline */
    char *p = contend_append(line, end, "contend: ");
    p = contend_append(p, end, a);
    if (b)
        p = contend_append(p, end, b);
    if (c)
        p = contend_append(p, end, c);
    *p++ = '\n';
    int saved = errno;
    ssize_t ignored = write(2, line, (size_t)(p - line));
    (void)ignored;
    errno = saved;
}

#endif /* CONTEND_SAY_H */
