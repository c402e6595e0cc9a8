//! Code that rewrites its own block on every iteration (the ingress tests' check that kept
//! bytes of one decoding are never copied for another).

/// A loop that rewrites an instruction of its own block on every iteration (a branch never
/// taken, then an `addi`, and so on: runs of the same length, other records), so that the
/// block is decoded again each time at the next place in the pool of decoded instructions,
/// which is emptied and refilled every ~2000 decodings, each time the other instruction
/// first.
pub fn rewriting_loop() -> Vec<u32> {
    use rvtrace_testkit::asm;
    const S0: u32 = 8;
    const T0: u32 = 5;
    const T1: u32 = 6;
    const T2: u32 = 7;
    const A0: u32 = 10;
    let lw = |rd: u32, rs1: u32, imm: i64| asm::i_type(imm, rs1, 2, rd, 0x03);
    let sw = |rs2: u32, rs1: u32, imm: i64| asm::s_type(imm, rs2, rs1, 2);
    let bne_never = asm::branch(1, 0, 0, 8);
    vec![
        0x0000_0417,          // 0: auipc s0, 0
        lw(T0, S0, 64),       // 4: t0 = the branch
        lw(T1, S0, 68),       // 8: t1 = the addi
        asm::addi(A0, 0, 0),  // 12
        sw(T0, S0, 32),       // 16: loop: rewrite +32
        asm::addi(T2, T0, 0), // 20: swap t0, t1
        asm::addi(T0, T1, 0), // 24
        asm::addi(T1, T2, 0), // 28
        bne_never,            // 32: rewritten
        asm::addi(A0, A0, 1), // 36
        asm::addi(A0, A0, 2), // 40
        asm::jal(0, -28),     // 44: to 16
        asm::NOP,             // 48
        asm::NOP,             // 52
        asm::NOP,             // 56
        asm::NOP,             // 60
        bne_never,            // 64
        asm::addi(A0, A0, 3), // 68
    ]
}
