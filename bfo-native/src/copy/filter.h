/* SPDX-License-Identifier: Apache-2.0 */
/*
 * --exclude and --include: rsync's basic filter rules.  A rule is
 * "- PATTERN" (exclude) or "+ PATTERN" (include); the first rule that
 * matches a name decides, a name no rule matches is included.  Names are
 * relative to the transfer's root, as rsync's: SRC's name and the path
 * below it ("src/a/b"), or the path below SRC for SRC/ ("a/b").
 *
 * A pattern (rsync's rule_matches and wildmatch):
 *  - starting with '/' is anchored at the root; otherwise one holding a
 *    '/' matches the end of the name at a component boundary ("b/c"
 *    matches "a/b/c"), and one holding neither '/' (a trailing one aside)
 *    nor "**" is matched against the last component only;
 *  - ending with '/' matches directories only;
 *  - '*' matches anything but '/', "**" anything, '?' one character but
 *    '/', "[...]" a set of bytes, never '/' ('!' or '^' negates, ranges,
 *    "[:alpha:]" classes; an unclosed one, or an unknown class, makes
 *    the pattern match nothing), '\' makes the next one plain;
 *  - one with none of '*', '?', '[' is compared as it is, '\' included;
 *  - "**" at its start also matches no directory at all ("**" "/c"
 *    matches "c"), and "***" at its end also matches the directory
 *    before it ("dir" "/" "***": dir itself and everything below it).
 * An excluded directory is not descended into (what is below it is
 * neither copied nor deleted).
 */
#ifndef BFO_FILTER_H
#define BFO_FILTER_H

#include <stdbool.h>
#include <stddef.h>

#define FILTER_RULES_MAX 4096u      /* rules in a list */
#define FILTER_PATTERN_MAX 4095u    /* bytes of one pattern */

struct filter;

/*
 * Append rule to *f (made on the first call).  Returns 0, or -EINVAL (not
 * "- P" or "+ P", an empty or too long pattern, too many rules), -ENOMEM.
 */
int filter_add(struct filter **f, const char *rule);

/* Whether name (a directory when dir) is excluded by the rules; NULL f
 * excludes nothing. */
bool filter_excluded(const struct filter *f, const char *name, bool dir);

/* The number of rules, and rule i as given ("- P"), for passing on. */
size_t filter_count(const struct filter *f);
const char *filter_rule(const struct filter *f, size_t i);

void filter_free(struct filter *f);

/*
 * Whether the last component of name is ".bfo-journal": a writer's journal
 * (perhaps the live one of this very run, when the destination lies in a
 * source), at any level and of any type.  A copy never reads one as data
 * and --delete never removes one, as if every rule list began with
 * "- .bfo-journal".
 */
bool filter_journal(const char *name);

/* rel (below the source src, whose name the rules see: "" for a source's
 * contents) is left out of what a copy reads: a journal, or excluded as
 * src/rel by f (NULL: no rules). */
bool filter_source_skips(const struct filter *f, const char *src, const char *rel, bool dir);

/* pattern (len bytes, no trailing '/') matches text[0..tlen), '*' and '?'
 * not crossing '/', "**" crossing it: the matcher alone, for the fuzzer. */
bool filter_glob(const char *pattern, size_t len, const char *text, size_t tlen);

#endif
