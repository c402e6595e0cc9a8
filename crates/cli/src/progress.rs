//! Progress on long work (`run`, `encode`, `decode`, `tandem check`), drawn on stderr only when
//! stderr is a terminal: nothing at all when it is piped or redirected, so scripts and logs see
//! exactly the lines they saw before.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
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
        if let Some(b) = self.0 {
            b.finish_and_clear();
        }
    }
}
