//! The futex tracer: every futex call of the target, seen by the kernel's
//! `syscalls:sys_enter_futex` and `syscalls:sys_exit_futex` tracepoints
//! (and `sys_enter_futex_waitv` / `sys_exit_futex_waitv` where the kernel
//! has them) through `perf_event_open(2)`, with the user call chain of each entry
//! (`PERF_SAMPLE_CALLCHAIN`) and CLOCK_MONOTONIC timestamps
//! (`use_clockid`), so that they line up with the rest of the recording.
//! It sees what the collector's interposed `syscall()` cannot: inline
//! system calls, statically linked programs, Go's runtime, and a running
//! process (`contend record -p PID`).
//!
//! The events live in the probe session ([`crate::probes`]): one event per
//! thread and CPU (inherited by the threads the target starts), written
//! into the session's per-CPU ring buffers and drained by its helper
//! thread, which pairs each thread's entry with its exit ([`Pairing`]) and
//! writes the calls to `futex/calls.cftx` ([`contend_trace::futex_calls`]).
//!
//! Who may: the syscall tracepoints may be sampled on one's own processes
//! (they are marked for any user), but the tracepoint ids are read from
//! tracefs (`/sys/kernel/tracing`, root-only by default) and events that
//! fire in the kernel need `kernel.perf_event_paranoid` ≤ 1 or
//! `CAP_PERFMON`. When not allowed, [`not_allowed`] says so and what to
//! change; the recording goes on without them.

use contend_trace::futex_calls::{FutexCall, MAX_FRAMES};
use rustc_hash::FxHashMap;

/// When the futex tracer runs (`contend record --futex-trace`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FutexTraceMode {
    /// For a statically linked target (instead of refusing it; refused
    /// as before, with the reason, when the tracepoints are not allowed)
    /// and for `contend record -p PID`; otherwise the collector's
    /// interposed `syscall()` records the futex calls.
    #[default]
    Auto,
    /// Always (a dynamically linked target's futex calls then come from
    /// the tracepoints, and the collector's futex records are not used).
    On,
    /// Never.
    Off,
}

impl FutexTraceMode {
    /// Why the tracer runs for a target (shown in `futex/futex.json`), or
    /// `None` when it does not. `static_target`: the program is statically
    /// linked; `attach`: `contend record -p`.
    pub fn reason(self, static_target: bool, attach: bool) -> Option<String> {
        match self {
            FutexTraceMode::Off => None,
            FutexTraceMode::On => Some("--futex-trace on".into()),
            FutexTraceMode::Auto if attach => Some("attached to a running process".into()),
            FutexTraceMode::Auto if static_target => Some("statically linked target".into()),
            FutexTraceMode::Auto => None,
        }
    }
}

/// Whether this user may use the futex tracepoints here: the ids are
/// readable and the kernel accepts `sys_enter_futex` with a user call
/// chain on this very process (opened disabled and closed at once).
/// Errors: the sentence of [`tracepoint_ids`] or [`not_allowed`].
pub fn check_allowed() -> Result<(), String> {
    let (enter, _) = tracepoint_ids()?;
    crate::probes::try_tracepoint(enter)
        .map_err(|e| not_allowed(e, "perf_event_open of syscalls:sys_enter_futex"))
}

/// The ids of `syscalls:sys_enter_futex` and `syscalls:sys_exit_futex`
/// from tracefs. Errors: a sentence naming the cause and what to change
/// (not allowed to read tracefs, tracefs not mounted, a kernel without
/// syscall tracepoints).
pub fn tracepoint_ids() -> Result<(u64, u64), String> {
    let mut denied = None;
    for base in crate::tracefs::places() {
        let dir = base.join("events/syscalls");
        let read = |name: &str| -> Result<u64, std::io::Error> {
            let text = std::fs::read_to_string(dir.join(name).join("id"))?;
            text.trim()
                .parse()
                .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))
        };
        match (read("sys_enter_futex"), read("sys_exit_futex")) {
            (Ok(a), Ok(b)) => return Ok((a, b)),
            (Err(e), _) | (_, Err(e)) => {
                if matches!(e.raw_os_error(), Some(libc::EACCES | libc::EPERM)) {
                    denied = e.raw_os_error();
                }
            }
        }
    }
    if let Some(errno) = denied {
        return Err(not_allowed(errno, "reading the tracepoint ids in tracefs"));
    }
    if let crate::tracefs::Mount::Missing(why) = crate::tracefs::ensure_mounted() {
        return Err(format!(
            "the futex tracepoints cannot be used: {why} \
             (as root: `mount -t tracefs nodev /sys/kernel/tracing`)"
        ));
    }
    Err("the futex tracepoints cannot be used: this kernel has no \
         syscalls:sys_enter_futex tracepoint (CONFIG_FTRACE_SYSCALLS)"
        .into())
}

/// The ids of `syscalls:sys_enter_futex_waitv` and `sys_exit_futex_waitv`
/// (Linux 5.16 and later), traced beside the futex tracepoints where the
/// kernel has them; `None` where it has not (or tracefs is not readable:
/// [`tracepoint_ids`] says so for the futex tracepoints themselves).
pub fn waitv_tracepoint_ids() -> Option<(u64, u64)> {
    crate::tracefs::places().find_map(|base| {
        let dir = base.join("events/syscalls");
        let read = |name: &str| -> Option<u64> {
            std::fs::read_to_string(dir.join(name).join("id"))
                .ok()?
                .trim()
                .parse()
                .ok()
        };
        Some((
            read("sys_enter_futex_waitv")?,
            read("sys_exit_futex_waitv")?,
        ))
    })
}

/// The op word of a traced `futex_waitv(2)` call in
/// [`FutexCall::op`]: the trace format's `CMD_WAITV` (no futex op has that
/// value: command 127 is not one). Its `uaddr` is the waiter array and its
/// `val` the number of waiters, as in the collector's records.
pub const OP_WAITV: u32 = contend_trace::format::futex::CMD_WAITV as u32;

/// The message when the kernel refuses the futex tracepoints (`errno`
/// EACCES or EPERM; others are described as they are), naming the user,
/// `kernel.perf_event_paranoid` and what to change.
pub fn not_allowed(errno: i32, what: &str) -> String {
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".into());
    // SAFETY: plain system call.
    let euid = unsafe { libc::geteuid() };
    not_allowed_text(errno, what, euid, &paranoid)
}

/// [`not_allowed`] with the user and the paranoia level given (for tests).
pub fn not_allowed_text(errno: i32, what: &str, euid: u32, paranoid: &str) -> String {
    match errno {
        libc::EACCES | libc::EPERM => format!(
            "futex waits are not traced: not allowed to use the futex tracepoints ({what}: {}; contend runs as \
             uid {euid} and kernel.perf_event_paranoid is {paranoid}). Run contend as root, or give it \
             CAP_PERFMON, or `sysctl kernel.perf_event_paranoid=-1` and make /sys/kernel/tracing readable \
             to this user",
            if errno == libc::EACCES { "EACCES" } else { "EPERM" }
        ),
        _ => format!(
            "futex waits are not traced: {what} failed: {}",
            std::io::Error::from_raw_os_error(errno)
        ),
    }
}

/// The entry of a `sys_enter_futex` sample (its raw data, format of
/// `events/syscalls/sys_enter_futex/format`: uaddr at 16, op at 24, val at
/// 32, each 8 bytes); `None` when too short.
pub fn parse_enter(raw: &[u8]) -> Option<(u64, u32, u32)> {
    let at = |i: usize| {
        raw.get(i..i + 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
    };
    Some((at(16)?, at(24)? as u32, at(32)? as u32))
}

/// The entry of a `sys_enter_futex_waitv` sample (format of
/// `events/syscalls/sys_enter_futex_waitv/format`: waiters at 16,
/// nr_futexes at 24, each 8 bytes) as (waiter array, [`OP_WAITV`], number
/// of waiters); `None` when too short.
pub fn parse_enter_waitv(raw: &[u8]) -> Option<(u64, u32, u32)> {
    let at = |i: usize| {
        raw.get(i..i + 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
    };
    Some((at(16)?, OP_WAITV, at(24)? as u32))
}

/// The return value of a `sys_exit_futex` (or `sys_exit_futex_waitv`) sample (`ret` at 16).
pub fn parse_exit(raw: &[u8]) -> Option<i64> {
    raw.get(16..24)
        .map(|b| i64::from_le_bytes(b.try_into().unwrap()))
}

/// The user frames of a call chain: its context markers
/// (`PERF_CONTEXT_USER`, …, the top 4095 values) dropped.
pub fn user_frames(chain: &[u64]) -> Vec<u64> {
    chain
        .iter()
        .copied()
        .filter(|&a| a < (-4095i64) as u64 && a != 0)
        .take(MAX_FRAMES)
        .collect()
}

/// Pairs each thread's futex entries with their exits.
#[derive(Debug, Default)]
pub struct Pairing {
    open: FxHashMap<u32, FutexCall>,
    /// An exit processed before its entry (its record reached the rings
    /// later than the processing watermark allowed for): time, raw data.
    early_exit: FxHashMap<u32, (u64, Vec<u8>)>,
    /// Exits without an entry (the tracer started inside the call).
    pub unpaired_exits: u64,
}

impl Pairing {
    /// A thread entered a futex call; the call, when its exit was seen
    /// first.
    pub fn enter(
        &mut self,
        pid: u32,
        tid: u32,
        time_ns: u64,
        raw: &[u8],
        chain: &[u64],
    ) -> Option<FutexCall> {
        self.enter_parsed(pid, tid, time_ns, parse_enter(raw)?, chain)
    }

    /// A thread entered `futex_waitv(2)` (a `sys_enter_futex_waitv`
    /// sample); as [`Pairing::enter`]. The two calls cannot overlap on
    /// one thread, so they pair with the same exits.
    pub fn enter_waitv(
        &mut self,
        pid: u32,
        tid: u32,
        time_ns: u64,
        raw: &[u8],
        chain: &[u64],
    ) -> Option<FutexCall> {
        self.enter_parsed(pid, tid, time_ns, parse_enter_waitv(raw)?, chain)
    }

    fn enter_parsed(
        &mut self,
        pid: u32,
        tid: u32,
        time_ns: u64,
        (uaddr, op, val): (u64, u32, u32),
        chain: &[u64],
    ) -> Option<FutexCall> {
        self.open.insert(
            tid,
            FutexCall {
                enter_ns: time_ns,
                exit_ns: None,
                pid,
                tid,
                uaddr,
                op,
                val,
                ret: 0,
                frames: user_frames(chain),
            },
        );
        match self.early_exit.remove(&tid) {
            Some((t, raw)) if t >= time_ns => {
                self.unpaired_exits = self.unpaired_exits.saturating_sub(1);
                self.exit(tid, t, &raw)
            }
            _ => None,
        }
    }

    /// A thread left a futex call: the paired call, if its entry was seen.
    pub fn exit(&mut self, tid: u32, time_ns: u64, raw: &[u8]) -> Option<FutexCall> {
        let Some(mut c) = self.open.remove(&tid) else {
            self.unpaired_exits += 1;
            self.early_exit.insert(tid, (time_ns, raw.to_vec()));
            return None;
        };
        c.exit_ns = Some(time_ns.max(c.enter_ns).max(1));
        c.ret = parse_exit(raw).unwrap_or(0);
        Some(c)
    }

    /// The calls still open at the end (the recording ended inside them).
    pub fn finish(&mut self) -> Vec<FutexCall> {
        let mut v: Vec<FutexCall> = self.open.drain().map(|(_, c)| c).collect();
        v.sort_by_key(|c| (c.tid, c.enter_ns));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enter_raw(uaddr: u64, op: u64, val: u64) -> Vec<u8> {
        let mut r = vec![0u8; 64];
        r[16..24].copy_from_slice(&uaddr.to_le_bytes());
        r[24..32].copy_from_slice(&op.to_le_bytes());
        r[32..40].copy_from_slice(&val.to_le_bytes());
        r
    }

    fn exit_raw(ret: i64) -> Vec<u8> {
        let mut r = vec![0u8; 24];
        r[16..24].copy_from_slice(&ret.to_le_bytes());
        r
    }

    #[test]
    fn entries_pair_with_exits_per_thread() {
        let mut p = Pairing::default();
        let user = (-512i64) as u64; // PERF_CONTEXT_USER
        p.enter(
            1,
            2,
            100,
            &enter_raw(0x4040, 128, 2),
            &[user, 0x401000, 0x401200],
        );
        p.enter(1, 3, 110, &enter_raw(0x4040, 129, 1), &[user, 0x401300]);
        let wake = p.exit(3, 115, &exit_raw(1)).unwrap();
        assert_eq!((wake.op, wake.val, wake.ret), (129, 1, 1));
        assert_eq!(wake.frames, vec![0x401300]);
        let wait = p.exit(2, 160, &exit_raw(-11)).unwrap();
        assert_eq!(
            (wait.enter_ns, wait.exit_ns, wait.uaddr, wait.ret),
            (100, Some(160), 0x4040, -11)
        );
        assert_eq!(wait.frames, vec![0x401000, 0x401200]);
        // an exit without its entry is counted, not invented
        assert!(p.exit(2, 170, &exit_raw(0)).is_none());
        assert_eq!(p.unpaired_exits, 1);
        // an exit processed before its entry is paired when the entry comes
        assert!(p.exit(5, 260, &exit_raw(0)).is_none());
        let late = p.enter(1, 5, 250, &enter_raw(0x6000, 128, 0), &[]).unwrap();
        assert_eq!(
            (late.enter_ns, late.exit_ns, late.uaddr),
            (250, Some(260), 0x6000)
        );
        assert_eq!(p.unpaired_exits, 1);
        p.enter(1, 4, 200, &enter_raw(0x5000, 0, 0), &[]);
        let open = p.finish();
        assert_eq!(open.len(), 1);
        assert_eq!(open[0].exit_ns, None);
    }

    #[test]
    fn a_futex_waitv_entry_pairs_with_its_exit() {
        // sys_enter_futex_waitv: waiters 0x7000 at 16, nr_futexes 2 at 24
        let raw = enter_raw(0x7000, 2, 0);
        assert_eq!(parse_enter_waitv(&raw), Some((0x7000, OP_WAITV, 2)));
        assert_eq!(parse_enter_waitv(&raw[..30]), None);
        let mut p = Pairing::default();
        assert!(p.enter_waitv(1, 2, 100, &raw, &[]).is_none());
        // ETIMEDOUT
        let c = p.exit(2, 5_100, &exit_raw(-110)).unwrap();
        assert_eq!(
            (c.uaddr, c.op, c.val, c.ret, c.enter_ns, c.exit_ns),
            (0x7000, 0xff, 2, -110, 100, Some(5_100))
        );
    }

    #[test]
    fn the_refusal_names_the_user_the_level_and_the_remedy() {
        let m = not_allowed_text(libc::EACCES, "perf_event_open", 65534, "2");
        assert!(m.contains("not allowed"), "{m}");
        assert!(m.contains("uid 65534"), "{m}");
        assert!(m.contains("perf_event_paranoid is 2"), "{m}");
        assert!(m.contains("Run contend as root"), "{m}");
        assert!(m.contains("sysctl kernel.perf_event_paranoid=-1"), "{m}");
        let m = not_allowed_text(libc::EPERM, "x", 0, "4");
        assert!(m.contains("EPERM"), "{m}");
    }
}
