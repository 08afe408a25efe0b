/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delaybridge: a cable with latency between two TAP devices.
 *
 *   delaybridge --tap0 NAME --tap1 NAME [--netns1 /run/netns/NS] --delay-us N
 *               [--ring-mb 32] [--no-offload] [--rt-priority P]
 *
 * These machines have no netem qdisc, so tc cannot delay packets. This program
 * creates two TAP devices (tap1 inside the network namespace --netns1, when
 * given) and copies every frame the kernel sends out of one into the other,
 * each held for the one-way delay after it was read: a link whose round trip
 * is 2 x delay plus the stacks' own time. Frames of a direction leave in the
 * order they came (one FIFO ring per direction, one delay for all), as on a
 * cable. A rate limit is not our business: tc's tbf on the devices gives it.
 *
 * The devices are not persistent: they exist while this process holds them,
 * so they vanish with it however it ends. It also ends when its standard input
 * reaches end of file or its parent dies: it never outlives the harness.
 *
 * Standard input takes commands, one a line:
 *   delay US    set the one-way delay (frames queued keep their read times)
 *   stats       print the counters as one JSON line
 * Standard output: "ready" once both devices exist, then JSON lines (stats,
 * and the counters at exit). Errors go to stderr; exit 0 on SIGTERM/EOF.
 *
 * With offloads (the default) the devices carry a virtio-net header and
 * accept TSO/checksum offload: the stacks hand over up to 64 KiB segments
 * and the bridge passes them through untouched (header included), which keeps
 * the bridge's per-frame cost off the measurement. --no-offload: 1500-byte
 * frames, one copy each.
 *
 * --rt-priority P (1-99) runs the bridge under SCHED_FIFO with its memory
 * locked: the jobs being measured keep both cores busy, and a cable does not
 * wait for a time slice (measured with a build beside it: mean lateness
 * 0.9 ms at normal priority). It sleeps in ppoll between frames; the kernel's
 * real-time throttling still leaves the others their share.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define MAX_FRAME (65536 + 64)      /* a GSO segment plus the virtio-net header, with room */
#define HDR_SIZE 16
#define WRAP UINT32_MAX
#define READ_BATCH 64
#define WRITE_RETRY_NS 50000
#define LATE_BUCKETS 10

struct rec {                        /* one frame in a ring: its read time, its length, then its bytes */
    uint64_t t_ns;
    uint32_t len;
    uint32_t pad;
};

struct dir {                        /* one direction: frames read from in, written to out */
    const char *name;
    int in, out;
    unsigned char *ring;
    size_t size, r, w, n;           /* read and write offsets, frames held */
    size_t bytes_held, max_bytes_held;
    uint64_t frames, bytes, dropped, write_errors, full_stalls;
    uint64_t late_max_ns, late_sum_ns, late[LATE_BUCKETS];
};

/* Upper bounds (microseconds) of the lateness buckets; the last one is open. */
static const uint64_t late_us[LATE_BUCKETS - 1] = {10, 25, 50, 100, 200, 500, 1000, 5000, 20000};
static uint64_t delay_ns;
static volatile sig_atomic_t stop_signal;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void on_signal(int sig)
{
    stop_signal = sig;
}

static int tap_open(const char *name, int offload)
{
    struct ifreq ifr;
    int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "delaybridge: /dev/net/tun: %s\n", strerror(errno));
        return -1;
    }
    memset(&ifr, 0, sizeof ifr);
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI | (offload ? IFF_VNET_HDR : 0);
    if (strlen(name) >= IFNAMSIZ) {
        fprintf(stderr, "delaybridge: device name too long: %s\n", name);
        close(fd);
        return -1;
    }
    strcpy(ifr.ifr_name, name);
    if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
        fprintf(stderr, "delaybridge: TUNSETIFF %s: %s\n", name, strerror(errno));
        close(fd);
        return -1;
    }
    if (offload && ioctl(fd, TUNSETOFFLOAD, (unsigned long)(TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6)) < 0) {
        fprintf(stderr, "delaybridge: TUNSETOFFLOAD %s: %s\n", name, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* Where the next frame goes (room for MAX_FRAME bytes), or NULL when the ring is full. */
static unsigned char *ring_slot(struct dir *d)
{
    size_t need = HDR_SIZE + MAX_FRAME;
    if (d->n == 0)
        d->r = d->w = 0;
    if (d->w >= d->r || d->n == 0) {
        if (d->size - d->w >= need)
            return d->ring + d->w;
        if (d->r > need) {          /* wrap: mark the tail unused when a header fits there */
            if (d->size - d->w >= HDR_SIZE)
                ((struct rec *)(d->ring + d->w))->len = WRAP;
            d->w = 0;
            return d->ring;
        }
        return NULL;
    }
    return d->r - d->w > need ? d->ring + d->w : NULL;
}

/* Whether ring_slot would find room (no change to the ring): the device is polled only then. */
static int ring_room(const struct dir *d)
{
    size_t need = HDR_SIZE + MAX_FRAME;
    if (d->n == 0)
        return 1;
    if (d->w >= d->r)
        return d->size - d->w >= need || d->r > need;
    return d->r - d->w > need;
}

static struct rec *ring_head(struct dir *d)
{
    if (d->n == 0)
        return NULL;
    if (d->size - d->r < HDR_SIZE || ((struct rec *)(d->ring + d->r))->len == WRAP)
        d->r = 0;
    return (struct rec *)(d->ring + d->r);
}

static size_t rec_span(uint32_t len)
{
    return (HDR_SIZE + (size_t)len + 7) & ~(size_t)7;
}

/* Reads what in has (at most READ_BATCH frames), stamping each with its read time. */
static void pump_in(struct dir *d)
{
    for (int i = 0; i < READ_BATCH; i++) {
        unsigned char *slot = ring_slot(d);
        if (!slot) {
            d->full_stalls++;
            return;
        }
        ssize_t got = read(d->in, slot + HDR_SIZE, MAX_FRAME);
        if (got < 0) {
            if (errno != EAGAIN && errno != EINTR)
                d->dropped++;
            return;
        }
        struct rec *rc = (struct rec *)slot;
        rc->t_ns = now_ns();
        rc->len = (uint32_t)got;
        d->w = (size_t)(slot - d->ring) + rec_span(rc->len);
        d->n++;
        d->bytes_held += (size_t)got;
        if (d->bytes_held > d->max_bytes_held)
            d->max_bytes_held = d->bytes_held;
    }
}

static void count_late(struct dir *d, uint64_t late)
{
    int b = 0;
    while (b < LATE_BUCKETS - 1 && late > late_us[b] * 1000)
        b++;
    d->late[b]++;
    d->late_sum_ns += late;
    if (late > d->late_max_ns)
        d->late_max_ns = late;
}

/* Writes the frames that are due; returns when the next one is due (0: none held), or now + a retry
   when the device refused a frame for the moment. */
static uint64_t pump_out(struct dir *d, uint64_t now)
{
    struct rec *rc;
    while ((rc = ring_head(d)) != NULL) {
        uint64_t due = rc->t_ns + delay_ns;
        if (due > now)
            return due;
        ssize_t put = write(d->out, (unsigned char *)rc + HDR_SIZE, rc->len);
        if (put < 0 && (errno == EAGAIN || errno == ENOBUFS || errno == EINTR))
            return now + WRITE_RETRY_NS;
        if (put < 0)
            d->write_errors++;          /* the device is down, or the frame bad: a lost frame */
        else {
            d->frames++;
            d->bytes += rc->len;
        }
        count_late(d, now - due);
        d->bytes_held -= rc->len;
        d->r += rec_span(rc->len);
        d->n--;
        now = now_ns();
    }
    return 0;
}

static void print_dir(FILE *f, const struct dir *d)
{
    fprintf(f, "\"%s\": {\"frames\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"read_errors\": %" PRIu64
            ", \"write_errors\": %" PRIu64 ", \"ring_full\": %" PRIu64 ", \"max_bytes_held\": %zu"
            ", \"late_max_us\": %.1f, \"late_mean_us\": %.1f, \"late_hist_us\": {",
            d->name, d->frames, d->bytes, d->dropped, d->write_errors, d->full_stalls, d->max_bytes_held,
            d->late_max_ns / 1e3, d->frames ? d->late_sum_ns / 1e3 / (double)(d->frames + d->write_errors) : 0.0);
    for (int b = 0; b < LATE_BUCKETS; b++) {
        if (b < LATE_BUCKETS - 1)
            fprintf(f, "%s\"<=%" PRIu64 "\": %" PRIu64, b ? ", " : "", late_us[b], d->late[b]);
        else
            fprintf(f, ", \">%" PRIu64 "\": %" PRIu64, late_us[b - 1], d->late[b]);
    }
    fprintf(f, "}}");
}

static void print_stats(const struct dir *a, const struct dir *b)
{
    printf("{\"delay_us\": %.1f, ", delay_ns / 1e3);
    print_dir(stdout, a);
    printf(", ");
    print_dir(stdout, b);
    printf("}\n");
    fflush(stdout);
}

/* One command line from stdin; returns -1 at end of file. */
static int command(char *buf, size_t *have, size_t cap, const struct dir *a, const struct dir *b)
{
    ssize_t got = read(0, buf + *have, cap - 1 - *have);
    if (got == 0)
        return -1;
    if (got < 0)
        return errno == EAGAIN || errno == EINTR ? 0 : -1;
    *have += (size_t)got;
    buf[*have] = 0;
    char *nl;
    while ((nl = strchr(buf, '\n')) != NULL) {
        *nl = 0;
        unsigned long long us;
        char extra;
        if (sscanf(buf, "delay %llu %c", &us, &extra) == 1 && us <= 10000000ull) {
            delay_ns = (uint64_t)us * 1000;
            printf("{\"delay_us\": %llu}\n", us);
            fflush(stdout);
        } else if (strcmp(buf, "stats") == 0) {
            print_stats(a, b);
        } else {
            fprintf(stderr, "delaybridge: unknown command: %s\n", buf);
        }
        size_t rest = *have - (size_t)(nl + 1 - buf);
        memmove(buf, nl + 1, rest + 1);
        *have = rest;
    }
    if (*have == cap - 1)               /* a line longer than any command: drop it */
        *have = 0;
    return 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: delaybridge --tap0 NAME --tap1 NAME [--netns1 PATH] --delay-us N [--ring-mb MB] "
                    "[--no-offload] [--rt-priority P]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *tap0 = NULL, *tap1 = NULL, *netns1 = NULL;
    long long delay_us = -1, ring_mb = 32, rt_priority = 0;
    int offload = 1;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--no-offload")) {
            offload = 0;
            continue;
        }
        if (!v)
            usage();
        if (!strcmp(argv[i], "--tap0"))
            tap0 = v;
        else if (!strcmp(argv[i], "--tap1"))
            tap1 = v;
        else if (!strcmp(argv[i], "--netns1"))
            netns1 = v;
        else if (!strcmp(argv[i], "--delay-us"))
            delay_us = atoll(v);
        else if (!strcmp(argv[i], "--rt-priority"))
            rt_priority = atoll(v);
        else if (!strcmp(argv[i], "--ring-mb"))
            ring_mb = atoll(v);
        else
            usage();
        i++;
    }
    if (!tap0 || !tap1 || delay_us < 0 || delay_us > 10000000 || ring_mb < 1 || ring_mb > 1024
        || rt_priority < 0 || rt_priority > 99)
        usage();
    delay_ns = (uint64_t)delay_us * 1000;
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    prctl(PR_SET_TIMERSLACK, 1UL);      /* wake-ups to the microsecond: the delay is what we sell */

    int fd0 = tap_open(tap0, offload);
    if (fd0 < 0)
        return 1;
    int fd1;
    if (netns1) {
        /* a tun device belongs to the network namespace /dev/net/tun was opened in */
        int here = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
        int there = open(netns1, O_RDONLY | O_CLOEXEC);
        if (here < 0 || there < 0 || setns(there, CLONE_NEWNET) < 0) {
            fprintf(stderr, "delaybridge: entering %s: %s\n", netns1, strerror(errno));
            return 1;
        }
        fd1 = tap_open(tap1, offload);
        if (setns(here, CLONE_NEWNET) < 0) {
            fprintf(stderr, "delaybridge: back to our namespace: %s\n", strerror(errno));
            return 1;
        }
        close(here);
        close(there);
    } else {
        fd1 = tap_open(tap1, offload);
    }
    if (fd1 < 0)
        return 1;

    struct dir d[2] = {{.name = "tap0_to_tap1", .in = fd0, .out = fd1},
                       {.name = "tap1_to_tap0", .in = fd1, .out = fd0}};
    for (int i = 0; i < 2; i++) {
        d[i].size = (size_t)ring_mb << 20;
        d[i].ring = malloc(d[i].size);
        if (!d[i].ring) {
            fprintf(stderr, "delaybridge: no memory for a %lld MiB ring\n", ring_mb);
            return 1;
        }
    }

    sigset_t block, open_mask;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGHUP);
    sigprocmask(SIG_BLOCK, &block, &open_mask);
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);

    if (rt_priority) {
        struct sched_param sp = {.sched_priority = (int)rt_priority};
        if (mlockall(MCL_CURRENT | MCL_FUTURE) < 0)
            fprintf(stderr, "delaybridge: mlockall: %s (going on)\n", strerror(errno));
        if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0) {
            fprintf(stderr, "delaybridge: SCHED_FIFO %lld: %s\n", rt_priority, strerror(errno));
            return 1;
        }
    }
    for (int i = 0; i < 2; i++)           /* touch the rings now, not while timing frames */
        memset(d[i].ring, 0, d[i].size);

    printf("ready\n");
    fflush(stdout);

    char cmd[256];
    size_t have = 0;
    int in_open = 1;
    while (!stop_signal) {
        uint64_t now = now_ns(), next = 0;
        for (int i = 0; i < 2; i++) {
            uint64_t due = pump_out(&d[i], now);
            if (due && (!next || due < next))
                next = due;
        }
        /* a full ring stops reading that device: its queue fills and drops, as a NIC's does */
        struct pollfd p[3] = {{.fd = fd0, .events = ring_room(&d[0]) ? POLLIN : 0},
                              {.fd = fd1, .events = ring_room(&d[1]) ? POLLIN : 0},
                              {.fd = in_open ? 0 : -1, .events = POLLIN}};
        struct timespec to, *top = NULL;
        if (next) {
            uint64_t now2 = now_ns(), wait = next > now2 ? next - now2 : 0;
            to.tv_sec = (time_t)(wait / 1000000000u);
            to.tv_nsec = (long)(wait % 1000000000u);
            top = &to;
        }
        int k = ppoll(p, 3, top, &open_mask);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            fprintf(stderr, "delaybridge: ppoll: %s\n", strerror(errno));
            break;
        }
        if (p[0].revents & POLLIN)
            pump_in(&d[0]);
        if (p[1].revents & POLLIN)
            pump_in(&d[1]);
        if ((p[0].revents | p[1].revents) & (POLLERR | POLLNVAL)) {
            fprintf(stderr, "delaybridge: a device went away\n");
            break;
        }
        if (p[2].revents & (POLLIN | POLLHUP | POLLERR) && command(cmd, &have, sizeof cmd, &d[0], &d[1]) < 0)
            break;                      /* the harness is gone (or closed our input): so are we */
    }
    print_stats(&d[0], &d[1]);
    return 0;
}
