/* SPDX-License-Identifier: Apache-2.0 */
/* What the system lets a batch do, per batch (sysstate.h says why). */
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ext4ino.h"
#include "sysstate.h"

static bool cap_call(long nr, struct creds *c)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (nr == SYS_capset) {
		for (int i = 0; i < 2; i++)
			d[i] = (struct __user_cap_data_struct){ c->eff[i], c->perm[i], c->inh[i] };
		return syscall(SYS_capset, &h, d) == 0;
	}
	if (syscall(SYS_capget, &h, d) < 0)
		return false;
	for (int i = 0; i < 2; i++) {
		c->eff[i] = d[i].effective;
		c->perm[i] = d[i].permitted;
		c->inh[i] = d[i].inheritable;
	}
	return true;
}

bool creds_get(struct creds *c)
{
	return cap_call(SYS_capget, c);
}

void sysstate_init(struct sysstate *s)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	s->mounts_fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	atomic_init(&s->mount_gen, 0);
	atomic_init(&s->creds_gen, 0);
	snprintf(s->rawino_why, sizeof(s->rawino_why), "no batch yet");
}

void sysstate_fini(struct sysstate *s)
{
	if (s->mounts_fd >= 0)
		close(s->mounts_fd);
	pthread_mutex_destroy(&s->lock);
}

uint64_t sysstate_mount_gen(struct sysstate *s)
{
	struct pollfd p = { .fd = s->mounts_fd, .events = POLLPRI };

	if (s->mounts_fd < 0)
		return atomic_load(&s->mount_gen);
	/* The poll itself takes the change (the seq file remembers the
	 * namespace's event count it reported): one poller at a time, so
	 * that no caller misses the change another one took. */
	pthread_mutex_lock(&s->lock);
	if (poll(&p, 1, 0) > 0 && (p.revents & (POLLPRI | POLLERR)))
		atomic_fetch_add(&s->mount_gen, 1);
	pthread_mutex_unlock(&s->lock);
	return atomic_load(&s->mount_gen);
}

bool sysstate_batch(struct sysstate *s)
{
	struct creds now;
	uint64_t gen;
	bool changed;

	if (!creds_get(&now))
		memset(&now, 0, sizeof(now));        /* as unprivileged as it gets */
	pthread_mutex_lock(&s->lock);
	if (memcmp(&now, &s->creds, sizeof(now)) || atomic_load(&s->creds_gen) == 0) {
		s->creds = now;
		atomic_fetch_add(&s->creds_gen, 1);
	}
	pthread_mutex_unlock(&s->lock);
	s->rawino_ok = ext4ino_may_bypass_open(s->rawino_why, sizeof(s->rawino_why));
	gen = sysstate_mount_gen(s);
	changed = gen != s->gen_probed;
	s->gen_probed = gen;
	return changed;
}

void sysstate_adopt_creds(struct sysstate *s, unsigned *seen)
{
	unsigned gen = atomic_load(&s->creds_gen);
	struct creds mine, want;

	if (gen == *seen)
		return;
	if (!creds_get(&mine))
		return;
	want = mine;
	pthread_mutex_lock(&s->lock);
	*seen = atomic_load(&s->creds_gen);
	for (int i = 0; i < 2; i++)
		want.eff[i] = s->creds.eff[i] & mine.perm[i];
	pthread_mutex_unlock(&s->lock);
	if (memcmp(want.eff, mine.eff, sizeof(want.eff)))
		cap_call(SYS_capset, &want);
}
