//! Property: with every mode enabled and NTBREN set (nothing inhibited, no privilege
//! transition partial), the CTR holds exactly the last `depth` control transfers of the
//! retired-instruction stream ("Behavior": every qualified transfer pushes logical entry 0).
//! The reference list is built from the hart's observer events, independently of the
//! extension's event hooks, over random programs (`rvtrace_testkit::randprog`: calls,
//! returns, swaps, branches, traps that retire and that do not, timer interrupts, U-mode).

use rvtrace_ctr::{csr, ctl, Ctr};
use rvtrace_image::Image;
use rvtrace_isa::{CfClass, Xlen};
use rvtrace_sim::decode::{decode, Extensions, Op};
use rvtrace_sim::{Config, Hart, Observer, Retired, Stop, TrapInfo};

/// Every transfer as (source, target, CTR type), in order; not-taken branches only on RV64
/// (NTBREN is bit 35 of `mctrctl`, which RV32 cannot write: note in "CSR Listing").
struct Transfers {
    list: Vec<(u64, u64, u8)>,
    xlen: Xlen,
    ext: Extensions,
    /// The integer registers, followed through the observer's writes (XLEN-truncated).
    x: [u64; 32],
}

impl Transfers {
    fn new(h: &Hart) -> Transfers {
        let mut t = Transfers {
            list: Vec::new(),
            xlen: h.xlen,
            ext: h.ext,
            x: [0; 32],
        };
        for r in 1..32 {
            t.gpr_write(r, h.x[r as usize]);
        }
        t
    }

    /// Whether the branch `ev` was taken: a branch whose offset equals its length continues
    /// at pc+len either way, so its condition decides (on the registers before it: a branch
    /// writes none).
    fn taken(&self, ev: &Retired) -> bool {
        if ev.next_pc != ev.pc.wrapping_add(ev.len as u64) {
            return true;
        }
        let i = decode(ev.insn, self.xlen, &self.ext);
        if i.imm != ev.len as i32 {
            return false;
        }
        let (a, b) = (self.x[i.rs1 as usize], self.x[i.rs2 as usize]);
        let sh = 64 - self.xlen.bits();
        let (sa, sb) = ((a << sh) as i64 >> sh, (b << sh) as i64 >> sh);
        match i.op {
            Op::Beq => a == b,
            Op::Bne => a != b,
            Op::Blt => sa < sb,
            Op::Bge => sa >= sb,
            Op::Bltu => a < b,
            Op::Bgeu => a >= b,
            other => panic!("not a branch: {other:?}"),
        }
    }
}

impl Observer for Transfers {
    fn gpr_write(&mut self, rd: u8, value: u64) {
        self.x[rd as usize & 31] = match self.xlen {
            Xlen::Rv64 => value,
            Xlen::Rv32 => value & 0xffff_ffff,
        };
    }
    fn retire(&mut self, ev: &Retired) {
        if let Some(t) = ev.trap {
            // `ecall`/`ebreak` retiring with their exception.
            self.list.push((t.epc, t.handler, 1));
            return;
        }
        // Table "Control Transfer Type Definitions".
        let t = match ev.class {
            CfClass::None | CfClass::EnvTrap => return,
            CfClass::TrapReturn => 3,
            CfClass::Branch if self.taken(ev) => 5,
            CfClass::Branch if self.xlen == Xlen::Rv32 => return,
            CfClass::Branch => 4,
            CfClass::UninferableCall => 8,
            CfClass::InferableCall | CfClass::TableCall => 9,
            CfClass::UninferableJump => 10,
            CfClass::InferableJump | CfClass::TableJump => 11,
            CfClass::CoroutineSwap => 12,
            CfClass::Return | CfClass::PopRet => 13,
            CfClass::OtherUninferableJump => 14,
            CfClass::OtherInferableJump => 15,
        };
        self.list.push((ev.pc, ev.next_pc, t));
    }
    fn trap(&mut self, ev: &TrapInfo) {
        self.list
            .push((ev.epc, ev.handler, if ev.interrupt { 2 } else { 1 }));
    }
}

fn hart(elf: &[u8]) -> Hart {
    let mut image = Image::new();
    image.load_bytes("prog.elf", elf).unwrap();
    let mut cfg = Config::virt(image.files()[0].xlen, "prog.elf");
    cfg.semihosting_cmdline = None;
    let mut h = Hart::new(&cfg);
    h.load(&image).unwrap();
    rvtrace_testkit::quiet_semihost(&mut h, &image, "prog.elf");
    h
}

#[test]
fn entries_are_the_last_transfers_of_the_stream() {
    for seed in rvtrace_testkit::randprog::seeds(40) {
        let p = rvtrace_testkit::randprog::random_program(seed);
        for depth_code in [0u64, 4] {
            let mut h = hart(&p.elf);
            h.attach(Box::new(Ctr::default()));
            assert!(h.csr_write(csr::SCTRDEPTH, depth_code));
            assert!(h.csr_write(csr::MCTRCTL, ctl::U | ctl::S | ctl::M | ctl::NTBREN));
            let mut obs = Transfers::new(&h);
            let stop = h.run(&mut obs, 50_000_000);
            assert_eq!(stop, Stop::Exit(0), "seed {seed}");
            let c = h.extension_mut::<Ctr>().unwrap();
            let depth = c.depth();
            let got: Vec<_> = (0..depth)
                .map(|x| c.entry(x))
                .take_while(|e| e.valid())
                .map(|e| (e.source_pc(), e.target_pc(), e.ty()))
                .collect();
            let want: Vec<_> = obs.list.iter().rev().take(depth).copied().collect();
            assert_eq!(got, want, "seed {seed}, depth {depth}");
            assert_eq!(
                c.wrptr(),
                obs.list.len() as u64 % depth as u64,
                "seed {seed}"
            );
        }
    }
}
