/* Source lines, inlined functions and GCC clones, for the analysis tests
 * (crates/cli/tests/analysis.rs): at -O2 GCC inlines sum_squares and square into main and
 * clones quick_sort for its constant array (quick_sort.constprop.0). Linked the usual way
 * (picolibc's crt0, DWARF 5) and kept with its debug information in programs/dwarf. */
#include <stdio.h>

#define N 48

static int data[N];

static inline int square(int x)
{
    return x * x;
}

static inline int sum_squares(const int *a, int n)
{
    int s = 0;
    for (int i = 0; i < n; i++)
        s += square(a[i]);
    return s;
}

static void __attribute__((noinline)) quick_sort(int *a, int lo, int hi)
{
    while (lo < hi) {
        int p = a[(lo + hi) / 2], i = lo, j = hi;
        while (i <= j) {
            while (a[i] < p)
                i++;
            while (a[j] > p)
                j--;
            if (i <= j) {
                int t = a[i];
                a[i++] = a[j];
                a[j--] = t;
            }
        }
        if (j - lo < hi - i) {
            quick_sort(a, lo, j);
            lo = i;
        } else {
            quick_sort(a, i, hi);
            hi = j;
        }
    }
}

int main(void)
{
    unsigned x = 12345;
    for (int i = 0; i < N; i++) {
        x = x * 1103515245u + 12345u;
        data[i] = (int)(x >> 16) % 1000;
    }
    quick_sort(data, 0, N - 1);
    int s = sum_squares(data, N);
    printf("sorted %d..%d, sum of squares %d\n", data[0], data[N - 1], s);
    return 0;
}
