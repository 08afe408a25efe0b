/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The receiving end of the stream, its files' concerns: recv_read.c reads
 * and parses frames on a thread of its own into two slots; recv.c maps
 * their records below the destination and writes them; recv_sync.c
 * answers the file list (version 2) and ends a sync (--delete, RESULT).
 */
#ifndef BFO_RECV_H
#define BFO_RECV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bfo.h"
#include "send.h"
#include "wio.h"
#include "wire.h"

struct bfo_copier;

#define NSLOTS 2

/* A file whose first piece came and whose last has not: the writer holds
 * descriptors for it, so a stream may not have more than WIRE_PIECED_MAX
 * of them at once (a sender's read engine has a handful). */
struct pieced {
	char *path;
	bool dropped;               /* its pieces go nowhere (skipped, or a bad hash) */
};

struct slot {
	uint8_t *buf;               /* head, records, hash, data */
	size_t cap;
	struct wire_frame f;
	struct wire_entry *ents;    /* BATCH: the parsed records */
	size_t capents;
	int status;                 /* 0, or the stream's error (why says it) */
	const char *why;
	bool eof;                   /* the stream ended cleanly before this frame */
};

struct rx {
	struct bfo_copier *c;
	int fd;
	struct wio in;              /* the stream, decompressed when it says so */
	uint32_t version;           /* the stream's (1 or 2) */
	uint32_t flags;             /* the stream's START flags */
	uint32_t nsources;
	pthread_t thread;
	bool started;
	bool stop;                  /* the writing side is done: the reader ends */
	/* The stream broke (ended before its end frame, or bad): the batch
	 * being written stops and the frames still buffered are dropped, so
	 * a receiver whose sender died (or was interrupted) ends at once. */
	atomic_bool broken;
	int stopfd[2];              /* its wakeup while it waits for the stream */
	pthread_mutex_t m;
	pthread_cond_t cv;
	uint64_t produced, consumed;
	struct slot slot[NSLOTS];

	/* the writing side */
	struct wire_source *src;    /* copies: the reader's frame is reused */
	char **prefix;              /* each source's destination below root */
	bool have_root_meta;
	struct bfo_wentry root_meta;
	void *root_xattrs;
	struct pieced *pieced;      /* files in pieces begun and not ended */
	size_t npieced;
	bool too_many;              /* more than WIRE_PIECED_MAX of them */
	char *names;                /* the batch's destination strings */
	size_t capnames;
	uint64_t records;
	struct wire_end end;
	bool ended;
	struct bfo_write_stats wst;

	/* a sync (recv_sync.c) */
	int reply_fd;               /* the back channel, or -1 */
	struct wire_out back;       /* its frames */
	bool back_on;               /* its START went */
	bool lists;                 /* the sender sends the list (HELLO said so) */
	bool compare;               /* BATCH records are compared (no list, an index) */
	uint8_t *items;             /* ITEMS records not sent yet */
	size_t nitems, litems, capitems;
	uint8_t *wants;             /* a WANT frame's bytes */
	size_t capwants;
	struct wire_ldec *ldec;     /* a LIST frame's decoder */
	uint64_t *keys;             /* its records' index keys (dindex_prefetch) */
	size_t capkeys;
};


/* ---- recv_read.c */

/* The stream's START (version, flags; a compressed stream's decoder set
 * up): 0, or -errno with the reason reported. */
int rx_read_start(struct rx *x);
/* The reader thread on the stream, frames into the slots. */
int rx_reader_start(struct rx *x);
/* The next frame the reader has ready; NULL when the copier was cancelled. */
struct slot *rx_next_frame(struct rx *x);
/* The frame from rx_next_frame is done with: its slot is the reader's again. */
void rx_done_frame(struct rx *x);
/* Stop the reader (waiting for the stream or for a slot) and join it. */
void rx_reader_stop(struct rx *x);
/* The stream broke: counted as one failure, its reason as the path. */
void rx_stream_error(struct rx *x, const char *why, int status);

/* ---- recv_sync.c */

/* After the sources, the destination known: whether to compare (an index
 * of what it has, built on its own thread), and the answer to a sender
 * waiting for one (HELLO).  0 or -errno (reported). */
int rx_sync_start(struct rx *x, bool root_existed);
/* A LIST frame: its records decided, the wants sent back. */
int rx_on_list(struct rx *x, struct slot *s);
/* Without a list (a one-way stream): the BATCH record w at dest decided
 * against the index; its WANT_* (WANT_WRITE when nothing is compared). */
uint8_t rx_decide(struct rx *x, const struct wire_entry *w, const char *dest);
/* With a list: what the entry at dest replaces, as WANT_REPLACE (something
 * other than a directory is there) and WANT_TREE (of the other kind). */
uint8_t rx_replace_want(struct rx *x, const char *dest);
/* The end of a sync, the writer closed: --delete, the directories' times. */
void rx_sync_end(struct rx *x);
/* To a sender waiting for it: what was deleted (ITEMS, when asked) and
 * RESULT. */
void rx_sync_result(struct rx *x);
/* Its memory. */
void rx_sync_free(struct rx *x);

#endif
