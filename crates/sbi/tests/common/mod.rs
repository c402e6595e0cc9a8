//! A hart with the built-in SBI attached, entered in S-mode, and helpers that make SBI calls
//! with a real `ecall` executed by the hart at S-mode.
#![allow(dead_code)]

use rvtrace_isa::Xlen;
use rvtrace_sbi::{enter_supervisor, Sbi, SbiConfig};
use rvtrace_sim::{Config, Hart, Stop};
use std::io::Write;
use std::sync::{Arc, Mutex};

pub const BASE: u64 = 0x8000_0000;
/// Where `call` places its `ecall`.
pub const CALL_AT: u64 = BASE;
/// Where `exec` places its instructions.
pub const CODE_AT: u64 = BASE + 0x1000;
/// S-mode trap handler: nops.
pub const HANDLER: u64 = BASE + 0x8000;
/// A free page for shared memory.
pub const SHMEM: u64 = BASE + 0x10000;
/// A buffer for console data.
pub const BUF: u64 = BASE + 0x20000;

pub use rvtrace_testkit::asm::{csrr, ECALL, NOP};

/// Console output captured by a test.
#[derive(Clone, Default)]
pub struct Captured(pub Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

/// A hart (RAM as QEMU `virt`) with the SBI attached, console captured, input `input`,
/// entered in S-mode at `CALL_AT`; the S trap handler is a field of nops.
pub fn sbi_hart(xlen: Xlen, input: &[u8]) -> (Hart, Captured) {
    let c = Config::virt(xlen);
    let mut h = Hart::new(&c);
    let out = Captured::default();
    h.attach(Box::new(Sbi::new(SbiConfig {
        console: Box::new(out.clone()),
        input: rvtrace_sbi::ConsoleInput::Reader(Box::new(std::io::Cursor::new(input.to_vec()))),
    })));
    let nops: Vec<u8> = std::iter::repeat_n(NOP.to_le_bytes(), 1024)
        .flatten()
        .collect();
    assert!(h.bus.write_ram(HANDLER, &nops));
    h.bus.clint.mtimecmp[0] = u64::MAX;
    enter_supervisor(&mut h, CALL_AT, 0x87e0_0000);
    h.csr.stvec = HANDLER;
    (h, out)
}

/// Make one SBI call: `a7` = eid, `a6` = fid, `a0..` = args, one `ecall` at S-mode. Returns
/// (`a0`, `a1`) XLEN-truncated and how the run step ended.
pub fn call_stop(h: &mut Hart, eid: u64, fid: u64, args: &[u64]) -> (u64, u64, Stop) {
    assert!(h.bus.write_ram(CALL_AT, &ECALL.to_le_bytes()));
    h.pc = CALL_AT;
    assert_eq!(h.priv_, 1, "SBI calls are made from S-mode");
    for r in 10..16 {
        h.x[r] = 0x5a5a_5a5a; // garbage in unused argument registers
    }
    for (k, &a) in args.iter().enumerate() {
        h.x[10 + k] = h.sext(a);
    }
    h.x[16] = h.sext(fid);
    h.x[17] = h.sext(eid);
    let stop = h.run(&mut (), 1);
    (h.trunc(h.x[10]), h.trunc(h.x[11]), stop)
}

/// [`call_stop`] for a call that returns: (error as i64, value).
pub fn call(h: &mut Hart, eid: u64, fid: u64, args: &[u64]) -> (i64, u64) {
    let (a0, a1, stop) = call_stop(h, eid, fid, args);
    assert_eq!(stop, Stop::InsnLimit, "eid {eid:#x} fid {fid}");
    assert_eq!(h.pc, CALL_AT + 4, "the ecall retired without a trap");
    let err = match h.xlen {
        Xlen::Rv64 => a0 as i64,
        Xlen::Rv32 => a0 as u32 as i32 as i64,
    };
    (err, a1)
}

/// Run `code` at `CODE_AT` in the current mode, all of it.
pub fn exec(h: &mut Hart, code: &[u32]) {
    assert!(h.bus.write_ram(CODE_AT, &rvtrace_testkit::asm::bytes(code)));
    h.pc = CODE_AT;
    assert_eq!(h.run(&mut (), code.len() as u64), Stop::InsnLimit);
}

/// Read a CSR the way S-mode does (a `csrr` executed at S); `None` if it traps.
pub fn s_read(h: &mut Hart, csr: u16) -> Option<u64> {
    let scause = h.csr.scause;
    h.csr.scause = 0;
    exec(h, &[csrr(10, csr)]);
    let trapped = h.csr.scause != 0;
    if trapped {
        h.priv_ = 1;
    } else {
        h.csr.scause = scause;
    }
    (!trapped).then(|| h.trunc(h.x[10]))
}

pub fn read_u64(h: &Hart, addr: u64) -> u64 {
    let mut b = [0u8; 8];
    assert!(h.read_memory(addr, &mut b));
    u64::from_le_bytes(b)
}
