/* setjmp/longjmp: non-local exits from deep recursion, nested jump buffers, longjmp(env, 0)
 * returning 1, volatile locals surviving the jump, and an "exception" style retry loop.
 * Self-checking. */
#include <stdio.h>
#include <setjmp.h>

static int fails;
static void check(const char *what, long got, long want) {
    printf("%-10s %ld\n", what, got);
    if (got != want) { printf("FAIL %s: want %ld\n", what, want); fails++; }
}

static jmp_buf outer, inner;
static int depth_reached;

__attribute__((noinline)) static long dive(int depth, int bail_at) {
    depth_reached = depth;
    if (depth == bail_at) longjmp(outer, depth);
    return dive(depth + 1, bail_at) + 1;
}

__attribute__((noinline)) static void thrower(int code) { if (code) longjmp(inner, code); }

static int attempts;
__attribute__((noinline)) static int flaky(void) {
    if (++attempts < 4) longjmp(inner, 100 + attempts);
    return attempts * 10;
}

int main(void) {
    int r = setjmp(outer);
    if (r == 0) { dive(0, 25); check("unreached", 1, 0); }
    check("dive", r, 25);
    check("depth", depth_reached, 25);

    volatile int counter = 0;
    r = setjmp(outer);
    counter++;
    if (r < 5) longjmp(outer, r + 1);       /* loops back 5 times */
    check("again", r, 5);
    check("counter", counter, 6);

    r = setjmp(inner);
    if (r == 0) { thrower(0); thrower(0); longjmp(inner, 0); }
    check("zero->1", r, 1);

    volatile long codes = 0;
    int result;
    for (;;) {
        int e = setjmp(inner);
        if (e == 0) { result = flaky(); break; }
        codes = codes * 1000 + e;
    }
    check("retries", codes, 101102103);
    check("result", result, 40);

    /* nested: an inner handler rethrows to the outer one */
    volatile long trail = 0;
    if ((r = setjmp(outer)) == 0) {
        if ((r = setjmp(inner)) == 0) { trail = 1; thrower(7); trail = 99; }
        trail = trail * 10 + r;            /* 17 */
        longjmp(outer, 3);
    }
    trail = trail * 10 + r;                /* 173 */
    check("nested", trail, 173);
    printf("setjmp fails=%d\n", fails);
    return fails;
}
