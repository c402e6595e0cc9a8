//! Tests that go over many programs or option sets on every core.
//!
//! `cargo test` runs the tests of one binary on parallel threads but the binaries one after
//! another, so a binary whose time is one long test (every program in every option set) keeps
//! one core busy while the others wait. [`par_map`] spreads such a loop over the cores.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// `f` of every item, computed on all cores, in the items' order. A panic in `f` fails the
/// caller (after the other threads stop taking items; the panic's message is printed as usual).
pub fn par_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(items.len());
    if threads <= 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let failed = std::sync::atomic::AtomicBool::new(false);
    let out: Mutex<Vec<Option<R>>> = Mutex::new(items.iter().map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= items.len() || failed.load(Ordering::Relaxed) {
                    break;
                }
                // A panic stops the others at their next item; scope re-raises it.
                let guard = PanicFlag(&failed);
                let r = f(&items[i]);
                std::mem::forget(guard);
                out.lock().unwrap()[i] = Some(r);
            });
        }
    });
    out.into_inner()
        .unwrap()
        .into_iter()
        .map(|r| r.expect("every item computed"))
        .collect()
}

/// Sets its flag when dropped during a panic's unwinding (forgotten otherwise).
struct PanicFlag<'a>(&'a std::sync::atomic::AtomicBool);

impl Drop for PanicFlag<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_order_on_every_item() {
        let items: Vec<u64> = (0..1000).collect();
        assert_eq!(
            par_map(&items, |x| x * x),
            items.iter().map(|x| x * x).collect::<Vec<_>>()
        );
        assert!(par_map(&[] as &[u64], |x| *x).is_empty());
    }

    #[test]
    fn a_panic_fails_the_caller() {
        let items: Vec<u64> = (0..100).collect();
        let r = std::panic::catch_unwind(|| {
            par_map(&items, |&x| {
                assert_ne!(x, 57, "item 57");
                x
            })
        });
        assert!(r.is_err());
    }
}
