/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_fs_other: file systems without FIEMAP or without a block device.  As
 * root, a tmpfs mount and an overlayfs (lower and upper directories on
 * tmpfs, files in both layers, one lower file copied up by modifying it
 * through the overlay, one lower file deleted through it) read with the
 * engine auto (and uring, portable): every file equals read() and stat(),
 * the engine is never raw, the deleted file is -ENOENT.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "t_helpers.h"

#define NPER 150

static void mkdir_or_fail(const char *p)
{
	if (mkdir(p, 0755) < 0)
		t_fail("mkdir %s: %s", p, strerror(errno));
}

static void read_all(char **paths, size_t n, const char *where, size_t deleted)
{
	for (int ei = 0; ei < 3; ei++) {
		int engine = t_engines_nonraw[ei];
		struct bfo_opts o;
		struct bfo_stats st;
		struct t_result *r = t_results_new(n);
		char msg[96];

		bfo_opts_init(&o);
		o.engine = (uint32_t)engine;
		o.large_file = 256 << 10;
		snprintf(msg, sizeof(msg), "%s, engine %s", where, t_engine(engine));
		t_watchdog(120, msg);
		t_batch(&o, paths, n, r, &st);
		for (size_t i = 0; i < n; i++) {
			if (i == deleted)
				t_expect_status(r, paths, i, -ENOENT, msg);
			else
				t_expect_plain(r, paths, i, msg);
			if (r[i].engine == BFO_ENGINE_RAW)
				t_fail("[%s] %s read raw", msg, paths[i]);
		}
		T_ASSERT(st.files_by_engine[BFO_ENGINE_RAW] == 0 && !(st.engines & (1u << BFO_ENGINE_RAW)),
			 "[%s] stats say raw ran", msg);
		t_log("%s: ok (engine %s)", msg, t_engine((int)st.engine));
		t_results_free(r, n);
	}
}

int main(void)
{
	t_init("t_fs_other", 300);
	if (!t_is_root())
		t_skip("not root: mounting tmpfs and overlayfs needs root");

	const char *base = t_tmpdir();
	char *tmnt = t_path(base, "tmpfs");
	uint64_t seed = 3;

	mkdir_or_fail(tmnt);
	if (mount("tmpfs", tmnt, "tmpfs", 0, "size=256m,mode=0755") < 0)
		t_skip("mount -t tmpfs refused: %s", strerror(errno));
	t_cleanup_mount(tmnt);

	/* tmpfs: no FIEMAP, no block device */
	char *paths[3 * NPER + 4];
	size_t n = 0;

	for (int i = 0; i < NPER; i++) {
		paths[n] = t_pathf("%s/t%03d", tmnt, i);
		t_write_random(paths[n], t_rand_range(&seed, 0, i % 10 ? 20000 : 600000), (uint64_t)i);
		n++;
	}
	read_all(paths, n, "tmpfs", (size_t)-1);
	for (size_t i = 0; i < n; i++)
		free(paths[i]);

	/* overlayfs: lower and upper on the tmpfs */
	char *lower = t_path(tmnt, "lower"), *upper = t_path(tmnt, "upper");
	char *work = t_path(tmnt, "work"), *ovl = t_path(base, "overlay");
	char opts[1024];

	mkdir_or_fail(lower);
	mkdir_or_fail(upper);
	mkdir_or_fail(work);
	mkdir_or_fail(ovl);
	char *lsub = t_path(lower, "sub");

	mkdir_or_fail(lsub);
	free(lsub);
	for (int i = 0; i < NPER; i++) {
		char *p = t_pathf("%s/sub/low%03d", lower, i);

		t_write_random(p, t_rand_range(&seed, 0, 30000), 1000 + (uint64_t)i);
		free(p);
	}
	snprintf(opts, sizeof(opts), "lowerdir=%s,upperdir=%s,workdir=%s", lower, upper, work);
	if (mount("overlay", ovl, "overlay", 0, opts) < 0)
		t_skip("mount -t overlay refused: %s", strerror(errno));
	t_cleanup_mount(ovl);

	n = 0;
	for (int i = 0; i < NPER; i++)
		paths[n++] = t_pathf("%s/sub/low%03d", ovl, i);
	for (int i = 0; i < NPER; i++) {          /* upper-only files, through the overlay */
		paths[n] = t_pathf("%s/up%03d", ovl, i);
		t_write_random(paths[n], t_rand_range(&seed, 1, 30000), 2000 + (uint64_t)i);
		n++;
	}
	/* copy up: modify lower files through the overlay */
	for (int i = 0; i < NPER; i += 10) {
		int fd = open(paths[i], O_WRONLY | O_APPEND);

		if (fd < 0 || write(fd, "copied up", 9) != 9)
			t_fail("append %s: %s", paths[i], strerror(errno));
		close(fd);
	}
	/* whiteout: delete a lower file through the overlay */
	size_t deleted = 5;

	if (unlink(paths[deleted]) < 0)
		t_fail("unlink %s: %s", paths[deleted], strerror(errno));
	read_all(paths, n, "overlayfs", deleted);
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	/* keep the mount point strings: the cleanup list copied them */
	free(lower);
	free(upper);
	free(work);
	free(ovl);
	free(tmnt);
	t_log("PASS");
	return 0;
}
