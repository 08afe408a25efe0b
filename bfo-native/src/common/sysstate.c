/* SPDX-License-Identifier: Apache-2.0 */
/* What the system lets a batch do, per batch (sysstate.h says why). */
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

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
	s->rawino_ok = sysstate_may_bypass_open(s->rawino_why, sizeof(s->rawino_why));
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

static bool file_says(const char *path, const char *prefix)
{
	char buf[128] = "";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	if (fd >= 0)
		close(fd);
	return n > 0 && strncmp(buf, prefix, strlen(prefix)) == 0;
}

/* The inode number of the initial user namespace's nsfs file
 * (PROC_USER_INIT_INO in the kernel's proc_ns.h, fixed since Linux 3.8). */
#define USER_NS_INIT_INO 0xEFFFFFFDu

/* Is this process in the initial user namespace?  Capabilities held in
 * any other one (unshare -Ur, a rootless container) let the kernel pass
 * only files whose owners are mapped into it; the inode tables know
 * nothing of that, and the unmapped owners read as the overflow uid on
 * both the directory and the inode, so the owner rule would match. */
static bool initial_user_ns(void)
{
	struct stat st;

	return stat("/proc/self/ns/user", &st) == 0 && st.st_ino == USER_NS_INIT_INO;
}

/*
 * The VFS path opens every file before its bytes are read from the device,
 * so the kernel's permission checks run; this path opens none.  So only a
 * process those checks would not stop gets it: in the initial user
 * namespace, CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH in effect, not
 * confined by AppArmor, not under an enforcing SELinux, no no_new_privs
 * (which Landlock and seccomp sandboxes set).  (A member of the disk group
 * reads the device but not every file.)  Capabilities are a thread's:
 * this is the calling thread's answer.
 */
bool sysstate_may_bypass_open(char *why, size_t why_len)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (!initial_user_ns()) {
		snprintf(why, why_len, "in a user namespace (or no /proc): files are opened");
		return false;
	}
	if (syscall(SYS_capget, &h, d) < 0 || !(d[0].effective & (1u << CAP_DAC_OVERRIDE)) ||
	    !(d[0].effective & (1u << CAP_DAC_READ_SEARCH))) {
		snprintf(why, why_len, "no CAP_DAC_OVERRIDE: files are opened to check permissions");
		return false;
	}
	if (access("/proc/self/attr/current", F_OK) == 0 &&
	    !file_says("/proc/self/attr/current", "unconfined") &&
	    file_says("/sys/module/apparmor/parameters/enabled", "Y")) {
		snprintf(why, why_len, "confined by AppArmor: files are opened");
		return false;
	}
	if (file_says("/sys/fs/selinux/enforce", "1")) {
		snprintf(why, why_len, "SELinux enforcing: files are opened");
		return false;
	}
	if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1) {
		snprintf(why, why_len, "no_new_privs (a sandbox): files are opened");
		return false;
	}
	return true;
}
