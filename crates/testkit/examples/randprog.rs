//! Write the random test program of a seed as an ELF file, to look at it with other tools:
//! `cargo run -p rvtrace-testkit --example randprog -- SEED OUT.elf`.

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(seed), Some(out)) = (args.get(1).and_then(|s| s.parse().ok()), args.get(2)) else {
        eprintln!("usage: randprog SEED OUT.elf");
        std::process::exit(2);
    };
    let p = rvtrace_testkit::randprog::random_program(seed);
    if let Err(e) = std::fs::write(out, &p.elf) {
        eprintln!("{out}: {e}");
        std::process::exit(1);
    }
    eprintln!("{:?}, at most {} instructions", p.shape, p.max_insns);
}
