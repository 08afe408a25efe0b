/*
 * plainread: the "plain" baseline of the BFO benchmark harness.
 *
 *   plainread [-t THREADS] [--checksum] [--list] PATH...
 *
 * Walks every PATH recursively (opendir/readdir, entries in the order readdir
 * returns them, subdirectories visited when met), then reads every regular
 * file with open/read/close, one file at a time per thread, THREADS threads
 * (default 1) sharing one work index over the walked list. Data is read into
 * a 1 MiB buffer and discarded. This is what an application that reads a
 * batch of small files "the ordinary way" does.
 *
 * --checksum  print one line per file exactly like xxh128sum does
 *             ("<32 hex digits>  <path>"), in completion order.
 * --list      print the walked paths (one per line) and exit without reading.
 *
 * A one-line JSON summary goes to stderr:
 *   {"tool":"plainread","files":N,"files_failed":N,"bytes":N,"threads":N,
 *    "seconds":{"walk":x,"read":x,"total":x}}
 * Exit status: 0 all files read, 1 some failed, 2 usage/setup error.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef PLAINREAD_NO_XXHASH
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>
#endif

#define BUF_SIZE (1u << 20)

static char **paths;
static size_t npaths, cap;
static atomic_size_t next_index;
static atomic_ullong total_bytes;
static atomic_size_t failed;
static int do_checksum;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void add_path(const char *p)
{
    if (npaths == cap) {
        cap = cap ? cap * 2 : 4096;
        paths = realloc(paths, cap * sizeof *paths);
        if (!paths) { perror("realloc"); exit(2); }
    }
    paths[npaths] = strdup(p);
    if (!paths[npaths]) { perror("strdup"); exit(2); }
    npaths++;
}

static void walk(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "plainread: %s: %s\n", dir, strerror(errno));
        atomic_fetch_add(&failed, 1);
        return;
    }
    size_t dlen = strlen(dir);
    while (dir[dlen - 1] == '/' && dlen > 1) dlen--;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' && (e->d_name[1] == 0 || (e->d_name[1] == '.' && e->d_name[2] == 0)))
            continue;
        size_t n = dlen + 1 + strlen(e->d_name) + 1;
        char *p = malloc(n);
        if (!p) { perror("malloc"); exit(2); }
        memcpy(p, dir, dlen);
        p[dlen] = '/';
        strcpy(p + dlen + 1, e->d_name);
        unsigned char t = e->d_type;
        if (t == DT_UNKNOWN) {
            struct stat st;
            if (lstat(p, &st) == 0)
                t = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_LNK;
        }
        if (t == DT_DIR)
            walk(p);
        else if (t == DT_REG)
            add_path(p);
        free(p);
    }
    closedir(d);
}

static void read_one(const char *path, char *buf)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "plainread: %s: %s\n", path, strerror(errno));
        atomic_fetch_add(&failed, 1);
        return;
    }
#ifndef PLAINREAD_NO_XXHASH
    XXH3_state_t st;
    if (do_checksum) XXH3_128bits_reset(&st);
#endif
    unsigned long long got = 0;
    for (;;) {
        ssize_t r = read(fd, buf, BUF_SIZE);
        if (r < 0) {
            if (errno == EINTR) continue;
            fprintf(stderr, "plainread: %s: %s\n", path, strerror(errno));
            atomic_fetch_add(&failed, 1);
            close(fd);
            return;
        }
        if (r == 0) break;
        got += (unsigned long long)r;
#ifndef PLAINREAD_NO_XXHASH
        if (do_checksum) XXH3_128bits_update(&st, buf, (size_t)r);
#endif
    }
    close(fd);
    atomic_fetch_add(&total_bytes, got);
#ifndef PLAINREAD_NO_XXHASH
    if (do_checksum) {
        XXH128_canonical_t c;
        XXH128_canonicalFromHash(&c, XXH3_128bits_digest(&st));
        char hex[33];
        for (int i = 0; i < 16; i++) sprintf(hex + 2 * i, "%02x", c.digest[i]);
        pthread_mutex_lock(&out_lock);
        printf("%s  %s\n", hex, path);
        pthread_mutex_unlock(&out_lock);
    }
#endif
}

static void *worker(void *arg)
{
    (void)arg;
    char *buf = malloc(BUF_SIZE);
    if (!buf) { perror("malloc"); exit(2); }
    for (;;) {
        size_t i = atomic_fetch_add(&next_index, 1);
        if (i >= npaths) break;
        read_one(paths[i], buf);
    }
    free(buf);
    return NULL;
}

static void usage(void)
{
    fprintf(stderr, "usage: plainread [-t THREADS] [--checksum] [--list] PATH...\n");
    exit(2);
}

int main(int argc, char **argv)
{
    int threads = 1, list = 0, first = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc) {
            threads = atoi(argv[++i]);
            if (threads < 1 || threads > 1024) usage();
        } else if (!strcmp(argv[i], "--checksum")) {
#ifdef PLAINREAD_NO_XXHASH
            fprintf(stderr, "plainread: built without xxhash, --checksum unavailable\n");
            return 2;
#endif
            do_checksum = 1;
        } else if (!strcmp(argv[i], "--list")) {
            list = 1;
        } else if (!strcmp(argv[i], "--")) {
            first = i + 1;
            break;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            usage();
        } else {
            first = i;
            break;
        }
    }
    if (!first || first >= argc) usage();

    double t0 = now();
    for (int i = first; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "plainread: %s: %s\n", argv[i], strerror(errno));
            atomic_fetch_add(&failed, 1);
        } else if (S_ISDIR(st.st_mode)) {
            walk(argv[i]);
        } else {
            add_path(argv[i]);
        }
    }
    double t1 = now();
    if (list) {
        for (size_t i = 0; i < npaths; i++) printf("%s\n", paths[i]);
        return 0;
    }

    pthread_t *tids = calloc((size_t)threads, sizeof *tids);
    if (!tids) { perror("calloc"); return 2; }
    for (int i = 0; i < threads; i++)
        if (pthread_create(&tids[i], NULL, worker, NULL) != 0) { perror("pthread_create"); return 2; }
    for (int i = 0; i < threads; i++) pthread_join(tids[i], NULL);
    double t2 = now();
    fflush(stdout);

    size_t nf = atomic_load(&failed);
    fprintf(stderr,
            "{\"tool\":\"plainread\",\"files\":%zu,\"files_failed\":%zu,\"bytes\":%llu,\"threads\":%d,"
            "\"seconds\":{\"walk\":%.6f,\"read\":%.6f,\"total\":%.6f}}\n",
            npaths, nf, (unsigned long long)atomic_load(&total_bytes), threads, t1 - t0, t2 - t1, t2 - t0);
    return nf ? 1 : 0;
}
