/*
 * devread: the "device-seq" reference of the BFO benchmark harness: the
 * physical limit of the device for a given byte count.
 *
 *   devread DEVICE BYTES [REQUEST_BYTES [IN_FLIGHT [RANGES_FILE]]]
 *
 * Reads BYTES bytes of DEVICE with O_DIRECT in ascending order, requests of
 * REQUEST_BYTES (default 4 MiB), IN_FLIGHT requests outstanding (default 4,
 * one thread each, sharing one ascending work index). Without RANGES_FILE it
 * reads from offset 0; with it, it reads the listed ranges ("OFFSET LENGTH"
 * per line, ascending) in order until BYTES bytes were read, which lets the
 * harness skip holes of a sparse loop image (holes cost no I/O and would make
 * the "limit" meaningless). Prints a JSON summary on stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/fs.h>
#include <time.h>
#include <unistd.h>

struct chunk { uint64_t off, len; };
static struct chunk *chunks;
static size_t nchunks, cap;
static atomic_size_t next_chunk;
static atomic_ullong done_bytes;
static atomic_int errors;
static int fd;
static uint64_t req;

static void add_chunk(uint64_t off, uint64_t len)
{
    if (nchunks == cap) {
        cap = cap ? cap * 2 : 1024;
        chunks = realloc(chunks, cap * sizeof *chunks);
        if (!chunks) { perror("realloc"); exit(2); }
    }
    chunks[nchunks].off = off;
    chunks[nchunks].len = len;
    nchunks++;
}

/* Cut [off, off+len) into aligned requests of at most req bytes; returns bytes planned. */
static uint64_t plan_range(uint64_t off, uint64_t len, uint64_t budget)
{
    uint64_t end = off + len, planned = 0;
    off &= ~(uint64_t)4095;
    end = (end + 4095) & ~(uint64_t)4095;
    while (off < end && planned < budget) {
        uint64_t n = end - off;
        if (n > req) n = req;
        if (n > budget - planned) n = (budget - planned + 4095) & ~(uint64_t)4095;
        add_chunk(off, n);
        off += n;
        planned += n;
    }
    return planned;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *worker(void *arg)
{
    (void)arg;
    void *buf;
    if (posix_memalign(&buf, 4096, req)) { perror("posix_memalign"); exit(2); }
    for (;;) {
        size_t i = atomic_fetch_add(&next_chunk, 1);
        if (i >= nchunks) break;
        uint64_t got = 0;
        while (got < chunks[i].len) {
            ssize_t r = pread(fd, (char *)buf, chunks[i].len - got, (off_t)(chunks[i].off + got));
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) {
                fprintf(stderr, "devread: pread at %llu: %s\n", (unsigned long long)(chunks[i].off + got),
                        r < 0 ? strerror(errno) : "end of device");
                atomic_fetch_add(&errors, 1);
                break;
            }
            got += (uint64_t)r;
        }
        atomic_fetch_add(&done_bytes, got);
    }
    free(buf);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: devread DEVICE BYTES [REQUEST_BYTES [IN_FLIGHT [RANGES_FILE]]]\n");
        return 2;
    }
    uint64_t bytes = strtoull(argv[2], NULL, 0);
    req = argc > 3 ? strtoull(argv[3], NULL, 0) : (4u << 20);
    int depth = argc > 4 ? atoi(argv[4]) : 4;
    if (req < 4096 || req % 4096 || depth < 1 || depth > 256) {
        fprintf(stderr, "devread: bad request size or depth\n");
        return 2;
    }
    fd = open(argv[1], O_RDONLY | O_DIRECT | O_CLOEXEC);
    if (fd < 0) { fprintf(stderr, "devread: %s: %s\n", argv[1], strerror(errno)); return 2; }
    uint64_t devsize = 0;
    if (ioctl(fd, BLKGETSIZE64, &devsize) != 0) devsize = UINT64_MAX;

    uint64_t planned = 0;
    if (argc > 5) {
        FILE *f = fopen(argv[5], "r");
        if (!f) { fprintf(stderr, "devread: %s: %s\n", argv[5], strerror(errno)); return 2; }
        unsigned long long o, l;
        while (planned < bytes && fscanf(f, "%llu %llu", &o, &l) == 2) {
            if (o >= devsize) continue;
            if (o + l > devsize) l = devsize - o;
            planned += plan_range(o, l, bytes - planned);
        }
        fclose(f);
    } else {
        uint64_t l = bytes < devsize ? bytes : devsize;
        planned = plan_range(0, l, bytes);
    }

    pthread_t tids[256];
    double t0 = now();
    for (int i = 0; i < depth; i++) pthread_create(&tids[i], NULL, worker, NULL);
    for (int i = 0; i < depth; i++) pthread_join(tids[i], NULL);
    double t1 = now();
    fprintf(stderr,
            "{\"tool\":\"devread\",\"bytes\":%llu,\"planned\":%llu,\"ios\":%zu,\"request\":%llu,\"in_flight\":%d,"
            "\"seconds\":%.6f}\n",
            (unsigned long long)atomic_load(&done_bytes), (unsigned long long)planned, nchunks,
            (unsigned long long)req, depth, t1 - t0);
    return atomic_load(&errors) ? 1 : 0;
}
