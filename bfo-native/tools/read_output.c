/* SPDX-License-Identifier: Apache-2.0 */
/* What bfo read and bfo plan print: checksums, --stats and --json. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "cli.h"
#include "read.h"

struct hash_state {       /* streaming hash of a file delivered in pieces */
	uint64_t index;
	XXH3_state_t *st;
	struct hash_state *next;
};

static void print_path_line(const char *hex, const char *path)
{
	/* Escape like coreutils' *sum (and xxhsum): a leading backslash
	 * when the name holds a backslash or newline. */
	if (strpbrk(path, "\\\n")) {
		fputc('\\', stdout);
		fputs(hex, stdout);
		fputs("  ", stdout);
		for (const char *p = path; *p; p++) {
			if (*p == '\\')
				fputs("\\\\", stdout);
			else if (*p == '\n')
				fputs("\\n", stdout);
			else
				fputc(*p, stdout);
		}
		fputc('\n', stdout);
		return;
	}
	printf("%s  %s\n", hex, path);
}

static void print_hash(XXH128_hash_t h, const char *path)
{
	XXH128_canonical_t c;
	char hex[33];

	XXH128_canonicalFromHash(&c, h);
	for (int i = 0; i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", c.digest[i]);
	print_path_line(hex, path);
}

void checksum_file(struct checksums *c, const struct bfo_file *f, bool with_data)
{
	if (f->status < 0 && !(f->flags & BFO_FILE_LAST))
		return;
	/* A whole file is hashed at once; pieces of a large one arrive in
	 * order and are hashed as a stream keyed by their batch index. */
	struct hash_state **hp = &c->open;

	while (*hp && (*hp)->index != f->index)
		hp = &(*hp)->next;
	if (!*hp && (f->flags & BFO_FILE_LAST)) {
		if (f->status == 0 && with_data)
			print_hash(XXH3_128bits(f->data, f->length), f->path);
		return;
	}
	if (!*hp) {
		struct hash_state *h = calloc(1, sizeof(*h));

		if (!h || !(h->st = XXH3_createState())) {
			perror("bfo");
			exit(CLI_EXIT_USAGE);
		}
		h->index = f->index;
		XXH3_128bits_reset(h->st);
		*hp = h;
	}
	struct hash_state *h = *hp;

	if (f->status == 0)
		XXH3_128bits_update(h->st, f->data, f->length);
	if (f->flags & BFO_FILE_LAST) {
		if (f->status == 0)
			print_hash(XXH3_128bits_digest(h->st), f->path);
		XXH3_freeState(h->st);
		*hp = h->next;
		free(h);
	}
}

void checksums_end(struct checksums *c)
{
	while (c->open) {
		struct hash_state *h = c->open;

		c->open = h->next;
		XXH3_freeState(h->st);
		free(h);
	}
}

static double secs(uint64_t ns)
{
	return (double)ns / 1e9;
}

void print_stats(struct bfo_ctx *ctx, const struct bfo_stats *st, bool plan, uint64_t skipped)
{
	char desc[1024];

	fprintf(stderr, "bfo %s: %" PRIu64 " files (%" PRIu64 " ok, %" PRIu64 " failed), %.1f MB in %.3f s (%.0f MB/s)\n",
		plan ? "plan" : "read", st->files, st->files_ok, st->files_failed,
		(double)st->bytes / 1e6, secs(st->ns_total),
		st->ns_total ? (double)st->bytes / 1e6 / secs(st->ns_total) : 0.0);
	cli_print_engines(stderr, "  ", st);
	fprintf(stderr, "  I/Os %" PRIu64 ", merged regions %" PRIu64 " (%" PRIu64 " read straight into"
		" their file's buffer), extents %" PRIu64
		", device bytes %.1f MB (read through gaps %.1f MB), windows %" PRIu64 "\n",
		st->ios, st->regions, st->direct_regions, st->extents, (double)st->device_bytes / 1e6,
		(double)st->gap_bytes / 1e6, st->windows);
	if (st->files_rawmeta)
		fprintf(stderr, "  metadata of %" PRIu64 " files from the inode tables on the device"
			" (no statx, open or FIEMAP)\n", st->files_rawmeta);
	fprintf(stderr, "  phases: metadata %.3f s, data %.3f s, total %.3f s (phases overlap)\n",
		secs(st->ns_meta), secs(st->ns_data), secs(st->ns_total));
	if (plan && st->files_ok)
		fprintf(stderr, "  fragmentation: %.3f extents per file, average region %.1f KiB\n",
			(double)st->extents / (double)st->files_ok,
			st->regions ? (double)st->device_bytes / 1024.0 / (double)st->regions : 0.0);
	if (skipped)
		fprintf(stderr, "  skipped in directory walks: %" PRIu64
			" (special files, links to directories, dangling links)\n", skipped);
	bfo_ctx_describe(ctx, desc, sizeof(desc));
	fprintf(stderr, "  %s\n", desc);
}

/* Each engine that st's mask (or, with counts, its per-engine file counts)
 * names, as JSON array or object members. */
static void json_engines(const struct bfo_stats *st, bool counts)
{
	bool first = true;

	for (int e = BFO_ENGINE_RAW; e <= BFO_ENGINE_NONE; e++) {
		if (counts ? !st->files_by_engine[e] : !(st->engines & (1u << e)))
			continue;
		printf("%s\"%s\"", first ? "" : ",", bfo_engine_name(e));
		if (counts)
			printf(":%" PRIu64, st->files_by_engine[e]);
		first = false;
	}
}

void print_json(const struct bfo_stats *st, uint64_t skipped)
{
	printf("{\"files\":%" PRIu64 ",\"files_ok\":%" PRIu64 ",\"files_failed\":%" PRIu64
	       ",\"bytes\":%" PRIu64 ",\"device_bytes\":%" PRIu64 ",\"ios\":%" PRIu64
	       ",\"regions\":%" PRIu64 ",\"direct_regions\":%" PRIu64 ",\"extents\":%" PRIu64
	       ",\"gap_bytes\":%" PRIu64 ",\"files_rawmeta\":%" PRIu64
	       ",\"fallback_files\":%" PRIu64 ",\"windows\":%" PRIu64 ",\"skipped\":%" PRIu64
	       ",\"engine\":\"%s\",\"engines\":[",
	       st->files, st->files_ok, st->files_failed, st->bytes, st->device_bytes, st->ios,
	       st->regions, st->direct_regions, st->extents, st->gap_bytes, st->files_rawmeta, st->fallback_files, st->windows,
	       skipped, bfo_engine_name((int)st->engine));
	json_engines(st, false);
	printf("],\"files_by_engine\":{");
	json_engines(st, true);
	/* Each file counted once, in the path that delivered it. */
	uint64_t raw = st->files_by_engine[BFO_ENGINE_RAW], por = st->files_by_engine[BFO_ENGINE_PORTABLE];

	printf("},\"files_raw_itable\":%" PRIu64 ",\"files_pieces\":%" PRIu64
	       ",\"files_by_path\":{\"raw_itable\":%" PRIu64 ",\"raw_fiemap\":%" PRIu64 ",\"uring\":%" PRIu64
	       ",\"portable\":%" PRIu64 ",\"pieces\":%" PRIu64 ",\"none\":%" PRIu64 "}",
	       st->files_raw_itable, st->files_pieces, st->files_raw_itable, raw - st->files_raw_itable,
	       st->files_by_engine[BFO_ENGINE_URING], por - st->files_pieces, st->files_pieces,
	       st->files_by_engine[BFO_ENGINE_NONE]);
	printf(",\"seconds\":{\"meta\":%.6f,\"data\":%.6f,\"total\":%.6f}}\n",
	       secs(st->ns_meta), secs(st->ns_data), secs(st->ns_total));
}
