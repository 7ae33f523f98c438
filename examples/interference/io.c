/*
 * I/O contention micro-benchmark (Mosli Bouksiaa et al., TPDS 2019,
 * Listing 3): each thread reads its own file sequentially in 512-byte
 * blocks with O_DIRECT (every read goes to the disk), waiting `delay` µs
 * between reads. Unlike the paper's compute(delay), the wait is a sleep:
 * on a machine with few CPUs, threads that spin between reads compete for
 * the CPUs, and the read time then measures how long a thread whose I/O
 * completed waits to run again rather than the disk. Each read is a region, "read" (contend/region.h); the
 * program times each read itself and prints the mean (its X of Table 1,
 * "read time"):
 *
 *   io DIR DELAY_US [READS [THREADS]]
 *   {"benchmark":"io","delay":…,"x_ns":…,"reads":…,"disturbed":…}
 *
 * disturbed: the share of the threads' time they were runnable but waiting
 * for a CPU (schedstat run delay), taken by other load.
 *
 * The files (DIR/interference-io-<i>.dat, 8 MiB each, created if missing
 * or too small) must be on a disk-backed file system: tmpfs and some
 * others refuse O_DIRECT, and the program then says so and exits with 3.
 */
#include "common.h"
#include <contend/region.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BLOCK 512
#define FILE_BYTES (8u << 20)

static uint64_t delay_us;
static long reads;
static const char *dir;

struct result {
    int index;
    int fd;
    uint64_t read_ns, wall_ns, run_delay_ns;
    long n;
};

static int prepare(int i, char *path, size_t len)
{
    snprintf(path, len, "%s/interference-io-%d.dat", dir, i);
    struct stat st;
    if (stat(path, &st) != 0 || (uint64_t)st.st_size < FILE_BYTES) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0)
            return -1;
        static char chunk[1 << 16];
        memset(chunk, 'a' + i, sizeof chunk);
        for (unsigned w = 0; w < FILE_BYTES; w += sizeof chunk)
            if (write(fd, chunk, sizeof chunk) != (ssize_t)sizeof chunk) {
                close(fd);
                return -1;
            }
        fsync(fd);
        close(fd);
    }
    return open(path, O_RDONLY | O_DIRECT);
}

static void *run(void *arg)
{
    struct result *r = (struct result *)arg;
    void *buf;
    if (posix_memalign(&buf, 4096, BLOCK) != 0)
        return NULL;
    off_t off = 0;
    uint64_t w0 = now_ns(), q0 = run_delay_ns();
    for (long i = 0; i < reads; i++) {
        if (delay_us) {
            struct timespec ts = {(time_t)(delay_us / 1000000u), (long)(delay_us % 1000000u) * 1000L};
            nanosleep(&ts, NULL);
        }
        uint64_t t0 = now_ns();
        CONTEND_REGION_BEGIN("read");
        ssize_t got = pread(r->fd, buf, BLOCK, off);
        CONTEND_REGION_END("read");
        r->read_ns += now_ns() - t0;
        r->n++;
        off = got == BLOCK ? off + BLOCK : 0;
        if (off >= (off_t)FILE_BYTES)
            off = 0;
    }
    r->wall_ns = now_ns() - w0;
    r->run_delay_ns = run_delay_ns() - q0;
    free(buf);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: io DIR DELAY_US [READS [THREADS]]\n");
        return 2;
    }
    dir = argv[1];
    delay_us = strtoull(argv[2], NULL, 10);
    reads = argc > 3 ? atol(argv[3]) : 2000;
    int threads = argc > 4 ? atoi(argv[4]) : 4;
    if (threads < 1 || threads > 64)
        threads = 4;
    pthread_t t[64];
    struct result r[64];
    memset(r, 0, sizeof r);
    for (int i = 0; i < threads; i++) {
        char path[4096];
        r[i].index = i;
        r[i].fd = prepare(i, path, sizeof path);
        if (r[i].fd < 0) {
            int e = errno;
            fprintf(stderr, "io: %s: %s%s\n", path, strerror(e),
                    e == EINVAL ? " (the file system refuses O_DIRECT: use a directory on a disk-backed "
                                  "file system, e.g. under /var/tmp)"
                                : "");
            return 3;
        }
    }
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, run, &r[i]);
    uint64_t sum = 0, n = 0, wall = 0, delayed = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        wall += r[i].wall_ns;
        delayed += r[i].run_delay_ns;
        sum += r[i].read_ns;
        n += (uint64_t)r[i].n;
        close(r[i].fd);
    }
    printf("{\"benchmark\":\"io\",\"delay\":%llu,\"x_ns\":%.1f,\"reads\":%llu,\"disturbed\":%.4f}\n",
           (unsigned long long)delay_us, (double)sum / (double)n, (unsigned long long)n,
           (double)delayed / (double)(wall + 1));
    return 0;
}
