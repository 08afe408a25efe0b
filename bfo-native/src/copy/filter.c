/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rsync's basic filter rules (filter.h), with the meaning rsync 3's
 * exclude.c (rule_matches) and lib/wildmatch.c give them.  A pattern is
 * compiled into tokens and matched by simulating the automaton over the
 * name, one set of pattern positions per character: time bounded by
 * pattern times name length whatever the stars, no backtracking to blow
 * up (wildmatch itself backtracks).
 */
#include <ctype.h>
#include <stdio.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "filter.h"
#include "write.h"

enum tok_kind { T_CHAR, T_ANY, T_CLASS, T_STAR, T_DSTAR };

struct tok {
	uint8_t kind;
	unsigned char c;            /* T_CHAR */
	uint16_t cls;               /* T_CLASS: its set, in the rule's classes */
};

/* A rule as rsync's add_rule leaves it (exclude.c): its pattern with the
 * trailing '/' of a directory rule taken off, and what rule_matches asks
 * of it. */
struct rule {
	char *text;                 /* as given: "- PATTERN" */
	bool include, dir_only, anchored;
	bool wild;                  /* '*', '?' or '[' in it: wildmatch, else compared */
	bool wild2, wild2_prefix;   /* "**" in it; at its start */
	bool wild3_suffix;          /* it ends with "***": a directory's name gets a '/' */
	bool never;                 /* a bracket rsync's wildmatch gives up on */
	unsigned slash_cnt;         /* slashes in it, a leading one too */
	char *lit;                  /* the pattern (without the anchoring '/') */
	size_t litlen;
	struct tok *tok;            /* wild: the pattern as tokens */
	size_t ntok;
	uint8_t (*cls)[32];         /* the bracket expressions' sets, a bit per byte */
	size_t ncls;
};

struct filter {
	struct rule *r;
	size_t n;
};

/* ------------------------------------------------------------ brackets */

static void bit_set(uint8_t *set, unsigned char c)
{
	set[c >> 3] |= (uint8_t)(1u << (c & 7));
}

/* The bytes a "[:NAME:]" class holds (the C locale's ctype, as rsync's
 * ISASCII-guarded tests); false for a name rsync does not know. */
static bool class_named(const char *s, size_t len, uint8_t *set)
{
	static const struct {
		const char *name;
		int (*is)(int);
	} k[] = { { "alnum", isalnum }, { "alpha", isalpha }, { "blank", isblank },
		  { "cntrl", iscntrl }, { "digit", isdigit }, { "graph", isgraph },
		  { "lower", islower }, { "print", isprint }, { "punct", ispunct },
		  { "space", isspace }, { "upper", isupper }, { "xdigit", isxdigit } };

	for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
		if (strlen(k[i].name) != len || memcmp(k[i].name, s, len))
			continue;
		for (int c = 1; c < 128; c++)
			if (k[i].is(c))
				bit_set(set, (unsigned char)c);
		return true;
	}
	return false;
}

/*
 * The bracket expression at p[0] == '[' (p < end) into set, as rsync's
 * wildmatch reads one: '!' or '^' first negates, a first ']' is a member,
 * '\' quotes, "a-z" a range (not after a range or class), "[:NAME:]" a
 * class, and "[:" without ":]" a plain '['.  Returns the position after
 * its ']', or NULL where wildmatch gives up on the whole match (no ']',
 * an unknown class name): such a pattern never matches anything.
 */
static const char *bracket(const char *p, const char *end, uint8_t set[32])
{
	bool negate;
	unsigned char prev = 0, ch;

	memset(set, 0, 32);
	if (++p >= end)
		return NULL;
	negate = *p == '!' || *p == '^';
	if (negate && ++p >= end)
		return NULL;
	do {
		ch = (unsigned char)*p;
		if (ch == '\\') {
			if (++p >= end)
				return NULL;
			ch = (unsigned char)*p;
			bit_set(set, ch);
		} else if (ch == '-' && prev && p + 1 < end && p[1] != ']') {
			unsigned char hi = (unsigned char)*++p;

			if (hi == '\\' && ++p >= end)
				return NULL;
			hi = (unsigned char)*p;
			for (unsigned c = prev; c <= hi; c++)
				bit_set(set, (unsigned char)c);
			ch = 0;            /* no range right after a range */
		} else if (ch == '[' && p + 1 < end && p[1] == ':') {
			const char *s = p + 2, *q = memchr(s, ']', (size_t)(end - s));

			if (!q)
				return NULL;
			if (q - s < 1 || q[-1] != ':') {
				bit_set(set, '[');     /* "[:" with no ":]": a plain '[' */
			} else {
				if (!class_named(s, (size_t)(q - s - 1), set))
					return NULL;
				p = q;
				ch = 0;
			}
		} else {
			bit_set(set, ch);
		}
		prev = ch;
		if (++p >= end)
			return NULL;
	} while (*p != ']');
	if (negate)
		for (int i = 0; i < 32; i++)
			set[i] = (uint8_t)~set[i];
	set['/' >> 3] &= (uint8_t)~(1u << ('/' & 7));     /* never a '/' */
	set[0] &= (uint8_t)~1u;
	return p + 1;
}

/* ------------------------------------------------------------ compiling */

/* r's pattern p[0..len) as tokens; r->never where wildmatch gives up. */
static int compile(struct rule *r, const char *p, size_t len)
{
	const char *end = p + len;
	size_t k = 0;

	r->tok = calloc(len ? len : 1, sizeof(*r->tok));
	r->cls = calloc(len ? len : 1, sizeof(*r->cls));
	if (!r->tok || !r->cls)
		return -ENOMEM;
	while (p < end && !r->never) {
		if (*p == '*') {
			bool two = p + 1 < end && p[1] == '*';

			r->tok[k++] = (struct tok){ .kind = two ? T_DSTAR : T_STAR };
			while (p < end && *p == '*')
				p++;
			continue;
		}
		if (*p == '?') {
			r->tok[k++] = (struct tok){ .kind = T_ANY };
		} else if (*p == '[') {
			const char *after = bracket(p, end, r->cls[r->ncls]);

			if (!after) {
				r->never = true;
				break;
			}
			r->tok[k++] = (struct tok){ .kind = T_CLASS, .cls = (uint16_t)r->ncls++ };
			p = after;
			continue;
		} else {
			/* a '\' quotes the next character; one at the end
			 * matches nothing (wildmatch compares it with the NUL) */
			if (*p == '\\' && ++p == end) {
				r->never = true;
				break;
			}
			r->tok[k++] = (struct tok){ .kind = T_CHAR, .c = (unsigned char)*p };
		}
		p++;
	}
	r->ntok = k;
	return 0;
}

/* ------------------------------------------------------------ matching */

/* Positions reachable from those in set without consuming a character:
 * a star may match nothing. */
static void closure(const struct tok *t, size_t n, uint8_t *set)
{
	for (size_t i = 0; i < n; i++)
		if (set[i] && (t[i].kind == T_STAR || t[i].kind == T_DSTAR))
			set[i + 1] = 1;
}

/*
 * Does the wild rule r match s[0..len) whole, or (from_slash) s from its
 * start or from after any '/' in it?  wildmatch's meaning ('*' and '?'
 * and brackets never match a '/', "**" matches anything), decided by
 * simulating the automaton, one set of pattern positions per character:
 * time bounded by pattern times name, no backtracking to blow up.  Each
 * '/' of s starts another try, for from_slash.
 */
static bool run(const struct rule *r, const char *s, size_t len, bool from_slash)
{
	const struct tok *t = r->tok;
	size_t n = r->ntok;
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
		unsigned char c = (unsigned char)s[j];

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
				next[i + 1] |= (r->cls[t[i].cls][c >> 3] >> (c & 7)) & 1;
				break;
			case T_STAR:
				next[i] |= c != '/';
				break;
			case T_DSTAR:
				next[i] = 1;
				break;
			}
		}
		if (from_slash && c == '/')
			next[0] = 1;       /* a try that starts after this '/' */
		closure(t, n, next);
		uint8_t *x = cur;

		cur = next;
		next = x;
	}
	ok = cur[n];
	if (cur != stack && next != stack)
		free(cur < next ? cur : next);
	return ok;
}

/* The last count '/'-separated elements of s[0..*len) (rsync's
 * trailing_N_elements): its start, *len cut to them; NULL when s has
 * fewer. */
static const char *trailing(const char *s, size_t *len, unsigned count)
{
	for (size_t i = *len; i-- > 0;) {
		if (s[i] == '/' && !--count) {
			*len -= i + 1;
			return s + i + 1;
		}
	}
	return count == 1 ? s : NULL;
}

/*
 * rsync's rule_matches for name (relative to the transfer's root, not
 * empty; dir: a directory).  The text matched is the last component of
 * name for a pattern with no '/' and no "**", else name, with a '/' before
 * it for a pattern starting with "**" (so "**" + "/" matches no directory
 * at the top) and after it for a directory's name and a pattern ending
 * with "***".  Where: an anchored pattern at the start; one with a '/'
 * and no "**" against the last slash_cnt + 1 elements; one with "**" not
 * at its start from the start or after any '/'.
 */
static bool rule_match(const struct rule *r, const char *name, bool dir)
{
	char stack[512], *text = stack;
	const char *s = name;
	size_t len = strlen(name);
	bool ok;

	if (!len || (r->dir_only && !dir) || r->never)
		return false;
	if (!r->slash_cnt && !r->wild2) {
		const char *last = strrchr(name, '/');

		s = last ? last + 1 : name;
		len -= (size_t)(s - name);
	}
	if (!r->wild) {
		/* a plain pattern (a '\' in it is a '\'): the whole name
		 * when anchored, else its end at a component boundary */
		if (r->anchored)
			return len == r->litlen && !memcmp(s, r->lit, len);
		return len >= r->litlen && !memcmp(s + len - r->litlen, r->lit, r->litlen) &&
		       (len == r->litlen || s[len - r->litlen - 1] == '/');
	}
	if (!r->anchored && r->slash_cnt && !r->wild2)
		return (s = trailing(s, &len, r->slash_cnt + 1)) && run(r, s, len, false);
	bool pre = r->wild2_prefix, post = dir && r->wild3_suffix;

	if (pre || post) {
		if (len + 3 > sizeof(stack) && !(text = malloc(len + 3)))
			return false;
		text[0] = '/';
		memcpy(text + pre, s, len);
		text[pre + len] = '/';
		s = text;
		len += pre + post;
	}
	ok = run(r, s, len, !r->anchored && r->wild2 && !r->wild2_prefix);
	if (text != stack)
		free(text);
	return ok;
}

bool filter_glob(const char *pattern, size_t len, const char *text, size_t tlen)
{
	struct rule r = { 0 };
	bool ok;

	if (len > FILTER_PATTERN_MAX || compile(&r, pattern, len))
		ok = false;
	else
		ok = !r.never && run(&r, text, tlen, false);
	free(r.tok);
	free(r.cls);
	return ok;
}

/* One compiled rule for pattern p[0..len), as rsync's add_rule. */
static int add_one(struct filter *f, const char *text, bool include, const char *p, size_t len)
{
	struct rule *r = &f->r[f->n];
	const char *star2;

	*r = (struct rule){ .include = include };
	if (len > 1 && p[len - 1] == '/') {
		r->dir_only = true;
		len--;
	}
	for (size_t i = 0; i < len; i++)
		r->slash_cnt += p[i] == '/';
	r->wild = memchr(p, '*', len) || memchr(p, '?', len) || memchr(p, '[', len);
	star2 = r->wild ? memmem(p, len, "**", 2) : NULL;
	r->wild2 = star2;
	r->wild2_prefix = star2 == p;
	r->wild3_suffix = star2 && len >= 3 && !memcmp(p + len - 3, "***", 3);
	if (*p == '/') {
		r->anchored = true;
		p++;
		len--;
	}
	if (!(r->text = strdup(text)) || !(r->lit = strndup(p, len)) ||
	    (r->wild && compile(r, p, len))) {
		free(r->text);
		free(r->lit);
		free(r->tok);
		free(r->cls);
		return -ENOMEM;
	}
	r->litlen = len;
	f->n++;
	return 0;
}

int filter_add(struct filter **fp, const char *rule)
{
	struct filter *f = *fp;
	struct rule *nr;
	const char *p;
	size_t len;

	if (!rule || (rule[0] != '-' && rule[0] != '+') || rule[1] != ' ')
		return -EINVAL;
	p = rule + 2;
	len = strlen(p);
	if (!len || len > FILTER_PATTERN_MAX)
		return -EINVAL;
	if (!f && !(f = *fp = calloc(1, sizeof(*f))))
		return -ENOMEM;
	if (f->n + 1 > FILTER_RULES_MAX)
		return -EINVAL;
	nr = realloc(f->r, (f->n + 1) * sizeof(*nr));
	if (!nr)
		return -ENOMEM;
	f->r = nr;
	return add_one(f, rule, rule[0] == '+', p, len);
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
	return f ? f->n : 0;
}

const char *filter_rule(const struct filter *f, size_t k)
{
	return f && k < f->n ? f->r[k].text : NULL;
}

void filter_free(struct filter *f)
{
	for (size_t i = 0; f && i < f->n; i++) {
		free(f->r[i].text);
		free(f->r[i].lit);
		free(f->r[i].tok);
		free(f->r[i].cls);
	}
	if (f)
		free(f->r);
	free(f);
}

bool filter_journal(const char *name)
{
	const char *base = strrchr(name, '/');

	return !strcmp(base ? base + 1 : name, BFO_JOURNAL_DIR);
}

bool filter_source_skips(const struct filter *f, const char *src, const char *rel, bool dir)
{
	char *name;
	bool out;

	if (filter_journal(rel))
		return true;
	if (!f || asprintf(&name, "%s%s%s", src, *src ? "/" : "", rel) < 0)
		return false;
	out = filter_excluded(f, name, dir);
	free(name);
	return out;
}
