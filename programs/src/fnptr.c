/* Indirect calls: qsort/bsearch comparators called from libc, a table of operator
 * functions, a "vtable" struct of function pointers, functions returning function
 * pointers, and a state machine whose states are functions. Self-checking. */
#include <stdio.h>
#include <stdlib.h>

static int fails;
static void check(const char *what, long got, long want) {
    printf("%-10s %ld\n", what, got);
    if (got != want) { printf("FAIL %s: want %ld\n", what, want); fails++; }
}

static long ncompares;
static int cmp_up(const void *a, const void *b) { ncompares++; return *(const int *)a - *(const int *)b; }
static int cmp_down(const void *a, const void *b) { ncompares++; return *(const int *)b - *(const int *)a; }

typedef long (*binop)(long, long);
static long op_add(long a, long b) { return a + b; }
static long op_sub(long a, long b) { return a - b; }
static long op_mul(long a, long b) { return a * b; }
static long op_max(long a, long b) { return a > b ? a : b; }
static binop const ops[] = { op_add, op_sub, op_mul, op_max };

struct shape;
struct shape_ops { long (*area)(const struct shape *); long (*perimeter)(const struct shape *); const char *name; };
struct shape { const struct shape_ops *ops; long a, b; };
static long rect_area(const struct shape *s) { return s->a * s->b; }
static long rect_perim(const struct shape *s) { return 2 * (s->a + s->b); }
static long tri_area(const struct shape *s) { return s->a * s->b / 2; }
static long tri_perim(const struct shape *s) { return s->a + s->b + s->a; }
static const struct shape_ops rect_ops = { rect_area, rect_perim, "rect" };
static const struct shape_ops tri_ops = { tri_area, tri_perim, "tri" };

__attribute__((noinline)) static binop pick(int i) { return ops[i & 3]; }

/* State machine: count words; each state returns the next state. */
struct state;
typedef const struct state *(*state_fn)(char c, int *words);
struct state { state_fn next; };
static const struct state in_word, in_space;
static const struct state *f_in_word(char c, int *w) { (void)w; return c == ' ' ? &in_space : &in_word; }
static const struct state *f_in_space(char c, int *w) { if (c != ' ') { ++*w; return &in_word; } return &in_space; }
static const struct state in_word = { f_in_word }, in_space = { f_in_space };

int main(void) {
    int v[64];
    unsigned x = 12345;
    for (int i = 0; i < 64; i++) { x = x * 1664525u + 1013904223u; v[i] = (int)(x >> 20); }
    qsort(v, 64, sizeof v[0], cmp_up);
    int sorted = 1;
    for (int i = 1; i < 64; i++) sorted &= v[i - 1] <= v[i];
    check("sorted-up", sorted, 1);
    int key = v[37], *hit = bsearch(&key, v, 64, sizeof v[0], cmp_up);
    check("bsearch", hit && *hit == key, 1);
    qsort(v, 64, sizeof v[0], cmp_down);
    sorted = 1;
    for (int i = 1; i < 64; i++) sorted &= v[i - 1] >= v[i];
    check("sorted-dn", sorted, 1);
    printf("compares>0 %d\n", ncompares > 0);

    long acc = 1;
    for (int i = 0; i < 40; i++) acc = pick(i)(acc, i + 1) % 100003;
    long want = 1;
    for (int i = 0; i < 40; i++) {
        long b = i + 1;
        switch (i & 3) { case 0: want += b; break; case 1: want -= b; break; case 2: want *= b; break; default: want = want > b ? want : b; }
        want %= 100003;
    }
    check("ops", acc, want);

    struct shape shapes[] = { { &rect_ops, 3, 4 }, { &tri_ops, 6, 5 }, { &rect_ops, 10, 2 } };
    long area = 0, perim = 0;
    for (int i = 0; i < 3; i++) { area += shapes[i].ops->area(&shapes[i]); perim += shapes[i].ops->perimeter(&shapes[i]); }
    check("area", area, 12 + 15 + 20);
    check("perimeter", perim, 14 + 17 + 24);

    const char *text = "  the quick  brown fox jumps over   the lazy dog ";
    const struct state *s = &in_space;
    int words = 0;
    for (const char *p = text; *p; p++) s = s->next(*p, &words);
    check("words", words, 9);
    printf("fnptr fails=%d\n", fails);
    return fails;
}
