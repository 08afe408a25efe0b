/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_cp_dst_mtime: a run that writes leaves DST's own mtime as rsync -a
 * leaves it (issue 55 item 8): the writer's journal comes and goes in DST,
 * which must not show.  DST and rsync's DST both start with an mtime in the
 * past; after each step, whether DST's mtime is still that one is what
 * rsync's is, and a kept one is the same to the nanosecond:
 *  - the first copy of SRC into DST (DST/SRC is new: both change it);
 *  - a rerun after a file was added below SRC (only DST/SRC/... change:
 *    both keep it), by bfo cp, by bfo cp through a remote shell (the far
 *    bfo recv writes) and by bfo send | bfo recv;
 *  - bfo write of a tar holding only entries below a directory DST has
 *    (kept, as nothing of DST's own changed).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "t_helpers.h"
#include "t_wutil.h"

#define PAST "@1577934245.123456789"

static const char *tmp;

static bool kept(const char *dir)
{
	struct stat st;

	T_ASSERT(stat(dir, &st) == 0, "stat %s: %s", dir, strerror(errno));
	return st.st_mtim.tv_sec == 1577934245 && st.st_mtim.tv_nsec == 123456789;
}

static void step(const char *what, const char *bfo_cmd, const char *dst, const char *rsync_cmd,
		 const char *rdst)
{
	T_EQ(t_sh("touch -d %s %s %s", PAST, dst, rdst), 0);
	T_ASSERT(t_sh("%s", bfo_cmd) == 0, "%s: %s failed", what, bfo_cmd);
	T_ASSERT(t_sh("%s", rsync_cmd) == 0, "%s: %s failed", what, rsync_cmd);
	bool b = kept(dst), r = kept(rdst);

	t_log("%s: DST's mtime %s by bfo, %s by rsync", what, b ? "kept" : "changed",
	      r ? "kept" : "changed");
	T_ASSERT(b == r, "%s: DST's mtime %s by bfo, %s by rsync", what, b ? "kept" : "changed",
		 r ? "kept" : "changed");
}

int main(void)
{
	t_init("t_cp_dst_mtime", 300);
	umask(022);
	if (!t_have_prog("rsync"))
		t_skip("no rsync to compare with");
	tmp = t_tmpdir();
	const char *src = t_keep(t_path(tmp, "src")), *dst = t_keep(t_path(tmp, "dst"));
	const char *rdst = t_keep(t_path(tmp, "rdst"));
	const char *rsh = t_keep(tw_local_rsh(tmp));
	int kept_steps = 0;

	tw_mkdirs(tw_fmt("%s/d", src));
	for (int i = 0; i < 20; i++)
		t_write_random(tw_fmt("%s/d/f%02d", src, i), 5000, (uint64_t)i + 1);
	tw_mkdirs(dst);
	tw_mkdirs(rdst);
	T_EQ(t_sh("find %s -exec touch -h -d %s {} +", src, PAST), 0);

	step("first copy", tw_fmt("%s cp -a %s %s", BFO_CLI, src, dst), dst,
	     tw_fmt("rsync -a %s %s", src, rdst), rdst);
	T_ASSERT(!kept(dst), "the first copy made DST/src, yet DST's mtime is the old one");

	const char *cmds[] = {
		tw_fmt("%s cp -a %s %s", BFO_CLI, src, dst),
		tw_fmt("%s cp -a --rsh %s --remote-bfo %s %s h:%s", BFO_CLI, rsh, BFO_CLI, src, dst),
		tw_fmt("%s send -a %s | %s recv -a %s", BFO_CLI, src, BFO_CLI, dst),
	};
	const char *names[] = { "bfo cp rerun", "bfo cp h: rerun", "bfo send | bfo recv rerun" };

	for (int k = 0; k < 3; k++) {
		t_write_random(tw_fmt("%s/d/new%d", src, k), 7000, 100 + (uint64_t)k);
		step(names[k], cmds[k], dst, tw_fmt("rsync -a %s %s", src, rdst), rdst);
		T_ASSERT(tw_exists(tw_fmt("%s/src/d/new%d", dst, k)), "%s copied nothing", names[k]);
		kept_steps += kept(dst);
	}
	/* bfo write: entries below src/d only (tar of d's files, named src/d/...) */
	t_write_random(tw_fmt("%s/d/new-w", src), 3000, 200);
	step("bfo write", tw_fmt("tar --format=pax -C %s -cf - src/d/new-w | %s write --tar --replace %s",
				 tmp, BFO_CLI, dst), dst,
	     tw_fmt("rsync -a %s %s", src, rdst), rdst);
	kept_steps += kept(dst);
	T_ASSERT(kept_steps == 4, "%d of 4 reruns kept DST's mtime", kept_steps);
	t_done();
}
