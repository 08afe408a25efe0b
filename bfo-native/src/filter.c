/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rsync's basic filter rules (filter.h).  A pattern is compiled into
 * tokens and matched by simulating the automaton over the name, one set of
 * pattern positions per character: time bounded by pattern times name
 * length whatever the stars, no backtracking to blow up.
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "filter.h"

enum tok_kind { T_CHAR, T_ANY, T_CLASS, T_STAR, T_DSTAR };

struct tok {
	uint8_t kind;
	char c;                     /* T_CHAR */
	const char *cls;            /* T_CLASS: "[...]" in the rule's text */
	uint16_t cls_len;
};

struct rule {
	char *text;                 /* as given: "- PATTERN" */
	bool include, dir_only, anchored, full;
	bool twin;                  /* the second rule made of one text (dir, three stars) */
	struct tok *tok;
	size_t ntok;
};

struct filter {
	struct rule *r;
	size_t n;
};

/* The end of the bracket expression starting at p[0] == '[', or NULL. */
static const char *class_end(const char *p, const char *end)
{
	const char *q = p + 1;

	if (q < end && (*q == '!' || *q == '^'))
		q++;
	if (q < end && *q == ']')
		q++;                    /* a ']' first is a member */
	for (; q < end; q++) {
		if (*q == '[' && q + 1 < end && q[1] == ':') {
			const char *c = memchr(q + 2, ']', (size_t)(end - q - 2));

			if (!c || c[-1] != ':')
				return NULL;
			q = c;
		} else if (*q == ']') {
			return q;
		}
	}
	return NULL;
}

/* Pattern p[0..len) as tokens (*out, malloc'd). */
static int compile(const char *p, size_t len, struct tok **out, size_t *n)
{
	struct tok *t = calloc(len ? len : 1, sizeof(*t));
	const char *end = p + len;
	size_t k = 0;

	if (!t)
		return -ENOMEM;
	while (p < end) {
		const char *ce;

		if (*p == '*') {
			bool two = p + 1 < end && p[1] == '*';

			t[k++] = (struct tok){ .kind = two ? T_DSTAR : T_STAR };
			while (p < end && *p == '*')
				p++;
			continue;
		}
		if (*p == '?') {
			t[k++] = (struct tok){ .kind = T_ANY };
		} else if (*p == '[' && (ce = class_end(p, end))) {
			t[k++] = (struct tok){ .kind = T_CLASS, .cls = p,
					       .cls_len = (uint16_t)(ce - p + 1) };
			p = ce;
		} else {
			if (*p == '\\' && p + 1 < end)
				p++;
			t[k++] = (struct tok){ .kind = T_CHAR, .c = *p };
		}
		p++;
	}
	*out = t;
	*n = k;
	return 0;
}

static bool class_match(const struct tok *t, char c)
{
	char cls[FILTER_PATTERN_MAX + 1], s[2] = { c, '\0' };

	if (c == '/' || !c)
		return false;
	memcpy(cls, t->cls, t->cls_len);
	cls[t->cls_len] = '\0';
	return fnmatch(cls, s, FNM_PATHNAME) == 0;
}

/* Positions reachable from those in set without consuming a character:
 * a star may match nothing. */
static void closure(const struct tok *t, size_t n, uint8_t *set)
{
	for (size_t i = 0; i < n; i++)
		if (set[i] && (t[i].kind == T_STAR || t[i].kind == T_DSTAR))
			set[i + 1] = 1;
}

static bool run(const struct tok *t, size_t n, const char *s, size_t len)
{
	uint8_t stack[256], *cur, *next;
	bool ok;

	if (2 * (n + 1) <= sizeof(stack)) {
		cur = stack;
	} else if (!(cur = malloc(2 * (n + 1)))) {
		return false;
	}
	next = cur + n + 1;
	memset(cur, 0, n + 1);
	cur[0] = 1;
	closure(t, n, cur);
	for (size_t j = 0; j < len; j++) {
		char c = s[j];
		bool any = false;

		memset(next, 0, n + 1);
		for (size_t i = 0; i < n; i++) {
			if (!cur[i])
				continue;
			switch (t[i].kind) {
			case T_CHAR:
				next[i + 1] |= t[i].c == c;
				break;
			case T_ANY:
				next[i + 1] |= c != '/';
				break;
			case T_CLASS:
				next[i + 1] |= class_match(&t[i], c);
				break;
			case T_STAR:
				next[i] |= c != '/';
				break;
			case T_DSTAR:
				next[i] = 1;
				break;
			}
		}
		closure(t, n, next);
		for (size_t i = 0; i <= n && !any; i++)
			any = next[i];
		uint8_t *x = cur;

		cur = next;
		next = x;
		if (!any)
			break;
	}
	ok = cur[n];
	if (cur != stack && next != stack)
		free(cur < next ? cur : next);
	return ok;
}

bool filter_glob(const char *pattern, size_t len, const char *text, size_t tlen)
{
	struct tok *t;
	size_t n;
	bool ok;

	if (len > FILTER_PATTERN_MAX || compile(pattern, len, &t, &n))
		return false;
	ok = run(t, n, text, tlen);
	free(t);
	return ok;
}

static bool rule_match(const struct rule *r, const char *name, bool dir)
{
	size_t len = strlen(name);
	const char *last;

	if (r->dir_only && !dir)
		return false;
	if (r->anchored)
		return run(r->tok, r->ntok, name, len);
	if (!r->full) {
		last = strrchr(name, '/');
		last = last ? last + 1 : name;
		return run(r->tok, r->ntok, last, len - (size_t)(last - name));
	}
	/* the end of the name, from a component boundary */
	for (const char *p = name; p; p = strchr(p, '/')) {
		p += *p == '/';
		if (run(r->tok, r->ntok, p, len - (size_t)(p - name)))
			return true;
	}
	return false;
}

/* One compiled rule for pattern p[0..len). */
static int add_one(struct filter *f, const char *text, bool include, const char *p, size_t len)
{
	struct rule *r = &f->r[f->n];

	*r = (struct rule){ .include = include };
	if (len && p[len - 1] == '/') {
		r->dir_only = true;
		len--;
	}
	if (len && p[0] == '/') {
		r->anchored = true;
		p++;
		len--;
	}
	if (!len)
		return -EINVAL;
	r->full = memchr(p, '/', len) || strstr(p, "**");
	if (!(r->text = strdup(text)) || compile(p, len, &r->tok, &r->ntok)) {
		free(r->text);
		return -ENOMEM;
	}
	f->n++;
	return 0;
}

int filter_add(struct filter **fp, const char *rule)
{
	struct filter *f = *fp;
	const char *p;
	size_t len;
	bool include;
	int ret;

	if (!rule || (rule[0] != '-' && rule[0] != '+') || rule[1] != ' ')
		return -EINVAL;
	include = rule[0] == '+';
	p = rule + 2;
	len = strlen(p);
	if (!len || len > FILTER_PATTERN_MAX)
		return -EINVAL;
	if (!f && !(f = *fp = calloc(1, sizeof(*f))))
		return -ENOMEM;
	if (f->n + 2 > FILTER_RULES_MAX)
		return -EINVAL;
	struct rule *nr = realloc(f->r, (f->n + 2) * sizeof(*nr));

	if (!nr)
		return -ENOMEM;
	f->r = nr;
	/* a slash and three stars at the end: dir itself and all below it */
	if (len > 4 && !strcmp(p + len - 4, "/***")) {
		ret = add_one(f, rule, include, p, len - 4);
		if (!ret && !(ret = add_one(f, rule, include, p, len - 1)))   /* dir, two stars */
			f->r[f->n - 1].twin = true;
		return ret;
	}
	return add_one(f, rule, include, p, len);
}

bool filter_excluded(const struct filter *f, const char *name, bool dir)
{
	for (size_t i = 0; f && i < f->n; i++)
		if (rule_match(&f->r[i], name, dir))
			return !f->r[i].include;
	return false;
}

size_t filter_count(const struct filter *f)
{
	size_t n = 0;

	/* (dir, slash, three stars) made two rules of one text: counted once */
	for (size_t i = 0; f && i < f->n; i++)
		n += !f->r[i].twin;
	return n;
}

const char *filter_rule(const struct filter *f, size_t k)
{
	for (size_t i = 0, n = 0; f && i < f->n; i++) {
		if (f->r[i].twin)
			continue;
		if (n++ == k)
			return f->r[i].text;
	}
	return NULL;
}

void filter_free(struct filter *f)
{
	for (size_t i = 0; f && i < f->n; i++) {
		free(f->r[i].text);
		free(f->r[i].tok);
	}
	if (f)
		free(f->r);
	free(f);
}
