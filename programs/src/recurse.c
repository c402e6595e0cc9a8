/* Recursion: Ackermann, Fibonacci, Towers of Hanoi, mutual recursion, N-queens
 * backtracking and a deep non-tail recursion. Self-checking. */
#include <stdio.h>

static int fails;
static void check(const char *what, long got, long want) {
    printf("%-12s %ld\n", what, got);
    if (got != want) { printf("FAIL %s: want %ld\n", what, want); fails++; }
}

__attribute__((noinline)) static long ack(long m, long n) {
    if (m == 0) return n + 1;
    if (n == 0) return ack(m - 1, 1);
    return ack(m - 1, ack(m, n - 1));
}

__attribute__((noinline)) static long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

static long moves;
static int pegs[3][16], height[3];
__attribute__((noinline)) static void hanoi(int n, int from, int to, int via) {
    if (n == 0) return;
    hanoi(n - 1, from, via, to);
    int disk = pegs[from][--height[from]];
    if (height[to] && pegs[to][height[to] - 1] < disk) fails++; /* larger on smaller */
    pegs[to][height[to]++] = disk;
    moves++;
    hanoi(n - 1, via, to, from);
}

/* Mutual recursion that the compiler cannot turn into a loop: the results are combined. */
__attribute__((noinline)) static long odd_steps(unsigned n);
__attribute__((noinline)) static long even_steps(unsigned n) { return n == 0 ? 1 : 2 * odd_steps(n - 1) % 1000003; }
__attribute__((noinline)) static long odd_steps(unsigned n) { return n == 0 ? 0 : 3 + even_steps(n - 1) % 1000003; }

static int cols[8];
__attribute__((noinline)) static int queens(int row, int n) {
    if (row == n) return 1;
    int count = 0;
    for (int c = 0; c < n; c++) {
        int ok = 1;
        for (int r = 0; r < row; r++)
            if (cols[r] == c || cols[r] - c == row - r || c - cols[r] == row - r) { ok = 0; break; }
        if (ok) { cols[row] = c; count += queens(row + 1, n); }
    }
    return count;
}

/* Deep recursion (1500 frames): the modulus keeps it from becoming a loop. */
__attribute__((noinline)) static long deep(long n) { return n == 0 ? 7 : (deep(n - 1) * 31 + n) % 1000003; }

int main(void) {
    check("ack(2,3)", ack(2, 3), 9);
    check("ack(3,3)", ack(3, 3), 61);
    check("fib(16)", fib(16), 987);
    height[0] = 9;
    for (int i = 0; i < 9; i++) pegs[0][i] = 9 - i;
    hanoi(9, 0, 2, 1);
    check("hanoi(9)", moves, 511);
    check("on peg 2", height[2], 9);
    long want = 1;
    for (unsigned i = 1; i <= 40; i++) want = (i & 1) ? 3 + want % 1000003 : 2 * want % 1000003;
    check("even(40)", even_steps(40), want);
    check("queens(6)", queens(0, 6), 4);
    long d = 7;
    for (long i = 1; i <= 1500; i++) d = (d * 31 + i) % 1000003;
    check("deep(1500)", deep(1500), d);
    printf("recurse fails=%d\n", fails);
    return fails;
}
