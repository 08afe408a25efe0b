/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bfo_mkman3 HEADER OUTDIR VERSION: a man(3) page per function bfo.h
 * exports, written from the block comment above its declaration, as
 * liburing ships one per function.  A comment whose first line is
 * "NAME - summary" and the declaration after it (to its ';') make
 * bfo_NAME.3: NAME, SYNOPSIS, DESCRIPTION (the comment), SEE ALSO (the
 * functions of the same object).  Also libbfo.3, the list of them all.
 * A function without such a comment is an error: every exported function
 * has its comment (the build fails here otherwise).
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUNCS_MAX 256

struct func {
	char name[64];
	char summary[512];
	char *text;             /* the comment after its first line, '*'s taken off */
	char *decl;             /* the declaration, on one line */
};

static struct func funcs[FUNCS_MAX];
static int nfuncs;
static const char *version;

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) ||
	    !(buf = malloc((size_t)n + 1)) || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "bfo_mkman3: %s: %s\n", path, strerror(errno ? errno : EIO));
		exit(2);
	}
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* The comment c..end without its " * " margins: lines joined by '\n'. */
static char *uncomment(const char *c, const char *end)
{
	char *out = malloc((size_t)(end - c) + 1), *o = out;

	while (c < end) {
		const char *nl = memchr(c, '\n', (size_t)(end - c));
		const char *e = nl ? nl : end;

		while (c < e && (*c == ' ' || *c == '\t'))
			c++;
		if (c < e && *c == '*')
			c++;
		if (c < e && *c == ' ')
			c++;
		memcpy(o, c, (size_t)(e - c));
		o += e - c;
		*o++ = '\n';
		c = e + 1;
	}
	*o = '\0';
	return out;
}

/* The declaration at p (to its ';'), its whitespace runs as one space. */
static char *one_line(const char *p)
{
	const char *semi = strchr(p, ';');
	char *out, *o;
	bool space = false;

	if (!semi)
		return NULL;
	out = o = malloc((size_t)(semi - p) + 2);
	for (; p <= semi; p++) {
		if (isspace((unsigned char)*p)) {
			space = o != out;
			continue;
		}
		if (space && *p != ')' && *p != ',' && *p != ';' && o[-1] != '(')
			*o++ = ' ';
		space = false;
		*o++ = *p;
	}
	*o = '\0';
	return out;
}

/* The summary: the comment's first sentence after the dash (to a '.'
 * that ends a word, or the paragraph's end), on one line. */
static void summary(struct func *f, const char *t)
{
	size_t k = 0;

	for (; *t && k + 1 < sizeof(f->summary); t++) {
		if (*t == '\n' && t[1] == '\n')
			break;
		if (*t == '.' && (t[1] == ' ' || t[1] == '\n' || !t[1]))
			break;
		if (*t == '\n' || (*t == ' ' && k && f->summary[k - 1] == ' '))
			f->summary[k] = ' ';
		else
			f->summary[k] = *t;
		if (!(f->summary[k] == ' ' && k && f->summary[k - 1] == ' '))
			k++;
	}
	f->summary[k] = '\0';
}

/* Each "NAME - summary" comment and the declaration of NAME after it. */
static void parse(const char *h)
{
	for (const char *c = strstr(h, "/*\n"); c; c = strstr(c + 1, "/*\n")) {
		const char *end = strstr(c, "*/"), *first = c + 3, *dash, *decl;
		struct func *f;
		size_t nl;

		if (!end)
			break;
		while (*first == ' ' || *first == '*')
			first++;
		dash = strstr(first, " - ");
		nl = strcspn(first, "\n");
		if (strncmp(first, "bfo_", 4) || !dash || dash > first + nl || (size_t)(dash - first) >= 64)
			continue;
		for (decl = end + 2; isspace((unsigned char)*decl); decl++)
			;
		if (nfuncs == FUNCS_MAX)
			break;
		f = &funcs[nfuncs];
		memcpy(f->name, first, (size_t)(dash - first));
		f->name[dash - first] = '\0';
		f->decl = one_line(decl);
		if (!f->decl || !strstr(f->decl, f->name)) {
			free(f->decl);
			continue;       /* (a comment about a function declared elsewhere) */
		}
		f->text = uncomment(first, end);
		summary(f, strstr(f->text, " - ") + 3);
		nfuncs++;
	}
}

/* s for roff's text: backslashes and hyphens escaped, a control
 * character at the start of a line defused. */
static void roff(FILE *f, const char *s, size_t n)
{
	bool line_start = true;

	for (size_t i = 0; i < n && s[i]; i++) {
		if (line_start && (s[i] == '.' || s[i] == '\''))
			fputs("\\&", f);
		line_start = s[i] == '\n';
		if (s[i] == '\\')
			fputs("\\e", f);
		else if (s[i] == '-')
			fputs("\\-", f);
		else
			fputc(s[i], f);
	}
}

/* The comment's text as paragraphs (a blank line between them). */
static void paragraphs(FILE *f, const char *t)
{
	fputs(".PP\n", f);
	while (*t) {
		size_t len = strcspn(t, "\n");

		if (!len)
			fputs(".PP\n", f);
		else {
			roff(f, t, len);
			fputc('\n', f);
		}
		t += len + (t[len] == '\n');
	}
}

/* The object a function acts on: bfo_read_wait -> "bfo_read_". */
static size_t object_len(const char *name)
{
	const char *u = strchr(name + 4, '_');

	return u ? (size_t)(u - name) + 1 : strlen(name);
}

static FILE *page(const char *dir, const char *name)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.3", dir, name);
	if (!(f = fopen(path, "w"))) {
		fprintf(stderr, "bfo_mkman3: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	fprintf(f, ".\\\" Generated by bfo_mkman3 from include/bfo.h: edit that, not this.\n");
	return f;
}

static void done(FILE *f, const char *name)
{
	if (ferror(f) | fclose(f)) {
		fprintf(stderr, "bfo_mkman3: writing %s.3 failed\n", name);
		exit(1);
	}
}

static void func_page(const char *dir, const struct func *fn)
{
	FILE *f = page(dir, fn->name);
	size_t ol = object_len(fn->name);
	int k = 0;

	fprintf(f, ".TH %s 3 \"\" \"bfo %s\" \"libbfo Manual\"\n.SH NAME\n", fn->name, version);
	roff(f, fn->name, strlen(fn->name));
	fputs(" \\- ", f);
	roff(f, fn->summary, strlen(fn->summary));
	fputs("\n.SH SYNOPSIS\n.nf\n.B #include <bfo.h>\n.PP\n.B ", f);
	roff(f, fn->decl, strlen(fn->decl));
	fputs("\n.fi\n.PP\nLink with \\fI\\-lbfo\\fR (pkg\\-config: \\fIbfo\\fR).\n.SH DESCRIPTION\n", f);
	paragraphs(f, fn->text);
	fputs(".SH SEE ALSO\n.BR libbfo (3)", f);
	for (int i = 0; i < nfuncs; i++)
		if (strcmp(funcs[i].name, fn->name) && !strncmp(funcs[i].name, fn->name, ol) && k++ < 12)
			fprintf(f, ",\n.BR %s (3)", funcs[i].name);
	fputs(",\n.BR bfo (1)\n", f);
	done(f, fn->name);
}

static void index_page(const char *dir)
{
	FILE *f = page(dir, "libbfo");

	fprintf(f, ".TH LIBBFO 3 \"\" \"bfo %s\" \"libbfo Manual\"\n.SH NAME\n", version);
	fputs("libbfo \\- read, write and copy many small files as batches\n.SH SYNOPSIS\n"
	      ".nf\n.B #include <bfo.h>\n.fi\n.PP\nLink with \\fI\\-lbfo\\fR (pkg\\-config: \\fIbfo\\fR).\n"
	      ".SH DESCRIPTION\n.PP\nEvery function returns 0, a count, or a negative errno; "
	      "handles are opaque; bfo.h describes each function above its declaration, and each "
	      "has a page of its own:\n", f);
	for (int i = 0; i < nfuncs; i++) {
		fprintf(f, ".TP\n.BR %s (3)\n", funcs[i].name);
		roff(f, funcs[i].summary, strlen(funcs[i].summary));
		fputc('\n', f);
	}
	fputs(".SH SEE ALSO\n.BR bfo (1)\n.PP\nbfo\\-native/README.md in the sources: the engines, the "
	      "journal, the limits.\n", f);
	done(f, "libbfo");
}

int main(int argc, char **argv)
{
	char *h;
	int missing = 0;

	if (argc != 4) {
		fprintf(stderr, "usage: bfo_mkman3 HEADER OUTDIR VERSION\n");
		return 2;
	}
	version = argv[3];
	h = slurp(argv[1]);
	parse(h);
	/* every exported function has its page: a declaration "bfo_x(" at
	 * the start of a line's name without one is an error */
	for (const char *p = h; (p = strstr(p, " bfo_")); p++) {
		const char *lp = p;
		char name[64];
		size_t n = strspn(p + 1, "abcdefghijklmnopqrstuvwxyz_0123456789");
		bool found = false;

		while (lp > h && lp[-1] != '\n')
			lp--;
		if (n >= sizeof(name) || p[1 + n] != '(' || *lp == ' ' || *lp == '\t' || *lp == '*' ||
		    *lp == '#' || *lp == '/')
			continue;
		memcpy(name, p + 1, n);
		name[n] = '\0';
		for (int i = 0; i < nfuncs && !found; i++)
			found = !strcmp(funcs[i].name, name);
		if (!found) {
			fprintf(stderr, "bfo_mkman3: %s is declared without a \"%s - ...\" comment\n",
				name, name);
			missing++;
		}
	}
	if (!missing && nfuncs) {
		for (int i = 0; i < nfuncs; i++)
			func_page(argv[2], &funcs[i]);
		index_page(argv[2]);
	}
	free(h);        /* the sanitizer build runs this too, leak checks on */
	return missing || !nfuncs;
}
