/*
 * The floor for the dpkg row of bench/version-compare.ts: the same Debian
 * version ordering as src/ecosystems/dpkg/version.ts, written in plain C over
 * the raw bytes, so the benchmark can say how far the TypeScript comparator
 * is from what compiled code does with the same pairs.
 *
 * The ordering (Debian Policy 5.6.12): [epoch:]upstream[-revision]. The epoch
 * is the digit run before the first ':' and compares by value; the revision
 * is what follows the last '-'. Upstream and revision compare alike: the
 * leading non-digit parts character by character ('~' before everything,
 * even the end of the part; then the end; then letters; then the other
 * characters), then the leading digit runs by value, in turn, until a
 * difference shows or both are used up.
 *
 * Usage: dpkg-compare PAIRS_FILE PASSES RUNS WARMUP_PASSES
 * PAIRS_FILE holds one "a<TAB>b" pair per line. Prints the ordering of every
 * pair on the first line ('<', '=' or '>' each), so the caller can check
 * that the floor computes the same thing, then one line per run with the
 * comparisons per CPU-second of that run.
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct pair {
	const char *a, *a_end;
	const char *b, *b_end;
};

struct parts {
	const char *epoch, *epoch_end;
	const char *upstream, *upstream_end;
	const char *revision, *revision_end;
};

static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

static int is_letter(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

static int is_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

static int sign(int x) { return (x > 0) - (x < 0); }

static void split(const char *start, const char *end, struct parts *p)
{
	while (start < end && is_space((unsigned char)*start))
		start++;
	while (end > start && is_space((unsigned char)end[-1]))
		end--;
	const char *digits_end = start;
	while (digits_end < end && is_digit((unsigned char)*digits_end))
		digits_end++;
	if (digits_end > start && digits_end < end && *digits_end == ':') {
		p->epoch = start;
		p->epoch_end = digits_end;
		p->upstream = digits_end + 1;
	} else {
		p->epoch = p->epoch_end = start;
		p->upstream = start;
	}
	const char *after_hyphen = end;
	while (after_hyphen > p->upstream && after_hyphen[-1] != '-')
		after_hyphen--;
	if (after_hyphen > p->upstream) {
		p->upstream_end = after_hyphen - 1;
		p->revision = after_hyphen;
	} else {
		p->upstream_end = end;
		p->revision = end;
	}
	p->revision_end = end;
}

/* Weight of the character at s in a non-digit part that ends at end. */
static int weight(const char *s, const char *end)
{
	if (s >= end)
		return 0;
	unsigned char c = (unsigned char)*s;
	if (c == '~')
		return -1;
	if (is_digit(c))
		return 0;
	if (is_letter(c))
		return c;
	return c + 256;
}

/*
 * Compares the digit runs at *a and *b by value (of any length, so no
 * conversion to an integer), and moves both past their runs.
 */
static int compare_digit_runs(const char **a, const char *a_end, const char **b, const char *b_end)
{
	const char *x = *a, *y = *b;
	while (x < a_end && *x == '0')
		x++;
	while (y < b_end && *y == '0')
		y++;
	int first_difference = 0;
	while (x < a_end && y < b_end && is_digit((unsigned char)*x) && is_digit((unsigned char)*y)) {
		if (first_difference == 0)
			first_difference = *x - *y;
		x++;
		y++;
	}
	int a_longer = x < a_end && is_digit((unsigned char)*x);
	int b_longer = y < b_end && is_digit((unsigned char)*y);
	while (x < a_end && is_digit((unsigned char)*x))
		x++;
	while (y < b_end && is_digit((unsigned char)*y))
		y++;
	*a = x;
	*b = y;
	if (a_longer)
		return 1;
	if (b_longer)
		return -1;
	return sign(first_difference);
}

static int verrevcmp(const char *a, const char *a_end, const char *b, const char *b_end)
{
	while (a < a_end || b < b_end) {
		while ((a < a_end && !is_digit((unsigned char)*a)) || (b < b_end && !is_digit((unsigned char)*b))) {
			int x = weight(a, a_end);
			int y = weight(b, b_end);
			if (x != y)
				return x < y ? -1 : 1;
			a++;
			b++;
		}
		int c = compare_digit_runs(&a, a_end, &b, b_end);
		if (c != 0)
			return c;
	}
	return 0;
}

static int compare(const struct pair *pair)
{
	struct parts x, y;
	split(pair->a, pair->a_end, &x);
	split(pair->b, pair->b_end, &y);
	int c = compare_digit_runs(&x.epoch, x.epoch_end, &y.epoch, y.epoch_end);
	if (c != 0)
		return c;
	c = verrevcmp(x.upstream, x.upstream_end, y.upstream, y.upstream_end);
	if (c != 0)
		return c;
	return verrevcmp(x.revision, x.revision_end, y.revision, y.revision_end);
}

/*
 * Read through a volatile pointer on every pass, so the compiler cannot
 * prove that passes repeat the same work and fold them.
 */
static struct pair *volatile shared_pairs;

static long pass(size_t count)
{
	const struct pair *pairs = shared_pairs;
	long sum = 0;
	for (size_t i = 0; i < count; i++)
		sum += compare(&pairs[i]);
	return sum;
}

static double cpu_seconds(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static char *read_file(const char *path, size_t *length)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return NULL;
	size_t capacity = 1 << 16, used = 0;
	char *text = malloc(capacity);
	size_t n;
	while (text != NULL && (n = fread(text + used, 1, capacity - used, f)) > 0) {
		used += n;
		if (used == capacity)
			text = realloc(text, capacity *= 2);
	}
	fclose(f);
	*length = used;
	return text;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: %s PAIRS_FILE PASSES RUNS WARMUP_PASSES\n", argv[0]);
		return 2;
	}
	long passes = atol(argv[2]), runs = atol(argv[3]), warmup = atol(argv[4]);
	size_t length;
	char *text = read_file(argv[1], &length);
	if (text == NULL) {
		perror(argv[1]);
		return 1;
	}
	size_t count = 0, capacity = 1024;
	struct pair *pairs = malloc(capacity * sizeof *pairs);
	for (char *line = text; line < text + length && pairs != NULL;) {
		char *newline = memchr(line, '\n', (size_t)(text + length - line));
		char *line_end = newline != NULL ? newline : text + length;
		char *tab = memchr(line, '\t', (size_t)(line_end - line));
		if (tab == NULL) {
			fprintf(stderr, "line %zu has no tab\n", count + 1);
			return 1;
		}
		if (count == capacity)
			pairs = realloc(pairs, (capacity *= 2) * sizeof *pairs);
		if (pairs == NULL)
			break;
		pairs[count++] = (struct pair){line, tab, tab + 1, line_end};
		line = line_end + 1;
	}
	if (pairs == NULL) {
		fprintf(stderr, "out of memory\n");
		return 1;
	}
	shared_pairs = pairs;

	for (size_t i = 0; i < count; i++)
		putchar("<=>"[compare(&pairs[i]) + 1]);
	putchar('\n');

	long sink = 0;
	for (long i = 0; i < warmup; i++)
		sink += pass(count);
	for (long run = 0; run < runs; run++) {
		double started = cpu_seconds();
		for (long i = 0; i < passes; i++)
			sink += pass(count);
		double seconds = cpu_seconds() - started;
		printf("%.0f\n", (double)count * (double)passes / seconds);
	}
	fprintf(stderr, "checksum %ld\n", sink);
	return 0;
}
