/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Who makes a copy, and the metadata an entry takes for them (copy_who.h):
 * below the copier and the sync's comparisons, which both ask it.
 */
#include <sys/stat.h>
#include <unistd.h>

#include "copy_who.h"
#include "write_meta.h"

void copy_meta(const struct copy_who *who, struct bfo_wentry *e, uint32_t mode, uint32_t uid,
	       uint32_t gid, int64_t as, uint32_t an, int64_t ms, uint32_t mn)
{
	e->mode = mode & 07777;
	if (!who->archive) {
		/* cp -r: the source's permission bits (sticky included) less
		 * the umask, no set-id bits, the current time, owned by whoever
		 * copies. */
		e->mode &= 01777 & ~who->umask;
		return;
	}
	/* Set-id bits only go with the owner they belong to: when the copy
	 * cannot be given the source's owner or group, cp -a drops them, and
	 * so does this. */
	if (!who->is_root) {
		if (uid != who->euid)
			e->mode &= ~(uint32_t)S_ISUID;
		if (gid != who->egid)
			e->mode &= ~(uint32_t)S_ISGID;
	}
	e->flags |= BFO_WENTRY_TIMES;
	e->atime_sec = as;
	e->atime_nsec = an;
	e->mtime_sec = ms;
	e->mtime_nsec = mn;
	if (who->is_root) {
		e->flags |= BFO_WENTRY_OWNER;
		e->uid = uid;
		e->gid = gid;
	}
}

void copy_who_init(struct copy_who *who, bool archive)
{
	who->archive = archive;
	who->is_root = geteuid() == 0;
	who->euid = geteuid();
	who->egid = getegid();
	who->umask = process_umask();
}
