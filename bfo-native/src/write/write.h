/* SPDX-License-Identifier: Apache-2.0 */
/* Internal parts of the writer (BFO_w) and its journal. */
#ifndef BFO_WRITE_H
#define BFO_WRITE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/types.h>

#include "bfo.h"
#include "write_meta.h"

#define BFO_JOURNAL_DIR ".bfo-journal"
/* BFO_WPATH_MAX (bfo.h) is below 64 KiB: the manifest stores lengths in
 * 16 bits. */
_Static_assert(BFO_WPATH_MAX <= 65536, "manifest path lengths are 16 bits");
#define BFO_TMP_PREFIX ".bfo-tmp."

/* A copier's writer also stops when *flag or *flag2 (may be NULL) is set,
 * as by bfo_writer_cancel(): the copier's cancel (async-signal-safe, the
 * writer coming and going under it), a receiver's broken stream.  write.c */
struct bfo_writer;
void writer_cancel_with(struct bfo_writer *w, const atomic_bool *flag, const atomic_bool *flag2);

/* write_path.c */
int wpath_check(const char *rel);
int wpath_open_dir(int rootfd, const char *dir, bool create);
/* wpath_open_dir, counted as a descriptor of libbfo's own (fdlimit.h):
 * closed with fdl_close.  For the writer's workers and io_uring waves. */
int wpath_open_dir_held(int rootfd, const char *dir, bool create);
const char *wpath_split(const char *rel, char *dir, size_t len);
/* Remove name in dfd and, for a directory, everything below it (depth:
 * how deep name is, 0 at the top); no symbolic link is followed (one is
 * removed as itself), nothing gone counts as removed.  0 or -errno. */
int wpath_remove_tree(int dfd, const char *name, unsigned depth);

/* One record of a manifest: what the batch writes at a path. */
enum mentry_kind {
	M_FILE = 1,     /* a file written whole in this batch */
	M_TEMP = 2,     /* a temporary (replace, pieces): removed by recovery */
	M_SYMLINK = 3,
	M_OTHER = 4,    /* hard link, fifo, device node, directory */
};

struct mentry {
	uint8_t kind;
	uint8_t wtype;             /* enum bfo_wtype of the entry */
	uint8_t wflags;            /* BFO_WENTRY_* that apply to metadata */
	uint32_t mode, uid, gid;
	uint64_t size, hash;       /* M_FILE: content; M_SYMLINK: target hash */
	uint64_t stem_off;         /* M_FILE in a stem batch; UINT64_MAX otherwise */
	int64_t atime_sec, mtime_sec;
	uint32_t atime_nsec, mtime_nsec;
	const char *path;
};

/* A decoded manifest: its entries, its stem's name ("" for none) and the
 * identities recorded for them (ids[i].type 0: none for entry i). */
struct manifest {
	struct mentry *m;
	uint32_t n, engine;
	char *stem;
	struct fid *ids;
};
/* Larger manifests are not acted on: more than any batch writes. */
#define BFO_MANIFEST_MAX ((off_t)1 << 32)

/* journal.c and journal_recover.c */
#define JOURNAL_MAGIC "BFOJRNL1"        /* a manifest's (and a record's) first bytes */
#define JOURNAL_LOCK_MARK "BFO writer lock\n"  /* what a writer's lock file holds */
/* A record being written: recovery never reads one (it reads only ".m"
 * names) and removes it only once its writer is gone. */
#define JOURNAL_NEW_SUFFIX ".new"
void journal_ids_name(char *buf, size_t len, const char *mname);
int journal_dir_open(int rootfd, bool create);
int journal_lock(int jfd, uint32_t id, char *name, size_t len);
int journal_id_append(int mfd, _Atomic uint64_t *off, uint32_t idx, const struct fid *id);
int journal_manifest_decode(const uint8_t *p, size_t len, const uint8_t *ids, size_t ids_len,
			    struct manifest *mf);
int journal_ids_create(int jfd, const char *mname);
void journal_batch_remove(int jfd, const char *mname);
void journal_manifest_free(struct manifest *mf);
int journal_manifest_write(int jfd, const char *name, const struct mentry *m, uint32_t n,
			   const char *stem, uint32_t engine, int *fd_out);
int journal_recover(int rootfd, int jfd, struct bfo_recover_stats *st);
void journal_wait_past(int fd);
int journal_record_write(int jfd, const char *name, const struct mentry *m, uint32_t n, int *fd_out);
uint64_t journal_hash(const void *data, size_t len);

#endif
