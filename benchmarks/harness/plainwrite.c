/*
 * plainwrite: the "plain" write baselines of the BFO benchmark harness (W1).
 *
 *   plainwrite [--fsync] DIR < STREAM
 *
 * Reads the simple stream format of `bfo write` on stdin (regular files
 * only: "f MODE MTIME SIZE PATH\n" followed by SIZE bytes; MTIME "-" leaves
 * the time of writing, anything else is set with futimens) and writes every
 * file the ordinary way, one thread, in stream order:
 * open(O_CREAT|O_EXCL|O_WRONLY), write, [fsync], close. Parent directories
 * are created when first met (mkdir, mode 755). At the end, one syncfs() of
 * DIR's file system: with it, everything written is durable.
 *
 *   default   create + write + close per file, then one syncfs: the
 *             not-durable-per-file baseline ("write then one sync");
 *   --fsync   fsync(fd) per file before close (each file durable when its
 *             close returns), then the same syncfs (which finds nothing left
 *             but the directories).
 *
 * A one-line JSON summary goes to stderr:
 *   {"tool":"plainwrite","files":N,"bytes":N,"dirs":N,"fsync":0|1,
 *    "seconds":{"write":x,"sync":x,"total":x}}
 * Exit status: 0 all written, 1 a file failed (the run stops there),
 * 2 usage/stream error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define BUF_SIZE (1u << 20)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Directories already known to exist: a tiny open-addressing set of strings. */
static char **dset;
static size_t dcap, dcount;

static unsigned long hash_str(const char *s, size_t n)
{
    unsigned long h = 1469598103934665603ul;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ul;
    return h;
}

static int dset_has(const char *s, size_t n)
{
    if (!dcap) return 0;
    for (size_t i = hash_str(s, n) & (dcap - 1);; i = (i + 1) & (dcap - 1)) {
        if (!dset[i]) return 0;
        if (strlen(dset[i]) == n && !memcmp(dset[i], s, n)) return 1;
    }
}

static void dset_add(const char *s, size_t n)
{
    if ((dcount + 1) * 2 > dcap) {
        size_t ocap = dcap;
        char **old = dset;
        dcap = dcap ? dcap * 2 : 1024;
        dset = calloc(dcap, sizeof *dset);
        if (!dset) { perror("calloc"); exit(2); }
        dcount = 0;
        for (size_t i = 0; i < ocap; i++)
            if (old[i]) dset_add(old[i], strlen(old[i]));
        free(old);
    }
    size_t i = hash_str(s, n) & (dcap - 1);
    while (dset[i]) i = (i + 1) & (dcap - 1);
    dset[i] = strndup(s, n);
    if (!dset[i]) { perror("strndup"); exit(2); }
    dcount++;
}

static size_t ndirs;

/* mkdir -p of path[0..n) relative to rootfd, remembering what exists. */
static int ensure_dir(int rootfd, char *path, size_t n)
{
    if (n == 0 || dset_has(path, n)) return 0;
    char *slash = memrchr(path, '/', n);
    if (slash && ensure_dir(rootfd, path, (size_t)(slash - path))) return -1;
    char save = path[n];
    path[n] = 0;
    int r = mkdirat(rootfd, path, 0755);
    if (r == 0) ndirs++;
    if (r != 0 && errno != EEXIST) {
        fprintf(stderr, "plainwrite: mkdir %s: %s\n", path, strerror(errno));
        path[n] = save;
        return -1;
    }
    path[n] = save;
    dset_add(path, n);
    return 0;
}

int main(int argc, char **argv)
{
    int do_fsync = 0;
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--fsync")) do_fsync = 1;
        else if (argv[i][0] == '-' && argv[i][1]) { dir = NULL; break; }
        else if (!dir) dir = argv[i];
        else { dir = NULL; break; }
    }
    if (!dir) {
        fprintf(stderr, "usage: plainwrite [--fsync] DIR < STREAM\n");
        return 2;
    }
    double t0 = now();
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "plainwrite: mkdir %s: %s\n", dir, strerror(errno));
        return 2;
    }
    int rootfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0) {
        fprintf(stderr, "plainwrite: %s: %s\n", dir, strerror(errno));
        return 2;
    }
    static char stdin_buf[1 << 20];
    setvbuf(stdin, stdin_buf, _IOFBF, sizeof stdin_buf);
    char *buf = malloc(BUF_SIZE);
    if (!buf) { perror("malloc"); return 2; }

    char *line = NULL;
    size_t cap = 0, files = 0;
    unsigned long long bytes = 0, lineno = 0;
    ssize_t len;
    int rc = 0;
    while ((len = getline(&line, &cap, stdin)) > 0) {
        lineno++;
        if (line[len - 1] == '\n') line[--len] = 0;
        char mtime[64], *p = line;
        unsigned mode;
        unsigned long long size;
        int off = 0;
        if (len < 2 || line[0] != 'f' || line[1] != ' ' ||
            sscanf(line + 2, "%o %63s %llu %n", &mode, mtime, &size, &off) != 3 || !off) {
            fprintf(stderr, "plainwrite: stdin line %llu: not an 'f' record of the simple format\n", lineno);
            rc = 2;
            break;
        }
        p = line + 2 + off;
        size_t plen = strlen(p);
        char *slash = memrchr(p, '/', plen);
        if (slash && ensure_dir(rootfd, p, (size_t)(slash - p))) { rc = 1; break; }
        int fd = openat(rootfd, p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode & 07777);
        if (fd < 0) {
            fprintf(stderr, "plainwrite: %s: %s\n", p, strerror(errno));
            rc = 1;
            break;
        }
        unsigned long long left = size;
        while (left) {
            size_t want = left < BUF_SIZE ? (size_t)left : BUF_SIZE;
            if (fread(buf, 1, want, stdin) != want) {
                fprintf(stderr, "plainwrite: stdin ends inside %s\n", p);
                rc = 2;
                break;
            }
            for (size_t done = 0; done < want;) {
                ssize_t w = write(fd, buf + done, want - done);
                if (w < 0) {
                    if (errno == EINTR) continue;
                    fprintf(stderr, "plainwrite: write %s: %s\n", p, strerror(errno));
                    rc = 1;
                    break;
                }
                done += (size_t)w;
            }
            if (rc) break;
            left -= want;
        }
        if (!rc && strcmp(mtime, "-")) {
            struct timespec ts[2];
            char *end;
            ts[1].tv_sec = strtoll(mtime, &end, 10);
            ts[1].tv_nsec = 0;
            if (*end == '.') {
                char frac[10] = "000000000";
                size_t l = strspn(end + 1, "0123456789");
                memcpy(frac, end + 1, l > 9 ? 9 : l);
                ts[1].tv_nsec = strtol(frac, NULL, 10);
            }
            ts[0] = ts[1];
            if (futimens(fd, ts) != 0) {
                fprintf(stderr, "plainwrite: futimens %s: %s\n", p, strerror(errno));
                rc = 1;
            }
        }
        if (!rc && do_fsync && fsync(fd) != 0) {
            fprintf(stderr, "plainwrite: fsync %s: %s\n", p, strerror(errno));
            rc = 1;
        }
        if (close(fd) != 0 && !rc) {
            fprintf(stderr, "plainwrite: close %s: %s\n", p, strerror(errno));
            rc = 1;
        }
        if (rc) break;
        files++;
        bytes += size;
    }
    if (!rc && ferror(stdin)) {
        fprintf(stderr, "plainwrite: reading stdin: %s\n", strerror(errno));
        rc = 2;
    }
    double t1 = now();
    if (syncfs(rootfd) != 0) {
        fprintf(stderr, "plainwrite: syncfs %s: %s\n", dir, strerror(errno));
        if (!rc) rc = 1;
    }
    double t2 = now();
    close(rootfd);
    fprintf(stderr,
            "{\"tool\":\"plainwrite\",\"files\":%zu,\"bytes\":%llu,\"dirs\":%zu,\"fsync\":%d,"
            "\"seconds\":{\"write\":%.6f,\"sync\":%.6f,\"total\":%.6f}}\n",
            files, bytes, ndirs, do_fsync, t1 - t0, t2 - t1, t2 - t0);
    free(line);
    free(buf);
    return rc;
}
