/* SPDX-License-Identifier: Apache-2.0 */
/* What the read engines know about a device and its file system: whether
 * raw reads are possible, and whether st_size can be trusted. */
#ifndef BFO_DEVINFO_H
#define BFO_DEVINFO_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

enum fs_kind { FS_OTHER = 0, FS_EXT4, FS_XFS };

struct devinfo {
	uint64_t dev;            /* major << 32 | minor */
	int raw_fd;              /* O_DIRECT descriptor of the block device, or -1 */
	uint32_t lbs;            /* logical block size of the device */
	uint32_t fsbs;           /* the file system's block size (0: unknown): a file's
				  * last block is its own to its end */
	uint64_t devsize;
	bool rotational;
	enum fs_kind fs;
	bool sizes_lie;          /* procfs, sysfs, ...: st_size is no size */
	bool sizes_true;         /* ext4, XFS, btrfs, tmpfs: size 0 is empty */
	char why[160];           /* why raw is not possible, or the device name */
	struct ext4ino *ext4;    /* raw ext4: its inodes from the device (raw_ext4ino.h), or NULL */
	char ext4_why[128];      /* why not, when raw but not ext4 */
	struct devinfo *next;
};

struct sysstate;

struct devcache {
	pthread_mutex_t lock;
	struct devinfo *list;
	bool want_raw;           /* the engine may use raw reads at all */
	struct sysstate *sys;    /* the context's (mount generation) */
};

void devcache_init(struct devcache *dc, bool want_raw, struct sysstate *sys);
/* Forget every device (probed again when next met): only while no window
 * of the context is in flight. */
void devcache_reset(struct devcache *dc);
void devcache_fini(struct devcache *dc);
struct devinfo *devcache_get(struct devcache *dc, uint64_t dev, const char *path);

#endif
