//! What the launcher records through `perf_event_open(2)` ring buffers
//! beside the target, into `probes/` (format: [`contend_trace::probes`]):
//!
//! * **thread lifetimes and names**, always: a software `dummy` event per
//!   CPU with `task`, `comm` and `comm_exec` set, whose task records give
//!   every thread's (and child process's) creation and exit, and whose
//!   comm records every name a thread takes (at `exec`, or set by the
//!   thread: `ThreadName` records), on CLOCK_MONOTONIC: the
//!   thread durations T_t of the interference analysis (Mosli Bouksiaa et
//!   al., TPDS 2019, Section 2). System-wide where the kernel allows it,
//!   else on the target with `inherit` (below);
//! * **function entries and returns** of `contend record --function`:
//!   uprobes through the `uprobe` PMU (`/sys/bus/event_source/devices/
//!   uprobe/type`, retprobe bit from its `format/retprobe`), with the user
//!   stack pointer of each hit (`PERF_SAMPLE_REGS_USER`) so that the
//!   analysis can match returns to entries by frame;
//! * for `--hot-functions`, a **CPU-clock profile** instead: sampled user
//!   instruction pointers and the executable mappings, from which
//!   [`crate::hot`] picks the functions above 1% of the time (Section 5.2).
//!
//! Why the uprobes are system-wide: perf's uprobe PMU events cannot be
//! inherited by the threads of another program. When a traced thread
//! creates a thread, the kernel re-creates each inherited event and reads
//! the probe's file path again from the *creating thread's* memory, at the
//! address the launcher passed; in the target that address is garbage, the
//! copy fails with EFAULT and so does the target's `pthread_create`
//! (measured on Linux 6.18: `pthread_create` returned 14). So contend opens
//! the uprobes for all processes, one event per CPU, and keeps the hits of
//! the recorded process tree (known from the task records); other programs
//! that run the probed code meanwhile take the trap too (their hits are
//! counted and dropped). Uprobes need `CAP_PERFMON` or `CAP_SYS_ADMIN`
//! (root) whatever `kernel.perf_event_paranoid` says.
//!
//! **Thread lifetimes without a cost per context switch.** An event opened
//! on a task with `inherit` is copied into every thread the task starts,
//! and the kernel switches a thread's events in and out with the thread:
//! on a program that switches often that costs it a share of its time
//! (`bench/thread_events_cost.sh`: 12 % fewer round trips of two threads
//! passing a byte over pipes on one CPU, 16 % fewer events of `sysbench
//! threads`; system-wide: 2 % each, within the runs' spread). So
//! the task event is opened once per CPU for the whole machine (`pid` −1),
//! costing nothing at the target's context switches, and the records of
//! other processes are dropped: a process belongs to the recorded tree
//! when it is the launcher's child or a process of the tree forked it (its
//! fork record, read in time order). That needs `CAP_PERFMON` (root) or
//! `kernel.perf_event_paranoid` ≤ 0; otherwise, and with
//! `CONTEND_THREAD_EVENTS=per-task`, the event is opened per task as
//! before. `probes/probes.json` says which (`thread_events_scope`).
//!
//! The events must exist before the target's `exec` (the per-task ones
//! are per task and per CPU, and a system-wide one must see the target's
//! first fork): the launcher's `pre_exec` hook sends the child's pid to a
//! helper thread of the launcher and waits; the helper opens the events
//! (per-task ones on that pid with `enable_on_exec`), maps one ring
//! buffer per CPU (the other events of that CPU write into it,
//! `PERF_EVENT_IOC_SET_OUTPUT`), enables the uprobes and lets the child go
//! on. It then drains the rings until the target has ended, decoding the
//! records in time order (a record is processed once every ring has been
//! read past its time) and appending them to `probes/events.cprb`.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use contend_trace::futex_calls::{FutexCallWriter, FutexTraceManifest};
use contend_trace::probes::{
    HotFunction, ProbeEvent, ProbeEventKind, ProbeManifest, ProbeSpec, ProbeWriter, RefusedProbe,
    DIR, EVENTS, MANIFEST_VERSION,
};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::host::monotonic_ns;
use crate::shared_map::SharedMap;

// perf_event_attr.type / config
pub(crate) const TYPE_SOFTWARE: u32 = 1;
pub(crate) const TYPE_TRACEPOINT: u32 = 2;
const SW_CPU_CLOCK: u64 = 0;
pub(crate) const SW_DUMMY: u64 = 9;

// sample_type bits
const SAMPLE_IP: u64 = 1 << 0;
pub(crate) const SAMPLE_TID: u64 = 1 << 1;
pub(crate) const SAMPLE_TIME: u64 = 1 << 2;
const SAMPLE_CALLCHAIN: u64 = 1 << 5;
pub(crate) const SAMPLE_RAW: u64 = 1 << 10;
const SAMPLE_REGS_USER: u64 = 1 << 12;
pub(crate) const SAMPLE_IDENTIFIER: u64 = 1 << 16;

// flag bits of perf_event_attr
pub(crate) const F_DISABLED: u64 = 1 << 0;
pub(crate) const F_INHERIT: u64 = 1 << 1;
pub(crate) const F_EXCLUDE_KERNEL: u64 = 1 << 5;
pub(crate) const F_EXCLUDE_HV: u64 = 1 << 6;
const F_MMAP: u64 = 1 << 8;
const F_MMAP_DATA: u64 = 1 << 17;
const F_COMM: u64 = 1 << 9;
const F_ENABLE_ON_EXEC: u64 = 1 << 12;
pub(crate) const F_TASK: u64 = 1 << 13;
pub(crate) const F_WATERMARK: u64 = 1 << 14;
pub(crate) const F_SAMPLE_ID_ALL: u64 = 1 << 18;
const F_MMAP2: u64 = 1 << 23;
const F_COMM_EXEC: u64 = 1 << 24;
const F_EXCLUDE_CALLCHAIN_KERNEL: u64 = 1 << 21;
pub(crate) const F_USE_CLOCKID: u64 = 1 << 25;

// record types
const REC_MMAP: u32 = 1;
pub(crate) const REC_LOST: u32 = 2;
const REC_COMM: u32 = 3;
pub(crate) const REC_EXIT: u32 = 4;
pub(crate) const REC_FORK: u32 = 7;
pub(crate) const REC_SAMPLE: u32 = 9;
const REC_MMAP2: u32 = 10;
const MISC_COMM_EXEC: u16 = 1 << 13;
pub(crate) const REC_SWITCH: u32 = 14;
/// The switch record of an event for a whole CPU (`pid` −1): the thread
/// switched to or from (`next_prev_pid`, `next_prev_tid`) before the
/// sample id, whose pid and tid are the thread switched out (in a
/// switch-out) or in (in a switch-in), as in [`REC_SWITCH`].
const REC_SWITCH_CPU_WIDE: u32 = 15;
const MISC_SWITCH_OUT: u16 = 1 << 13;
const MISC_SWITCH_OUT_PREEMPT: u16 = 1 << 14;
/// `context_switch` of `perf_event_attr` (PERF_RECORD_SWITCH records).
pub(crate) const F_CONTEXT_SWITCH: u64 = 1 << 26;

// ioctls
pub(crate) const IOC_ENABLE: libc::c_ulong = 0x2400;
pub(crate) const IOC_DISABLE: libc::c_ulong = 0x2401;
pub(crate) const IOC_SET_OUTPUT: libc::c_ulong = 0x2405;
pub(crate) const IOC_ID: libc::c_ulong = 0x8008_2407;

/// `PERF_REG_X86_SP`.
#[cfg(target_arch = "x86_64")]
const REG_SP: u64 = 7;
/// `PERF_REG_ARM64_SP`.
#[cfg(target_arch = "aarch64")]
const REG_SP: u64 = 31;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const REG_SP: u64 = 0;

/// `struct perf_event_attr` up to `sig_data` (`PERF_ATTR_SIZE_VER7`,
/// 128 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Attr {
    pub(crate) kind: u32,
    pub(crate) size: u32,
    pub(crate) config: u64,
    pub(crate) sample_period: u64,
    pub(crate) sample_type: u64,
    pub(crate) read_format: u64,
    pub(crate) flags: u64,
    pub(crate) wakeup: u32,
    pub(crate) bp_type: u32,
    pub(crate) config1: u64,
    pub(crate) config2: u64,
    pub(crate) branch_sample_type: u64,
    pub(crate) sample_regs_user: u64,
    pub(crate) sample_stack_user: u32,
    pub(crate) clockid: i32,
    pub(crate) sample_regs_intr: u64,
    pub(crate) aux_watermark: u32,
    pub(crate) sample_max_stack: u16,
    pub(crate) reserved2: u16,
    pub(crate) aux_sample_size: u32,
    pub(crate) reserved3: u32,
    pub(crate) sig_data: u64,
}

const _: () = assert!(std::mem::size_of::<Attr>() == 128);

/// `perf_event_open(attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC)`.
pub(crate) fn perf_open(attr: &Attr, pid: i32, cpu: i32) -> Result<OwnedFd, i32> {
    const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
    // SAFETY: `attr` is a valid, initialised perf_event_attr of `size` bytes;
    // config1 of a uprobe points at a NUL-terminated path that outlives the
    // call.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr as *const Attr,
            pid,
            cpu,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        Err(io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO))
    } else {
        // SAFETY: a fresh descriptor we own.
        Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
    }
}

pub(crate) fn ioctl(fd: RawFd, req: libc::c_ulong, arg: libc::c_ulong) -> io::Result<()> {
    // SAFETY: perf ioctls on a perf event descriptor; `arg` is an integer
    // or points to a u64 the caller owns.
    if unsafe { libc::ioctl(fd, req as _, arg) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Why the kernel refused a perf event, in words naming the cause.
pub fn refusal(errno: i32, what: &str) -> String {
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".into());
    match errno {
        libc::EACCES | libc::EPERM => format!(
            "the kernel refused {what} ({}): uprobes need CAP_PERFMON or CAP_SYS_ADMIN (root) whatever \
             kernel.perf_event_paranoid says (it is {paranoid}; per-process software events need it ≤ 2), and a \
             kernel in lockdown (confidentiality mode) refuses perf events altogether",
            if errno == libc::EACCES { "EACCES" } else { "EPERM" }
        ),
        libc::ENOENT | libc::ENODEV | libc::EOPNOTSUPP => {
            format!("the kernel refused {what}: it has no such event or PMU (errno {errno})")
        }
        libc::EINVAL => format!(
            "the kernel refused {what} (EINVAL: an offset beyond the file, or an attribute this kernel does not \
             support)"
        ),
        libc::EMFILE | libc::ENFILE => format!("the kernel refused {what}: too many open files"),
        _ => format!(
            "the kernel refused {what}: {}",
            io::Error::from_raw_os_error(errno)
        ),
    }
}

/// The uprobe PMU: its type and the retprobe bit of `config`.
fn uprobe_pmu() -> Result<(u32, u64), String> {
    let base = Path::new("/sys/bus/event_source/devices/uprobe");
    let kind = std::fs::read_to_string(base.join("type")).map_err(|e| {
        format!(
            "this kernel has no uprobe PMU ({}: {e})",
            base.join("type").display()
        )
    })?;
    let kind: u32 = kind
        .trim()
        .parse()
        .map_err(|_| format!("{}: not a number", base.join("type").display()))?;
    // "config:0"
    let bit = std::fs::read_to_string(base.join("format/retprobe"))
        .ok()
        .and_then(|s| s.trim().strip_prefix("config:")?.parse::<u64>().ok())
        .unwrap_or(0);
    Ok((kind, 1 << bit))
}

/// What a session records.
#[derive(Debug, Clone)]
pub enum SessionKind {
    /// A recording: thread lifetimes and the probes.
    Record {
        /// The probes to open.
        probes: Vec<ProbeSpec>,
        /// Functions already refused (resolution), for the manifest.
        refused: Vec<RefusedProbe>,
        /// Keep one call in N per thread.
        every: u32,
        /// The profile that chose the functions, for the manifest.
        hot: Vec<HotFunction>,
        /// Samples of that profile.
        hot_samples: u64,
        /// Trace the target's futex calls through the
        /// `syscalls:sys_enter_futex` / `sys_exit_futex` tracepoints
        /// ([`crate::futex_trace`]) into `futex/`, for this reason (shown
        /// in `futex/futex.json`); `None`: not traced.
        futex: Option<String>,
    },
    /// A CPU-clock profile of user code, for `--hot-functions`.
    Profile {
        /// Sampling period, ns of CPU time.
        period_ns: u64,
    },
}

/// A mapping of an executable file seen by the profile (and, for the
/// futex tracer, of a data mapping too).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecMapping {
    /// Process.
    pub pid: u32,
    /// Start address.
    pub start: u64,
    /// Length, bytes.
    pub len: u64,
    /// File offset of the start.
    pub pgoff: u64,
    /// The file.
    pub path: String,
    /// Its protection (`PROT_READ` 1 | `PROT_WRITE` 2 | `PROT_EXEC` 4)
    /// from an `MMAP2` record; `PROT_EXEC` alone from an `MMAP` record.
    pub prot: u32,
    /// The file's inode from an `MMAP2` record; 0 (unknown) from an `MMAP`
    /// record.
    pub ino: u64,
}

/// What a session ends with.
#[derive(Debug, Default)]
pub struct SessionOutcome {
    /// Problems to tell the user, one sentence each.
    pub warnings: Vec<String>,
    /// Records written (record sessions).
    pub records: u64,
    /// Profile samples by (pid, instruction pointer) (profile sessions).
    pub samples: FxHashMap<(u32, u64), u64>,
    /// Executable mappings seen (profile sessions).
    pub mappings: Vec<ExecMapping>,
    /// Records the kernel dropped.
    pub lost: u64,
}

/// A running session: call [`ProbeSession::child_hook`] in the child
/// before `exec`, then [`ProbeSession::finish`] once the target ended.
pub struct ProbeSession {
    /// The child's end of the socket (closed by exec in the child; the
    /// launcher drops its copy after spawning).
    theirs: Option<OwnedFd>,
    stop: Arc<AtomicBool>,
    wake: OwnedFd,
    helper: Option<JoinHandle<SessionOutcome>>,
}

/// What the child's `pre_exec` hook needs (`Copy`: no allocation there).
#[derive(Debug, Clone, Copy)]
pub struct ChildHook {
    sock: RawFd,
}

impl ChildHook {
    /// Sends the child's pid to the launcher's helper and waits until its
    /// events exist. Runs between fork and exec: system calls only.
    pub fn run(&self) {
        send_pid_and_wait(self.sock);
    }
}

/// The child's side of a launcher helper's handshake (probes, scheduler
/// events): sends this process's pid (4 bytes, little-endian) on `sock`
/// and waits for the helper's one-byte answer, retrying a receive that a
/// signal interrupted. Runs between fork and exec: system calls only, no
/// allocation; never fails (without an answer the program simply runs).
pub(crate) fn send_pid_and_wait(sock: RawFd) {
    // SAFETY: plain system calls on a descriptor this process holds and on
    // stack buffers.
    unsafe {
        let b = (libc::getpid() as u32).to_le_bytes();
        if libc::send(sock, b.as_ptr().cast(), 4, libc::MSG_NOSIGNAL) != 4 {
            return;
        }
        let mut ack = [0u8; 1];
        loop {
            let n = libc::recv(sock, ack.as_mut_ptr().cast(), 1, 0);
            if n >= 0 || *libc::__errno_location() != libc::EINTR {
                break;
            }
        }
    }
}

impl ProbeSession {
    /// Starts the helper thread. `dir` is the recording directory (record
    /// sessions write `dir/probes/`). Errors: the socket pair, eventfd or
    /// the `probes/` directory cannot be created.
    pub fn start(dir: &Path, kind: SessionKind) -> io::Result<ProbeSession> {
        Self::begin(dir, kind, None)
    }

    /// Starts a session on the running process `pid` (`contend record -p
    /// PID`): its events are opened at once on every thread of it and of
    /// its descendants (`crate::attach::tree_tids`), inherited by those
    /// they start; no child hook. Errors: as [`ProbeSession::start`].
    pub fn attach(dir: &Path, kind: SessionKind, pid: u32) -> io::Result<ProbeSession> {
        Self::begin(dir, kind, Some(pid))
    }

    fn begin(dir: &Path, kind: SessionKind, attach: Option<u32>) -> io::Result<ProbeSession> {
        let mut fds = [0 as RawFd; 2];
        // SAFETY: valid out-pointer for two descriptors.
        if unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        } != 0
        {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fresh descriptors we own.
        let (ours, theirs) =
            unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // SAFETY: eventfd returns a fresh descriptor or -1.
        let wake = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if wake < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fresh descriptor.
        let wake = unsafe { OwnedFd::from_raw_fd(wake) };
        let out_dir = dir.join(DIR);
        if matches!(kind, SessionKind::Record { .. }) {
            std::fs::create_dir_all(&out_dir)?;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let wake_fd = wake.as_raw_fd();
        let helper = std::thread::Builder::new()
            .name("contend-probes".into())
            .spawn(move || helper(ours, kind, out_dir, stop2, wake_fd, attach))?;
        Ok(ProbeSession {
            theirs: Some(theirs),
            stop,
            wake,
            helper: Some(helper),
        })
    }

    /// The hook for the child's `pre_exec`.
    pub fn child_hook(&self) -> ChildHook {
        ChildHook {
            sock: self.theirs.as_ref().map_or(-1, |f| f.as_raw_fd()),
        }
    }

    /// Call right after spawning (whether it worked or not): drops the
    /// launcher's copy of the child's socket end, so the helper sees the
    /// end of it if the child never reports.
    pub fn spawned(&mut self) {
        self.theirs = None;
    }

    /// Stops the helper after a last drain of the rings and returns what
    /// it recorded.
    pub fn finish(mut self) -> SessionOutcome {
        self.theirs = None;
        self.stop.store(true, Ordering::Release);
        let one: u64 = 1;
        // SAFETY: an eventfd write of 8 bytes from a live u64.
        unsafe {
            libc::write(self.wake.as_raw_fd(), (&one as *const u64).cast(), 8);
        }
        match self.helper.take().map(|h| h.join()) {
            Some(Ok(o)) => o,
            _ => SessionOutcome {
                warnings: vec![
                    "the probe helper thread failed; probes and thread lifetimes are missing"
                        .into(),
                ],
                ..SessionOutcome::default()
            },
        }
    }
}

impl Drop for ProbeSession {
    fn drop(&mut self) {
        if self.helper.is_some() {
            self.theirs = None;
            self.stop.store(true, Ordering::Release);
            let one: u64 = 1;
            // SAFETY: as in finish().
            unsafe {
                libc::write(self.wake.as_raw_fd(), (&one as *const u64).cast(), 8);
            }
            if let Some(h) = self.helper.take() {
                let _ = h.join();
            }
        }
    }
}

/// One CPU's ring buffer.
pub(crate) struct Ring {
    pub(crate) leader: OwnedFd,
    map: SharedMap,
    data_offset: usize,
    data_size: usize,
}

impl Ring {
    /// Bytes of records the ring holds before the kernel drops records.
    pub(crate) fn data_size(&self) -> usize {
        self.data_size
    }

    pub(crate) fn map(leader: OwnedFd, pages: usize) -> Result<Ring, (OwnedFd, i32)> {
        let page = 4096usize;
        let mut pages = pages;
        loop {
            let len = (1 + pages) * page;
            // the event's ring buffer (1 + 2^n pages), read-write so that
            // data_tail can be written back
            let mapped = SharedMap::new(leader.as_fd(), 0, len);
            if let Ok(map) = mapped {
                let base = map.base();
                // SAFETY: the header page is mapped; data_offset/size
                // exist since Linux 4.1 (0 before: data follows page 0).
                let (off, size) = unsafe {
                    (
                        std::ptr::read_volatile(base.add(1040) as *const u64) as usize,
                        std::ptr::read_volatile(base.add(1048) as *const u64) as usize,
                    )
                };
                let (off, size) = if size == 0 {
                    (page, pages * page)
                } else {
                    (off, size)
                };
                return Ok(Ring {
                    leader,
                    map,
                    data_offset: off,
                    data_size: size,
                });
            }
            let e = mapped
                .err()
                .and_then(|e| e.raw_os_error())
                .unwrap_or(libc::EIO);
            if pages > 8 && (e == libc::EPERM || e == libc::ENOMEM) {
                pages /= 4; // the locked-memory limit of unprivileged users
                continue;
            }
            return Err((leader, e));
        }
    }

    /// Appends the bytes of every complete record to `out` and frees them.
    pub(crate) fn drain(&mut self, out: &mut Vec<u8>) {
        // SAFETY: data_head (offset 1024) is written by the kernel and read
        // with acquire semantics; data_tail (1032) is ours.
        unsafe {
            let head_p = self.map.base().add(1024) as *const u64;
            let tail_p = self.map.base().add(1032) as *mut u64;
            let head = (*(head_p as *const std::sync::atomic::AtomicU64)).load(Ordering::Acquire);
            let tail = std::ptr::read_volatile(tail_p);
            let n = head.wrapping_sub(tail) as usize;
            if n == 0 {
                return;
            }
            let data = self.map.base().add(self.data_offset);
            let start = (tail as usize) % self.data_size;
            let first = n.min(self.data_size - start);
            out.extend_from_slice(std::slice::from_raw_parts(data.add(start), first));
            if first < n {
                out.extend_from_slice(std::slice::from_raw_parts(data, n - first));
            }
            (*(tail_p as *const std::sync::atomic::AtomicU64)).store(head, Ordering::Release);
        }
    }
}

/// A decoded record.
#[derive(Debug, Clone)]
pub(crate) enum Rec {
    Sample {
        id: u64,
        ip: u64,
        pid: u32,
        tid: u32,
        time: u64,
        sp: u64,
        /// User call chain (PERF_SAMPLE_CALLCHAIN), context markers kept.
        chain: Vec<u64>,
        /// Tracepoint data (PERF_SAMPLE_RAW).
        raw: Vec<u8>,
    },
    Fork {
        pid: u32,
        ppid: u32,
        tid: u32,
        ptid: u32,
        time: u64,
    },
    Exit {
        pid: u32,
        tid: u32,
        time: u64,
    },
    Exec {
        pid: u32,
        tid: u32,
        time: u64,
    },
    /// A thread's name (comm) set at `exec` or by the thread itself.
    Comm {
        pid: u32,
        tid: u32,
        time: u64,
        name: Vec<u8>,
    },
    Mmap {
        mapping: ExecMapping,
        time: u64,
    },
    Lost(u64),
}

#[cfg(test)]
impl Rec {
    /// A fork record of thread `tid` of process `pid` by process `ppid`
    /// (its thread `ppid`), at `time`: the tests' hand-made records.
    pub(crate) fn fork(pid: u32, ppid: u32, tid: u32, time: u64) -> Rec {
        Rec::Fork {
            pid,
            ppid,
            tid,
            ptid: ppid,
            time,
        }
    }
}

impl Rec {
    pub(crate) fn time(&self) -> u64 {
        match self {
            Rec::Sample { time, .. }
            | Rec::Fork { time, .. }
            | Rec::Exit { time, .. }
            | Rec::Exec { time, .. }
            | Rec::Comm { time, .. }
            | Rec::Mmap { time, .. } => *time,
            Rec::Lost(_) => 0,
        }
    }
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    b.get(i..i + 4)
        .map_or(0, |s| u32::from_le_bytes(s.try_into().unwrap()))
}
fn u64_at(b: &[u8], i: usize) -> u64 {
    b.get(i..i + 8)
        .map_or(0, |s| u64::from_le_bytes(s.try_into().unwrap()))
}

/// The records in `bytes` (whole records from a ring), in ring order:
/// (type, misc, body after the 8-byte header). Stops at a record whose
/// size is impossible (a torn read).
pub(crate) fn records(bytes: &[u8]) -> impl Iterator<Item = (u32, u16, &[u8])> {
    let mut i = 0;
    std::iter::from_fn(move || {
        if i + 8 > bytes.len() {
            return None;
        }
        let kind = u32_at(bytes, i);
        let misc = u32_at(bytes, i + 4) as u16;
        let size = (u32_at(bytes, i + 4) >> 16) as usize;
        if size < 8 || i + size > bytes.len() {
            return None;
        }
        let body = &bytes[i + 8..i + size];
        i += size;
        Some((kind, misc, body))
    })
}

/// Where the fields of a `PERF_RECORD_SAMPLE` body are, for an event whose
/// sample type is IDENTIFIER (first) | TID | TIME with optionally IP,
/// CALLCHAIN, RAW and REGS_USER (the stack pointer only): offsets into
/// the body, so that a reader that needs only a few bytes of the raw
/// data allocates nothing.
pub(crate) struct SampleFields {
    pub id: u64,
    pub ip: u64,
    pub pid: u32,
    pub tid: u32,
    pub time: u64,
    pub sp: u64,
    /// The user call chain's words (PERF_SAMPLE_CALLCHAIN): offset, count.
    pub chain: (usize, usize),
    /// The tracepoint data (PERF_SAMPLE_RAW), bytes.
    pub raw: std::ops::Range<usize>,
}

/// The fields of sample body `r`; its sample type comes from
/// `sample_type_of` by the sample's id (0, the fixed fields only, when
/// the id is unknown).
pub(crate) fn sample_fields(r: &[u8], sample_type_of: &FxHashMap<u64, u64>) -> SampleFields {
    let id = u64_at(r, 0);
    let st = sample_type_of.get(&id).copied().unwrap_or(0);
    let mut j = 8;
    let mut ip = 0;
    if st & SAMPLE_IP != 0 {
        ip = u64_at(r, j);
        j += 8;
    }
    let (pid, tid) = (u32_at(r, j), u32_at(r, j + 4));
    j += 8;
    let time = u64_at(r, j);
    j += 8;
    let mut chain = (j, 0);
    if st & SAMPLE_CALLCHAIN != 0 {
        let n = u64_at(r, j) as usize;
        j += 8;
        let n = n.min(r.len().saturating_sub(j) / 8);
        chain = (j, n);
        j += 8 * n;
    }
    let mut raw = 0..0;
    if st & SAMPLE_RAW != 0 {
        let n = u32_at(r, j) as usize;
        j += 4;
        if j + n <= r.len() {
            raw = j..j + n;
        }
        j += n;
    }
    let mut sp = 0;
    if st & SAMPLE_REGS_USER != 0 {
        let abi = u64_at(r, j);
        j += 8;
        if abi != 0 {
            sp = u64_at(r, j);
        }
    }
    SampleFields {
        id,
        ip,
        pid,
        tid,
        time,
        sp,
        chain,
        raw,
    }
}

/// The fields of a `PERF_RECORD_FORK` or `PERF_RECORD_EXIT` body: pid,
/// ppid, tid, ptid, time.
pub(crate) fn task_fields(r: &[u8]) -> (u32, u32, u32, u32, u64) {
    (
        u32_at(r, 0),
        u32_at(r, 4),
        u32_at(r, 8),
        u32_at(r, 12),
        u64_at(r, 16),
    )
}

/// The thread a switch record (`kind` [`REC_SWITCH`] or
/// [`REC_SWITCH_CPU_WIDE`], body `r`) is about, from its sample id:
/// (pid, tid, time, switched out, preempted); None for a CPU's idle task
/// (system-wide events), which is never traced.
pub(crate) fn switch_fields(kind: u32, misc: u16, r: &[u8]) -> Option<(u32, u32, u64, bool, bool)> {
    // the sample id (pid, tid, time, id) after the body
    let at = if kind == REC_SWITCH { 0 } else { 8 };
    let tid = u32_at(r, at + 4);
    (tid != 0).then(|| {
        (
            u32_at(r, at),
            tid,
            u64_at(r, at + 8),
            misc & MISC_SWITCH_OUT != 0,
            misc & MISC_SWITCH_OUT_PREEMPT != 0,
        )
    })
}

/// Whether `kind` is a switch record ([`REC_SWITCH`], or
/// [`REC_SWITCH_CPU_WIDE`] from an event for a whole CPU).
pub(crate) fn is_switch(kind: u32) -> bool {
    kind == REC_SWITCH || kind == REC_SWITCH_CPU_WIDE
}

/// The count of a `PERF_RECORD_LOST` body: records the kernel dropped.
pub(crate) fn lost_count(r: &[u8]) -> u64 {
    u64_at(r, 8)
}

/// Decodes the records in `bytes` (whole records from a ring). Every event
/// has `sample_id_all` with TID | TIME | IDENTIFIER: non-sample records end
/// with pid, tid (u32 each), time, id (u64 each).
pub(crate) fn decode(bytes: &[u8], sample_type_of: &FxHashMap<u64, u64>, out: &mut Vec<Rec>) {
    for (kind, misc, r) in records(bytes) {
        // sample_id trailer: pid tid | time | id
        let trailer_time = || u64_at(r, r.len().saturating_sub(16));
        match kind {
            REC_SAMPLE => {
                let f = sample_fields(r, sample_type_of);
                let (at, n) = f.chain;
                out.push(Rec::Sample {
                    id: f.id,
                    ip: f.ip,
                    pid: f.pid,
                    tid: f.tid,
                    time: f.time,
                    sp: f.sp,
                    chain: (0..n).map(|k| u64_at(r, at + 8 * k)).collect(),
                    raw: r[f.raw].to_vec(),
                });
            }
            REC_FORK | REC_EXIT => {
                let (pid, ppid, tid, ptid, time) = task_fields(r);
                out.push(if kind == REC_FORK {
                    Rec::Fork {
                        pid,
                        ppid,
                        tid,
                        ptid,
                        time,
                    }
                } else {
                    Rec::Exit { pid, tid, time }
                });
            }
            REC_COMM => {
                let (pid, tid, time) = (u32_at(r, 0), u32_at(r, 4), trailer_time());
                if misc & MISC_COMM_EXEC != 0 {
                    out.push(Rec::Exec { pid, tid, time });
                }
                // the name, NUL-terminated and padded, before the sample id
                let name = r.get(8..r.len().saturating_sub(24)).unwrap_or(&[]);
                let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
                out.push(Rec::Comm {
                    pid,
                    tid,
                    time,
                    name: name[..end].to_vec(),
                });
            }
            REC_MMAP | REC_MMAP2 => {
                let (pid, start, len, pgoff) =
                    (u32_at(r, 0), u64_at(r, 8), u64_at(r, 16), u64_at(r, 24));
                let name_at = if kind == REC_MMAP { 32 } else { 32 + 24 + 8 };
                let name_end = r.len().saturating_sub(24);
                let name = r.get(name_at..name_end).unwrap_or(&[]);
                let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
                out.push(Rec::Mmap {
                    mapping: ExecMapping {
                        pid,
                        start,
                        len,
                        pgoff,
                        path: String::from_utf8_lossy(&name[..end]).into_owned(),
                        prot: if kind == REC_MMAP2 {
                            u32_at(r, 56)
                        } else {
                            libc::PROT_EXEC as u32
                        },
                        // MMAP2: maj, min (u32 each) at 32, ino at 40.
                        ino: if kind == REC_MMAP2 { u64_at(r, 40) } else { 0 },
                    },
                    time: trailer_time(),
                });
            }
            REC_LOST => out.push(Rec::Lost(lost_count(r))),
            // switch records: the scheduler events' (sched_events.rs)
            _ => {}
        }
    }
}

/// Where an event's samples go.
#[derive(Debug, Clone, Copy)]
enum Source {
    Probe {
        probe: u16,
        ret: bool,
    },
    Profile,
    /// `syscalls:sys_enter_futex` (false) or `sys_exit_futex` (true);
    /// `waitv`: `sys_enter_futex_waitv` / `sys_exit_futex_waitv`.
    Futex {
        exit: bool,
        waitv: bool,
    },
}

/// Per-thread state of `--function-every N`: calls to skip, and the
/// entries kept and still open (probe, stack pointer).
#[derive(Default)]
struct Sampling {
    countdown: u32,
    kept: Vec<(u16, u64)>,
}

/// The helper thread: waits for the child's pid, opens the events, lets
/// the child go on, drains until stopped.
fn helper(
    sock: OwnedFd,
    kind: SessionKind,
    out_dir: PathBuf,
    stop: Arc<AtomicBool>,
    wake: RawFd,
    attach: Option<u32>,
) -> SessionOutcome {
    let mut outcome = SessionOutcome::default();
    let pid = match attach {
        Some(pid) => pid,
        None => {
            let mut buf = [0u8; 4];
            // SAFETY: recv into a stack buffer.
            let n = loop {
                let n = unsafe { libc::recv(sock.as_raw_fd(), buf.as_mut_ptr().cast(), 4, 0) };
                if n >= 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                    break n;
                }
            };
            if n != 4 {
                return outcome; // the child never reported: it did not start
            }
            u32::from_le_bytes(buf)
        }
    };
    let mut st = State::open(pid, &kind, &out_dir, &mut outcome, attach.is_some());
    if attach.is_none() {
        // Let the child exec.
        // SAFETY: one byte from a static buffer.
        unsafe {
            libc::send(
                sock.as_raw_fd(),
                b"g".as_ptr().cast(),
                1,
                libc::MSG_NOSIGNAL,
            );
        }
    }
    drop(sock);
    let mut raw = Vec::new();
    let mut recs = Vec::new();
    loop {
        let stopping = stop.load(Ordering::Acquire);
        let mut pfds: Vec<libc::pollfd> = st
            .rings
            .iter()
            .map(|r| libc::pollfd {
                fd: r.leader.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        pfds.push(libc::pollfd {
            fd: wake,
            events: libc::POLLIN,
            revents: 0,
        });
        if !stopping {
            // SAFETY: poll over live descriptors.
            unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as _, 100) };
        }
        // Every record with a time before this instant is in the rings
        // once each ring has been read after it (within the slack of a
        // writer that took its timestamp and then was preempted).
        let watermark = monotonic_ns().saturating_sub(20_000_000);
        for r in &mut st.rings {
            raw.clear();
            r.drain(&mut raw);
            decode(&raw, &st.sample_type_of, &mut recs);
        }
        st.early_maps(&recs);
        let cut = if stopping { u64::MAX } else { watermark };
        st.process(&mut recs, cut, &mut outcome);
        if stopping {
            break;
        }
    }
    st.close(&mut outcome);
    outcome
}

/// How the kernel's task records (thread creations and exits: the thread
/// lifetimes) are followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadEventsScope {
    /// One event per CPU for the whole machine, the records of other
    /// processes dropped: costs the program nothing at its context
    /// switches. Needs `CAP_PERFMON` (or root) or
    /// `kernel.perf_event_paranoid` ≤ 0.
    SystemWide,
    /// One event per CPU on the target, inherited by every thread it
    /// starts: allowed to any user, but each context switch of a traced
    /// thread then also switches its events (measured: 16 % fewer events
    /// of `sysbench threads`, whose threads switch about 400,000 times a
    /// second; docs/benchmarks.md).
    PerTask,
}

impl ThreadEventsScope {
    /// The name in `probes/probes.json` (and `per-task` in
    /// `CONTEND_THREAD_EVENTS`).
    pub fn name(self) -> &'static str {
        match self {
            ThreadEventsScope::SystemWide => contend_trace::probes::THREAD_EVENTS_SYSTEM_WIDE,
            ThreadEventsScope::PerTask => contend_trace::probes::THREAD_EVENTS_PER_TASK,
        }
    }
}

impl ThreadEventsScope {
    /// Whether the environment variable `var` (`CONTEND_THREAD_EVENTS` for
    /// the thread lifetimes, `CONTEND_SCHED_EVENTS` for the sampler's
    /// scheduler events) is `per-task`: per-task events asked for even
    /// where system-wide ones are allowed (to measure what they cost, and
    /// for the tests of that path).
    pub(crate) fn per_task_requested(var: &str) -> bool {
        std::env::var(var).is_ok_and(|v| v == ThreadEventsScope::PerTask.name())
    }
}

/// The processes of the recorded tree, as system-wide events follow it
/// from the kernel's fork records: the target's processes to begin with,
/// and every process a process of the tree forks. Used by the probe
/// session (thread lifetimes) and the sampler's scheduler events
/// ([`crate::sched_events`]) alike.
#[derive(Debug, Clone, Default)]
pub(crate) struct ProcessTree(FxHashSet<u32>);

impl ProcessTree {
    /// Whether process `pid` is in the tree.
    pub(crate) fn contains(&self, pid: u32) -> bool {
        self.0.contains(&pid)
    }

    /// Whether a fork record of `pid` from process `ppid` belongs to the
    /// tree: a new thread (`pid` = `ppid`) when its process does, a new
    /// process when the process that forked it does (not by its pid alone,
    /// which may be that of an ended process of the tree, reused).
    pub(crate) fn has_fork(&self, pid: u32, ppid: u32) -> bool {
        self.contains(if pid == ppid { pid } else { ppid })
    }

    /// Adds process `pid` (a fork record that [`ProcessTree::has_fork`]
    /// accepted, or a process of the target found otherwise).
    pub(crate) fn insert(&mut self, pid: u32) {
        self.0.insert(pid);
    }
}

impl FromIterator<u32> for ProcessTree {
    fn from_iter<I: IntoIterator<Item = u32>>(pids: I) -> Self {
        ProcessTree(pids.into_iter().collect())
    }
}

impl Extend<u32> for ProcessTree {
    fn extend<I: IntoIterator<Item = u32>>(&mut self, pids: I) {
        self.0.extend(pids);
    }
}

/// The open events and the decoding state of a session.
struct State {
    kind: SessionKind,
    rings: Vec<Ring>,
    /// Uprobe descriptors (kept open while recording).
    _events: Vec<OwnedFd>,
    sources: FxHashMap<u64, Source>,
    sample_type_of: FxHashMap<u64, u64>,
    tree: ProcessTree,
    writer: Option<ProbeWriter>,
    manifest: ProbeManifest,
    sampling: FxHashMap<u32, Sampling>,
    /// Records not yet processed (their time is after the watermark).
    pending: Vec<Rec>,
    out_dir: PathBuf,
    /// The futex tracer's state, when futex calls are traced.
    futex: Option<FutexState>,
    /// The task records come from system-wide events (every process of
    /// the machine): only those of `tree` are kept.
    system_wide: bool,
}

/// What the probe session keeps for the futex tracer
/// ([`crate::futex_trace`]).
struct FutexState {
    manifest: FutexTraceManifest,
    writer: Option<FutexCallWriter>,
    pairing: crate::futex_trace::Pairing,
    /// Processes whose maps were written (`maps/<pid>.maps`).
    mapped: FxHashSet<u32>,
    /// Executable mappings seen in the kernel's mmap records, per process.
    mappings: FxHashMap<u32, Vec<ExecMapping>>,
}

impl State {
    fn open(
        pid: u32,
        kind: &SessionKind,
        out_dir: &Path,
        outcome: &mut SessionOutcome,
        attach: bool,
    ) -> State {
        let mut st = State {
            kind: kind.clone(),
            rings: Vec::new(),
            _events: Vec::new(),
            sources: FxHashMap::default(),
            sample_type_of: FxHashMap::default(),
            tree: [pid].into_iter().collect(),
            writer: None,
            manifest: ProbeManifest {
                format_version: MANIFEST_VERSION,
                root_pid: pid,
                every: 1,
                ..ProbeManifest::default()
            },
            sampling: FxHashMap::default(),
            pending: Vec::new(),
            out_dir: out_dir.to_path_buf(),
            futex: None,
            system_wide: false,
        };
        let cpus = crate::cpus::online_cpu_list();
        // The threads the per-task events are opened on: the child (before
        // its exec), or every thread of a running process tree.
        let targets = if attach {
            crate::attach::tree_tids(pid)
        } else {
            vec![pid]
        };
        let futex_reason = match kind {
            SessionKind::Record { futex, .. } => futex.clone(),
            SessionKind::Profile { .. } => None,
        };
        let sid = SAMPLE_IDENTIFIER | SAMPLE_TID | SAMPLE_TIME;
        let clock = F_USE_CLOCKID | F_SAMPLE_ID_ALL;
        // The per-task event: task records (and the profile's samples).
        let (task_attr, pages) = match kind {
            SessionKind::Record { probes, .. } => (
                Attr {
                    kind: TYPE_SOFTWARE,
                    size: 128,
                    config: SW_DUMMY,
                    sample_period: 1,
                    sample_type: sid,
                    // user mode only: allowed to unprivileged users up to
                    // kernel.perf_event_paranoid = 2 (task records are
                    // written either way)
                    flags: F_DISABLED
                        | F_INHERIT
                        | F_ENABLE_ON_EXEC
                        | F_TASK
                        | F_COMM
                        | F_COMM_EXEC
                        | F_EXCLUDE_KERNEL
                        | F_EXCLUDE_HV
                        | clock,
                    clockid: libc::CLOCK_MONOTONIC,
                    ..Attr::default()
                },
                if probes.is_empty() { 16 } else { 1024 },
            ),
            SessionKind::Profile { period_ns } => (
                Attr {
                    kind: TYPE_SOFTWARE,
                    size: 128,
                    config: SW_CPU_CLOCK,
                    sample_period: *period_ns,
                    sample_type: sid | SAMPLE_IP,
                    flags: F_DISABLED
                        | F_INHERIT
                        | F_ENABLE_ON_EXEC
                        | F_TASK
                        | F_COMM
                        | F_COMM_EXEC
                        | F_MMAP
                        | F_MMAP2
                        | F_EXCLUDE_KERNEL
                        | F_EXCLUDE_HV
                        | clock,
                    clockid: libc::CLOCK_MONOTONIC,
                    ..Attr::default()
                },
                128,
            ),
        };
        let mut task_attr = task_attr;
        let pages = if futex_reason.is_some() {
            // the futex tracer's calls, with call chains, share the rings;
            // it also needs the executable mappings of a program it sees
            // exec (for its call sites)
            task_attr.flags |= F_MMAP | F_MMAP2 | F_MMAP_DATA;
            pages.max(256)
        } else {
            pages
        };
        if attach {
            // already running: on now
            task_attr.flags &= !(F_DISABLED | F_ENABLE_ON_EXEC);
        }
        let mut task_error = None;
        // ring of each CPU (index into st.rings), once mapped
        let mut ring_of: Vec<Option<usize>> = vec![None; cpus.len()];
        let system_wide = matches!(kind, SessionKind::Record { .. })
            && !ThreadEventsScope::per_task_requested("CONTEND_THREAD_EVENTS")
            && st.open_system_wide_task_events(&task_attr, &cpus, pages, &mut ring_of);
        if system_wide {
            st.system_wide = true;
            if attach {
                // the running tree's processes; their children join it by
                // their fork records
                st.tree.extend(targets.iter().filter_map(|&tid| tgid(tid)));
            }
        }
        let per_task_targets: &[u32] = if system_wide { &[] } else { &targets };
        for (ci, &cpu) in cpus.iter().enumerate() {
            for &tid in per_task_targets {
                match perf_open(&task_attr, tid as i32, cpu as i32) {
                    Ok(fd) => {
                        let mut id = 0u64;
                        let _ = ioctl(fd.as_raw_fd(), IOC_ID, &mut id as *mut u64 as libc::c_ulong);
                        st.sample_type_of.insert(id, task_attr.sample_type);
                        st.sources.insert(id, Source::Profile);
                        if let Some(ri) = ring_of[ci] {
                            // further threads of an attach: into this CPU's ring
                            match ioctl(
                                fd.as_raw_fd(),
                                IOC_SET_OUTPUT,
                                st.rings[ri].leader.as_raw_fd() as libc::c_ulong,
                            ) {
                                Ok(()) => st._events.push(fd),
                                Err(e) => {
                                    task_error.get_or_insert(format!(
                                        "cannot attach an event to the ring buffer: {e}"
                                    ));
                                }
                            }
                            continue;
                        }
                        match Ring::map(fd, pages) {
                            Ok(r) => {
                                ring_of[ci] = Some(st.rings.len());
                                st.rings.push(r);
                            }
                            Err((_, e)) => {
                                task_error.get_or_insert(format!(
                                    "cannot map a perf ring buffer: {}",
                                    io::Error::from_raw_os_error(e)
                                ));
                            }
                        }
                    }
                    // a thread of an attach that has exited meanwhile
                    Err(libc::ESRCH) if attach => {}
                    Err(e) => {
                        task_error.get_or_insert(refusal(e, "the per-process software event"));
                    }
                }
            }
        }
        let complete = task_error.is_none() && st.rings.len() == cpus.len();
        if let Some(reason) = futex_reason {
            st.open_futex(reason, &targets, &cpus, &ring_of, attach, outcome);
        }
        match kind {
            SessionKind::Profile { .. } => {
                if let Some(e) = task_error {
                    outcome
                        .warnings
                        .push(format!("the CPU-clock profile is incomplete: {e}"));
                }
            }
            SessionKind::Record {
                probes,
                refused,
                every,
                hot,
                hot_samples,
                ..
            } => {
                st.manifest.every = (*every).max(1);
                st.manifest.refused = refused.clone();
                st.manifest.hot = hot.clone();
                st.manifest.hot_samples = *hot_samples;
                st.manifest.thread_events = complete;
                st.manifest.thread_events_scope = if !complete {
                    String::new()
                } else if system_wide {
                    ThreadEventsScope::SystemWide.name().to_string()
                } else {
                    ThreadEventsScope::PerTask.name().to_string()
                };
                if let Some(e) = task_error {
                    st.manifest
                        .errors
                        .push(format!("thread lifetimes were not recorded: {e}"));
                }
                if !probes.is_empty() {
                    st.open_probes(probes, &cpus);
                }
                outcome
                    .warnings
                    .extend(contend_trace::probes::refusal_warnings(
                        &st.manifest.refused[refused.len()..],
                        false,
                    ));
                match ProbeWriter::create(&st.out_dir.join(EVENTS)) {
                    Ok(w) => st.writer = Some(w),
                    Err(e) => st.manifest.errors.push(format!("{e}")),
                }
            }
        }
        st
    }

    /// Opens the task-record event once per CPU for every process of the
    /// machine (`pid = -1`), each with its own ring, instead of per task:
    /// see "Thread lifetimes without a cost per context switch" in the
    /// module docs. All or nothing: `false` (and nothing kept open) when
    /// the kernel refuses any CPU, e.g. without `CAP_PERFMON` under
    /// `kernel.perf_event_paranoid` > 0.
    fn open_system_wide_task_events(
        &mut self,
        task_attr: &Attr,
        cpus: &[u32],
        pages: usize,
        ring_of: &mut [Option<usize>],
    ) -> bool {
        let mut attr = *task_attr;
        attr.flags &= !(F_DISABLED | F_INHERIT | F_ENABLE_ON_EXEC);
        // room for the rest of the machine's forks and exits between drains
        let pages = pages.max(64);
        let mut opened = Vec::with_capacity(cpus.len());
        for &cpu in cpus {
            let Ok(fd) = perf_open(&attr, -1, cpu as i32) else {
                return false;
            };
            let mut id = 0u64;
            if ioctl(fd.as_raw_fd(), IOC_ID, &mut id as *mut u64 as libc::c_ulong).is_err() {
                return false;
            }
            match Ring::map(fd, pages) {
                Ok(r) => opened.push((r, id)),
                Err(_) => return false,
            }
        }
        for (ci, (ring, id)) in opened.into_iter().enumerate() {
            self.sample_type_of.insert(id, attr.sample_type);
            self.sources.insert(id, Source::Profile);
            ring_of[ci] = Some(self.rings.len());
            self.rings.push(ring);
        }
        true
    }

    /// Whether a record of process `pid` belongs to the recorded tree.
    /// Per-task events only ever give the tree's; system-wide ones give
    /// every process's.
    fn in_tree(&self, pid: u32) -> bool {
        !self.system_wide || self.tree.contains(pid)
    }

    /// Whether a fork record of `pid` from process `ppid` belongs to the
    /// tree ([`ProcessTree::has_fork`]); every one does with per-task
    /// events.
    fn fork_in_tree(&self, pid: u32, ppid: u32) -> bool {
        !self.system_wide || self.tree.has_fork(pid, ppid)
    }

    /// Opens every probe on every CPU (system-wide; see the module docs),
    /// sends its output into that CPU's ring and enables it.
    fn open_probes(&mut self, probes: &[ProbeSpec], cpus: &[u32]) {
        let (pmu, retbit) = match uprobe_pmu() {
            Ok(p) => p,
            Err(e) => {
                for p in probes {
                    self.manifest.refused.push(RefusedProbe {
                        function: p.requested.clone(),
                        reason: e.clone(),
                    });
                }
                return;
            }
        };
        if self.rings.len() != cpus.len() {
            for p in probes {
                self.manifest.refused.push(RefusedProbe {
                    function: p.requested.clone(),
                    reason: "no perf ring buffer on every CPU to receive its hits".into(),
                });
            }
            return;
        }
        let st = SAMPLE_IDENTIFIER | SAMPLE_TID | SAMPLE_TIME | SAMPLE_REGS_USER;
        for p in probes {
            let Ok(path) = CString::new(p.module.as_str()) else {
                continue;
            };
            let mut fds = Vec::new();
            let mut failure = None;
            'cpus: for (ci, &cpu) in cpus.iter().enumerate() {
                for ret in [false, true] {
                    let attr = Attr {
                        kind: pmu,
                        size: 128,
                        config: if ret { retbit } else { 0 },
                        sample_period: 1,
                        sample_type: st,
                        flags: F_DISABLED | F_WATERMARK | F_USE_CLOCKID | F_SAMPLE_ID_ALL,
                        wakeup: 256 * 1024,
                        config1: path.as_ptr() as u64,
                        config2: p.file_offset,
                        sample_regs_user: 1 << REG_SP,
                        clockid: libc::CLOCK_MONOTONIC,
                        ..Attr::default()
                    };
                    match perf_open(&attr, -1, cpu as i32) {
                        Ok(fd) => {
                            let mut id = 0u64;
                            let ok =
                                ioctl(fd.as_raw_fd(), IOC_ID, &mut id as *mut u64 as libc::c_ulong)
                                    .and_then(|_| {
                                        ioctl(
                                            fd.as_raw_fd(),
                                            IOC_SET_OUTPUT,
                                            self.rings[ci].leader.as_raw_fd() as libc::c_ulong,
                                        )
                                    });
                            if let Err(e) = ok {
                                failure = Some(format!(
                                    "cannot attach its events to the ring buffer: {e}"
                                ));
                                break 'cpus;
                            }
                            self.sources.insert(id, Source::Probe { probe: p.id, ret });
                            self.sample_type_of.insert(id, st);
                            fds.push(fd);
                        }
                        Err(e) => {
                            failure = Some(refusal(
                                e,
                                &format!("a uprobe at {}+{:#x}", p.module, p.file_offset),
                            ));
                            break 'cpus;
                        }
                    }
                }
            }
            if let Some(reason) = failure {
                self.manifest.refused.push(RefusedProbe {
                    function: p.requested.clone(),
                    reason,
                });
                continue;
            }
            for fd in &fds {
                let _ = ioctl(fd.as_raw_fd(), IOC_ENABLE, 0);
            }
            self.manifest.probes.push(p.clone());
            self._events.extend(fds);
        }
    }

    /// Opens `syscalls:sys_enter_futex` (with the user call chain) and
    /// `sys_exit_futex`, and `sys_enter_futex_waitv` / `sys_exit_futex_waitv`
    /// where the kernel has them, on every target thread and CPU, into that
    /// CPU's ring ([`crate::futex_trace`]). When not allowed or not possible,
    /// `futex/futex.json` and a warning say why and what to change.
    fn open_futex(
        &mut self,
        reason: String,
        targets: &[u32],
        cpus: &[u32],
        ring_of: &[Option<usize>],
        attach: bool,
        outcome: &mut SessionOutcome,
    ) {
        let mut fs = FutexState {
            manifest: FutexTraceManifest {
                source: "tracepoints".into(),
                reason,
                ..FutexTraceManifest::default()
            },
            writer: None,
            pairing: crate::futex_trace::Pairing::default(),
            mapped: FxHashSet::default(),
            mappings: FxHashMap::default(),
        };
        let mut opened: Vec<(OwnedFd, u64, bool, bool)> = Vec::new();
        let result = (|| -> Result<(), String> {
            let (enter, exit) = crate::futex_trace::tracepoint_ids()?;
            let mut events = vec![(enter, false, false), (exit, true, false)];
            if let Some((enter_v, exit_v)) = crate::futex_trace::waitv_tracepoint_ids() {
                events.extend([(enter_v, false, true), (exit_v, true, true)]);
            }
            if ring_of.iter().any(Option::is_none) {
                return Err(
                    "futex waits are not traced: no perf ring buffer on every CPU to receive them"
                        .into(),
                );
            }
            for (ci, &cpu) in cpus.iter().enumerate() {
                let ring = self.rings[ring_of[ci].unwrap_or(0)].leader.as_raw_fd();
                for &tid in targets {
                    for &(config, is_exit, waitv) in &events {
                        let sample_type = SAMPLE_IDENTIFIER
                            | SAMPLE_TID
                            | SAMPLE_TIME
                            | SAMPLE_RAW
                            | if is_exit { 0 } else { SAMPLE_CALLCHAIN };
                        let attr = Attr {
                            kind: TYPE_TRACEPOINT,
                            size: 128,
                            config,
                            sample_period: 1,
                            sample_type,
                            flags: F_INHERIT
                                | F_EXCLUDE_CALLCHAIN_KERNEL
                                | F_USE_CLOCKID
                                | F_SAMPLE_ID_ALL
                                | if attach {
                                    0
                                } else {
                                    F_DISABLED | F_ENABLE_ON_EXEC
                                },
                            clockid: libc::CLOCK_MONOTONIC,
                            ..Attr::default()
                        };
                        let fd = match perf_open(&attr, tid as i32, cpu as i32) {
                            Ok(fd) => fd,
                            Err(libc::ESRCH) if attach => continue,
                            Err(e) => {
                                return Err(crate::futex_trace::not_allowed(
                                    e,
                                    "perf_event_open of syscalls:sys_enter_futex",
                                ))
                            }
                        };
                        let mut id = 0u64;
                        ioctl(fd.as_raw_fd(), IOC_ID, &mut id as *mut u64 as libc::c_ulong)
                            .and_then(|_| {
                                ioctl(fd.as_raw_fd(), IOC_SET_OUTPUT, ring as libc::c_ulong)
                            })
                            .map_err(|e| {
                                format!(
                                    "futex waits are not traced: cannot attach the tracepoints to the ring buffer: {e}"
                                )
                            })?;
                        opened.push((fd, id, is_exit, waitv));
                        let _ = sample_type;
                        self.sample_type_of.insert(id, sample_type);
                    }
                }
            }
            Ok(())
        })();
        match result {
            Ok(()) => {
                for (fd, id, exit, waitv) in opened {
                    self.sources.insert(id, Source::Futex { exit, waitv });
                    self._events.push(fd);
                }
                fs.manifest.traced = true;
                if attach {
                    // the processes run now: their maps, for the call sites
                    if let Some(dir) = self.out_dir.parent() {
                        for &tid in targets {
                            if let Some(pid) = tgid(tid) {
                                if !fs.mapped.contains(&pid) {
                                    fs.write_maps_from_proc(dir, pid);
                                }
                            }
                        }
                    }
                }
                match self.out_dir.parent().map(FutexCallWriter::create) {
                    Some(Ok(w)) => fs.writer = Some(w),
                    Some(Err(e)) => fs.manifest.errors.push(format!("{e}")),
                    None => {}
                }
            }
            Err(e) => {
                outcome.warnings.push(e.clone());
                fs.manifest.errors.push(e);
            }
        }
        self.futex = Some(fs);
    }

    /// Writes the maps of each process of a newly drained futex call at
    /// once, while it still runs (the calls themselves are processed a
    /// little later, in time order, when the process may have exited).
    fn early_maps(&mut self, recs: &[Rec]) {
        let (Some(fs), Some(dir)) = (&mut self.futex, self.out_dir.parent()) else {
            return;
        };
        for r in recs {
            if let Rec::Sample { id, pid, .. } = r {
                if !fs.mapped.contains(pid)
                    && matches!(self.sources.get(id), Some(Source::Futex { .. }))
                {
                    fs.write_maps_from_proc(dir, *pid);
                }
            }
        }
    }

    /// One futex tracepoint sample.
    fn futex_sample(
        &mut self,
        pid: u32,
        tid: u32,
        time: u64,
        (exit, waitv): (bool, bool),
        chain: &[u64],
        raw: &[u8],
    ) {
        let Some(fs) = &mut self.futex else { return };
        let call = if exit {
            fs.pairing.exit(tid, time, raw)
        } else if waitv {
            fs.pairing.enter_waitv(pid, tid, time, raw, chain)
        } else {
            fs.pairing.enter(pid, tid, time, raw, chain)
        };
        let Some(call) = call else {
            return;
        };
        if let Some(dir) = self.out_dir.parent() {
            fs.write_maps(dir, call.pid);
        }
        if let Some(w) = &mut fs.writer {
            if let Err(e) = w.push(&call) {
                fs.manifest.errors.push(format!("{e}"));
                fs.writer = None;
            }
        }
    }

    /// Processes the pending and new records older than `cut`, in time
    /// order.
    fn process(&mut self, recs: &mut Vec<Rec>, cut: u64, outcome: &mut SessionOutcome) {
        self.pending.append(recs);
        self.pending.sort_by_key(Rec::time);
        let n = self.pending.partition_point(|r| r.time() < cut);
        let ready: Vec<Rec> = self.pending.drain(..n).collect();
        for r in ready {
            self.one(r, outcome);
        }
        if let Some(w) = &mut self.writer {
            if let Err(e) = w.flush() {
                self.manifest.errors.push(format!("{e}"));
                self.writer = None;
            }
        }
        if let Some(fs) = &mut self.futex {
            if let Some(w) = &mut fs.writer {
                if let Err(e) = w.flush() {
                    fs.manifest.errors.push(format!("{e}"));
                    fs.writer = None;
                }
            }
        }
    }

    fn write(&mut self, e: ProbeEvent) {
        if let Some(w) = &mut self.writer {
            if let Err(err) = w.push(&e) {
                self.manifest.errors.push(format!("{err}"));
                self.writer = None;
            }
        }
    }

    fn one(&mut self, r: Rec, outcome: &mut SessionOutcome) {
        match r {
            Rec::Sample {
                id,
                ip,
                pid,
                tid,
                time,
                sp,
                chain,
                raw,
            } => match self.sources.get(&id).copied() {
                Some(Source::Futex { exit, waitv }) => {
                    self.futex_sample(pid, tid, time, (exit, waitv), &chain, &raw)
                }
                Some(Source::Profile) => {
                    if matches!(self.kind, SessionKind::Profile { .. }) {
                        *outcome.samples.entry((pid, ip)).or_default() += 1;
                    }
                }
                Some(Source::Probe { probe, ret }) => {
                    if !self.tree.contains(pid) {
                        self.manifest.foreign_hits += 1;
                        return;
                    }
                    if self.manifest.every > 1 && !self.keep_sampled(tid, probe, ret, sp) {
                        return;
                    }
                    self.write(ProbeEvent {
                        time_ns: time,
                        pid,
                        tid,
                        arg: sp,
                        kind: if ret {
                            ProbeEventKind::Return
                        } else {
                            ProbeEventKind::Entry
                        },
                        probe,
                    });
                }
                None => {}
            },
            Rec::Fork {
                pid,
                ppid,
                tid,
                ptid,
                time,
            } => {
                if !self.fork_in_tree(pid, ppid) {
                    return;
                }
                self.tree.insert(pid);
                self.write(ProbeEvent {
                    time_ns: time,
                    pid,
                    tid,
                    arg: u64::from(ppid) | (u64::from(ptid) << 32),
                    kind: ProbeEventKind::ThreadStart,
                    probe: 0,
                });
            }
            Rec::Exit { pid, .. } | Rec::Exec { pid, .. } if !self.in_tree(pid) => {}
            Rec::Exit { pid, tid, time } => self.write(ProbeEvent {
                time_ns: time,
                pid,
                tid,
                arg: 0,
                kind: ProbeEventKind::ThreadExit,
                probe: 0,
            }),
            Rec::Exec { pid, tid, time } => self.write(ProbeEvent {
                time_ns: time,
                pid,
                tid,
                arg: 0,
                kind: ProbeEventKind::Exec,
                probe: 0,
            }),
            Rec::Comm { pid, .. } if !self.in_tree(pid) => {}
            Rec::Comm {
                pid,
                tid,
                time,
                name,
            } => {
                for e in ProbeEvent::name_parts(time, pid, tid, &name) {
                    self.write(e);
                }
            }
            Rec::Mmap { mapping, .. } if !self.in_tree(mapping.pid) => {}
            Rec::Mmap { mapping, .. } => match &mut self.futex {
                Some(fs) => fs.mappings.entry(mapping.pid).or_default().push(mapping),
                None => outcome.mappings.push(mapping),
            },
            Rec::Lost(n) => {
                outcome.lost += n;
                self.manifest.lost += n;
                if let Some(fs) = &mut self.futex {
                    fs.manifest.lost += n;
                }
            }
        }
    }

    /// `--function-every N`: one entry in N per thread is kept, and exactly
    /// the returns of the kept entries (matched by stack pointer; entries
    /// whose frames were left by longjmp are forgotten).
    fn keep_sampled(&mut self, tid: u32, probe: u16, ret: bool, sp: u64) -> bool {
        let every = self.manifest.every;
        let s = self.sampling.entry(tid).or_default();
        if !ret {
            // a new call is below every live frame
            while s.kept.last().is_some_and(|&(_, k)| k < sp) {
                s.kept.pop();
            }
            if s.countdown > 0 {
                s.countdown -= 1;
                return false;
            }
            s.countdown = every - 1;
            s.kept.push((probe, sp));
            true
        } else {
            // the kept entry whose frame this is (see the analysis's
            // FrameMatcher): the highest at or below the return's frame
            let frame = sp.wrapping_sub(8);
            let best = s
                .kept
                .iter()
                .enumerate()
                .filter(|&(_, &(p, k))| p == probe && k <= frame)
                .max_by_key(|&(i, &(_, k))| (k, i))
                .map(|(i, _)| i);
            match best {
                Some(i) => {
                    s.kept.truncate(i);
                    true
                }
                None => false,
            }
        }
    }

    fn close(mut self, outcome: &mut SessionOutcome) {
        if let (Some(mut fs), Some(dir)) = (self.futex.take(), self.out_dir.parent()) {
            for call in fs.pairing.finish() {
                fs.write_maps(dir, call.pid);
                if let Some(w) = &mut fs.writer {
                    let _ = w.push(&call);
                }
            }
            if let Some(w) = &mut fs.writer {
                if let Err(e) = w.flush() {
                    fs.manifest.errors.push(format!("{e}"));
                }
                fs.manifest.calls = w.records;
            }
            fs.manifest.pids = fs.mapped.iter().copied().collect();
            fs.manifest.pids.sort_unstable();
            if fs.manifest.lost > 0 {
                outcome.warnings.push(format!(
                    "the kernel dropped {} record(s) (futex calls among them): a perf ring buffer was full",
                    fs.manifest.lost
                ));
            }
            if let Err(e) = fs.manifest.write(dir) {
                outcome.warnings.push(format!("{e}"));
            }
        }
        if let SessionKind::Record { .. } = self.kind {
            if let Some(w) = &mut self.writer {
                if let Err(e) = w.flush() {
                    self.manifest.errors.push(format!("{e}"));
                }
                outcome.records = w.records;
            }
            if self.manifest.lost > 0 {
                outcome.warnings.push(format!(
                    "the kernel dropped {} probe or thread record(s): a perf ring buffer was full",
                    self.manifest.lost
                ));
            }
            if let Some(parent) = self.out_dir.parent() {
                if let Err(e) = self.manifest.write(parent) {
                    outcome.warnings.push(format!("{e}"));
                }
            }
        }
    }
}

impl FutexState {
    /// Writes `maps/<pid>.maps` from `/proc/<pid>/maps` if the process
    /// still runs (else leaves it to [`FutexState::write_maps`]).
    fn write_maps_from_proc(&mut self, dir: &Path, pid: u32) {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else {
            return;
        };
        if text.is_empty() {
            return;
        }
        self.mapped.insert(pid);
        let maps_dir = dir.join("maps");
        let path = maps_dir.join(format!("{pid}.maps"));
        if path.exists() {
            return;
        }
        if let Err(e) = std::fs::create_dir_all(&maps_dir).and_then(|_| std::fs::write(&path, text))
        {
            self.manifest
                .errors
                .push(format!("{}: {e}", path.display()));
        }
    }

    /// Writes `maps/<pid>.maps` once per process, for the call sites:
    /// `/proc/<pid>/maps` while the process runs, else the executable
    /// mappings of the kernel's mmap records. An existing file (the
    /// collector's) is left alone.
    fn write_maps(&mut self, dir: &Path, pid: u32) {
        if !self.mapped.insert(pid) {
            return;
        }
        let maps_dir = dir.join("maps");
        let path = maps_dir.join(format!("{pid}.maps"));
        if path.exists() {
            return;
        }
        let text = match std::fs::read_to_string(format!("/proc/{pid}/maps")) {
            Ok(t) if !t.is_empty() => t,
            _ => {
                let mut t = String::new();
                for m in self.mappings.get(&pid).into_iter().flatten() {
                    if !m.path.starts_with('/') || m.path.starts_with("//") {
                        continue; // anonymous memory, the heap, [vdso]
                    }
                    let bit = |b: i32, c: char| if m.prot & b as u32 != 0 { c } else { '-' };
                    t.push_str(&format!(
                        "{:x}-{:x} {}{}{}p {:08x} 00:00 {} {}\n",
                        m.start,
                        m.start + m.len,
                        bit(libc::PROT_READ, 'r'),
                        bit(libc::PROT_WRITE, 'w'),
                        bit(libc::PROT_EXEC, 'x'),
                        m.pgoff,
                        m.ino,
                        m.path
                    ));
                }
                t
            }
        };
        if let Err(e) = std::fs::create_dir_all(&maps_dir).and_then(|_| std::fs::write(&path, text))
        {
            self.manifest
                .errors
                .push(format!("{}: {e}", path.display()));
        }
    }
}

/// The process (thread group) of thread `tid`, from `/proc/<tid>/status`.
fn tgid(tid: u32) -> Option<u32> {
    std::fs::read_to_string(format!("/proc/{tid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))?
        .trim()
        .parse()
        .ok()
}

/// Opens (disabled) and closes tracepoint `config` on this process with
/// the futex tracer's attributes: `Err(errno)` when the kernel refuses.
pub(crate) fn try_tracepoint(config: u64) -> Result<(), i32> {
    let attr = Attr {
        kind: TYPE_TRACEPOINT,
        size: 128,
        config,
        sample_period: 1,
        sample_type: SAMPLE_IDENTIFIER | SAMPLE_TID | SAMPLE_TIME | SAMPLE_RAW | SAMPLE_CALLCHAIN,
        flags: F_DISABLED | F_EXCLUDE_CALLCHAIN_KERNEL | F_USE_CLOCKID | F_SAMPLE_ID_ALL,
        clockid: libc::CLOCK_MONOTONIC,
        ..Attr::default()
    };
    perf_open(&attr, 0, -1).map(drop)
}

/// Probes by id, for tests and tools.
pub fn probes_by_id(probes: &[ProbeSpec]) -> BTreeMap<u16, &ProbeSpec> {
    probes.iter().map(|p| (p.id, p)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A system-wide session's state on the tree rooted at `root`, its
    /// records written to `dir/probes/` as a session writes them.
    fn system_wide_state(dir: &Path, root: u32) -> State {
        let out_dir = dir.join(DIR);
        std::fs::create_dir(&out_dir).unwrap();
        State {
            kind: SessionKind::Record {
                probes: Vec::new(),
                refused: Vec::new(),
                every: 1,
                hot: Vec::new(),
                hot_samples: 0,
                futex: None,
            },
            rings: Vec::new(),
            _events: Vec::new(),
            sources: FxHashMap::default(),
            sample_type_of: FxHashMap::default(),
            tree: [root].into_iter().collect(),
            writer: Some(ProbeWriter::create(&out_dir.join(EVENTS)).unwrap()),
            manifest: ProbeManifest::default(),
            sampling: FxHashMap::default(),
            pending: Vec::new(),
            out_dir,
            futex: None,
            system_wide: true,
        }
    }

    /// The machine's task records, worked out by hand: the program (100)
    /// starts a thread (101) and forks a child (200) that starts a thread
    /// (201); another program (300) starts a thread and forks 400; and,
    /// after the child 200 ended, the kernel gives its pid to a process
    /// forked by 300. Kept: exactly the first program's and its child's
    /// records, in time order.
    #[test]
    fn system_wide_task_records_keep_the_tree_and_not_a_reused_pid() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = system_wide_state(dir.path(), 100);
        let mut recs = vec![
            Rec::fork(100, 100, 101, 1),
            Rec::fork(300, 300, 301, 2),
            Rec::fork(200, 100, 200, 3),
            Rec::fork(400, 300, 400, 4),
            Rec::fork(200, 200, 201, 5),
            Rec::Exit {
                pid: 400,
                tid: 400,
                time: 6,
            },
            Rec::Exit {
                pid: 200,
                tid: 201,
                time: 7,
            },
            Rec::Exit {
                pid: 200,
                tid: 200,
                time: 8,
            },
            // pid 200 again, now a process of the other program
            Rec::fork(200, 300, 200, 9),
            Rec::Exec {
                pid: 100,
                tid: 100,
                time: 10,
            },
            Rec::Exec {
                pid: 300,
                tid: 300,
                time: 11,
            },
            Rec::Comm {
                pid: 100,
                tid: 101,
                time: 12,
                name: b"worker".to_vec(),
            },
            Rec::Comm {
                pid: 300,
                tid: 301,
                time: 13,
                name: b"other".to_vec(),
            },
        ];
        let mut outcome = SessionOutcome::default();
        st.process(&mut recs, u64::MAX, &mut outcome);
        st.manifest.write(dir.path()).unwrap();
        drop(st);
        let read = contend_trace::probes::read_probe_recording(dir.path())
            .unwrap()
            .unwrap();
        let kept: Vec<(u64, u32, u32, ProbeEventKind)> = read
            .events
            .iter()
            .map(|e| (e.time_ns, e.pid, e.tid, e.kind))
            .collect();
        use ProbeEventKind::{Exec, ThreadExit, ThreadName, ThreadStart};
        assert_eq!(
            kept,
            vec![
                (1, 100, 101, ThreadStart),
                (3, 200, 200, ThreadStart),
                (5, 200, 201, ThreadStart),
                (7, 200, 201, ThreadExit),
                (8, 200, 200, ThreadExit),
                (10, 100, 100, Exec),
                (12, 100, 101, ThreadName),
                (12, 100, 101, ThreadName),
            ]
        );
        // the tree's thread named itself; the other program's is not kept
        let names: Vec<((u32, u32), String)> = read.thread_names().into_iter().collect();
        assert_eq!(names, vec![((100, 101), "worker".to_string())]);
    }
}
