//! Progress displays on standard error: [`Bar`] for the analyses (it
//! appears only after a second, and only on a terminal) and, with the
//! `record` feature, the display of `contend scale`.

use std::io::IsTerminal;
use std::time::Duration;

use contend::Progress;

#[cfg(feature = "record")]
pub use scale::ScaleBar;

/// A progress indicator on stderr that appears only once the analysis has
/// taken more than a second, and only on a terminal: a timer thread turns
/// it on, then a steady tick keeps the stage name and elapsed time moving
/// even while one long stage runs.
pub struct Bar {
    bar: indicatif::ProgressBar,
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Bar {
    pub fn new() -> Bar {
        let bar = indicatif::ProgressBar::hidden();
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} {msg:28} [{bar:30}] {pos}/{len} {elapsed}",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        if std::io::stderr().is_terminal() {
            let (bar, done) = (bar.clone(), done.clone());
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_secs(1));
                if !done.load(std::sync::atomic::Ordering::Acquire) {
                    bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
                    bar.enable_steady_tick(Duration::from_millis(120));
                }
            });
        }
        Bar { bar, done }
    }
    pub fn finish(&self) {
        self.done.store(true, std::sync::atomic::Ordering::Release);
        self.bar.finish_and_clear();
    }
}

impl Progress for Bar {
    fn stage(&self, name: &str, total: u64) {
        self.bar.set_message(name.to_string());
        self.bar.set_length(total.max(1));
        self.bar.set_position(0);
    }
    fn advance(&self, n: u64) {
        self.bar.inc(n);
    }
}

/// The display of `contend scale`.
#[cfg(feature = "record")]
mod scale {
    use std::io::{IsTerminal, Write};
    use std::os::fd::AsFd;
    use std::time::Duration;

    use anyhow::{Context, Result};

    /// The progress display of `contend scale`: runs done and time left, on
    /// stderr after one second and only on a terminal.
    ///
    /// While a run is made, the program's output is redirected to files by
    /// pointing descriptors 1 and 2 at them, so the bar and the messages are
    /// written to a copy of the terminal's descriptor taken before the
    /// experiment starts.
    pub struct ScaleBar {
        bar: indicatif::ProgressBar,
        term: Option<std::sync::Arc<std::fs::File>>,
        done: std::sync::Arc<std::sync::atomic::AtomicBool>,
    }

    impl ScaleBar {
        pub fn new(own_terminal: bool) -> Result<ScaleBar> {
            let term = if own_terminal {
                let fd = std::io::stderr()
                    .as_fd()
                    .try_clone_to_owned()
                    .context("cannot duplicate standard error")?;
                Some(std::sync::Arc::new(std::fs::File::from(fd)))
            } else {
                None
            };
            let bar = indicatif::ProgressBar::hidden();
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{spinner} {msg:20} [{bar:30}] {pos}/{len} runs, {eta} left",
                )
                .expect("valid template")
                .progress_chars("=> "),
            );
            let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let tty = match &term {
                Some(t) => t.is_terminal(),
                None => std::io::stderr().is_terminal(),
            };
            if tty && own_terminal {
                let (bar, done, term) = (bar.clone(), done.clone(), term.clone());
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_secs(1));
                    if !done.load(std::sync::atomic::Ordering::Acquire) {
                        let target = match term {
                            Some(t) => {
                                indicatif::ProgressDrawTarget::term_like(Box::new(TtyTerm(t)))
                            }
                            None => indicatif::ProgressDrawTarget::stderr(),
                        };
                        bar.set_draw_target(target);
                        bar.enable_steady_tick(Duration::from_millis(120));
                    }
                });
            }
            Ok(ScaleBar { bar, term, done })
        }

        /// Prints a line to the terminal (above the bar while it shows).
        pub fn say(&self, text: &str) {
            self.bar.suspend(|| match &self.term {
                Some(t) => {
                    let _ = writeln!(&**t, "{text}");
                }
                None => eprintln!("{text}"),
            });
        }

        pub fn finish(&self) {
            self.done.store(true, std::sync::atomic::Ordering::Release);
            self.bar.finish_and_clear();
        }
    }

    impl contend_record::scale_run::ScaleProgress for ScaleBar {
        fn begin(&self, runs: &[contend_record::scale_run::PlannedRun]) {
            self.bar.set_length(runs.len() as u64);
            self.bar.set_position(0);
        }
        fn run_started(&self, _index: usize, run: &contend_record::scale_run::PlannedRun) {
            self.bar.set_message(run.dir.clone());
        }
        fn run_finished(&self, _index: usize, _run: &contend_trace::scale::ScaleRun) {
            self.bar.inc(1);
        }
        fn warning(&self, text: &str) {
            self.say(&format!("contend: warning: {text}"));
        }
    }

    /// A terminal reached through our own copy of its descriptor (see
    /// [`ScaleBar`]), for indicatif. The width comes from `COLUMNS`, else 80.
    #[derive(Debug)]
    struct TtyTerm(std::sync::Arc<std::fs::File>);

    impl TtyTerm {
        fn put(&self, s: &str) -> std::io::Result<()> {
            (&*self.0).write_all(s.as_bytes())
        }
    }

    impl indicatif::TermLike for TtyTerm {
        fn width(&self) -> u16 {
            std::env::var("COLUMNS")
                .ok()
                .and_then(|c| c.parse().ok())
                .unwrap_or(80)
        }
        fn move_cursor_up(&self, n: usize) -> std::io::Result<()> {
            if n > 0 {
                self.put(&format!("\x1b[{n}A"))?;
            }
            Ok(())
        }
        fn move_cursor_down(&self, n: usize) -> std::io::Result<()> {
            if n > 0 {
                self.put(&format!("\x1b[{n}B"))?;
            }
            Ok(())
        }
        fn move_cursor_right(&self, n: usize) -> std::io::Result<()> {
            if n > 0 {
                self.put(&format!("\x1b[{n}C"))?;
            }
            Ok(())
        }
        fn move_cursor_left(&self, n: usize) -> std::io::Result<()> {
            if n > 0 {
                self.put(&format!("\x1b[{n}D"))?;
            }
            Ok(())
        }
        fn write_line(&self, s: &str) -> std::io::Result<()> {
            self.put(s)?;
            self.put("\n")
        }
        fn write_str(&self, s: &str) -> std::io::Result<()> {
            self.put(s)
        }
        fn clear_line(&self) -> std::io::Result<()> {
            self.put("\r\x1b[2K")
        }
        fn flush(&self) -> std::io::Result<()> {
            (&*self.0).flush()
        }
    }
}
