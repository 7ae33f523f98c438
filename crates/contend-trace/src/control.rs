//! The recording's control page (`DIR/control`): how the launcher limits a
//! recording in time and size while the program runs.
//!
//! One definition of the layout lives in
//! `collector/include/contend/trace_format.h` (`contend_control`); this
//! module mirrors it. The launcher creates the page before the program
//! starts and names it in `CONTEND_CONTROL`; every traced process maps it
//! shared. Processes record lock operations only while `enabled` is 1: the
//! launcher sets it at the window's start (`record --start-after`) and
//! clears it at its end (`--duration`); the process whose chunk claim
//! would pass `max_bytes` (`--max-size`) writes `capped_ns` and clears
//! `enabled` for all. Nothing here is read by the analyses: the launcher
//! copies what happened into `meta.json` ([`crate::meta::RecordLimits`]).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// File name of the control page in a recording directory.
pub const FILE_NAME: &str = "control";
/// `contend_control.magic`.
pub const MAGIC: &[u8; 8] = b"CNTDCTRL";
/// `contend_control.version`.
pub const VERSION: u32 = 1;
/// Size of the page, bytes.
pub const SIZE: usize = 4096;

/// Byte offset of `version` (u32).
pub const OFF_VERSION: u64 = 8;
/// Byte offset of `enabled` (u32).
pub const OFF_ENABLED: u64 = 12;
/// Byte offset of `max_bytes` (u64).
pub const OFF_MAX_BYTES: u64 = 16;
/// Byte offset of `claimed_bytes` (u64).
pub const OFF_CLAIMED: u64 = 24;
/// Byte offset of `capped_ns` (u64).
pub const OFF_CAPPED: u64 = 32;
/// Byte offset of `reserved` (to the end of the page).
pub const OFF_RESERVED: u64 = 40;

/// What the page says at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ControlState {
    /// Processes record now.
    pub enabled: bool,
    /// The cap on chunk bytes of all processes together, bytes; 0 = none.
    pub max_bytes: u64,
    /// Chunk bytes claimed so far (including the claim that passed the
    /// cap), bytes.
    pub claimed_bytes: u64,
    /// CLOCK_MONOTONIC ns when a claim would have passed the cap; `None`
    /// while it has not.
    pub capped_ns: Option<u64>,
}

/// The launcher's handle on a control page.
#[derive(Debug)]
pub struct ControlPage {
    file: File,
}

impl ControlPage {
    /// Creates the page at `path` (it must not exist), fully written (a
    /// shared mapping of it never faults on a full disk), with `enabled`
    /// and `max_bytes` (0 = no cap).
    ///
    /// # Errors
    /// The file cannot be created or written.
    pub fn create(path: &Path, enabled: bool, max_bytes: u64) -> io::Result<ControlPage> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)?;
        let mut page = vec![0u8; SIZE];
        page[..8].copy_from_slice(MAGIC);
        page[8..12].copy_from_slice(&VERSION.to_ne_bytes());
        page[12..16].copy_from_slice(&u32::from(enabled).to_ne_bytes());
        page[16..24].copy_from_slice(&max_bytes.to_ne_bytes());
        file.write_all_at(&page, 0)?;
        file.sync_all()?;
        Ok(ControlPage { file })
    }

    /// Sets `enabled`. Turning recording on after the cap was reached
    /// leaves it off (returns `Ok(false)`).
    ///
    /// # Errors
    /// The page cannot be read or written.
    pub fn set_enabled(&self, on: bool) -> io::Result<bool> {
        if on && self.state()?.capped_ns.is_some() {
            return Ok(false);
        }
        self.file
            .write_all_at(&u32::from(on).to_ne_bytes(), OFF_ENABLED)?;
        Ok(on)
    }

    /// The page now.
    ///
    /// # Errors
    /// The page cannot be read, or is not a control page.
    pub fn state(&self) -> io::Result<ControlState> {
        let mut page = [0u8; 40];
        self.file.read_exact_at(&mut page, 0)?;
        parse(&page)
    }

    /// Reads the page at `path`.
    ///
    /// # Errors
    /// The file cannot be read or is not a control page.
    pub fn read(path: &Path) -> io::Result<ControlState> {
        let mut page = [0u8; 40];
        File::open(path)?.read_exact_at(&mut page, 0)?;
        parse(&page)
    }
}

fn u32_at(b: &[u8], off: u64) -> u32 {
    let o = off as usize;
    u32::from_ne_bytes(b[o..o + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], off: u64) -> u64 {
    let o = off as usize;
    u64::from_ne_bytes(b[o..o + 8].try_into().expect("8 bytes"))
}

fn parse(page: &[u8; 40]) -> io::Result<ControlState> {
    if &page[..8] != MAGIC || u32_at(page, OFF_VERSION) != VERSION {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "not a contend control page (magic or version)",
        ));
    }
    let capped = u64_at(page, OFF_CAPPED);
    Ok(ControlState {
        enabled: u32_at(page, OFF_ENABLED) != 0,
        max_bytes: u64_at(page, OFF_MAX_BYTES),
        claimed_bytes: u64_at(page, OFF_CLAIMED),
        capped_ns: (capped != 0).then_some(capped),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_toggle_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(FILE_NAME);
        let page = ControlPage::create(&p, false, 1 << 20).unwrap();
        assert_eq!(std::fs::metadata(&p).unwrap().len(), SIZE as u64);
        let s = ControlPage::read(&p).unwrap();
        assert!(!s.enabled);
        assert_eq!(s.max_bytes, 1 << 20);
        assert_eq!(s.capped_ns, None);
        assert!(page.set_enabled(true).unwrap());
        assert!(page.state().unwrap().enabled);
        // a collector reached the cap: recording cannot be turned on again
        let f = OpenOptions::new().write(true).open(&p).unwrap();
        f.write_all_at(&77u64.to_ne_bytes(), OFF_CAPPED).unwrap();
        f.write_all_at(&0u32.to_ne_bytes(), OFF_ENABLED).unwrap();
        assert!(!page.set_enabled(true).unwrap());
        let s = page.state().unwrap();
        assert_eq!((s.enabled, s.capped_ns), (false, Some(77)));
        assert!(ControlPage::create(&p, true, 0).is_err(), "never replaced");
    }

    #[test]
    fn another_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x");
        std::fs::write(&p, vec![0u8; SIZE]).unwrap();
        assert_eq!(
            ControlPage::read(&p).unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );
    }
}
