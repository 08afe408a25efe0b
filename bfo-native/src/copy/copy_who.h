/* SPDX-License-Identifier: Apache-2.0 */
/* Who makes a copy, and what metadata an entry takes for them. */
#ifndef BFO_COPY_WHO_H
#define BFO_COPY_WHO_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "bfo.h"

/* Who makes the copy, which decides what metadata it may take. */
struct copy_who {
	bool archive;               /* cp -a, else cp -r */
	bool is_root;
	uid_t euid;
	gid_t egid;
	mode_t umask;
};

void copy_who_init(struct copy_who *who, bool archive);

/* The metadata e takes from a source with this mode, owner and times: all
 * of it with -a (owner as root only, set-id bits only with their owner),
 * the permission bits less the umask without. */
void copy_meta(const struct copy_who *who, struct bfo_wentry *e, uint32_t mode, uint32_t uid,
	       uint32_t gid, int64_t as, uint32_t an, int64_t ms, uint32_t mn);

#endif
