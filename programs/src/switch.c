/* Dense switch statements compiled to jump tables: a small stack-machine interpreter
 * (16 opcodes) running three bytecode programs, and a character classifier. Self-checking. */
#include <stdio.h>
#include <stdint.h>

enum { PUSH, POP, ADD, SUB, MUL, DIVM, DUP, SWAP, OVER, JZ, JMP, DEC, LOAD, STORE, PRINT, HALT };

static long out[8];
static int nout;

__attribute__((noinline)) static long run(const int8_t *code) {
    long st[32], var[4] = { 0 };
    int sp = 0, pc = 0;
    for (;;) {
        int op = code[pc++];
        switch (op) {
        case PUSH:  st[sp++] = code[pc++]; break;
        case POP:   sp--; break;
        case ADD:   sp--; st[sp - 1] += st[sp]; break;
        case SUB:   sp--; st[sp - 1] -= st[sp]; break;
        case MUL:   sp--; st[sp - 1] *= st[sp]; break;
        case DIVM:  sp--; st[sp - 1] = st[sp] ? st[sp - 1] % st[sp] : 0; break;
        case DUP:   st[sp] = st[sp - 1]; sp++; break;
        case SWAP:  { long t = st[sp - 1]; st[sp - 1] = st[sp - 2]; st[sp - 2] = t; } break;
        case OVER:  st[sp] = st[sp - 2]; sp++; break;
        case JZ:    { int off = code[pc++]; if (st[--sp] == 0) pc += off; } break;
        case JMP:   pc += code[pc] + 1; break;
        case DEC:   st[sp - 1]--; break;
        case LOAD:  st[sp++] = var[code[pc++]]; break;
        case STORE: var[code[pc++]] = st[--sp]; break;
        case PRINT: if (nout < 8) out[nout++] = st[sp - 1]; break;
        case HALT:  return sp ? st[sp - 1] : 0;
        default:    return -999;
        }
    }
}

/* 10! : v0 = 1, v1 = 10; while (v1) { v0 *= v1; v1--; } */
static const int8_t fact[] = {
    PUSH, 1, STORE, 0, PUSH, 10, STORE, 1,
    /* 8 */ LOAD, 1, JZ, 14,
    LOAD, 0, LOAD, 1, MUL, STORE, 0, LOAD, 1, DEC, STORE, 1,
    JMP, -18,
    LOAD, 0, PRINT, HALT,
};
/* gcd(1071, 462) by repeated modulus, both operands built from small pushes */
static const int8_t gcd[] = {
    PUSH, 107, PUSH, 10, MUL, PUSH, 1, ADD, STORE, 0,     /* v0 = 1071 */
    PUSH, 66, PUSH, 7, MUL, STORE, 1,                     /* v1 = 462 */
    /* 17 */ LOAD, 1, JZ, 13,
    LOAD, 0, LOAD, 1, DIVM, LOAD, 1, STORE, 0, STORE, 1,
    JMP, -17,
    LOAD, 0, PRINT, HALT,
};
/* sum of squares 1..30 with SWAP/OVER/DUP/POP: stack = [acc, i] */
static const int8_t squares[] = {
    PUSH, 0, PUSH, 30,
    /* 4 */ DUP, JZ, 12,
    DUP, DUP, MUL, /* acc i i*i */ SWAP, /* acc i*i i */ STORE, 2, ADD, LOAD, 2, DEC,
    JMP, -15,
    POP, PRINT, HALT,
};

enum cls { DIGIT, UPPER, LOWER, SPACE, PUNCT, OTHER };
__attribute__((noinline)) static enum cls classify(int c) {
    switch (c) {
    case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8': case '9':
        return DIGIT;
    case ' ': case '\t': case '\n':
        return SPACE;
    case '!': case '"': case '#': case '$': case '%': case '&': case '(': case ')': case '*':
    case '+': case ',': case '-': case '.': case '/': case ':': case ';': case '?':
        return PUNCT;
    default:
        if (c >= 'A' && c <= 'Z') return UPPER;
        if (c >= 'a' && c <= 'z') return LOWER;
        return OTHER;
    }
}

int main(void) {
    int fails = 0;
    long r1 = run(fact), r2 = run(gcd), r3 = run(squares);
    printf("fact=%ld gcd=%ld squares=%ld printed=%d\n", r1, r2, r3, nout);
    if (r1 != 3628800 || r2 != 21 || r3 != 9455 || nout != 3 || out[0] != r1 || out[2] != r3) fails++;
    static const char text[] = "Hello, World! 42 + 7 = 49; (x*y)/z?\t~ok~\n";
    int counts[6] = { 0 };
    for (int round = 0; round < 20; round++)
        for (const char *p = text; *p; p++) counts[classify(*p)]++;
    printf("digits=%d upper=%d lower=%d space=%d punct=%d other=%d\n",
           counts[0], counts[1], counts[2], counts[3], counts[4], counts[5]);
    if (counts[0] != 20 * 5 || counts[1] != 20 * 2 || counts[2] != 20 * 13 || counts[3] != 20 * 9 ||
        counts[4] != 20 * 9 || counts[5] != 20 * 3)
        fails++;
    printf("switch fails=%d\n", fails);
    return fails;
}
