/* SPDX-License-Identifier: Apache-2.0 */
/* The tables of the bfo command's options and texts (cli_opts.h). */
#include <stddef.h>

#include "bfo.h"
#include "cli_opts.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

const char *const cli_engines[] = {
	[BFO_ENGINE_AUTO] = "auto", [BFO_ENGINE_RAW] = "raw",
	[BFO_ENGINE_URING] = "uring", [BFO_ENGINE_PORTABLE] = "portable", NULL,
};
const char *const cli_orders[] = {
	[BFO_ORDER_AUTO] = "auto", [BFO_ORDER_INODE] = "inode",
	[BFO_ORDER_PHYSICAL] = "physical", NULL,
};
const char *const cli_durabilities[] = {
	[BFO_DURABILITY_BATCH] = "batch", [BFO_DURABILITY_NONE] = "none",
	[BFO_DURABILITY_EACH] = "each", NULL,
};
const char *const cli_wengines[] = {
	[BFO_WENGINE_AUTO] = "auto", [BFO_WENGINE_STEM] = "stem",
	[BFO_WENGINE_BATCHED] = "batched", [BFO_WENGINE_URING] = "uring", NULL,
};

const char cli_intro_text[] =
	"bfo reads, writes and copies many small files as batches instead of one file at a "
	"time: it maps where the files of a batch lie on the device and reads them in a few large "
	"I/Os sorted by their position, many in flight; it writes a batch's data first, its "
	"metadata after and makes it durable once, journalled so that a crash leaves no torn "
	"file; and it copies by reading on the source while writing on the destination, on one "
	"machine or between two (bfo cp HOST:PATH runs bfo on HOST through ssh, as rsync does).";

const char cli_exit_text[] =
	"Exit status: 0 all done; 1 some files failed (each named on stderr); 2 usage or "
	"setup error; 11 the destination's file system or quota is full (cp, recv, write: stopped "
	"there, every file written whole); 25 --max-delete stopped the deletions (cp, recv); 130 "
	"ended by SIGINT, 143 by SIGTERM (a second signal ends bfo at once).";

/* ------------------------------------------------------------ read, plan */

/* The rows bfo read and bfo plan share; plan has no --checksum (it reads
 * no data: taking it and printing nothing misled). */
#define READ_ROWS \
	[RO_ENGINE] = { .name = "engine", .arg = "ENGINE", .values = cli_engines, \
		.help = "data engine (default auto: raw where the device is readable, else uring)" }, \
	[RO_ORDER] = { .name = "order", .arg = "ORDER", .values = cli_orders, \
		.help = "order of per-file reads (default auto: physical on rotational devices)" }, \
	[RO_STATS] = { .name = "stats", \
		.help = "print what the batch did on stderr: files per engine and path, I/Os, times" }, \
	[RO_JSON] = { .name = "json", \
		.help = "print the statistics as one JSON line, last on stdout" }, \
	[RO_NULL] = { .name = "null", .letter = '0', \
		.help = "paths on stdin (-) are NUL-separated" }, \
	[RO_NOFOLLOW] = { .name = "no-follow", \
		.help = "refuse symbolic links instead of reading their target" }, \
	[RO_STOP] = { .name = "stop-on-error", .help = "stop at the first file that fails" }, \
	[RO_META] = { .name = "metadata-only", .help = "stat the files, read no data" }, \
	[RO_PROGRESS] = { .name = "progress", \
		.help = "show progress on stderr (default: when it is a terminal)" }, \
	[RO_NOPROGRESS] = { .name = "no-progress", .help = "show no progress" }, \
	[RO_SORTBUF] = { .name = "sort-buffer", .arg = "N", \
		.help = "walked files handed out N at a time in inode order (default 262144; 0: unsorted)", \
		.accepts = "a whole number from 0 to 268435456" }, \
	[RO_WFILES] = { .name = "window-files", .arg = "N", \
		.help = "files planned together (default 65536)" }, \
	[RO_WBYTES] = { .name = "window-bytes", .arg = "SIZE", \
		.help = "data bytes dispatched as one group (default 16M)" }, \
	[RO_ARENA] = { .name = "arena", .arg = "SIZE", \
		.help = "memory for delivered data (default 64M)" }, \
	[RO_GAP] = { .name = "merge-gap", .arg = "SIZE", \
		.help = "raw: read through gaps up to SIZE, never more gap than a quarter of a read's data (default 64K; 0: adjacent extents only)", \
		.accepts = "a number of bytes from 0, with K, M or G for powers of 1024" }, \
	[RO_MAXIO] = { .name = "max-io", .arg = "SIZE", \
		.help = "raw: largest single read (default 1M)" }, \
	[RO_LEXT] = { .name = "large-extent", .arg = "SIZE", \
		.help = "raw: extents above SIZE are read on their own (default 1M)" }, \
	[RO_LFILE] = { .name = "large-file", .arg = "SIZE", \
		.help = "files above SIZE are read in pieces of SIZE (default 16M)" }, \
	[RO_QD] = { .name = "queue-depth", .arg = "N", .help = "reads in flight (default 128)" }, \
	[RO_THREADS] = { .name = "threads", .arg = "N", \
		.help = "metadata and portable-engine threads (default 16)" }, \
	[RO_HELP] = { .name = "help", .letter = 'h', .help = "show this help" },

static const struct cli_opt read_opts[RO_N] = {
	READ_ROWS
	[RO_CHECKSUM] = { .name = "checksum",
		.help = "print '<xxh128>  <path>' per file, like xxh128sum" },
};

static const struct cli_opt plan_opts[RO_N] = {
	READ_ROWS
};

static const char *const read_usage[] = { "[OPTIONS] PATH...", NULL };

const struct cli_cmd cli_cmd_read = {
	"read", "read files as batches (directories recursively, - for paths on stdin)",
	read_usage,
	"Reads every regular file under the PATHs as batches: the metadata of a window of files "
	"first, then their data in a few large reads sorted by their place on the device, many in "
	"flight. A PATH is a file, a directory (walked in parallel, its files handed to the "
	"engine in inode order) or - for paths on stdin, one a line (NUL-separated with -0).\n"
	"\n"
	"Nothing is printed per file unless --checksum, whose lines match xxh128sum's (names "
	"holding a backslash or a newline escaped as md5sum does):\n"
	"\n"
	"  bfo read --checksum DIR | sort -k2 > bfo.txt\n"
	"  find DIR -type f -print0 | xargs -0 xxh128sum | sort -k2 > plain.txt\n"
	"  cmp bfo.txt plain.txt\n"
	"\n"
	"Engines: raw reads the merged extents of many files from the block device (root, "
	"ext2/3/4 or XFS; on ext4 the metadata comes from the inode tables); uring opens and reads "
	"each file through io_uring; portable reads each file with pread on a pool of threads. "
	"Any engine hands a file that changed or that it cannot map to a per-file read. "
	"SIZE takes K, M or G (powers of 1024).",
	read_opts, RO_N,
};

const struct cli_cmd cli_cmd_plan = {
	"plan", "print the ORDER_LIST summary of a batch without reading its data",
	read_usage,
	"Plans the batch bfo read would read (metadata and extents of every file, the merged "
	"regions of the raw engine) and prints nothing per file; --stats then shows the plan: "
	"extents per file, regions and the bytes read through gaps. It takes bfo read's options "
	"but --checksum.",
	plan_opts, RO_N,
};

/* ------------------------------------------------- cp, send, recv, write */

#define ROW_ARCHIVE { .name = "archive", .letter = 'a', .help = \
	"keep what cp -a keeps: modes, owner (as root), times, links, special files, xattrs" }
#define ROW_RECURSIVE { .name = "recursive", .letter = 'r', \
	.help = "accepted for cp's sake: directories are always copied whole" }
#define ROW_DURABILITY(when) { .name = "durability", .arg = "MODE", .values = cli_durabilities, \
	.help = "batch: durable when " when " returns (default); none: page cache only; " \
		"each: fsync per file" }
#define ROW_REPLACE { .name = "replace", .letter = 'f', \
	.help = "replace existing files (default: an existing file is an error)" }
#define ROW_UPDATE { .name = "update", .letter = 'u', .help = \
	"leave files whose copy has the same size and mtime, replace the others (the default)" }
#define ROW_CHECKSUM { .name = "checksum", .letter = 'c', \
	.help = "compare contents instead of mtime (with the size)" }
#define ROW_REPLACE_ALL { .name = "replace", .letter = 'f', \
	.help = "replace every file, whether its copy differs or not" }
#define ROW_WENGINE { .name = "write-engine", .arg = "ENGINE", .values = cli_wengines, .help = \
	"how files are written (default auto: batched; stem only where reflinks work)" }
#define ROW_STATS { .name = "stats", \
	.help = "print what ran on stderr: files, bytes, engines, batches" }
#define ROW_DELETE { .name = "delete", .help = \
	"delete what the copy has and SRC does not, once the copy is durable (as rsync --delete)" }
#define ROW_MAX_DELETE { .name = "max-delete", .arg = "N", .help = \
	"delete at most N entries, then stop deleting and exit with status 25 (as rsync; 0: " \
	"list what --delete would delete, delete nothing)" }
#define ROW_DRY_RUN { .name = "dry-run", .letter = 'n', \
	.help = "print what would be copied and deleted; change nothing" }
#define ROW_EXCLUDE { .name = "exclude", .arg = "PATTERN", .help = \
	"leave out what matches PATTERN (rsync's rules: /anchored, dir/, *, **); repeatable" }
#define ROW_INCLUDE { .name = "include", .arg = "PATTERN", .help = \
	"keep what matches PATTERN despite a later --exclude (the first rule that matches decides)" }
#define ROW_COMPRESS { .name = "compress", .letter = 'z', \
	.help = "compress the stream between machines (zstd)" }
#define ROW_COMPRESS_LEVEL { .name = "compress-level", .arg = "N", \
	.help = "zstd level for -z, 1 to 19 (default 3)" }
#define ROW_VERBOSE { .name = "verbose", .letter = 'v', .help = \
	"print each entry copied and deleted on stdout, and a summary line on stderr" }
#define ROW_SERVER { .name = "server", .help = \
	"the far side of bfo cp HOST: (which runs it so): answer through the other standard stream" }
#define ROW_PROGRESS { .name = "progress", \
	.help = "show progress on stderr (default: when it is a terminal)" }
#define ROW_NOPROGRESS { .name = "no-progress", .help = "show no progress" }
/* rsync's spelling of the same: progress2 is its whole-run line, which is
 * the line bfo shows (its per-file progress1 has no counterpart here) */
static const char *const cli_infos[] = { "progress2", "progress0", NULL };
#define ROW_INFO { .name = "info", .arg = "FLAG", .values = cli_infos, .help = \
	"as rsync's --info: progress2 is --progress, progress0 is --no-progress" }
#define ROW_HELP { .name = "help", .letter = 'h', .help = "show this help" }

static const struct cli_opt cp_opts[CO_N] = {
	[CO_ARCHIVE] = ROW_ARCHIVE,
	[CO_RECURSIVE] = ROW_RECURSIVE,
	[CO_DURABILITY] = ROW_DURABILITY("bfo cp"),
	[CO_REPLACE] = ROW_REPLACE_ALL,
	[CO_UPDATE] = ROW_UPDATE,
	[CO_CHECKSUM] = ROW_CHECKSUM,
	[CO_WENGINE] = ROW_WENGINE,
	[CO_RSH] = { .name = "rsh", .letter = 'e', .arg = "COMMAND",
		.help = "remote shell for HOST: arguments (default ssh), as rsync's -e" },
	[CO_REMOTE_BFO] = { .name = "remote-bfo", .arg = "PATH",
		.help = "the bfo to run on HOST (default bfo on its PATH), as rsync's --rsync-path" },
	[CO_DELETE] = ROW_DELETE,
	[CO_MAX_DELETE] = ROW_MAX_DELETE,
	[CO_DRY_RUN] = ROW_DRY_RUN,
	[CO_EXCLUDE] = ROW_EXCLUDE,
	[CO_INCLUDE] = ROW_INCLUDE,
	[CO_COMPRESS] = ROW_COMPRESS,
	[CO_COMPRESS_LEVEL] = ROW_COMPRESS_LEVEL,
	[CO_VERBOSE] = ROW_VERBOSE,
	[CO_STATS] = ROW_STATS,
	[CO_PROGRESS] = ROW_PROGRESS,
	[CO_NOPROGRESS] = ROW_NOPROGRESS,
	[CO_INFO] = ROW_INFO,
	[CO_HELP] = ROW_HELP,
};

static const char *const cp_usage[] = {
	"[OPTIONS] SRC... DST",
	"[OPTIONS] SRC... [USER@]HOST:DST",
	"[OPTIONS] [USER@]HOST:SRC... DST",
	NULL,
};

const struct cli_cmd cli_cmd_cp = {
	"cp", "copy files as batches, on this machine or between machines (HOST:PATH)",
	cp_usage,
	"Where the copy goes is rsync's rule, not cp's: a directory SRC is copied to DST/SRC "
	"whether DST exists or not (DST is made when missing, where cp -r would make DST the "
	"copy); SRC/ (or SRC/.) copies the contents of SRC into DST; a file goes to DST, or into "
	"DST when DST is a directory or ends with '/'. So the same command run twice copies to "
	"the same place, and the second run copies nothing: a file whose copy has the same size "
	"and mtime (and mode and owner) is left as it is, any other is replaced atomically "
	"(rsync's quick check).\n"
	"\n"
	"Otherwise it copies like cp -r (with -a like cp -a), reading the sources as batches in "
	"disk order and writing the copy as batches, each journalled in DST/.bfo-journal and made "
	"durable with one syncfs (--durability). After a crash, bfo recover DST leaves every file "
	"of an unfinished batch complete or absent, never torn.\n"
	"\n"
	"A directory is never copied into itself: when its copy's place is SRC or lies inside it, "
	"bfo cp refuses, as cp does, and writes nothing, unless an --exclude rule keeps that place "
	"out of SRC's walk (bfo cp -a --exclude /inside SRC/ SRC/inside). A .bfo-journal "
	"directory at any level of a source is a writer's journal: never copied, never deleted "
	"by --delete. On a full file system (ENOSPC, EDQUOT) the copy stops at the batch being "
	"written, every file whole, with one line naming the file system and exit status 11; the "
	"same command run again with room finishes it.\n"
	"\n"
	"A HOST: argument (a colon before any slash, as rsync) copies between machines: bfo runs "
	"'bfo recv' (or 'bfo send') on HOST through the remote shell and streams the batches to "
	"it, reading, sending and writing at once. HOST needs bfo installed (or --remote-bfo "
	"PATH).",
	cp_opts, CO_N,
};

static const struct cli_opt send_opts[CO_N] = {
	[CO_ARCHIVE] = ROW_ARCHIVE,
	[CO_RECURSIVE] = ROW_RECURSIVE,
	[CO_CHECKSUM] = { .name = "checksum", .letter = 'c', .help =
		"hash the files' contents into the list (with --server: the receiver compares them)" },
	[CO_EXCLUDE] = ROW_EXCLUDE,
	[CO_INCLUDE] = ROW_INCLUDE,
	[CO_COMPRESS] = ROW_COMPRESS,
	[CO_COMPRESS_LEVEL] = ROW_COMPRESS_LEVEL,
	[CO_VERBOSE] = ROW_VERBOSE,
	[CO_SERVER] = ROW_SERVER,
	[CO_STATS] = ROW_STATS,
	[CO_PROGRESS] = ROW_PROGRESS,
	[CO_NOPROGRESS] = ROW_NOPROGRESS,
	[CO_INFO] = ROW_INFO,
	[CO_HELP] = ROW_HELP,
};

static const char *const send_usage[] = { "[OPTIONS] SRC... > STREAM", NULL };

const struct cli_cmd cli_cmd_send = {
	"send", "write files as a stream on stdout, for bfo recv (the sending half of bfo cp HOST:)",
	send_usage,
	"Reads the SRCs as bfo cp does and writes their batches as frames of a stream to stdout, "
	"for bfo recv on any transport that carries bytes (ssh, a pipe, kubectl exec, nc):\n"
	"\n"
	"  bfo send -a SRC | ssh HOST bfo recv -a DST\n"
	"\n"
	"SRC/ sends the contents of SRC, as bfo cp copies them.",
	send_opts, CO_N,
};

static const struct cli_opt recv_opts[CO_N] = {
	[CO_ARCHIVE] = ROW_ARCHIVE,
	[CO_RECURSIVE] = ROW_RECURSIVE,
	[CO_DURABILITY] = ROW_DURABILITY("bfo recv"),
	[CO_REPLACE] = ROW_REPLACE_ALL,
	[CO_UPDATE] = ROW_UPDATE,
	[CO_CHECKSUM] = ROW_CHECKSUM,
	[CO_WENGINE] = ROW_WENGINE,
	[CO_DELETE] = ROW_DELETE,
	[CO_MAX_DELETE] = ROW_MAX_DELETE,
	[CO_DRY_RUN] = ROW_DRY_RUN,
	[CO_EXCLUDE] = ROW_EXCLUDE,
	[CO_INCLUDE] = ROW_INCLUDE,
	[CO_VERBOSE] = ROW_VERBOSE,
	[CO_SERVER] = ROW_SERVER,
	[CO_STATS] = ROW_STATS,
	[CO_PROGRESS] = ROW_PROGRESS,
	[CO_NOPROGRESS] = ROW_NOPROGRESS,
	[CO_INFO] = ROW_INFO,
	[CO_HELP] = ROW_HELP,
};

static const char *const recv_usage[] = { "[OPTIONS] DST < STREAM", NULL };

const struct cli_cmd cli_cmd_recv = {
	"recv", "write a stream of bfo send from stdin under DST (the receiving half of bfo cp HOST:)",
	recv_usage,
	"Reads the stream bfo send writes and writes its files under DST with the batch writer, "
	"by the rules of a local bfo cp to DST (rsync's rule for where the copy goes, the quick "
	"check for what it leaves alone), each batch journalled and made durable as "
	"--durability says. bfo recover DST runs first.",
	recv_opts, CO_N,
};

static const struct cli_opt write_opts[CO_N] = {
	[CO_TAR] = { .name = "tar", .letter = 't',
		.help = "the stream is a tar archive (gnu, pax, ustar, v7; plain or compressed)" },
	[CO_DURABILITY] = ROW_DURABILITY("bfo write"),
	[CO_REPLACE] = ROW_REPLACE,
	[CO_WENGINE] = ROW_WENGINE,
	[CO_BATCH_BYTES] = { .name = "batch-bytes", .arg = "SIZE",
		.help = "a batch holds at most SIZE bytes of data (default 64M)" },
	[CO_BATCH_FILES] = { .name = "batch-files", .arg = "N",
		.help = "a batch holds at most N entries (default 16384)" },
	[CO_STATS] = ROW_STATS,
	[CO_HELP] = ROW_HELP,
};

static const char *const write_usage[] = { "[OPTIONS] DIR < STREAM", NULL };

const struct cli_cmd cli_cmd_write = {
	"write", "write a stream of files from stdin under DIR as batches",
	write_usage,
	"Writes the entries of a stream under DIR in batches of --batch-bytes or --batch-files, "
	"whichever fills first; each batch is journalled before its data, and with --durability "
	"batch (the default) everything is durable when bfo write returns (batches share syncfs "
	"calls, at most 64 per call).\n"
	"\n"
	"The stream is a tar archive (--tar: gnu, pax, ustar or v7, plain or compressed with "
	"gzip, bzip2, xz, lzma, lzip, zstd, lz4 or compress) or the simple format, one record per "
	"entry, PATH relative to DIR and running to the end of the line:\n"
	"\n"
	"  f MODE MTIME SIZE PATH\\n then SIZE bytes     a regular file\n"
	"  d MODE MTIME PATH\\n                          a directory\n"
	"  l MODE MTIME LENGTH PATH\\n then the target   a symbolic link\n"
	"\n"
	"MODE in octal up to 7777, MTIME in seconds since the epoch (.NANOSECONDS allowed, - for "
	"now), SIZE up to 2^63-1, LENGTH 1 to 4095, PATH up to 32767 bytes. A malformed or "
	"truncated stream stops with exit status 2; the entries before it are written, the one it "
	"stopped in is not.",
	write_opts, CO_N,
};

/* ------------------------------------------------------ recover, version */

static const struct cli_opt help_opts[HO_N] = {
	[HO_HELP] = ROW_HELP,
};

static const char *const recover_usage[] = { "DIR", NULL };

const struct cli_cmd cli_cmd_recover = {
	"recover", "finish or remove the files of unfinished batches under DIR",
	recover_usage,
	"Reads the manifests a crash left in DIR/.bfo-journal: each file of an unfinished batch "
	"is finished (from its stem) when its data is all there, else removed, so none is left "
	"torn; then removes the manifests. bfo cp, recv and write do this themselves when they "
	"start on DIR.",
	help_opts, HO_N,
};

static const char *const version_usage[] = { "", NULL };

const struct cli_cmd cli_cmd_version = {
	"version", "print the versions of bfo and of the libbfo it loaded",
	version_usage, NULL, help_opts, HO_N,
};

const struct cli_cmd *const cli_cmds[] = {
	&cli_cmd_read, &cli_cmd_plan, &cli_cmd_cp, &cli_cmd_send, &cli_cmd_recv,
	&cli_cmd_write, &cli_cmd_recover, &cli_cmd_version, NULL,
};
