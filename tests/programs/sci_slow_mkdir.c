/*
 * A preloaded shim for the SCI start-up test: mkdir() of a path ending in
 * "/regions" (the region recorder creating its trace folder) sleeps 3 s
 * first, in the recorded program only (not in contend itself), so that
 * the threads waiting for the trace file reach their 2 s bound.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

int mkdir(const char *path, mode_t mode)
{
    int (*real)(const char *, mode_t) = (int (*)(const char *, mode_t))dlsym(RTLD_NEXT, "mkdir");
    size_t n = strlen(path);
    if (n >= 8 && strcmp(path + n - 8, "/regions") == 0 &&
        strcmp(program_invocation_short_name, "contend") != 0) {
        struct timespec ts = {3, 0};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
    }
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    return real(path, mode);
}
