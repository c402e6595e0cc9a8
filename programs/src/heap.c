/* Dynamic memory: malloc/calloc/realloc/free with a linked list, a binary search tree,
 * a growing array, reuse of freed blocks and a request that must fail. Self-checking. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

static int fails;
static void check(const char *what, long got, long want) {
    printf("%-10s %ld\n", what, got);
    if (got != want) { printf("FAIL %s: want %ld\n", what, want); fails++; }
}

struct node { struct node *next; long value; };
struct tree { struct tree *l, *r; int key; };

static struct tree *insert(struct tree *t, int key) {
    if (!t) {
        t = malloc(sizeof *t);
        if (!t) { fails++; return NULL; }
        t->l = t->r = NULL; t->key = key;
    } else if (key < t->key) t->l = insert(t->l, key);
    else if (key > t->key) t->r = insert(t->r, key);
    return t;
}
static int height(const struct tree *t) {
    if (!t) return 0;
    int a = height(t->l), b = height(t->r);
    return 1 + (a > b ? a : b);
}
static long inorder_sum(const struct tree *t, int *prev, int *ordered) {
    if (!t) return 0;
    long s = inorder_sum(t->l, prev, ordered);
    if (t->key <= *prev) *ordered = 0;
    *prev = t->key;
    return s + t->key + inorder_sum(t->r, prev, ordered);
}
static int free_tree(struct tree *t) {
    if (!t) return 0;
    int n = 1 + free_tree(t->l) + free_tree(t->r);
    free(t);
    return n;
}

int main(void) {
    /* linked list of 200 nodes, freed in two passes */
    struct node *head = NULL;
    for (long i = 1; i <= 200; i++) {
        struct node *n = malloc(sizeof *n);
        if (!n) { puts("FAIL malloc"); return 1; }
        n->value = i; n->next = head; head = n;
    }
    long sum = 0; int aligned = 1;
    for (struct node *n = head; n; n = n->next) { sum += n->value; aligned &= ((uintptr_t)n % sizeof(long)) == 0; }
    check("list sum", sum, 20100);
    check("aligned", aligned, 1);
    struct node **pp = &head;  /* free the odd values */
    while (*pp) {
        if ((*pp)->value & 1) { struct node *d = *pp; *pp = d->next; free(d); }
        else pp = &(*pp)->next;
    }
    sum = 0;
    for (struct node *n = head; n; n = n->next) sum += n->value;
    check("even sum", sum, 10100);
    while (head) { struct node *d = head; head = d->next; free(d); }

    /* binary search tree */
    struct tree *root = NULL;
    unsigned x = 7;
    for (int i = 0; i < 150; i++) { x = x * 1103515245u + 12345u; root = insert(root, (int)(x >> 16) % 1000); }
    int prev = -1, ordered = 1;
    long tsum = inorder_sum(root, &prev, &ordered);
    check("ordered", ordered, 1);
    int h = height(root);
    check("height<40", h > 0 && h < 40, 1);
    int nodes = free_tree(root);
    printf("tree nodes %d sum %ld\n", nodes, tsum);

    /* growing array with realloc; calloc must zero */
    int *arr = NULL; size_t cap = 0, len = 0;
    for (int i = 0; i < 1000; i++) {
        if (len == cap) {
            cap = cap ? cap * 2 : 4;
            int *na = realloc(arr, cap * sizeof *na);
            if (!na) { puts("FAIL realloc"); return 1; }
            arr = na;
        }
        arr[len++] = i * 3;
    }
    long asum = 0;
    for (size_t i = 0; i < len; i++) asum += arr[i];
    check("realloc", asum, 3 * 999 * 1000 / 2);
    check("capacity", (long)cap, 1024);
    free(arr);
    char *z = calloc(300, 1);
    int zeros = 0;
    for (int i = 0; i < 300; i++) zeros += z[i] == 0;
    check("calloc", zeros, 300);
    strcpy(z, "heap string");
    char *d = strdup(z);
    check("strdup", d && strcmp(d, "heap string") == 0 && d != z, 1);
    free(d);
    free(z);

    /* freed memory is reused */
    void *p1 = malloc(64); free(p1);
    void *p2 = malloc(64);
    check("reuse", p1 == p2, 1);
    free(p2);
    /* more than the 2 MiB RAM: must fail */
    void *huge = malloc(8u << 20);
    check("huge", huge == NULL, 1);
    printf("heap fails=%d\n", fails);
    return fails;
}
