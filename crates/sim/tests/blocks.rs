//! Pre-decoded blocks (`block.rs`) are invisible except in speed: every test program and a set
//! of random programs run with blocks on and off give the same stream of observer events (every
//! field of every retirement, trap, register, CSR and memory effect) and the same final state;
//! stopping after any number of instructions stops at the same place; and self-modifying code
//! executes the bits last written, as on QEMU 7.2 (which ends a translation block that writes
//! its own page and re-translates, so the very next instruction executes the new bits).

use rvtrace_isa::Xlen;
use rvtrace_sim::extension::{Ctx, EnvCall, Extension, Service};
use rvtrace_sim::{Config, Hart, MemAccess, Observer, Retired, Stop, TrapInfo};
use rvtrace_testkit::asm;

/// A digest of every observer event, with one digest per 4096 events to say where two runs
/// part.
#[derive(Default)]
struct Digest {
    h: u64,
    n: u64,
    chunks: Vec<u64>,
}

impl Digest {
    fn mix(&mut self, vals: &[u64]) {
        for &v in vals {
            self.h = (self.h ^ v)
                .wrapping_mul(0x9e37_79b9_7f4a_7c15)
                .rotate_left(29);
        }
        self.n += 1;
        if self.n.is_multiple_of(4096) {
            self.chunks.push(self.h);
        }
    }
    fn trap_vals(t: &TrapInfo) -> [u64; 8] {
        [
            t.cause,
            t.tval,
            t.interrupt as u64,
            t.epc,
            t.from_priv as u64,
            t.to_priv as u64,
            t.handler,
            t.mstatus,
        ]
    }
}

impl Observer for Digest {
    fn retire(&mut self, ev: &Retired) {
        let t = ev.trap.map(|t| Self::trap_vals(&t)).unwrap_or_default();
        let s = ev
            .serviced
            .map_or(0, |s| 1 | (s.by as u64) << 8 | (s.cause as u64) << 16);
        let mut v = vec![
            1,
            ev.pc,
            ev.insn as u64,
            ev.len as u64,
            ev.class as u64,
            ev.next_pc,
            ev.priv_ as u64,
            ev.trap.is_some() as u64,
            s,
            ev.mtime,
        ];
        v.extend_from_slice(&t);
        self.mix(&v);
    }
    fn trap(&mut self, ev: &TrapInfo) {
        let mut v = vec![2];
        v.extend_from_slice(&Self::trap_vals(ev));
        self.mix(&v);
    }
    fn gpr_write(&mut self, rd: u8, value: u64) {
        self.mix(&[3, rd as u64, value]);
    }
    fn fpr_write(&mut self, rd: u8, value: u64) {
        self.mix(&[4, rd as u64, value]);
    }
    fn csr_write(&mut self, csr: u16, value: u64) {
        self.mix(&[5, csr as u64, value]);
    }
    fn mem_access(&mut self, a: &MemAccess) {
        self.mix(&[6, a.addr, a.size as u64, a.value, a.kind as u64]);
    }
    fn trap_return(&mut self, mstatus: u64, to_priv: u8) {
        self.mix(&[7, mstatus, to_priv as u64]);
    }
}

/// Everything a run leaves behind that a program could see or a tool could print.
fn state(h: &Hart) -> String {
    format!(
        "pc {:#x} priv {} instret {} mtime {}\nx {:x?}\nf {:x?}\ncsr {:?}\nclint {:?}\nminstret {:?} mcycle {:?}",
        h.pc,
        h.priv_,
        h.instret,
        h.mtime(),
        h.x,
        h.f,
        h.csr,
        h.bus.clint,
        h.counters.read(0xb02, h.instret, 3, 0),
        h.counters.read(0xb00, h.instret, 3, 0),
    )
}

/// The first MiB where the RAM of `a` and `b` differs.
fn ram_difference(a: &Hart, b: &Hart) -> Option<u64> {
    let base = rvtrace_sim::bus::RAM_BASE;
    let (mut x, mut y) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
    (0..a.bus.ram_size() >> 20).find_map(|m| {
        let at = base + (m << 20);
        assert!(a.read_memory(at, &mut x) && b.read_memory(at, &mut y));
        (x != y).then_some(at)
    })
}

/// Run `make()`'s hart with blocks on and off for `max` instructions and compare (all of RAM
/// too when `ram`).
fn compare(name: &str, make: impl Fn() -> Hart, max: u64, ram: bool) -> (Stop, u64) {
    let mut on = make();
    let mut off = make();
    off.set_blocks(false);
    let (mut d_on, mut d_off) = (Digest::default(), Digest::default());
    let s_on = on.run(&mut d_on, max);
    let s_off = off.run(&mut d_off, max);
    assert_eq!(s_on, s_off, "{name}: stop");
    if d_on.h != d_off.h || d_on.n != d_off.n {
        let at = d_on
            .chunks
            .iter()
            .zip(&d_off.chunks)
            .position(|(a, b)| a != b)
            .unwrap_or(d_on.chunks.len().min(d_off.chunks.len()));
        panic!(
            "{name}: events differ ({} with blocks, {} without), first in events {}..{}",
            d_on.n,
            d_off.n,
            at * 4096,
            (at + 1) * 4096
        );
    }
    assert_eq!(state(&on), state(&off), "{name}: final state");
    if ram {
        assert_eq!(ram_difference(&on, &off), None, "{name}: RAM");
    }
    // An observer that takes retirements as runs (`Observer::RETIRE_RUNS`): fused
    // operations, the same events.
    let (mut r_on, mut r_off) = (Runs::default(), Runs::default());
    let (mut runs_on, mut runs_off) = (make(), make());
    runs_off.set_blocks(false);
    assert_eq!(runs_on.run(&mut r_on, max), s_off, "{name}: stop, runs");
    assert_eq!(runs_off.run(&mut r_off, max), s_off, "{name}: stop, runs");
    assert_eq!(r_on.digests(), r_off.digests(), "{name}: events, runs");
    assert_eq!(state(&runs_on), state(&off), "{name}: final state, runs");
    if ram {
        assert_eq!(ram_difference(&runs_on, &off), None, "{name}: RAM, runs");
    }
    // With no observer (`Observer::QUIET`) the blocks run fused operations: the same end.
    let mut quiet = make();
    assert_eq!(quiet.run(&mut (), max), s_off, "{name}: stop, no observer");
    assert_eq!(
        state(&quiet),
        state(&off),
        "{name}: final state, no observer"
    );
    if ram {
        assert_eq!(
            ram_difference(&quiet, &off),
            None,
            "{name}: RAM, no observer"
        );
    }
    (s_on, on.instret)
}

fn elf_hart(image: &rvtrace_image::Image, cmdline: &str) -> Hart {
    let mut h = Hart::new(&Config::virt(image.files()[0].xlen));
    h.load(image).unwrap();
    rvtrace_testkit::quiet_semihost(&mut h, image, cmdline);
    h
}

#[test]
fn test_programs_run_the_same_with_and_without_blocks() {
    let mut n = 0;
    for path in rvtrace_testkit::test_programs() {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let mut image = rvtrace_image::Image::new();
        image.load_file(&path).unwrap();
        let cmdline = format!("elf/{name}.elf");
        let (stop, retired) = compare(&name, || elf_hart(&image, &cmdline), 20_000_000, true);
        assert!(retired > 0, "{name}: {stop:?}");
        n += 1;
    }
    assert!(n >= 30, "only {n} test programs");
}

#[test]
fn random_programs_run_the_same_with_and_without_blocks() {
    for seed in rvtrace_testkit::randprog::seeds(200) {
        let p = rvtrace_testkit::randprog::random_program(seed);
        let mut image = rvtrace_image::Image::new();
        image.load_bytes("prog.elf", &p.elf).unwrap();
        let (stop, _) = compare(
            &format!("seed {seed}"),
            || elf_hart(&image, "prog.elf"),
            2_000_000,
            seed % 8 == 0,
        );
        assert_eq!(stop, Stop::Exit(0), "seed {seed}");
    }
}

/// `--max-insns` and every other stop between two instructions: a run of k instructions ends
/// at the same instruction (and `instret`, `minstret`, `mcycle`) whatever k, in the middle of
/// blocks too; runs of k then the rest give the same events as one run.
#[test]
fn runs_stop_after_exactly_k_instructions() {
    for seed in 0..4 {
        let p = rvtrace_testkit::randprog::random_program(seed);
        let mut image = rvtrace_image::Image::new();
        image.load_bytes("prog.elf", &p.elf).unwrap();
        for k in (1..80).chain([97, 211, 997, 5003]) {
            let name = format!("seed {seed} k {k}");
            let (stop, retired) = compare(&name, || elf_hart(&image, "prog.elf"), k, false);
            if stop == Stop::InsnLimit {
                assert_eq!(retired, k, "{name}");
            }
        }
        // In slices: each slice starts where the last one stopped.
        let mut a = elf_hart(&image, "prog.elf");
        let mut b = elf_hart(&image, "prog.elf");
        b.set_blocks(false);
        let (mut da, mut db) = (Digest::default(), Digest::default());
        let sa = loop {
            match a.run(&mut da, 7) {
                Stop::InsnLimit => {}
                s => break s,
            }
        };
        let sb = b.run(&mut db, u64::MAX);
        assert_eq!(
            (sa, da.h, state(&a)),
            (sb, db.h, state(&b)),
            "seed {seed} slices"
        );
    }
}

const T0: u32 = 5;
const T1: u32 = 6;
const S0: u32 = 8;
const S1: u32 = 9;
const A0: u32 = 10;
const RA: u32 = 1;

fn auipc(rd: u32, imm20: u32) -> u32 {
    imm20 << 12 | rd << 7 | 0x17
}
fn lw(rd: u32, rs1: u32, imm: i32) -> u32 {
    asm::i_type(imm as i64, rs1, 2, rd, 0x03)
}
fn sw(rs2: u32, rs1: u32, imm: i32) -> u32 {
    asm::s_type(imm as i64, rs2, rs1, 2)
}
fn amoswap_w(rd: u32, rs2: u32, rs1: u32) -> u32 {
    asm::r_type(0b0000100, rs2, rs1, 2, rd, 0x2f)
}
const FENCE_I: u32 = 0x0000_100f;
const NOP: u32 = 0x0000_0013;

/// Run `code` (at the start of RAM) for `n` instructions with blocks on and off; both must
/// agree, and the hart with blocks is returned.
fn run_code(code: &[u32], n: u64, write_code: bool) -> Hart {
    let make = || {
        let mut h = asm::hart_with_code(Config::virt(Xlen::Rv64), code);
        h.csr.mtvec = rvtrace_sim::bus::RAM_BASE + 0x800;
        if write_code {
            h.attach(Box::new(WriteCode));
        }
        h
    };
    let mut on = make();
    let mut off = make();
    off.set_blocks(false);
    assert_eq!(on.run(&mut (), n), Stop::InsnLimit);
    assert_eq!(off.run(&mut (), n), Stop::InsnLimit);
    assert_eq!(state(&on), state(&off));
    on
}

/// A store over the next instruction of the running block: the new bits execute.
#[test]
fn store_over_the_next_instruction() {
    let code = [
        auipc(T0, 0),
        lw(T1, T0, 24),
        sw(T1, T0, 12),
        asm::addi(A0, 0, 1), // replaced by `addi a0, x0, 42`
        asm::SPIN,
        NOP,
        asm::addi(A0, 0, 42),
    ];
    let h = run_code(&code, 5, false);
    assert_eq!(h.x[A0 as usize], 42);
    assert_eq!(h.pc, rvtrace_sim::bus::RAM_BASE + 16);
}

/// An AMO over the next instruction of the running block.
#[test]
fn amo_over_the_next_instruction() {
    let code = [
        auipc(T0, 0),
        lw(T1, T0, 24),
        asm::addi(T0, T0, 16),
        amoswap_w(0, T1, T0),
        asm::addi(A0, 0, 1), // replaced by `addi a0, x0, 42`
        asm::SPIN,
        asm::addi(A0, 0, 42),
    ];
    let h = run_code(&code, 5, false);
    assert_eq!(h.x[A0 as usize], 42);
}

/// A function that ran (its block is cached) is rewritten, then called again: with or without
/// `fence.i` the new bits execute (QEMU 7.2 invalidates translations on any write to code).
#[test]
fn rewritten_function_runs_its_new_code() {
    for fence in [FENCE_I, NOP] {
        let mut code = vec![
            auipc(S0, 0),
            asm::jal(RA, 40),     // +4: call F (+44)
            asm::addi(S1, A0, 0), // +8
            lw(T1, S0, 64),       // +12
            sw(T1, S0, 44),       // +16: F's first instruction
            fence,                // +20
            asm::jal(RA, 20),     // +24: call F (+44)
            asm::SPIN,            // +28
        ];
        code.resize(11, NOP);
        code.push(asm::addi(A0, 0, 1)); // +44: F
        code.push(asm::jalr(0, RA, 0));
        code.resize(16, NOP);
        code.push(asm::addi(A0, 0, 7)); // +64
        let h = run_code(&code, 11, false);
        assert_eq!((h.x[S1 as usize], h.x[A0 as usize]), (1, 7));
        assert_eq!(h.pc, rvtrace_sim::bus::RAM_BASE + 28);
    }
}

/// A `jal` to the same page goes on in the same block at its target: a store over the target
/// before the jump runs the new bits, a call and its return run as without blocks, and runs
/// stopped after every count agree.
#[test]
fn jal_in_the_page_goes_on_at_its_target() {
    let code = [
        auipc(T0, 0),         // +0
        lw(T1, T0, 40),       // +4
        sw(T1, T0, 20),       // +8: over the jump's target
        asm::jal(0, 8),       // +12: j +20
        asm::addi(A0, 0, 1),  // +16: skipped
        asm::addi(A0, 0, 1),  // +20: replaced by `addi a0, x0, 42`
        asm::jal(RA, 8),      // +24: call +32
        asm::SPIN,            // +28
        asm::addi(S1, A0, 1), // +32
        asm::jalr(0, RA, 0),  // +36
        asm::addi(A0, 0, 42), // +40
    ];
    for n in 1..=14 {
        run_code(&code, n, false);
    }
    let h = run_code(&code, 14, false);
    assert_eq!((h.x[A0 as usize], h.x[S1 as usize]), (42, 43));
    assert_eq!(h.pc, rvtrace_sim::bus::RAM_BASE + 28);
}

/// A store to code no block was decoded from yet, in another page, then a jump there.
#[test]
fn store_to_code_not_yet_decoded() {
    let mut code = vec![
        auipc(T0, 1),  // t0 = base + 0x1000
        lw(T1, T0, 8), // the word at +0x1008
        sw(T1, T0, 0), // over +0x1000
        asm::jalr(0, T0, 0),
    ];
    code.resize(0x400, NOP);
    code.push(asm::addi(A0, 0, 1)); // +0x1000
    code.push(asm::SPIN);
    code.push(asm::addi(A0, 0, 9)); // +0x1008
    let h = run_code(&code, 5, false);
    assert_eq!(h.x[A0 as usize], 9);
}

/// An extension's write into code (the path of semihosting `SYS_READ`): the block decoded
/// before is not used again.
struct WriteCode;

impl Extension for WriteCode {
    fn name(&self) -> &'static str {
        "write-code"
    }
    fn environment_call(&mut self, ctx: &mut Ctx, _call: &EnvCall) -> Option<Service> {
        let at = rvtrace_sim::bus::RAM_BASE + 0x20;
        assert!(ctx.write_memory(at, &asm::addi(A0, A0, 100).to_le_bytes()));
        Some(Service::Done)
    }
}

#[test]
fn extension_write_into_code() {
    let mut code = vec![
        asm::jal(RA, 0x20), // +0: call F
        0x0000_0073,        // +4: ecall: F's first instruction becomes `addi a0, a0, 100`
        asm::jal(RA, 0x18), // +8: call F
        asm::SPIN,          // +12
    ];
    code.resize(8, NOP);
    code.push(asm::addi(A0, A0, 1)); // +0x20: F
    code.push(asm::jalr(0, RA, 0));
    let h = run_code(&code, 7, true);
    assert_eq!(h.x[A0 as usize], 101);
    assert_eq!(h.pc, rvtrace_sim::bus::RAM_BASE + 12);
}

/// A fault in the middle of a block: the instructions before it retired, the faulting one did
/// not (`minstret` read by the handler, `instret`, `mepc`).
#[test]
fn counters_exact_at_a_fault_inside_a_block() {
    let mut code = vec![
        asm::addi(A0, 0, 1),
        asm::addi(A0, A0, 1),
        lw(T1, 0, 0), // address 0: load access fault
        asm::addi(A0, A0, 1),
        asm::SPIN,
    ];
    code.resize(0x200, NOP);
    code.push(asm::csrr(S0, 0xb02)); // +0x800: minstret
    code.push(asm::csrr(S1, 0xb00)); // mcycle
    code.push(asm::SPIN);
    let h = run_code(&code, 5, false);
    assert_eq!(h.csr.mcause, 5);
    assert_eq!(h.csr.mepc, rvtrace_sim::bus::RAM_BASE + 8);
    // mcycle counts the `csrr minstret` before it (one cycle per instruction without timing).
    assert_eq!(
        (h.x[A0 as usize], h.x[S0 as usize], h.x[S1 as usize]),
        (2, 2, 3)
    );
    assert_eq!(h.instret, 5);
}

/// Every operation a block resolves when it is decoded (block.rs `K`: ALU operations with
/// `rd` = x0 and not, `lui`/`auipc`, loads, stores, taken and not-taken branches, `jal` to the
/// same page with and without a link), RV32 and RV64, on random register values, immediates
/// and shift amounts: blocks on and off give the same register writes (every value), memory
/// accesses, final state and RAM.
#[test]
fn every_block_operation_gives_what_execute_gives() {
    use rvtrace_testkit::asm::{b_type, i_type, j_type, r_type, s_type};
    let mut rng = rvtrace_testkit::Rng(15);
    for rv64 in [false, true] {
        let xlen = if rv64 { Xlen::Rv64 } else { Xlen::Rv32 };
        // (funct7, funct3, opcode) of the register-register operations.
        let mut r_ops = vec![
            (0, 0, 0x33),    // add
            (0x20, 0, 0x33), // sub
            (0, 1, 0x33),    // sll
            (0, 2, 0x33),    // slt
            (0, 3, 0x33),    // sltu
            (0, 4, 0x33),    // xor
            (0, 5, 0x33),    // srl
            (0x20, 5, 0x33), // sra
            (0, 6, 0x33),    // or
            (0, 7, 0x33),    // and
            (1, 0, 0x33),    // mul
        ];
        // (funct3, opcode) of the register-immediate operations.
        let mut i_ops = vec![
            (0, 0x13),
            (2, 0x13),
            (3, 0x13),
            (4, 0x13),
            (6, 0x13),
            (7, 0x13),
        ];
        let mut loads = vec![0, 1, 2, 4, 5];
        let mut stores = vec![0, 1, 2];
        if rv64 {
            r_ops.extend([
                (0, 0, 0x3b),    // addw
                (0x20, 0, 0x3b), // subw
                (0, 1, 0x3b),    // sllw
                (0, 5, 0x3b),    // srlw
                (0x20, 5, 0x3b), // sraw
                (1, 0, 0x3b),    // mulw
            ]);
            i_ops.push((0, 0x1b)); // addiw
            loads.extend([3, 6]); // ld, lwu
            stores.push(3); // sd
        }
        let shamt_max = if rv64 { 63 } else { 31 };
        let mut code = vec![];
        // x31 points into data; x28-x30 serve loops (x29 = 1, x30 the counter).
        let reg = |rng: &mut rvtrace_testkit::Rng| rng.range(0, 31) as u32;
        let rd = |rng: &mut rvtrace_testkit::Rng| {
            if rng.chance(10) {
                0
            } else {
                rng.range(1, 27) as u32
            }
        };
        // One operation that goes on to the next instruction.
        let op = |rng: &mut rvtrace_testkit::Rng| {
            let (d, s1, s2) = (rd(rng), reg(rng), reg(rng));
            let imm = rng.range(0, 4095) as i64 - 2048;
            match rng.range(0, 8) {
                0..=2 => {
                    let (f7, f3, op) = r_ops[rng.range(0, r_ops.len() as u64 - 1) as usize];
                    r_type(f7, s2, s1, f3, d, op)
                }
                3..=4 => {
                    let (f3, op) = i_ops[rng.range(0, i_ops.len() as u64 - 1) as usize];
                    i_type(imm, s1, f3, d, op)
                }
                5 => {
                    // slli, srli, srai; slliw, srliw, sraiw
                    let w = rv64 && rng.chance(50);
                    let sh = rng.range(0, if w { 31 } else { shamt_max }) as i64;
                    let (f3, hi) = [(1, 0), (5, 0), (5, 0x400)][rng.range(0, 2) as usize];
                    i_type(hi | sh, s1, f3, d, if w { 0x1b } else { 0x13 })
                }
                6 => {
                    (rng.next_u64() as u32 & 0xffff_f000)
                        | d << 7
                        | [0x37, 0x17][rng.range(0, 1) as usize]
                }
                7 => {
                    let f3 = loads[rng.range(0, loads.len() as u64 - 1) as usize];
                    i_type(imm >> 4, 31, f3, d, 0x03)
                }
                _ => {
                    let f3 = stores[rng.range(0, stores.len() as u64 - 1) as usize];
                    s_type(imm >> 4, s2, 31, f3)
                }
            }
        };
        while code.len() < 1500 {
            match rng.range(0, 12) {
                0..=7 => code.push(op(&mut rng)),
                // A branch over the next instruction, taken or not.
                8..=9 => {
                    let (s1, s2) = (reg(&mut rng), reg(&mut rng));
                    let f3 = [0, 1, 4, 5, 6, 7][rng.range(0, 5) as usize];
                    code.push(b_type(8, s2, s1, f3));
                }
                // `jal` over the next instruction, linking or not.
                10 => code.push(j_type(8, if rng.chance(50) { 0 } else { rd(&mut rng) })),
                // A backward branch of each kind on random registers, run at most twice:
                //   x28 = 2; L: x28 -= 1; beq x28, x0, +8; bXX s1, s2, L
                11 if rng.chance(50) => {
                    let (s1, s2) = (reg(&mut rng).min(27), reg(&mut rng).min(27));
                    let f3 = [0, 1, 4, 5, 6, 7][rng.range(0, 5) as usize];
                    code.extend([asm::addi(28, 0, 2); 2]);
                    code.push(asm::addi(28, 28, -1));
                    code.push(b_type(8, 0, 28, 0));
                    code.push(b_type(-8, s2, s1, f3));
                }
                // A loop of 1 to 4 iterations closed by a backward branch of each kind.
                _ => {
                    let k = rng.range(1, 4) as i64;
                    // Twice: a branch over the first cannot skip it.
                    code.extend([asm::addi(30, 0, k as i32); 2]);
                    let top = code.len();
                    for _ in 0..rng.range(1, 4) {
                        code.push(op(&mut rng));
                    }
                    code.push(asm::addi(30, 30, -1));
                    let (f3, s1, s2) = match rng.range(0, 5) {
                        0 => (1, 30, 0),  // bne x30, x0
                        1 => (4, 0, 30),  // blt x0, x30
                        2 => (6, 0, 30),  // bltu x0, x30
                        3 => (5, 30, 29), // bge x30, x29 (1)
                        4 => (7, 30, 29), // bgeu x30, x29
                        _ => {
                            code.push(i_type(1, 30, 3, 28, 0x13)); // sltiu x28, x30, 1
                            (0, 28, 0) // beq x28, x0
                        }
                    };
                    let back = -4 * (code.len() - top) as i64;
                    code.push(b_type(back, s2, s1, f3));
                }
            }
        }
        // (A last branch or `jal` skips the `nop`.)
        code.extend([NOP, asm::SPIN]);
        let regs: Vec<u64> = (0..32)
            .map(|_| {
                let v = match rng.range(0, 3) {
                    0 => [0, 1, u64::MAX, 1 << 31, 1 << 63, 0x7fff_ffff][rng.range(0, 5) as usize],
                    _ => rng.next_u64(),
                };
                if rv64 {
                    v
                } else {
                    v as i32 as i64 as u64
                }
            })
            .collect();
        let data = rvtrace_sim::bus::RAM_BASE + 0x2_0000;
        let make = || {
            let mut h = asm::hart_with_code(Config::virt(xlen), &code);
            h.csr.mtvec = rvtrace_sim::bus::RAM_BASE + 0x1_0000;
            h.x[1..28].copy_from_slice(&regs[1..28]);
            h.x[29] = 1;
            h.x[31] = data;
            h
        };
        let (stop, retired) = compare(&format!("rv64 {rv64}"), make, 20_000, true);
        assert_eq!((stop, retired), (Stop::InsnLimit, 20_000));
        // The run reached the end, with no trap on the way.
        let mut h = make();
        h.run(&mut (), 20_000);
        let end = rvtrace_sim::bus::RAM_BASE + 4 * (code.len() as u64 - 1);
        assert_eq!((h.pc, h.csr.mcause), (end, 0));
    }
}

/// A device access in the middle of a block sees `instret` exact (`mtime` counts retired
/// instructions), and a store to `mtimecmp` there ends the block so that the timer interrupt
/// is taken at the same instruction as without blocks.
#[test]
fn device_accesses_inside_a_block() {
    const S2: u32 = 18;
    let lui = |rd: u32, v: u32| (v & 0xffff_f000) | rd << 7 | 0x37;
    let mut code = vec![
        asm::addi(A0, 0, 1),
        lui(S1, 0x0200_c000), // mtime is at 0x0200_bff8
        lui(S2, 0x0200_4000), // mtimecmp
        asm::ld(T1, S1, -8),  // mtime: 3 instructions retired
        asm::addi(A0, A0, 1),
        asm::addi(A0, A0, 1),
        asm::addi(S0, 0, 30),
        asm::sd(S0, S2, 0), // mtimecmp = 30: the interrupt before the 31st instruction
        asm::addi(A0, A0, 1),
    ];
    code.resize(60, asm::addi(A0, A0, 1));
    code.push(asm::SPIN);
    code.resize(0x200, NOP);
    code.push(asm::csrr(S0, 0x342)); // +0x800: mcause
    code.push(asm::SPIN);
    let make = || {
        let mut h = asm::hart_with_code(Config::virt(Xlen::Rv64), &code);
        h.csr.mtvec = rvtrace_sim::bus::RAM_BASE + 0x800;
        h.csr.mie = 1 << 7;
        h.csr.mstatus |= 1 << 3;
        h.bus.clint.mtimecmp[0] = u64::MAX;
        h
    };
    compare("clint", make, 100, true);
    let mut h = make();
    assert_eq!(h.run(&mut (), 100), Stop::InsnLimit);
    assert_eq!(h.x[T1 as usize], 3);
    assert_eq!(h.csr.mcause, 1 << 63 | 7);
    assert_eq!(h.csr.mepc, rvtrace_sim::bus::RAM_BASE + 4 * 30);
    assert_eq!(h.x[S0 as usize], 1 << 63 | 7);
}

/// Stops the run once `k` instructions retired (an observer's stop request).
struct StopAt {
    n: u64,
    k: u64,
}

impl Observer for StopAt {
    fn retire(&mut self, _ev: &Retired) {
        self.n += 1;
    }
    fn stop_requested(&mut self) -> bool {
        self.n >= self.k
    }
}

/// Retirements as runs (`Observer::RETIRE_RUNS`, as the ingress recorder takes them) and
/// traps, digested; the register, CSR and memory effects in a digest of their own (a run
/// comes after its instructions' effects, so the two streams interleave differently with
/// blocks on and off, but each is the same). Blocks run fused operations for such an
/// observer.
#[derive(Default)]
struct Runs(Digest, Digest);

impl Observer for Runs {
    const RETIRE_RUNS: bool = true;
    fn retire(&mut self, ev: &Retired) {
        self.0.retire(ev);
    }
    fn trap(&mut self, ev: &TrapInfo) {
        self.0.trap(ev);
    }
    fn gpr_write(&mut self, rd: u8, value: u64) {
        self.1.gpr_write(rd, value);
    }
    fn fpr_write(&mut self, rd: u8, value: u64) {
        self.1.fpr_write(rd, value);
    }
    fn csr_write(&mut self, csr: u16, value: u64) {
        self.1.csr_write(csr, value);
    }
    fn mem_access(&mut self, a: &MemAccess) {
        self.1.mem_access(a);
    }
    fn trap_return(&mut self, mstatus: u64, to_priv: u8) {
        self.1.trap_return(mstatus, to_priv);
    }
}

impl Runs {
    /// Both digests and their event counts.
    fn digests(&self) -> [u64; 4] {
        [self.0.h, self.0.n, self.1.h, self.1.n]
    }
}

/// Fused operations (block.rs `fused_ops`, run with no observer): every ordered pair of the
/// operations that fuse (ALU operations, loads, stores, branches taken and not, `jal` in the
/// page, `jalr`), and the fused triples, with an operation often reading what the one before
/// wrote, and with loads and stores that fault in any position (the handler skips them). With
/// no observer, blocks on (fused) and off end in the same state and RAM, also when the run
/// stops (`max_insns`) after any of the first 300 instructions (inside a pair or triple too)
/// and resumes. With observers (no fusion), the same events, state and RAM; an observer's stop
/// request after each of the first 300 instructions stops at the same instruction and the run
/// resumes from there the same; retirements as runs (`RETIRE_RUNS`) are the same, before the
/// trap of a fault after them too.
#[test]
fn fused_ops_fault_and_stop_between_their_halves() {
    use rvtrace_testkit::asm::{i_type, r_type, s_type};
    let mut rng = rvtrace_testkit::Rng(151);
    for rv64 in [false, true] {
        let xlen = if rv64 { Xlen::Rv64 } else { Xlen::Rv32 };
        // x26: `jalr` base, x30: the handler's, x31: data.
        let mut kinds = vec![
            "add", "sub", "and", "xor", "addi", "andi", "slli", "srli", "lw", "lh", "lbu", "sw",
            "sb", "beq", "bne", "blt", "bge", "bltu", "j", "jr",
        ];
        if rv64 {
            kinds.extend([
                "addw", "subw", "mulw", "addiw", "slliw", "srliw", "ld", "sd",
            ]);
        }
        // One instruction of `kind` writing `d` (when it writes), reading `s` as its first
        // source; a load or store at address 0 (access fault) if `fault`; `jr` (after
        // `auipc x26, 0` and one instruction) jumps to the instruction after it.
        let insn = |rng: &mut rvtrace_testkit::Rng, kind: &str, d: u32, s: u32, fault| {
            let s2 = rng.range(0, 25) as u32;
            let imm = rng.range(0, 4095) as i64 - 2048;
            let sh = rng.range(0, if rv64 { 63 } else { 31 }) as i64;
            let (base, off) = if fault { (0, 0) } else { (31, imm >> 4) };
            match kind {
                "add" => r_type(0, s2, s, 0, d, 0x33),
                "sub" => r_type(0x20, s2, s, 0, d, 0x33),
                "and" => r_type(0, s2, s, 7, d, 0x33),
                "xor" => r_type(0, s2, s, 4, d, 0x33),
                "addw" => r_type(0, s2, s, 0, d, 0x3b),
                "subw" => r_type(0x20, s2, s, 0, d, 0x3b),
                "mulw" => r_type(1, s2, s, 0, d, 0x3b),
                "addi" => i_type(imm, s, 0, d, 0x13),
                "andi" => i_type(imm, s, 7, d, 0x13),
                "slli" => i_type(sh, s, 1, d, 0x13),
                "srli" => i_type(sh, s, 5, d, 0x13),
                "addiw" => i_type(imm, s, 0, d, 0x1b),
                "slliw" => i_type(sh & 31, s, 1, d, 0x1b),
                "srliw" => i_type(sh & 31, s, 5, d, 0x1b),
                "lw" => i_type(off, base, 2, d, 0x03),
                "lh" => i_type(off, base, 1, d, 0x03),
                "lbu" => i_type(off, base, 4, d, 0x03),
                "ld" => i_type(off, base, 3, d, 0x03),
                "sw" => s_type(off, s, base, 2),
                "sb" => s_type(off, s, base, 0),
                "sd" => s_type(off, s, base, 3),
                // To the next instruction: taken or not, the run goes on there.
                "beq" => asm::branch(0, s, s2, 4),
                "bne" => asm::branch(1, s, s2, 4),
                "blt" => asm::branch(4, s, s2, 4),
                "bge" => asm::branch(5, s, s2, 4),
                "bltu" => asm::branch(6, s, s2, 4),
                "j" => asm::jal(0, 4),
                _ => asm::jalr(0, 26, 12),
            }
        };
        let mut code = vec![];
        for round in 0..2 {
            for a in &kinds {
                for b in &kinds {
                    let d = rng.range(1, 25) as u32;
                    let s = if rng.chance(50) {
                        d
                    } else {
                        rng.range(0, 25) as u32
                    };
                    // `auipc x26, 0` before the pair: `jr` goes on after it.
                    code.push(auipc(26, 0));
                    let fault_a = round == 1 && rng.chance(30);
                    let (s_a, d_b) = (rng.range(0, 25) as u32, rng.range(1, 25) as u32);
                    code.push(match *a {
                        // `jr` first: to the second.
                        "jr" => asm::jalr(0, 26, 8),
                        _ => insn(&mut rng, a, d, s_a, fault_a),
                    });
                    code.push(insn(&mut rng, b, d_b, s, round == 1));
                }
            }
        }
        // The fused triples, with a fault in any of their loads and stores.
        let triples = [
            "mulw addw bne",
            "sd add bne",
            "ld beq ld",
            "add add bltu",
            "addiw slli add",
            "sb addi addi",
            "sw sw blt",
            "addi xor bne",
            "addi slli add",
            "slli slli srli",
            "srli add add",
            "lh lh addiw",
            "add ld sd",
            "bge lw bltu",
            "addiw slliw j",
            "lw add jr",
            "beq addi j",
            "addiw andi addi",
        ];
        for t in triples.iter().cycle().take(8 * triples.len()) {
            let t: Vec<&str> = t.split(' ').collect();
            if !t.iter().all(|k| kinds.contains(k)) {
                continue;
            }
            code.push(auipc(26, 0));
            let mut d = rng.range(1, 25) as u32;
            for (n, k) in t.into_iter().enumerate() {
                let s = if rng.chance(50) {
                    d
                } else {
                    rng.range(0, 25) as u32
                };
                let fault = rng.chance(30);
                d = rng.range(1, 25) as u32;
                code.push(match (k, n) {
                    // After the third: 16 bytes past `auipc`.
                    ("jr", 2) => asm::jalr(0, 26, 16),
                    _ => insn(&mut rng, k, d, s, fault),
                });
            }
        }
        let spin = code.len();
        code.push(asm::SPIN);
        // The handler: skip the faulting instruction.
        code.resize(0x4000, NOP);
        code.extend([
            asm::csrr(30, 0x341),
            asm::addi(30, 30, 4),
            asm::csrrw(0, 0x341, 30),
            asm::MRET,
        ]);
        let regs: Vec<u64> = (0..32)
            .map(|_| {
                let v = rng.next_u64();
                if rv64 {
                    v
                } else {
                    v as i32 as i64 as u64
                }
            })
            .collect();
        let make = || {
            let mut h = asm::hart_with_code(Config::virt(xlen), &code);
            h.csr.mtvec = rvtrace_sim::bus::RAM_BASE + 0x1_0000;
            h.x[1..26].copy_from_slice(&regs[1..26]);
            h.x[31] = rvtrace_sim::bus::RAM_BASE + 0x2_0000;
            h
        };
        let name = format!("rv64 {rv64}");
        // Past the `spin` at the end: each fault runs the handler's 4 instructions.
        let max = 5 * spin as u64;
        compare(&name, make, max, true);
        let mut h = make();
        h.run(&mut (), max);
        assert_eq!(h.pc, rvtrace_sim::bus::RAM_BASE + 4 * spin as u64, "{name}");
        let mut off = make();
        off.set_blocks(false);
        off.run(&mut (), max);
        // No observer: stopped after `k` instructions (the limit falls inside fused
        // sequences), then the rest.
        for k in 1..300 {
            let mut on = make();
            assert_eq!(on.run(&mut (), k), Stop::InsnLimit, "{name} k {k}");
            let mut part = make();
            part.set_blocks(false);
            part.run(&mut (), k);
            assert_eq!(state(&on), state(&part), "{name} k {k}: state at the limit");
            on.run(&mut (), max - k);
            assert_eq!(state(&on), state(&off), "{name} k {k}: state, no observer");
            if k % 50 == 0 {
                assert_eq!(
                    ram_difference(&on, &off),
                    None,
                    "{name} k {k}: RAM, no observer"
                );
            }
        }
        // Stop requests after every instruction of the first pairs, then the rest.
        for k in 1..300 {
            let (mut on, mut off) = (make(), make());
            off.set_blocks(false);
            let mut d_on = (Digest::default(), StopAt { n: 0, k });
            let mut d_off = (Digest::default(), StopAt { n: 0, k });
            let s_on = on.run(&mut d_on, max);
            let s_off = off.run(&mut d_off, max);
            assert_eq!(
                (s_on, s_off),
                (Stop::Requested, Stop::Requested),
                "{name} k {k}"
            );
            assert_eq!((on.pc, on.instret), (off.pc, off.instret), "{name} k {k}");
            d_on.1.k = u64::MAX;
            d_off.1.k = u64::MAX;
            on.run(&mut d_on, max);
            off.run(&mut d_off, max);
            assert_eq!(d_on.0.h, d_off.0.h, "{name} k {k}: events");
            assert_eq!(state(&on), state(&off), "{name} k {k}: state");
        }
        // Retirements as runs (fused operations) in `compare` above; and stopped by
        // `max_insns` after each of the first 300 instructions, then the rest.
        for k in (1..300).step_by(7) {
            let (mut on, mut off) = (make(), make());
            off.set_blocks(false);
            let (mut r_on, mut r_off) = (Runs::default(), Runs::default());
            on.run(&mut r_on, k);
            off.run(&mut r_off, k);
            assert_eq!(
                state(&on),
                state(&off),
                "{name} k {k}: state at the limit, runs"
            );
            on.run(&mut r_on, max - k);
            off.run(&mut r_off, max - k);
            assert_eq!(r_on.digests(), r_off.digests(), "{name} k {k}: runs");
            assert_eq!(state(&on), state(&off), "{name} k {k}: state, runs");
            assert!(r_on.0.n > spin as u64, "{name}");
        }
    }
}
