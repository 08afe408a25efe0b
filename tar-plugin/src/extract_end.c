/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Extract: its start (tar creates its first file) and its end (tar closes
 * its archive, then exits): everything written, one syncfs per file
 * system, and what failed reported in tar's words with tar's status.
 */
#include "extract.h"

#include <errno.h>
#include <fcntl.h>
#include <libintl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void exit_flush(int status, void *unused);

void say(const char *name, const char *what, int err)
{
	if (!ex.exiting)
		fflush(stdout);
	if (ex.errfd >= 0)
		dprintf(ex.errfd, "tar: %s%s%s: %s\n", name ? name : "", name ? ": " : "", what, strerror(err));
	else
		fprintf(stderr, "tar: %s%s%s: %s\n", name ? name : "", name ? ": " : "", what, strerror(err));
	ex.deferred_failed = 1;
}

void report(const struct wfile *w, const char *what, int err)
{
	say(w->name, what, err);
}

/* The queue's bound from tar's descriptor limit (extract.h, QUEUE_FILES_MAX). */
static unsigned queue_files(void)
{
	unsigned q = fds_left() / 4;

	return q > QUEUE_FILES_MAX ? QUEUE_FILES_MAX : q < QUEUE_FILES_MIN ? QUEUE_FILES_MIN : q;
}

/*
 * The extraction's start on the coarse clock file systems stamp births
 * with, taken just after a tick (at most one, a few ms, once): an entry
 * born before tar began reads older, every one born since (tar's: a
 * member that comes twice, a placeholder) not (extract_name.c).
 */
static void start_clock(void)
{
	struct timespec c0, c, nap = { 0, 500000 };

	clock_gettime(CLOCK_REALTIME_COARSE, &c0);
	c = c0;
	for (int i = 0; i < 100 && c.tv_sec == c0.tv_sec && c.tv_nsec == c0.tv_nsec; i++) {
		nanosleep(&nap, NULL);
		clock_gettime(CLOCK_REALTIME_COARSE, &c);
	}
	ex.t0 = c;
}

void start_extracting(void)
{
	if (ex.extracting)
		return;
	ex.extracting = 1;
	start_clock();
	ex.queue_files = queue_files();
	counters.xqueue_files = ex.queue_files;
	ex.dirty = 1;
	ex.errfd = fcntl(2, F_DUPFD_CLOEXEC, 10);
	/* Runs at tar's exit, with its status (tar has closed stdout and
	 * stderr itself by then: messages go to errfd). */
	on_exit(exit_flush, NULL);
	archive_ahead_start();
}

/*
 * Everything written and committed: when tar closes its archive (the
 * members are all out) and again at exit for anything after that.
 */
void final_flush(void)
{
	struct stat sb;
	int cwd;

	victim_settle();
	for (int fd = 0; fd < FDTAB_MAX && ex.nq; fd++)
		if (ex.wtab[fd] && !ex.wtab[fd]->closed)
			ex.wtab[fd] = NULL;        /* tar never closed it: written, named, left open */
	ex.final = 1;
	flush_queue();
	ex.final = 0;
	roots_close();
	if (!ex.dirty)
		return;
	ex.dirty = 0;
	for (unsigned i = 0; i < space_ndevs(); i++) {
		if (settings.durability) {
			int r = bfo_syncfs(dev_fd(i));

			counters.syncfs++;
			if (r < 0)
				say(NULL, "Cannot commit the extracted files to disk", -r);
		}
	}
	if (!settings.durability)
		return;
	/* directories, symlinks, links made by name on a file system where
	 * no file was written */
	cwd = real_openat(AT_FDCWD, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cwd >= 0 && real_fstat(cwd, &sb) == 0 && !known_dev(sb.st_dev)) {
		bfo_syncfs(cwd);
		counters.syncfs++;
	}
	if (cwd >= 0)
		real_close(cwd);
}

/*
 * tar closes a read-only fd that is not a directory while extracting: its
 * archive (a file, a pipe from its compressor, stdin), so the members are
 * all out.  Everything is written and committed here, while tar can still
 * print what failed before its last words ("Exiting with failure status
 * ...") and before its close of stdout/stderr (fclose, past our hooks).
 */
void closing_archive(int fd)
{
	int saved, fl;
	struct stat sb;

	if (!ex.extracting || !ex.dirty || fd < 0 || !xenter())
		return;
	saved = errno;
	fl = fcntl(fd, F_GETFL);
	if (fl >= 0 && (fl & O_ACCMODE) == O_RDONLY && real_fstat(fd, &sb) == 0 &&
	    !S_ISDIR(sb.st_mode))
		final_flush();
	errno = saved;
	leave();
}

/*
 * At exit: what came after the archive's close (tar's delayed directory
 * metadata and links) is committed.  If a deferred write failed (another
 * process filled the disk after the free-space check, an I/O error), tar
 * did not see it: its status becomes 2, with tar's last words if it did
 * not say them itself (status 2 is the only one it says them for).
 */
static void exit_flush(int status, void *unused)
{
	(void)unused;
	if (getpid() != plugin.owner_pid || !pthread_equal(pthread_self(), plugin.tar_thread))
		return;
	in_hook = 1;
	ex.exiting = 1;
	final_flush();
	in_hook = 0;
	if (ex.deferred_failed) {
		if (status != 2 && ex.errfd >= 0)
			dprintf(ex.errfd, "tar: %s\n",
				dgettext("tar", "Exiting with failure status due to previous errors"));
		fflush(NULL);
		_exit(2);               /* tar's status for its own write errors */
	}
}
