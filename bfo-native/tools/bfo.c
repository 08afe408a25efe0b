/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bfo - the command line of libbfo: the subcommands and their usage.
 *
 *   bfo read [OPTIONS] PATH...   read files (directories recursively; - for
 *                                paths on stdin) as batches (read_cmd.c)
 *   bfo plan [OPTIONS] PATH...   print the ORDER_LIST summary, read nothing
 *   bfo cp, bfo write, bfo recover   (copy.c, write_cmd.c)
 *   bfo send, bfo recv               (sendrecv.c; bfo cp HOST: runs them)
 *   bfo version
 *
 * Exit status: 0 every file read, 1 some files failed (each named on
 * stderr), 2 usage or setup error.
 */
#include <stdio.h>
#include <string.h>

#include "bfo.h"
#include "cli.h"
#include "read.h"

void cli_usage(FILE *f)
{
	fprintf(f,
		"usage: bfo read [OPTIONS] PATH...   read files (directories recursively, - for stdin)\n"
		"       bfo plan [OPTIONS] PATH...   print the ORDER_LIST summary without reading data\n"
		"       bfo cp [-a] [--durability none|batch|each] SRC... DST   copy as batches\n"
		"       bfo cp [-a] SRC... [USER@]HOST:DST   (or HOST:SRC... DST) copy over ssh\n"
		"       bfo send [-a] SRC... | bfo recv [-a] DST   the same over any pipe\n"
		"       bfo write [--tar] DIR < STREAM   write a stream of files as batches\n"
		"       bfo recover DIR                  finish or remove unfinished batches\n"
		"       bfo version\n"
		"\n"
		"options:\n"
		"  --engine auto|raw|uring|portable   data engine (default auto)\n"
		"  --order auto|inode|physical        order of per-file reads (default auto)\n"
		"  --checksum        print '<xxh128>  <path>' per file, like xxh128sum\n"
		"  --stats           print what the batch did on stderr\n"
		"  --json            print the statistics as one JSON line, last on stdout\n"
		"  -0, --null        paths on stdin (-) are NUL-separated\n"
		"  --no-follow       refuse symbolic links instead of reading their target\n"
		"  --stop-on-error   stop at the first file that fails\n"
		"  --metadata-only   stat the files, read no data\n"
		"  --progress | --no-progress   progress on stderr (default: when a terminal)\n"
		"  --sort-buffer N   hand out up to N walked files at a time in inode order,\n"
		"                    close to disk order on ext4 and XFS (default 262144; 0: unsorted)\n"
		"  knobs (SIZE takes K, M, G): --window-files N --window-bytes SIZE --arena SIZE\n"
		"        --merge-gap SIZE (0: merge adjacent extents only) --max-io SIZE\n"
		"        --large-extent SIZE --large-file SIZE\n"
		"        --queue-depth N --threads N\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		cli_usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "read"))
		return cmd_read(argc - 1, argv + 1, false);
	if (!strcmp(argv[1], "plan"))
		return cmd_read(argc - 1, argv + 1, true);
	if (!strcmp(argv[1], "cp"))
		return cmd_cp(argc - 1, argv + 1);
	if (!strcmp(argv[1], "send"))
		return cmd_send(argc - 1, argv + 1);
	if (!strcmp(argv[1], "recv"))
		return cmd_recv(argc - 1, argv + 1);
	if (!strcmp(argv[1], "write"))
		return cmd_write(argc - 1, argv + 1);
	if (!strcmp(argv[1], "recover"))
		return cmd_recover(argc - 1, argv + 1);
	if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version")) {
		printf("bfo %d.%d.%d (library %d)\n", BFO_VERSION_MAJOR, BFO_VERSION_MINOR,
		       BFO_VERSION_PATCH, bfo_version());
		return 0;
	}
	if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		cli_usage(stdout);
		return 0;
	}
	fprintf(stderr, "bfo: unknown command '%s'\n", argv[1]);
	cli_usage(stderr);
	return CLI_EXIT_USAGE;
}
