//! Performance counters of the target through `perf_event_open(2)`: the
//! work measure C(n) of Venter 2016 (Sections 3.1.1 and 3.2.1.1, "Total CPU
//! cycles used", "Last-level cache misses/references", "Memory related
//! stalls") and the CPU time it falls back to.
//!
//! [`COUNTERS`] lists what is asked for: the generic hardware events
//! `cycles`, `instructions`, `cache-references` and `cache-misses` (the
//! last-level cache on current Intel and AMD cores), the back-end stall
//! cycles where the CPU has that event, and the software event
//! `task-clock` (CPU time in ns, exact on any machine). Each counter is a
//! separate event (not a group), so the kernel multiplexes them
//! independently when there are more events than hardware counters; every
//! reading carries `time_enabled` and `time_running` and is scaled by
//! [`scale`].
//!
//! For `contend record -- CMD` the counters are opened by the target
//! itself, between `fork` and `exec` ([`ChildPart::open_in_child`], run
//! in the launcher's `pre_exec` hook), on itself (`pid` 0, any CPU), with
//! `disabled`, `inherit` and `enable_on_exec`: they start counting at the
//! `exec` of the target program, not before, and every thread and process
//! it creates inherits them. The descriptors travel to the launcher over a
//! Unix socket (`SCM_RIGHTS`) together with each counter's `errno`; the
//! launcher reads them after the target was reaped, when the counts of all
//! exited threads and children have been added to the parent events. A
//! counter the kernel refuses is recorded as missing with the reason
//! ([`reason`]): on a virtual machine without a PMU every hardware event
//! fails with `ENOENT`.

use std::collections::BTreeMap;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use contend_trace::counters::{CounterValue, MissingCounter, RunCounters};

/// `PERF_TYPE_HARDWARE`.
const TYPE_HARDWARE: u32 = 0;
/// `PERF_TYPE_SOFTWARE`.
const TYPE_SOFTWARE: u32 = 1;
/// `PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING`.
const READ_FORMAT: u64 = 1 | 2;
/// `perf_event_attr` flag bits.
const FLAG_DISABLED: u64 = 1 << 0;
const FLAG_INHERIT: u64 = 1 << 1;
const FLAG_EXCLUDE_KERNEL: u64 = 1 << 5;
const FLAG_EXCLUDE_HV: u64 = 1 << 6;
const FLAG_ENABLE_ON_EXEC: u64 = 1 << 12;

/// One counter contend asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CounterSpec {
    /// Key in `meta.json` and the report (`cycles`, `llc_misses`, …).
    pub name: &'static str,
    /// `perf_event_attr.type`.
    pub kind: u32,
    /// `perf_event_attr.config`.
    pub config: u64,
    /// What the value counts: `"events"` (cycles, instructions, cache
    /// accesses) or `"ns"` (`task_clock`).
    pub unit: &'static str,
}

/// The counters `contend record` opens, in this order.
pub const COUNTERS: [CounterSpec; 6] = [
    // PERF_COUNT_HW_CPU_CYCLES
    CounterSpec {
        name: "cycles",
        kind: TYPE_HARDWARE,
        config: 0,
        unit: "events",
    },
    // PERF_COUNT_HW_INSTRUCTIONS
    CounterSpec {
        name: "instructions",
        kind: TYPE_HARDWARE,
        config: 1,
        unit: "events",
    },
    // PERF_COUNT_HW_CACHE_REFERENCES (last-level cache)
    CounterSpec {
        name: "llc_references",
        kind: TYPE_HARDWARE,
        config: 2,
        unit: "events",
    },
    // PERF_COUNT_HW_CACHE_MISSES (last-level cache)
    CounterSpec {
        name: "llc_misses",
        kind: TYPE_HARDWARE,
        config: 3,
        unit: "events",
    },
    // PERF_COUNT_HW_STALLED_CYCLES_BACKEND
    CounterSpec {
        name: "stalled_cycles_backend",
        kind: TYPE_HARDWARE,
        config: 8,
        unit: "events",
    },
    // PERF_COUNT_SW_TASK_CLOCK
    CounterSpec {
        name: "task_clock",
        kind: TYPE_SOFTWARE,
        config: 1,
        unit: "ns",
    },
];

/// Number of counters in [`COUNTERS`].
pub const N: usize = COUNTERS.len();

/// `struct perf_event_attr` up to `config1` (`PERF_ATTR_SIZE_VER0`, 64
/// bytes), which every kernel since 2.6.31 accepts.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct Attr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

const _: () = assert!(std::mem::size_of::<Attr>() == 64);

impl Attr {
    fn new(spec: &CounterSpec, flags: u64) -> Attr {
        Attr {
            kind: spec.kind,
            size: std::mem::size_of::<Attr>() as u32,
            config: spec.config,
            read_format: READ_FORMAT,
            flags,
            ..Attr::default()
        }
    }
}

/// `perf_event_open(attr, pid, cpu = -1, group = -1, PERF_FLAG_FD_CLOEXEC)`:
/// the descriptor, or the `errno`. Async-signal-safe (one system call).
fn perf_event_open(attr: &Attr, pid: libc::pid_t) -> Result<RawFd, i32> {
    const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
    // SAFETY: `attr` points to a valid, fully initialised perf_event_attr
    // whose `size` field is its size.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr as *const Attr,
            pid,
            -1 as libc::c_int,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        // SAFETY: errno is thread-local.
        Err(unsafe { *libc::__errno_location() })
    } else {
        Ok(fd as RawFd)
    }
}

/// Opens `spec` on `pid` (0 = the caller) with `flags`; where the kernel
/// refuses to count kernel mode (`EACCES`/`EPERM` under
/// `kernel.perf_event_paranoid` ≥ 2 without privilege), retries counting
/// user mode only. Returns the descriptor and whether kernel mode is
/// excluded. Async-signal-safe.
fn open_one(spec: &CounterSpec, pid: libc::pid_t, flags: u64) -> Result<(RawFd, bool), i32> {
    match perf_event_open(&Attr::new(spec, flags), pid) {
        Ok(fd) => Ok((fd, false)),
        Err(e) if e == libc::EACCES || e == libc::EPERM => perf_event_open(
            &Attr::new(spec, flags | FLAG_EXCLUDE_KERNEL | FLAG_EXCLUDE_HV),
            pid,
        )
        .map(|fd| (fd, true))
        .map_err(|_| e),
        Err(e) => Err(e),
    }
}

/// Why the kernel refused a counter, as a sentence fragment naming the
/// cause (stored in `meta.json` as [`MissingCounter::reason`]).
pub fn reason(errno: i32) -> String {
    let name = errno_name(errno);
    match errno {
        libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV => {
            format!("not supported: no hardware PMU or no such event ({name})")
        }
        libc::EACCES | libc::EPERM => {
            let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "?".into());
            format!("not permitted: kernel.perf_event_paranoid = {paranoid} ({name})")
        }
        libc::ENOSYS => format!("this kernel has no perf_event_open ({name})"),
        libc::EMFILE | libc::ENFILE => format!("too many open files ({name})"),
        _ => format!(
            "perf_event_open failed: {}",
            io::Error::from_raw_os_error(errno)
        ),
    }
}

/// The symbolic name of the `errno` values [`reason`] distinguishes.
fn errno_name(errno: i32) -> &'static str {
    match errno {
        libc::ENOENT => "ENOENT",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ENODEV => "ENODEV",
        libc::EACCES => "EACCES",
        libc::EPERM => "EPERM",
        libc::ENOSYS => "ENOSYS",
        libc::EMFILE => "EMFILE",
        libc::ENFILE => "ENFILE",
        _ => "error",
    }
}

/// A counter's scaled value: `raw × enabled / running` when the kernel
/// multiplexed it (ran it only part of the time it was enabled); `raw`
/// when it ran all the time; `None` when it never ran (`running` = 0),
/// so that nothing can be said. Computed in 128 bits, saturating at
/// `u64::MAX`.
pub fn scale(raw: u64, enabled_ns: u64, running_ns: u64) -> Option<u64> {
    if running_ns == 0 {
        return (raw == 0 && enabled_ns == 0).then_some(0);
    }
    if running_ns >= enabled_ns {
        return Some(raw);
    }
    let v = u128::from(raw) * u128::from(enabled_ns) / u128::from(running_ns);
    Some(u64::try_from(v).unwrap_or(u64::MAX))
}

/// Counters prepared in the launcher before `fork`:
/// [`ChildPart::open_in_child`] opens them in the child and sends them
/// back; [`Prepared::collect`] receives them in the launcher.
#[derive(Debug)]
pub struct Prepared {
    attrs: [Attr; N],
    /// Our end of the socket pair.
    ours: OwnedFd,
    /// The child's end (inherited across fork, closed at exec).
    theirs: OwnedFd,
}

/// The message the child sends: one `errno` per counter (0 = opened) and
/// whether kernel mode was excluded; the descriptors of the opened ones
/// follow as `SCM_RIGHTS`, in order.
#[repr(C)]
#[derive(Clone, Copy)]
struct Message {
    errno: [i32; N],
    user_only: [u8; N],
}

/// Bytes of `SCM_RIGHTS` control data for N descriptors (with room to
/// spare for the header and alignment).
const CMSG_SPACE: usize = 64 + N * 4;

impl Prepared {
    /// Creates the socket pair and the attributes (`disabled`, `inherit`,
    /// `enable_on_exec`). Errors: the socket pair cannot be created.
    pub fn new() -> io::Result<Prepared> {
        let mut fds = [0 as RawFd; 2];
        // SAFETY: valid out-pointer for two descriptors.
        let rc = unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: socketpair returned two fresh descriptors we now own.
        let (ours, theirs) =
            unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let flags = FLAG_DISABLED | FLAG_INHERIT | FLAG_ENABLE_ON_EXEC;
        let attrs = COUNTERS.map(|spec| Attr::new(&spec, flags));
        Ok(Prepared {
            attrs,
            ours,
            theirs,
        })
    }

    /// What the child runs between `fork` and `exec`: a copy of the data
    /// [`ChildPart::open_in_child`] needs, without the launcher's end.
    pub fn child_part(&self) -> ChildPart {
        ChildPart {
            attrs: self.attrs,
            sock: self.theirs.as_raw_fd(),
        }
    }

    /// Receives what the child sent and reads nothing yet: call after the
    /// target was started. Counters the child could not open are missing
    /// with their reason; when no message arrived (the child never ran its
    /// hook), every counter is missing with `why_none`.
    pub fn collect(self, why_none: &str) -> Opened {
        let mut msg = Message {
            errno: [0; N],
            user_only: [0; N],
        };
        let mut cbuf = [0u8; CMSG_SPACE];
        let mut iov = libc::iovec {
            iov_base: (&mut msg as *mut Message).cast(),
            iov_len: std::mem::size_of::<Message>(),
        };
        // SAFETY: msghdr points to live buffers of the stated lengths.
        let (n, fds) = unsafe {
            let mut hdr: libc::msghdr = std::mem::zeroed();
            hdr.msg_iov = &mut iov;
            hdr.msg_iovlen = 1;
            hdr.msg_control = cbuf.as_mut_ptr().cast();
            hdr.msg_controllen = cbuf.len() as _;
            let n = libc::recvmsg(
                self.ours.as_raw_fd(),
                &mut hdr,
                libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC,
            );
            let mut fds = Vec::new();
            if n >= 0 {
                let mut c = libc::CMSG_FIRSTHDR(&hdr);
                while !c.is_null() {
                    if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                        let data = libc::CMSG_DATA(c) as *const RawFd;
                        let len = (*c).cmsg_len as usize - (data as usize - c as usize);
                        for i in 0..len / std::mem::size_of::<RawFd>() {
                            fds.push(OwnedFd::from_raw_fd(data.add(i).read_unaligned()));
                        }
                    }
                    c = libc::CMSG_NXTHDR(&hdr, c);
                }
            }
            (n, fds)
        };
        let mut opened = Opened::default();
        if n != std::mem::size_of::<Message>() as isize {
            opened.missing = COUNTERS
                .iter()
                .map(|s| MissingCounter {
                    name: s.name.into(),
                    reason: why_none.into(),
                })
                .collect();
            return opened;
        }
        let mut fds = fds.into_iter();
        for (i, spec) in COUNTERS.iter().enumerate() {
            if msg.errno[i] == 0 {
                match fds.next() {
                    Some(fd) => opened.fds.push((spec.name, fd, msg.user_only[i] != 0)),
                    None => opened.missing.push(MissingCounter {
                        name: spec.name.into(),
                        reason: "its descriptor was lost on the way to the launcher".into(),
                    }),
                }
            } else {
                opened.missing.push(MissingCounter {
                    name: spec.name.into(),
                    reason: reason(msg.errno[i]),
                });
            }
        }
        opened
    }
}

/// The part of [`Prepared`] the child uses; `Copy`, so that the `pre_exec`
/// hook owns it without allocating.
#[derive(Debug, Clone, Copy)]
pub struct ChildPart {
    attrs: [Attr; N],
    sock: RawFd,
}

impl ChildPart {
    /// Opens every counter on the calling process and sends the results
    /// and descriptors to the launcher, then closes the child's copies.
    /// Runs between `fork` and `exec`: async-signal-safe (system calls
    /// only, no allocation). Never fails: a counter that cannot be opened
    /// is reported as missing, and a failed send leaves every counter
    /// missing.
    pub fn open_in_child(&self) {
        let mut msg = Message {
            errno: [0; N],
            user_only: [0; N],
        };
        let mut fds = [-1 as RawFd; N];
        let mut nfds = 0;
        for (i, attr) in self.attrs.iter().enumerate() {
            let spec = CounterSpec {
                name: "",
                kind: attr.kind,
                config: attr.config,
                unit: "",
            };
            match open_one(&spec, 0, attr.flags) {
                Ok((fd, user_only)) => {
                    fds[nfds] = fd;
                    nfds += 1;
                    msg.user_only[i] = u8::from(user_only);
                }
                Err(e) => msg.errno[i] = e.max(1),
            }
        }
        let mut cbuf = [0u8; CMSG_SPACE];
        let mut iov = libc::iovec {
            iov_base: (&mut msg as *mut Message).cast(),
            iov_len: std::mem::size_of::<Message>(),
        };
        // SAFETY: msghdr and the control buffer are live and large enough
        // for `nfds` descriptors (CMSG_SPACE ≥ CMSG_SPACE(4·N)).
        unsafe {
            let mut hdr: libc::msghdr = std::mem::zeroed();
            hdr.msg_iov = &mut iov;
            hdr.msg_iovlen = 1;
            if nfds > 0 {
                let bytes = (nfds * std::mem::size_of::<RawFd>()) as u32;
                hdr.msg_control = cbuf.as_mut_ptr().cast();
                hdr.msg_controllen = libc::CMSG_SPACE(bytes) as _;
                let c = libc::CMSG_FIRSTHDR(&hdr);
                (*c).cmsg_level = libc::SOL_SOCKET;
                (*c).cmsg_type = libc::SCM_RIGHTS;
                (*c).cmsg_len = libc::CMSG_LEN(bytes) as _;
                let data = libc::CMSG_DATA(c) as *mut RawFd;
                for (i, fd) in fds[..nfds].iter().enumerate() {
                    data.add(i).write_unaligned(*fd);
                }
            }
            libc::sendmsg(self.sock, &hdr, libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL);
            for fd in &fds[..nfds] {
                libc::close(*fd);
            }
        }
    }
}

/// Counters opened on a target, to be read when it has ended.
#[derive(Debug, Default)]
pub struct Opened {
    fds: Vec<(&'static str, OwnedFd, bool)>,
    /// Counters that could not be opened, with the reason.
    pub missing: Vec<MissingCounter>,
}

impl Opened {
    /// Opens every counter on each of the threads `tids` of a running
    /// process (attach mode): counting starts now, with `inherit`, so
    /// threads those threads create later are counted too; what the
    /// threads ran before is not. The counts of all threads are summed
    /// when read ([`Opened::read`]). A counter is missing when it cannot
    /// be opened on every live thread: a sum over only some threads would
    /// be silently low, so a counter that opened on some threads and
    /// failed on another (e.g. `EMFILE`) is dropped and named missing with
    /// how far it got. Threads that ended meanwhile (`ESRCH`) are skipped.
    pub fn attach(tids: &[u32]) -> Opened {
        Opened::attach_with(tids, |spec, tid| {
            open_one(spec, tid as libc::pid_t, FLAG_INHERIT)
        })
    }

    /// [`Opened::attach`] with the opening function given, so the
    /// partial-failure rule can be tested without a PMU: `open` returns a
    /// raw descriptor and whether only user mode is counted, or an errno.
    fn attach_with(
        tids: &[u32],
        mut open: impl FnMut(&CounterSpec, u32) -> Result<(RawFd, bool), i32>,
    ) -> Opened {
        let mut opened = Opened::default();
        for spec in &COUNTERS {
            let mut first_err = None;
            let mut fds = Vec::new();
            for &tid in tids {
                match open(spec, tid) {
                    Ok((fd, user_only)) => {
                        // SAFETY: a fresh descriptor we now own.
                        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
                        fds.push((spec.name, fd, user_only));
                    }
                    Err(libc::ESRCH) => {}
                    Err(e) => {
                        first_err.get_or_insert(e);
                        break;
                    }
                }
            }
            let reason = match (fds.is_empty(), first_err) {
                (false, None) => {
                    opened.fds.append(&mut fds);
                    continue;
                }
                (true, Some(e)) => reason(e),
                (true, None) => "no thread of the process could be found".into(),
                (false, Some(e)) => format!(
                    "opened on {} of {} threads, then {}; a count of only some threads would be low",
                    fds.len(),
                    tids.len(),
                    reason(e)
                ),
            };
            opened.missing.push(MissingCounter {
                name: spec.name.into(),
                reason,
            });
        }
        opened
    }

    /// Number of counters opened (descriptors held).
    pub fn len(&self) -> usize {
        self.fds.len()
    }

    /// True when no counter could be opened.
    pub fn is_empty(&self) -> bool {
        self.fds.is_empty()
    }

    /// Closes the software `task_clock` counter when no hardware counter
    /// opened, unless `keep` (`CONTEND_KEEP_TASK_CLOCK=1`): alone it only
    /// measures the target's CPU time, which `wait4` gives as well (µs
    /// resolution), and an inherited counter costs the target time at every
    /// context switch (the kernel switches the thread's perf context out
    /// and in: about 5 % of `sysbench threads`' throughput in
    /// `bench/sampler_switch.sh`, docs/benchmarks.md, "The sampler leaves
    /// the scheduler events when they cost more"). Closing it removes it
    /// from every thread. It is
    /// then missing with the reason. Returns whether it was closed.
    pub fn drop_lone_task_clock(&mut self, keep: bool) -> bool {
        let hardware = self.fds.iter().any(|(name, _, _)| *name != "task_clock");
        if keep || hardware || !self.fds.iter().any(|(name, _, _)| *name == "task_clock") {
            return false;
        }
        self.fds.retain(|(name, _, _)| *name != "task_clock");
        self.missing.push(MissingCounter {
            name: "task_clock".into(),
            reason: "not kept without hardware counters: the CPU time comes from wait4 (an \
                     inherited counter costs the program time at every context switch; \
                     CONTEND_KEEP_TASK_CLOCK=1 keeps it)"
                .into(),
        });
        true
    }

    /// Reads and closes every counter; descriptors of the same counter
    /// (one per thread in attach mode) are summed. A counter that never
    /// ran on the PMU (`time_running` = 0 although enabled) is moved to
    /// `missing`.
    pub fn read(self) -> RunCounters {
        let mut out = RunCounters {
            missing: self.missing,
            ..RunCounters::default()
        };
        let mut sums: BTreeMap<&'static str, CounterValue> = BTreeMap::new();
        let mut failed: BTreeMap<&'static str, String> = BTreeMap::new();
        for (name, fd, user_only) in &self.fds {
            let mut buf = [0u64; 3];
            // SAFETY: reading 24 bytes into a 24-byte buffer.
            let n = unsafe {
                libc::read(
                    fd.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    std::mem::size_of_val(&buf),
                )
            };
            if n != std::mem::size_of_val(&buf) as isize {
                failed.entry(name).or_insert_with(|| {
                    format!("reading it failed: {}", io::Error::last_os_error())
                });
                continue;
            }
            let c = sums.entry(name).or_default();
            c.raw = c.raw.saturating_add(buf[0]);
            c.time_enabled_ns = c.time_enabled_ns.saturating_add(buf[1]);
            c.time_running_ns = c.time_running_ns.saturating_add(buf[2]);
            c.value = c
                .value
                .saturating_add(scale(buf[0], buf[1], buf[2]).unwrap_or(0));
            c.user_only |= *user_only;
        }
        for (name, c) in sums {
            if c.time_running_ns == 0 && c.time_enabled_ns > 0 {
                out.missing.push(MissingCounter {
                    name: name.into(),
                    reason: "opened but never scheduled on the PMU (all hardware counters busy)"
                        .into(),
                });
            } else {
                out.available.insert(name.into(), c);
            }
        }
        for (name, why) in failed {
            if !out.available.contains_key(name) {
                out.missing.push(MissingCounter {
                    name: name.into(),
                    reason: why,
                });
            }
        }
        // Missing counters in the order of COUNTERS.
        out.missing.sort_by_key(|m| {
            COUNTERS
                .iter()
                .position(|s| s.name == m.name)
                .unwrap_or(usize::MAX)
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaling_arithmetic() {
        // Ran all the time: unchanged.
        assert_eq!(scale(1000, 50, 50), Some(1000));
        // Ran a quarter of the time: four times the count.
        assert_eq!(scale(1000, 400, 100), Some(4000));
        // 3 of 7: 700 × 7 / 3 = 1633.33 → 1633.
        assert_eq!(scale(700, 7, 3), Some(1633));
        // Never ran although enabled: unknown.
        assert_eq!(scale(0, 100, 0), None);
        // Never enabled: zero.
        assert_eq!(scale(0, 0, 0), Some(0));
        // No overflow in the product, saturation at the end.
        assert_eq!(scale(u64::MAX / 2, 4, 2), Some(u64::MAX - 1));
        assert_eq!(scale(u64::MAX, 4, 1), Some(u64::MAX));
        // running > enabled (rounding in the kernel): unchanged.
        assert_eq!(scale(10, 5, 6), Some(10));
    }

    /// Regression: in attach mode a counter that opened on the first
    /// thread but failed on a later one used to be summed over the threads
    /// it opened on, a silently low count.
    #[test]
    fn attach_drops_a_counter_that_failed_on_some_threads() {
        let devnull = || {
            let f = std::fs::File::open("/dev/null").unwrap();
            std::os::fd::IntoRawFd::into_raw_fd(f)
        };
        let tids = [10, 11, 12];
        let opened = Opened::attach_with(&tids, |spec, tid| match (spec.name, tid) {
            // cycles: fails with EMFILE on the third thread.
            ("cycles", 12) => Err(libc::EMFILE),
            // instructions: the second thread has ended (ESRCH), fine.
            ("instructions", 11) => Err(libc::ESRCH),
            // every other counter: not supported at all.
            ("cycles", _) | ("instructions", _) => Ok((devnull(), false)),
            _ => Err(libc::ENOENT),
        });
        let names: Vec<&str> = opened.fds.iter().map(|(n, _, _)| *n).collect();
        assert_eq!(names, vec!["instructions", "instructions"]);
        let cycles = opened.missing.iter().find(|m| m.name == "cycles").unwrap();
        assert!(
            cycles.reason.starts_with("opened on 2 of 3 threads, then ")
                && cycles.reason.contains("low"),
            "{}",
            cycles.reason
        );
        assert!(!opened.missing.iter().any(|m| m.name == "instructions"));
        assert_eq!(opened.missing.len(), COUNTERS.len() - 1);
    }

    #[test]
    fn reasons_name_the_cause() {
        assert!(reason(libc::ENOENT).contains("no hardware PMU"));
        assert!(reason(libc::EOPNOTSUPP).contains("not supported"));
        assert!(reason(libc::ENOENT).ends_with("(ENOENT)"));
        assert!(reason(libc::EACCES).contains("perf_event_paranoid"));
        assert!(reason(libc::ENOSYS).contains("no perf_event_open"));
    }

    /// One round of [`task_clock_through_fork_and_socket`]: the child,
    /// pinned to `cpu`, execs a CPU burner. Returns (task-clock, rusage
    /// CPU time, time `cpu` lost to steal and interrupts), ns.
    fn task_clock_round(cpu: usize) -> (CounterValue, u64, u64) {
        let prepared = Prepared::new().unwrap();
        let child = prepared.child_part();
        let lost_before = crate::host::cpu_time_lost_ns(Some(cpu)).unwrap();
        // SAFETY: the child only makes system calls and spins, then _exits.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(cpu, &mut set);
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
            }
            child.open_in_child();
            // Counters are enable_on_exec: exec a CPU burner.
            let sh = c"/bin/sh";
            let arg = c"i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done";
            let dash_c = c"-c";
            let argv = [sh.as_ptr(), dash_c.as_ptr(), arg.as_ptr(), std::ptr::null()];
            unsafe {
                libc::execv(sh.as_ptr(), argv.as_ptr());
                libc::_exit(127);
            }
        }
        let mut status = 0;
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        let lost = crate::host::cpu_time_lost_ns(Some(cpu)).unwrap() - lost_before;
        // The message waits in the socket after the child has gone.
        let c = prepared.collect("none").read();
        let tc = c
            .available
            .get("task_clock")
            .cloned()
            .unwrap_or_else(|| panic!("{c:?}"));
        let ru_ns = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) as u64 * 1_000_000_000
            + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) as u64 * 1000;
        assert!(ru_ns > 50_000_000, "the burner ran {ru_ns} ns");
        (tc, ru_ns, lost)
    }

    /// The whole path on the calling thread: task-clock opened in a forked
    /// child that then burns CPU, read in the parent, within 10 % of the
    /// child's rusage. A round in which the child's CPU lost time to steal
    /// or interrupts (which task-clock counts and rusage does not) is
    /// repeated, up to 6 rounds; an undisturbed round must be within bound.
    #[test]
    fn task_clock_through_fork_and_socket() {
        // The CPU this thread may run on that comes first.
        let cpu = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set);
            (0..libc::CPU_SETSIZE as usize)
                .find(|&c| libc::CPU_ISSET(c, &set))
                .unwrap()
        };
        let mut disturbed = Vec::new();
        for _ in 0..6 {
            let (tc, ru_ns, lost) = task_clock_round(cpu);
            let ratio = tc.value as f64 / ru_ns as f64;
            if (0.9..1.1).contains(&ratio) {
                return;
            }
            assert!(
                lost > 0,
                "task_clock {tc:?} vs rusage {ru_ns} ns in an undisturbed round"
            );
            disturbed.push((tc.value, ru_ns, lost));
        }
        panic!("every round disturbed (task-clock, rusage, lost ns): {disturbed:?}");
    }
}
