//! Progress on long work (`run`, `encode`, `decode`, `tandem check`), drawn on stderr only when
//! stderr is a terminal: nothing at all when it is piped or redirected, so scripts and logs see
//! exactly the lines they saw before.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{IsTerminal, Read};
use std::time::Duration;

/// A progress bar, or nothing when stderr is not a terminal.
pub struct Progress(Option<ProgressBar>);

impl Progress {
    /// Progress through `total` bytes of input (`what`: a short label such as "decode").
    pub fn bytes(what: &str, total: u64) -> Progress {
        Progress::make(
            total,
            &format!("{what} {{bar:30}} {{bytes}}/{{total_bytes}} {{bytes_per_sec}} eta {{eta}}"),
        )
    }

    /// Progress counting items (`unit`: "instructions", "groups"); `total` when known.
    pub fn count(what: &str, unit: &str, total: Option<u64>) -> Progress {
        match total {
            Some(t) => Progress::make(
                t,
                &format!("{what} {{bar:30}} {{human_pos}}/{{human_len}} {unit} eta {{eta}}"),
            ),
            None => Progress::make_spinner(&format!(
                "{what} {{spinner}} {{human_pos}} {unit} ({{per_sec}})"
            )),
        }
    }

    /// No progress shown.
    pub fn none() -> Progress {
        Progress(None)
    }

    fn enabled() -> bool {
        std::io::stderr().is_terminal()
    }

    fn make(total: u64, template: &str) -> Progress {
        if !Progress::enabled() {
            return Progress(None);
        }
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style);
        }
        Progress(Some(bar))
    }

    fn make_spinner(template: &str) -> Progress {
        if !Progress::enabled() {
            return Progress(None);
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style);
        }
        bar.enable_steady_tick(Duration::from_millis(200));
        Progress(Some(bar))
    }

    /// Set the position (bytes or items done).
    #[inline]
    pub fn set(&self, pos: u64) {
        if let Some(b) = &self.0 {
            b.set_position(pos);
        }
    }

    /// Remove the bar (before the command's final lines are printed).
    pub fn finish(self) {
        drop(self)
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(b) = &self.0 {
            b.finish_and_clear();
        }
    }
}

/// A reader that shows how far through its input it is (a bar when the size is known).
pub struct ProgressRead<R> {
    inner: R,
    bar: Progress,
    done: u64,
    shown: u64,
}

impl<R: Read> ProgressRead<R> {
    /// Wrap `inner`, `total` bytes long if known; `what` labels the bar.
    pub fn new(inner: R, what: &str, total: Option<u64>) -> ProgressRead<R> {
        let bar = match total {
            Some(t) => Progress::bytes(what, t),
            None => Progress::count(what, "bytes", None),
        };
        ProgressRead {
            inner,
            bar,
            done: 0,
            shown: 0,
        }
    }
}

impl<R: Read> Read for ProgressRead<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.done += n as u64;
        if self.done - self.shown >= 1 << 20 {
            self.shown = self.done;
            self.bar.set(self.done);
        }
        Ok(n)
    }
}
