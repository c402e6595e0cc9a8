/* Benchmark workload for the hart model: a mix of integer work typical of embedded code
 * (CRC, sorting, matrix multiply, string scanning, pointer chasing, a small interpreter with a
 * jump table). Deterministic; prints one checksum line and exits 0 when the checksum matches. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define N 4096
static uint32_t buf[N];
static int32_t ma[24][24], mb[24][24], mc[24][24];
static struct node { struct node *next; uint32_t v; } nodes[1024];

static uint32_t rng = 12345;
static uint32_t next_rand(void) { rng ^= rng << 13; rng ^= rng >> 17; rng ^= rng << 5; return rng; }

static uint32_t crc32(const uint8_t *p, size_t n) {
    uint32_t c = 0xffffffffu;
    while (n--) {
        c ^= *p++;
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xedb88320u & -(c & 1));
    }
    return ~c;
}

static void sift(uint32_t *a, int start, int end) {
    int root = start;
    while (2 * root + 1 <= end) {
        int child = 2 * root + 1, sw = root;
        if (a[sw] < a[child]) sw = child;
        if (child + 1 <= end && a[sw] < a[child + 1]) sw = child + 1;
        if (sw == root) return;
        uint32_t t = a[root]; a[root] = a[sw]; a[sw] = t;
        root = sw;
    }
}

static void heapsort(uint32_t *a, int n) {
    for (int s = (n - 2) / 2; s >= 0; s--) sift(a, s, n - 1);
    for (int e = n - 1; e > 0; e--) { uint32_t t = a[e]; a[e] = a[0]; a[0] = t; sift(a, 0, e - 1); }
}

static uint32_t matmul(void) {
    for (int i = 0; i < 24; i++)
        for (int j = 0; j < 24; j++) {
            int32_t s = 0;
            for (int k = 0; k < 24; k++) s += ma[i][k] * mb[k][j];
            mc[i][j] = s;
        }
    uint32_t h = 0;
    for (int i = 0; i < 24; i++) h = h * 31 + (uint32_t)mc[i][i];
    return h;
}

/* A tiny stack-machine interpreter: dense switch = jump table. */
static int32_t interp(const uint8_t *code, int n, int32_t x) {
    int32_t st[16]; int sp = 0;
    for (int pc = 0; pc < n; pc++) {
        switch (code[pc]) {
        case 0: st[sp++] = x; break;
        case 1: st[sp - 2] += st[sp - 1]; sp--; break;
        case 2: st[sp - 2] *= st[sp - 1]; sp--; break;
        case 3: st[sp - 1] ^= 0x5a5a; break;
        case 4: st[sp++] = 7; break;
        case 5: st[sp - 1] >>= 1; break;
        case 6: st[sp - 2] -= st[sp - 1]; sp--; break;
        case 7: st[sp - 1] = -st[sp - 1]; break;
        default: break;
        }
    }
    return sp ? st[sp - 1] : 0;
}

int main(void) {
    static const uint8_t prog[] = {0, 4, 2, 0, 1, 3, 5, 0, 6, 7, 4, 1};
    uint32_t sum = 0;
    for (int round = 0; round < 40; round++) {
        for (int i = 0; i < N; i++) buf[i] = next_rand();
        sum += crc32((const uint8_t *)buf, 2048);
        heapsort(buf, N);
        for (int i = 1; i < N; i++) if (buf[i - 1] > buf[i]) { printf("sort failed\n"); return 1; }
        for (int i = 0; i < 24; i++) for (int j = 0; j < 24; j++) { ma[i][j] = (int32_t)(next_rand() % 200) - 100; mb[i][j] = (int32_t)(next_rand() % 200) - 100; }
        sum += matmul();
        for (int i = 0; i < 1024; i++) { nodes[i].v = buf[i]; nodes[i].next = &nodes[(i * 577 + 1) % 1024]; }
        struct node *p = &nodes[0];
        for (int i = 0; i < 20000; i++) { sum += p->v & 0xff; p = p->next; }
        for (int i = 0; i < 2000; i++) sum += (uint32_t)interp(prog, sizeof prog, i);
        char s[64];
        for (int i = 0; i < 300; i++) { snprintf(s, sizeof s, "%u", (unsigned)(buf[i] >> 3)); sum += (uint32_t)strlen(s); }
    }
    printf("workload checksum %08lx\n", (unsigned long)sum);
    return sum == EXPECTED ? 0 : 2;
}
