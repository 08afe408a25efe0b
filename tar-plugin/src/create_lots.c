/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Create: lots.  Bounded lots of the files tar will open next, cut from
 * the groups newest first and read by one libbfo batch that stays open;
 * what it delivers waits in libbfo's arena for tar's open, within a
 * memory budget counted per live lot.
 */
#include "create.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

/* bent's slot for batch index i, or NULL (not in a live lot). */
struct ent **bent_at(uint64_t i)
{
	return i >= cr.bbase && i - cr.bbase < cr.bn ? &cr.bent[i - cr.bbase] : NULL;
}

/* Live lots with files not yet delivered. */
static unsigned lots_reading(void)
{
	unsigned n = 0;

	for (unsigned l = 0; l < cr.nlots; l++)
		n += cr.lots[l].left > 0;
	return n;
}

static uint64_t lots_bytes(void)
{
	uint64_t b = 0;

	for (unsigned l = 0; l < cr.nlots; l++)
		b += cr.lots[l].bytes;
	return b;
}

static struct lot *lot_of(uint64_t i)
{
	for (unsigned l = 0; l < cr.nlots; l++)
		if (i < cr.lots[l].end)
			return i >= (l ? cr.lots[l - 1].end : cr.bbase) ? &cr.lots[l] : NULL;
	return NULL;
}

/* Dead lots leave from the oldest end, with their part of bent. */
static void lots_retire(void)
{
	while (cr.nlots && !cr.lots[0].left && !cr.lots[0].out) {
		unsigned k = (unsigned)(cr.lots[0].end - cr.bbase);

		memmove(cr.bent, cr.bent + k, (cr.bn - k) * sizeof(*cr.bent));
		cr.bn -= k;
		cr.bbase = cr.lots[0].end;
		memmove(cr.lots, cr.lots + 1, --cr.nlots * sizeof(*cr.lots));
	}
}

/* Give a delivered entry back to libbfo (of batch ep). */
static void release_file(struct bfo_file *f, uint32_t ep)
{
	struct lot *l;

	if (cr.ctx)
		bfo_read_release(cr.ctx, f, 1);
	if (ep == cr.epoch && (f->flags & BFO_FILE_LAST) && (l = lot_of(f->index)) && l->out) {
		l->out--;
		lots_retire();
	}
}

/* Ready data tar will not read from us after all, or has read. */
void drop_held(struct bfo_file *f, uint32_t ep)
{
	cr.held_bytes -= f->length;
	release_file(f, ep);
}

/*
 * Descriptors a read context holds of tar's limit: its eventfd, ring and
 * mountinfo, a pool thread's file and the directory read-ahead's.  The
 * plugin takes at most a quarter of what tar has free (as the extract
 * queue does); with less, tar goes on plain, as it would without us.
 */
#define CTX_FDS 5

static int ctx_start(void)
{
	struct bfo_opts o;

	if (cr.ctx)
		return 0;
	if (fds_left() < 4 * CTX_FDS)
		return -1;
	bfo_opts_init(&o);
	o.arena_bytes = settings.arena_bytes;
	o.large_file = SERVE_MAX;
	o.threads = 8;
	if (settings.engine && strcmp(settings.engine, "raw") == 0)
		o.engine = BFO_ENGINE_RAW;
	else if (settings.engine && strcmp(settings.engine, "uring") == 0)
		o.engine = BFO_ENGINE_URING;
	else if (settings.engine && strcmp(settings.engine, "portable") == 0)
		o.engine = BFO_ENGINE_PORTABLE;
	if (bfo_ctx_create(&cr.ctx, &o) < 0) {
		cr.ctx = NULL;
		return -1;
	}
	return 0;
}

/* libbfo's batch ended (cancelled): whatever it did not deliver goes to libc. */
void batch_over(void)
{
	struct bfo_stats s;

	for (unsigned i = 0; i < cr.bn; i++)
		if (cr.bent[i])
			ent_landed(cr.bent[i], E_DONE);
	if (bfo_read_stats(cr.ctx, &s) == 0) {
		counters.ios += s.ios;
		counters.direct_ios += s.direct_regions;
		counters.device_bytes += s.device_bytes;
	}
	cr.bn = 0;
	cr.bbase = 0;              /* a new batch counts from 0 again */
	cr.nlots = 0;
	cr.batch_open = 0;
	cr.epoch++;                /* its entries still held count for no lot */
}

void take(struct bfo_file *f)
{
	struct ent **slot = bent_at(f->index), *e = slot ? *slot : NULL;
	struct lot *l = (f->flags & BFO_FILE_LAST) ? lot_of(f->index) : NULL;

	if (l && l->left)
		l->left--;
	if (!e || f->status < 0 || f->offset != 0 || f->length != f->size ||
	    !(f->flags & BFO_FILE_LAST) || !f->data || e->g->gone) {
		/* failed, changed, or tar left that directory already */
		if (e)
			ent_landed(e, E_DONE);
		release_file(f, cr.epoch);
		return;
	}
	e->f = *f;
	cr.held_bytes += f->length;
	ent_landed(e, E_READY);
}

/*
 * Collect results.  until == NULL: whatever is there now; else wait until
 * that entry has landed.  to_idle: wait until every lot is out.  A lot
 * that retires makes room for the next one.
 */
void pump(struct ent *until, int to_idle)
{
	struct bfo_file fs[WAIT_MAX];

	while (lots_reading()) {
		int wait_ms = (to_idle || (until && until->state == E_INFLIGHT)) ? -1 : 0;
		int k = bfo_read_wait(cr.ctx, fs, WAIT_MAX, wait_ms);

		if (k > 0) {
			unsigned before = lots_reading();

			for (int i = 0; i < k; i++)
				take(&fs[i]);
			if (lots_reading() < before && !to_idle)
				topup();
			continue;
		}
		if (k == 0) {           /* cancelled below, or libbfo stopped it */
			batch_over();
			if (!to_idle)
				topup();
			continue;
		}
		/* ENOBUFS on a poll is no dead end: libbfo waits for arena
		 * space that files tar opens before the ones still in flight
		 * hold (a later lot can land first and take the space an
		 * earlier one needs), and tar's reads give it back. */
		if (k == -ETIME || (k == -ENOBUFS && wait_ms == 0))
			return;
		if (k == -ENOBUFS || k == -EAGAIN) {
			/* ENOBUFS while tar waits for an entry: the arena is
			 * all held by files tar opens after it; EAGAIN: lots
			 * still counted but nothing in flight (cannot happen).
			 * Give up what is in flight: libc reads it. */
			bfo_read_cancel(cr.ctx);
			continue;
		}
		plugin_off();           /* anything else: libc from now on */
		return;
	}
}

static int bent_add(struct ent *e)
{
	if (cr.bn == cr.bcap) {
		unsigned nc = cr.bcap ? 2 * cr.bcap : 1024;
		struct ent **p = realloc(cr.bent, nc * sizeof(*p));

		if (!p)
			return -1;
		cr.bent = p;
		cr.bcap = nc;
	}
	e->bindex = cr.bbase + cr.bn;
	e->epoch = cr.epoch;
	cr.bent[cr.bn++] = e;
	return 0;
}

/* A lot being put together. */
struct cut {
	char *buf;
	size_t len, cap;
	uint64_t bytes;
	unsigned files;
	int full;
};

/*
 * Add g's files not yet submitted (from tar's position on) to the batch.
 * Each candidate is stat'ed here (so its inode is in cache when tar stats
 * it): only non-empty regular files up to SERVE_MAX that are not sparse
 * are worth reading ahead.
 */
static void cut_from(struct cut *c, struct group *g)
{
	size_t pl = strlen(g->path);

	if (g->next_submit < g->cursor)
		g->next_submit = g->cursor;
	for (; g->next_submit < g->n; g->next_submit++) {
		struct ent *e = &g->e[g->next_submit];
		struct stat sb;
		size_t nl;
		int r;

		if (e->state != E_NEW)
			continue;
		if (c->files >= BATCH_FILES || c->bytes >= cr.batch_bytes) {
			c->full = 1;
			return;
		}
		nl = strlen(e->name);
		if (c->len + pl + nl + 2 > c->cap) {
			size_t nc = c->cap ? 2 * c->cap : 65536;
			char *p;

			while (nc < c->len + pl + nl + 2)
				nc *= 2;
			p = realloc(c->buf, nc);
			if (!p) {
				c->full = 1;
				return;
			}
			c->buf = p;
			c->cap = nc;
		}
		memcpy(c->buf + c->len, g->path, pl);
		c->buf[c->len + pl] = '/';
		memcpy(c->buf + c->len + pl + 1, e->name, nl + 1);
		e->state = E_DONE;
		r = g->dir ? fstatat(g->dirfd, e->name, &sb, AT_SYMLINK_NOFOLLOW)
			   : fstatat(AT_FDCWD, c->buf + c->len, &sb, AT_SYMLINK_NOFOLLOW);
		if (r < 0 || !S_ISREG(sb.st_mode) || sb.st_size <= 0 ||
		    (uint64_t)sb.st_size > SERVE_MAX ||
		    (uint64_t)sb.st_blocks * 512 < (uint64_t)sb.st_size) {
			counters.skipped++;
			continue;
		}
		if (bent_add(e) < 0) {
			c->full = 1;
			return;
		}
		c->len += pl + nl + 2;
		e->state = E_INFLIGHT;
		g->inflight++;
		c->bytes += (uint64_t)sb.st_size;
		c->files++;
	}
}

/*
 * A lot: the files of the newest listings first, each followed by the
 * subdirectories listed ahead (more are listed as long as the lot has
 * room), then older listings.
 */
static void cut_lot(struct cut *c)
{
	for (struct group *g = cr.top; g && !c->full; g = g->older) {
		if (g->gone || !g->listed)
			continue;
		cut_from(c, g);
		for (size_t i = 0; i < g->nkids && !c->full; i++)
			if (g->kids[i])
				cut_from(c, g->kids[i]);
		while (!c->full && g->next_sub < g->nd) {
			struct group *k = list_ahead(g);

			if (k)
				cut_from(c, k);
			else if (cr.kids_alive >= MAX_KIDS)
				break;
		}
	}
}

/* The lot (batch indices first.. of bent) into libbfo's open batch, flushed
 * at once; -1: no more lots (the plugin is off, or the batch cancelled). */
static int submit_lot(struct cut *c, unsigned first)
{
	size_t done = 0;

	if (ctx_start() < 0) {
		free(c->buf);
		for (; cr.bn > first; cr.bn--)
			ent_landed(cr.bent[cr.bn - 1], E_DONE);
		plugin_off();
		return -1;
	}
	while (done < c->len) {
		long k = bfo_read_submit_packed(cr.ctx, c->buf + done, c->len - done);

		if (k <= 0)
			break;
		done += (size_t)k;
	}
	free(c->buf);
	cr.batch_open = 1;
	cr.lots[cr.nlots].end = cr.bbase + cr.bn;
	cr.lots[cr.nlots].left = cr.lots[cr.nlots].out = cr.bn - first;
	cr.lots[cr.nlots].bytes = c->bytes;
	cr.nlots++;
	counters.batches++;
	if (done < c->len || bfo_read_flush(cr.ctx) < 0) {
		/* Cannot happen with MAX_LOTS lots of BATCH_FILES below the
		 * input queue; if it does, what is in flight goes to libc. */
		bfo_read_cancel(cr.ctx);
		return -1;
	}
	return 0;
}

/* Start lots until MAX_LOTS are in flight or memory is spoken for. */
void topup(void)
{
	/* Only with room for a whole lot (so a lot, bounded by batch_bytes,
	 * always fits the budget): a sliver of budget freed by each file tar
	 * reads would otherwise start lots of a few files each. */
	while (lots_reading() < MAX_LOTS && cr.nlots < MAX_LIVE && plugin.active && cr.tar_reads &&
	       lots_bytes() + cr.batch_bytes <= cr.held_budget) {
		struct cut c = { 0 };
		unsigned first = cr.bn;

		cut_lot(&c);
		if (cr.bn == first) {
			free(c.buf);
			return;
		}
		if (submit_lot(&c, first) < 0)
			return;
	}
}
