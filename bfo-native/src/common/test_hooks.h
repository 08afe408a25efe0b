/* SPDX-License-Identifier: Apache-2.0 */
#ifndef BFO_TEST_HOOKS_H
#define BFO_TEST_HOOKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Fault injection for tests (hidden: not exported by libbfo.so; tests link
 * the static library).  after_plan runs in the pool thread that finished a
 * window's plan, before phase 2 can start on it; after_data runs after a
 * file's bytes were read and before they are verified (raw and uring: before
 * the re-stat; per-file reads: before the second fstat).  While
 * hold_retire returns true, the dispatcher keeps windows whose entries were
 * all queued active instead of retiring them (not when the batch stops): the
 * caller then sees what it sees when the dispatcher is slow to retire.
 */
struct bfo_test_hooks {
	/* after_hint: after a window's directories were listed (raw_dirhint.c),
	 * before its inodes are read */
	void (*after_hint)(void *arg, uint32_t nfiles);
	void (*after_plan)(void *arg, uint32_t nfiles);
	void (*after_data)(void *arg, const char *path);
	/* after_keys: a window's sample of physical keys decided whether the
	 * other files' keys are wanted (plan.c, KEY_SAMPLE); on a pool thread */
	void (*after_keys)(void *arg, uint32_t sampled, bool wanted);
	bool (*hold_retire)(void *arg);
	/* fd_retry: an open of libbfo's met EMFILE or ENFILE and is tried
	 * again once a descriptor of libbfo's is closed (fdlimit.c, the
	 * io_uring writer), called before it waits for that close: a test
	 * holding descriptors knows the wait began */
	void (*fd_retry)(void *arg);
	/* dir_opened: a writer's worker opened the directory of a group of
	 * entries (write_entry.c; the io_uring path: write_uring.c, before its
	 * files' opens) and is about to make them in it: a test changes the
	 * path or takes descriptors meanwhile, at a point it knows */
	void (*dir_opened)(void *arg, const char *dir);
	/* dircache_bytes: when nonzero, a batch keeps this many bytes of
	 * directory listings (dirlist.c) instead of its own bound, so that a
	 * test's small directories take the path of those too large to keep */
	size_t dircache_bytes;
	/* before_delete: --delete is about to resolve path (below the
	 * destination) again and delete it (sync.c): a test swaps a directory
	 * for a symbolic link at that moment */
	void (*before_delete)(void *arg, const char *path);
	/* index_built: a local sync's index of the destination is built, on
	 * its thread, before the run may use it (copy_sync.c): a test parks
	 * it there.  list_waits: the run is about to wait for that index,
	 * with pending list entries made meanwhile and queued;
	 * list_pending_max, when nonzero, bounds that queue instead. */
	void (*index_built)(void *arg);
	void (*list_waits)(void *arg, size_t pending);
	size_t list_pending_max;
	/* uring_plain_fds: the uring read engine opens ordinary descriptors,
	 * as it does where the kernel closes files taken out of the
	 * registered table late (dispatch_ring.c), whatever this kernel does */
	bool uring_plain_fds;
	/* pipe_nowait_refused: writes to pipes (wio.c) take the way of a
	 * kernel whose pipes refuse RWF_NOWAIT (6.1), whatever this one does */
	bool pipe_nowait_refused;
	void *arg;
};
extern struct bfo_test_hooks bfo_test_hooks;

#endif
