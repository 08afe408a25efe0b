/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the system lets a context's batch do, looked at again for every
 * batch: a context lives long (bindings keep them in pools for the life of
 * an executor), and the caller's privileges and the mount table may change
 * between its batches, or during one.
 *
 *  - The caller's capabilities at the batch's start: the context's threads
 *    (pool workers, the dispatcher, whose io_uring opens run with its
 *    credentials) take the same effective set before their next task, so
 *    a caller that dropped CAP_DAC_OVERRIDE gets no file through them that
 *    it could not open itself.
 *  - Whether the batch may take files from ext4's inode tables, which
 *    opens no file (sysstate_may_bypass_open, in the caller's thread).
 *  - The mount table: /proc/self/mountinfo reports any change to poll()
 *    (POLLPRI); each change bumps a generation.  A window records the
 *    generation its directories were listed under, and files served from
 *    inodes are checked through the VFS when it moved before their bytes
 *    were verified; a batch that starts after a change probes its devices
 *    again.
 */
#ifndef BFO_SYSSTATE_H
#define BFO_SYSSTATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* The capability sets of a thread (two 32-bit words each, as capget). */
struct creds {
	uint32_t eff[2], perm[2], inh[2];
};

/* The calling thread's capabilities; false if capget failed. */
bool creds_get(struct creds *c);

struct sysstate {
	int mounts_fd;             /* /proc/self/mountinfo, or -1 */
	pthread_mutex_t lock;      /* around the poll that consumes a change */
	atomic_uint_fast64_t mount_gen;
	uint64_t gen_probed;       /* the generation the devices were probed at */
	/* the batch's caller, taken at its start (sysstate_batch) */
	struct creds creds;
	atomic_uint creds_gen;     /* bumped when creds changed */
	bool rawino_ok;            /* may take files from inode tables */
	char rawino_why[128];      /* why not */
};

void sysstate_init(struct sysstate *s);
void sysstate_fini(struct sysstate *s);

/* The mount table's generation now (one poll() of mountinfo). */
uint64_t sysstate_mount_gen(struct sysstate *s);

/*
 * At the start of a batch, in the caller's thread: take its capabilities
 * and the inode-table gate.  Returns true when the mount table changed
 * since the devices were probed (the caller then probes them again: no
 * window may be in flight).
 */
bool sysstate_batch(struct sysstate *s);

/* In a context thread before its next piece of work: take the effective
 * capabilities of the batch's caller (as far as this thread's permitted
 * set allows) when they changed since *seen. */
void sysstate_adopt_creds(struct sysstate *s, unsigned *seen);

/*
 * May this thread read files without opening them (the raw engine's
 * inode tables)?  Only where the kernel's permission checks would not stop
 * it: in the initial user namespace, CAP_DAC_OVERRIDE and
 * CAP_DAC_READ_SEARCH in effect, not confined by AppArmor or an enforcing
 * SELinux, no no_new_privs.  false: why says why not.
 */
bool sysstate_may_bypass_open(char *why, size_t why_len);

#endif
