//! The data-address sampler of `contend record --numa`: which pages a
//! program touches, from which node, to which node (the histograms of
//! Nikolopoulos Section 2.3 and, per page, Section 3).
//!
//! Two methods, both through `perf_event_open(2)` in user mode only:
//!
//! - **hardware**, where the PMU samples loads with their data address
//!   (Intel PEBS `mem-loads` with a latency threshold, AMD IBS op;
//!   [`super::pmu`]): `PERF_SAMPLE_ADDR | PERF_SAMPLE_CPU |
//!   PERF_SAMPLE_PHYS_ADDR`; the page's node comes from the physical
//!   address's memory block, else from `move_pages(2)`. A sample stands
//!   for `period` loads. Not testable on the development machine (no PMU).
//! - **software**, everywhere else: the `cpu-clock` timer interrupts each
//!   thread every `period` ns of its CPU time and the kernel hands over the
//!   instruction pointer and the user registers (`PERF_SAMPLE_REGS_USER`).
//!   The launcher reads the instruction bytes there
//!   (`process_vm_readv(2)`, cached per address), decodes the instruction
//!   (`iced-x86`) and computes the address of its memory operand from the
//!   registers: the registers are those *before* the instruction runs, so
//!   the address is the one it is about to access, exactly. Its page's
//!   node is asked with `move_pages(2)` while the program runs (every
//!   20 ms); the CPU's node comes from sysfs. A sample stands for `period`
//!   ns spent at an instruction touching that page. Cost: one timer
//!   interrupt per period per running thread in the target (the kernel
//!   writes ~180 bytes), the decoding in the launcher. Bias: samples are
//!   time-weighted, so instructions that stall (loads that miss the
//!   caches, the ones memory contention is about) are over-represented
//!   compared with a count of accesses, and cache hits are not told apart
//!   from memory accesses; instructions without a memory operand give no
//!   address (`no_memory_operand`), `fs`/`gs`-relative accesses (thread-
//!   local storage) neither, since the sample lacks the segment base.
//!
//! Page protection in the manner of the kernel's NUMA hinting faults was
//! rejected: a system call reading a protected buffer fails with `EFAULT`
//! instead of faulting, and a program's own `SIGSEGV` handler would see
//! foreign faults, so the target's behaviour would change.
//!
//! For `contend record -- CMD` the events are opened per CPU on the target
//! with `inherit` (every thread and child process is sampled; a per-task
//! inherited event cannot be mapped) and `enable_on_exec`, by a helper
//! thread of the launcher while the forked child waits, before `exec`, for
//! it ([`Prepared`], [`ChildPart::handshake`]). [`NumaSampler::attach`]
//! samples a running process instead (per thread, new threads picked up
//! every 20 ms), for `contend numa balance --apply -p PID`.

use std::collections::{HashMap, HashSet};
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{fence, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Duration;

use contend_trace::numa::{PageSamples, PeriodUnit, SamplerInfo, SamplingMethod};
use iced_x86::{Decoder, DecoderOptions, InstructionInfoFactory, OpAccess, Register, UsedMemory};

use super::memory::query_nodes;
use super::pmu::{find_event, PhysMap, PmuEvent, DEVICES, MEMORY};
use super::topology::Topology;
use crate::cpus::online_cpu_list;
use crate::host::thread_cpu_ns;
use crate::shared_map::SharedMap;

/// Default software period: 1 ms of CPU time. Each sample costs the
/// target about 20 µs in a virtual machine (bench/numa_sampler.sh): 2 % at
/// this period, 7.5 % at perf's 250 µs.
pub const DEFAULT_PERIOD_NS: u64 = 1_000_000;
/// Default hardware period: every 1000th qualifying load.
pub const DEFAULT_PERIOD_EVENTS: u64 = 1000;
/// How often the buffers are read and pages located.
pub const DRAIN_INTERVAL: Duration = Duration::from_millis(20);
/// Data pages of each ring buffer (a power of two).
const RING_PAGES: usize = 64;

/// Which method to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MethodChoice {
    /// Hardware where the PMU has it, else software.
    #[default]
    Auto,
    /// Always software.
    Software,
    /// Hardware or nothing.
    Hardware,
}

/// What to sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NumaSamplerOptions {
    /// Which method.
    pub method: MethodChoice,
    /// Software period, ns of CPU time (at least 10 µs).
    pub period_ns: u64,
    /// Hardware period, events.
    pub period_events: u64,
}

impl Default for NumaSamplerOptions {
    fn default() -> Self {
        NumaSamplerOptions {
            method: MethodChoice::Auto,
            period_ns: DEFAULT_PERIOD_NS,
            period_events: DEFAULT_PERIOD_EVENTS,
        }
    }
}

const SAMPLE_IP: u64 = 1 << 0;
const SAMPLE_TID: u64 = 1 << 1;
const SAMPLE_ADDR: u64 = 1 << 3;
const SAMPLE_CPU: u64 = 1 << 7;
const SAMPLE_REGS_USER: u64 = 1 << 12;
const SAMPLE_PHYS_ADDR: u64 = 1 << 19;

const FLAG_DISABLED: u64 = 1 << 0;
const FLAG_INHERIT: u64 = 1 << 1;
const FLAG_EXCLUDE_KERNEL: u64 = 1 << 5;
const FLAG_EXCLUDE_HV: u64 = 1 << 6;
const FLAG_COMM: u64 = 1 << 9;
const FLAG_ENABLE_ON_EXEC: u64 = 1 << 12;
const FLAG_COMM_EXEC: u64 = 1 << 24;

/// x86-64 user registers sampled: AX BX CX DX SI DI BP SP IP (perf
/// register numbers 0–8) and R8–R15 (16–23), in that order in a sample.
const REGS_MASK: u64 = 0x1ff | (0xff << 16);
const NREGS: usize = 17;

const RECORD_LOST: u32 = 2;
const RECORD_COMM: u32 = 3;
const RECORD_SAMPLE: u32 = 9;
const MISC_COMM_EXEC: u16 = 1 << 13;

/// `struct perf_event_attr` up to `sample_max_stack`
/// (`PERF_ATTR_SIZE_VER5`, 112 bytes).
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
    config2: u64,
    branch_sample_type: u64,
    sample_regs_user: u64,
    sample_stack_user: u32,
    clockid: i32,
    sample_regs_intr: u64,
    aux_watermark: u32,
    sample_max_stack: u16,
    reserved: u16,
}

const _: () = assert!(std::mem::size_of::<Attr>() == 112);

/// The event chosen, its attributes and what it means.
#[derive(Debug, Clone)]
struct EventSpec {
    attr: Attr,
    method: SamplingMethod,
    event: String,
    period: u64,
    unit: PeriodUnit,
    notes: Vec<String>,
}

fn software_spec(period_ns: u64) -> EventSpec {
    let period = period_ns.max(10_000);
    EventSpec {
        attr: Attr {
            kind: 1,   // PERF_TYPE_SOFTWARE
            config: 0, // PERF_COUNT_SW_CPU_CLOCK
            size: std::mem::size_of::<Attr>() as u32,
            sample_period: period,
            sample_type: SAMPLE_IP | SAMPLE_TID | SAMPLE_CPU | SAMPLE_REGS_USER,
            sample_regs_user: REGS_MASK,
            flags: FLAG_EXCLUDE_KERNEL | FLAG_EXCLUDE_HV | FLAG_COMM | FLAG_COMM_EXEC,
            ..Attr::default()
        },
        method: SamplingMethod::Software,
        event: "cpu-clock".into(),
        period,
        unit: PeriodUnit::Ns,
        notes: Vec::new(),
    }
}

fn hardware_spec(ev: &PmuEvent, period: u64) -> EventSpec {
    let precise = u64::from(ev.precise_ip.min(3)) << 15;
    EventSpec {
        attr: Attr {
            kind: ev.kind,
            config: ev.config,
            config1: ev.config1,
            size: std::mem::size_of::<Attr>() as u32,
            sample_period: period.max(1),
            sample_type: SAMPLE_IP | SAMPLE_TID | SAMPLE_ADDR | SAMPLE_CPU | SAMPLE_PHYS_ADDR,
            flags: FLAG_EXCLUDE_KERNEL | FLAG_EXCLUDE_HV | FLAG_COMM | FLAG_COMM_EXEC | precise,
            ..Attr::default()
        },
        method: SamplingMethod::Hardware,
        event: ev.name.clone(),
        period: period.max(1),
        unit: PeriodUnit::Events,
        notes: Vec::new(),
    }
}

/// The specs to try in order, per `opts`.
fn candidates(opts: &NumaSamplerOptions) -> Result<Vec<EventSpec>, String> {
    let hw = find_event(std::path::Path::new(DEVICES));
    let mut sw = software_spec(opts.period_ns);
    if !cfg!(target_arch = "x86_64") && opts.method != MethodChoice::Hardware {
        return Err("the software sampler decodes x86-64 instructions; this machine is not x86-64 and has no hardware sampling in use".into());
    }
    match (opts.method, hw) {
        (MethodChoice::Software, _) => Ok(vec![sw]),
        (MethodChoice::Hardware, Ok(ev)) => Ok(vec![hardware_spec(&ev, opts.period_events)]),
        (MethodChoice::Hardware, Err(why)) => Err(why),
        (MethodChoice::Auto, Ok(ev)) => Ok(vec![hardware_spec(&ev, opts.period_events), sw]),
        (MethodChoice::Auto, Err(why)) => {
            sw.notes.push(format!("software sampling: {why}"));
            Ok(vec![sw])
        }
    }
}

/// `perf_event_open(attr, pid, cpu, -1, CLOEXEC)`.
fn perf_event_open(attr: &Attr, pid: i32, cpu: i32) -> Result<OwnedFd, i32> {
    const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
    // SAFETY: `attr` is a valid perf_event_attr of the stated size.
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
            .unwrap_or(libc::EINVAL))
    } else {
        // SAFETY: a fresh descriptor we now own.
        Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
    }
}

/// Opens the first spec of `specs` that the kernel accepts on every CPU
/// of `cpus` for process `pid` (inherit, enable on exec).
fn open_per_cpu(
    mut specs: Vec<EventSpec>,
    pid: u32,
    cpus: &[u32],
) -> Result<(EventSpec, Vec<Ring>), String> {
    let mut why = Vec::new();
    let n = specs.len();
    for (idx, mut spec) in specs.drain(..).enumerate() {
        spec.attr.flags |= FLAG_DISABLED | FLAG_INHERIT | FLAG_ENABLE_ON_EXEC;
        let mut rings = Vec::new();
        let mut failed = None;
        for &cpu in cpus {
            match perf_event_open(&spec.attr, pid as i32, cpu as i32)
                .map_err(|e| (e, io::Error::from_raw_os_error(e).to_string()))
            {
                Ok(fd) => match Ring::new(fd) {
                    Ok(r) => rings.push(r),
                    Err(e) => {
                        failed = Some(format!("{}: mapping its buffer failed: {e}", spec.event));
                        break;
                    }
                },
                Err((_, msg)) => {
                    failed = Some(format!("{} on CPU {cpu}: {msg}", spec.event));
                    break;
                }
            }
        }
        match failed {
            None => {
                if idx > 0 {
                    spec.notes
                        .extend(why.iter().map(|w| {
                            format!("software sampling: the hardware event failed ({w})")
                        }));
                }
                return Ok((spec, rings));
            }
            Some(w) if idx + 1 < n => why.push(w),
            Some(w) => {
                why.push(w);
            }
        }
    }
    Err(format!(
        "cannot open the sampling event: {}",
        why.join("; ")
    ))
}

/// One mapped ring buffer of a sampling event.
struct Ring {
    _fd: OwnedFd,
    map: SharedMap,
    data_off: usize,
    data_size: usize,
    scratch: Vec<u8>,
}

impl Ring {
    fn new(fd: OwnedFd) -> io::Result<Ring> {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        // the perf event's ring buffer, 1 + 2^n pages
        let map = SharedMap::new(fd.as_fd(), 0, page * (1 + RING_PAGES))?;
        let base = map.base();
        // SAFETY: the metadata page is mapped; data_offset and data_size
        // are at 1040 and 1048 (0 on kernels before 4.1).
        let (off, size) = unsafe {
            (
                std::ptr::read_volatile(base.add(1040).cast::<u64>()) as usize,
                std::ptr::read_volatile(base.add(1048).cast::<u64>()) as usize,
            )
        };
        let (data_off, data_size) = if size == 0 {
            (page, page * RING_PAGES)
        } else {
            (off, size)
        };
        Ok(Ring {
            _fd: fd,
            map,
            data_off,
            data_size,
            scratch: Vec::new(),
        })
    }

    fn head(&self) -> &AtomicU64 {
        // SAFETY: data_head at 1024 in the mapped metadata page, 8-aligned.
        unsafe { &*self.map.base().add(1024).cast::<AtomicU64>() }
    }

    fn tail(&self) -> &AtomicU64 {
        // SAFETY: data_tail at 1032, as above.
        unsafe { &*self.map.base().add(1032).cast::<AtomicU64>() }
    }

    /// Hands every complete record to `f(type, misc, body)`.
    fn drain(&mut self, mut f: impl FnMut(u32, u16, &[u8])) {
        let head = self.head().load(Ordering::Relaxed);
        fence(Ordering::Acquire);
        let mut tail = self.tail().load(Ordering::Relaxed);
        while tail + 8 <= head {
            let copy = |scratch: &mut Vec<u8>,
                        from: u64,
                        n: usize,
                        base: *mut u8,
                        off: usize,
                        size: usize| {
                scratch.clear();
                let start = (from % size as u64) as usize;
                let first = n.min(size - start);
                // SAFETY: both pieces lie within the data area.
                unsafe {
                    scratch.extend_from_slice(std::slice::from_raw_parts(
                        base.add(off + start),
                        first,
                    ));
                    scratch.extend_from_slice(std::slice::from_raw_parts(base.add(off), n - first));
                }
            };
            copy(
                &mut self.scratch,
                tail,
                8,
                self.map.base(),
                self.data_off,
                self.data_size,
            );
            let kind = u32::from_ne_bytes(self.scratch[0..4].try_into().expect("4 bytes"));
            let misc = u16::from_ne_bytes(self.scratch[4..6].try_into().expect("2 bytes"));
            let size = u16::from_ne_bytes(self.scratch[6..8].try_into().expect("2 bytes")) as usize;
            if size < 8 || tail + size as u64 > head {
                // Corrupt or incomplete: skip what is there.
                tail = head;
                break;
            }
            copy(
                &mut self.scratch,
                tail,
                size,
                self.map.base(),
                self.data_off,
                self.data_size,
            );
            f(kind, misc, &self.scratch[8..size]);
            tail += size as u64;
        }
        fence(Ordering::Release);
        self.tail().store(tail, Ordering::Relaxed);
    }
}

/// One parsed sample.
#[derive(Debug, Clone, PartialEq)]
struct Sample {
    ip: u64,
    pid: u32,
    addr: Option<u64>,
    cpu: u32,
    regs: Option<[u64; NREGS]>,
    phys: Option<u64>,
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// Parses a `PERF_RECORD_SAMPLE` body of `sample_type` (the fields this
/// sampler asks for, in the kernel's order).
fn parse_sample(b: &[u8], sample_type: u64) -> Option<Sample> {
    let mut at = 0;
    let mut s = Sample {
        ip: 0,
        pid: 0,
        addr: None,
        cpu: 0,
        regs: None,
        phys: None,
    };
    if sample_type & SAMPLE_IP != 0 {
        s.ip = u64_at(b, at)?;
        at += 8;
    }
    if sample_type & SAMPLE_TID != 0 {
        s.pid = u32_at(b, at)?;
        at += 8;
    }
    if sample_type & SAMPLE_ADDR != 0 {
        s.addr = Some(u64_at(b, at)?);
        at += 8;
    }
    if sample_type & SAMPLE_CPU != 0 {
        s.cpu = u32_at(b, at)?;
        at += 8;
    }
    if sample_type & SAMPLE_REGS_USER != 0 {
        let abi = u64_at(b, at)?;
        at += 8;
        if abi != 0 {
            let mut regs = [0u64; NREGS];
            for (k, r) in regs.iter_mut().enumerate() {
                *r = u64_at(b, at + 8 * k)?;
            }
            at += 8 * NREGS;
            s.regs = Some(regs);
        }
    }
    if sample_type & SAMPLE_PHYS_ADDR != 0 {
        s.phys = Some(u64_at(b, at)?);
    }
    Some(s)
}

/// The index in a sample's registers of a 64-bit register.
fn reg_index(r: Register) -> Option<usize> {
    Some(match r {
        Register::RAX => 0,
        Register::RBX => 1,
        Register::RCX => 2,
        Register::RDX => 3,
        Register::RSI => 4,
        Register::RDI => 5,
        Register::RBP => 6,
        Register::RSP => 7,
        Register::RIP => 8,
        Register::R8 => 9,
        Register::R9 => 10,
        Register::R10 => 11,
        Register::R11 => 12,
        Register::R12 => 13,
        Register::R13 => 14,
        Register::R14 => 15,
        Register::R15 => 16,
        _ => return None,
    })
}

/// The data address of `mem` with the registers `regs`; `Err(true)` for
/// an `fs`/`gs`-relative operand, `Err(false)` for one not computable
/// (vector index).
fn data_address(mem: &UsedMemory, regs: &[u64; NREGS]) -> Result<u64, bool> {
    if matches!(mem.segment(), Register::FS | Register::GS) {
        return Err(true);
    }
    mem.virtual_address(0, |reg, _, _| match reg {
        Register::ES | Register::CS | Register::SS | Register::DS => Some(0),
        r if r.is_gpr() => {
            let v = regs[reg_index(r.full_register())?];
            Some(if r.is_gpr32() {
                v & 0xffff_ffff
            } else if r.is_gpr16() {
                v & 0xffff
            } else if r.is_gpr8() {
                v & 0xff
            } else {
                v
            })
        }
        _ => None,
    })
    .ok_or(false)
}

/// What the instructions around a sampled address touch.
#[derive(Debug, Clone)]
struct Decoded {
    /// Whether the code could be read and the instruction at the IP
    /// decoded.
    readable: bool,
    /// The memory operand of the instruction before the IP (the one that
    /// retired last before the interrupt), and whether that instruction
    /// wrote one of its own address registers (then the registers of the
    /// sample no longer give its address).
    prev: Option<(UsedMemory, bool)>,
    /// The memory operand of the instruction at the IP (about to run: the
    /// sample's registers give its address exactly).
    at: Option<UsedMemory>,
}

/// Reads `len` bytes of process `pid` at `addr` into `out`; the number
/// read (0 when nothing could be).
fn read_code(pid: u32, addr: u64, out: &mut [u8]) -> usize {
    let local = libc::iovec {
        iov_base: out.as_mut_ptr().cast(),
        iov_len: out.len(),
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: out.len(),
    };
    // SAFETY: one local iovec of `out.len()` writable bytes; the remote
    // side is checked by the kernel.
    let n = unsafe { libc::process_vm_readv(pid as libc::pid_t, &local, 1, &remote, 1, 0) };
    n.max(0) as usize
}

/// The first memory operand of `instr` that is accessed, and whether
/// `instr` writes one of that operand's address registers.
fn memory_operand(
    instr: &iced_x86::Instruction,
    info: &mut InstructionInfoFactory,
) -> Option<(UsedMemory, bool)> {
    let i = info.info(instr);
    let m = *i
        .used_memory()
        .iter()
        .find(|m| !matches!(m.access(), OpAccess::NoMemAccess | OpAccess::None))?;
    let address_regs = [m.base(), m.index()];
    let overwritten = i.used_registers().iter().any(|r| {
        matches!(
            r.access(),
            OpAccess::Write | OpAccess::CondWrite | OpAccess::ReadWrite | OpAccess::ReadCondWrite
        ) && address_regs
            .iter()
            .any(|a| *a != Register::None && a.full_register() == r.register().full_register())
    });
    Some((m, overwritten))
}

/// Bytes looked at before a sampled address to find the instruction that
/// ends there.
const BACK: usize = 64;

/// Decodes the instruction at `ip` of process `pid` and the one before it.
///
/// x86 instructions have no fixed length, so the one before is found by
/// decoding forward from each of the 64 bytes before `ip`: decodings
/// resynchronise within a few instructions, and the start most of them
/// agree on, among those ending exactly at `ip`, is taken.
fn decode_at(pid: u32, ip: u64, info: &mut InstructionInfoFactory) -> Decoded {
    let mut buf = [0u8; BACK + 16];
    let mut back = BACK.min(ip as usize);
    let mut n = read_code(pid, ip - back as u64, &mut buf[BACK - back..]);
    if n == 0 {
        // The bytes before may lie in an unmapped page: start at the IP's
        // page.
        back = back.min((ip % 4096) as usize);
        n = read_code(pid, ip - back as u64, &mut buf[BACK - back..]);
        if n == 0 {
            // The 16 bytes may cross into an unmapped page.
            let to_end = (4096 - ip % 4096) as usize;
            n = read_code(
                pid,
                ip - back as u64,
                &mut buf[BACK - back..BACK + to_end.min(16)],
            );
        }
    }
    let code = &buf[BACK - back..BACK - back + n];
    let none = Decoded {
        readable: false,
        prev: None,
        at: None,
    };
    if n <= back {
        return none;
    }
    let mut d = Decoder::with_ip(64, &code[back..], ip, DecoderOptions::NONE);
    let at_instr = d.decode();
    if at_instr.is_invalid() {
        return none;
    }
    let at = memory_operand(&at_instr, info).map(|m| m.0);
    let mut votes: HashMap<usize, u32> = HashMap::new();
    for start in 0..back {
        let mut d = Decoder::with_ip(
            64,
            &code[start..back],
            ip - (back - start) as u64,
            DecoderOptions::NONE,
        );
        let mut pos = start;
        while d.can_decode() {
            let i = d.decode();
            if i.is_invalid() {
                break;
            }
            let next = start + d.position();
            if next == back {
                *votes.entry(pos).or_default() += 1;
            }
            pos = next;
        }
    }
    let prev = votes
        .into_iter()
        .max_by_key(|&(p, v)| (v, p))
        .and_then(|(p, _)| {
            let mut d = Decoder::with_ip(
                64,
                &code[p..back],
                ip - (back - p) as u64,
                DecoderOptions::NONE,
            );
            let i = d.decode();
            (!i.is_invalid())
                .then(|| memory_operand(&i, info))
                .flatten()
        });
    Decoded {
        readable: true,
        prev,
        at,
    }
}

/// Samples and their pages, aggregated.
struct Collector {
    method: SamplingMethod,
    sample_type: u64,
    cpu_node: Vec<Option<u32>>,
    phys: PhysMap,
    page_mask: u64,
    decoded: HashMap<(u32, u64), Decoded>,
    info_factory: InstructionInfoFactory,
    /// Samples of this drain whose page node is still to be found:
    /// (pid, page, from node).
    pending: Vec<(u32, u64, u32)>,
    /// Last node seen per page, for samples resolved after the process
    /// exited.
    last_node: HashMap<(u32, u64), u32>,
    counts: HashMap<(u32, u64, u32, u32), u64>,
    pids: HashSet<u32>,
    info: SamplerInfo,
}

impl Collector {
    fn new(spec: &EventSpec, topo: &Topology) -> Collector {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64;
        Collector {
            method: spec.method,
            sample_type: spec.attr.sample_type,
            cpu_node: topo.cpu_nodes(),
            phys: if spec.method == SamplingMethod::Hardware {
                PhysMap::read(std::path::Path::new(MEMORY))
            } else {
                PhysMap::default()
            },
            page_mask: !(page - 1),
            decoded: HashMap::new(),
            info_factory: InstructionInfoFactory::new(),
            pending: Vec::new(),
            last_node: HashMap::new(),
            counts: HashMap::new(),
            pids: HashSet::new(),
            info: SamplerInfo {
                method: spec.method,
                event: spec.event.clone(),
                period: spec.period,
                period_unit: spec.unit,
                page_size: page,
                nodes: topo.node_count() as u32,
                cpu_node: topo.cpu_nodes(),
                notes: spec.notes.clone(),
                ..SamplerInfo::default()
            },
        }
    }

    fn record(&mut self, kind: u32, misc: u16, body: &[u8]) {
        match kind {
            RECORD_SAMPLE => {
                if let Some(s) = parse_sample(body, self.sample_type) {
                    self.sample(s);
                }
            }
            RECORD_LOST => self.info.lost += u64_at(body, 8).unwrap_or(0),
            RECORD_COMM if misc & MISC_COMM_EXEC != 0 => {
                // A new program in this process: its code and pages are
                // new.
                if let Some(pid) = u32_at(body, 0) {
                    self.decoded.retain(|k, _| k.0 != pid);
                    self.last_node.retain(|k, _| k.0 != pid);
                }
            }
            _ => {}
        }
    }

    fn sample(&mut self, s: Sample) {
        self.info.samples += 1;
        self.pids.insert(s.pid);
        let Some(from) = self.cpu_node.get(s.cpu as usize).copied().flatten() else {
            self.info.unresolved_page += 1;
            return;
        };
        let addr = match self.method {
            SamplingMethod::Hardware => match s.addr {
                Some(a) if a != 0 => a,
                _ => {
                    self.info.no_memory_operand += 1;
                    return;
                }
            },
            SamplingMethod::Software => {
                let Some(regs) = s.regs else {
                    self.info.undecodable += 1;
                    return;
                };
                let factory = &mut self.info_factory;
                let d = self
                    .decoded
                    .entry((s.pid, s.ip))
                    .or_insert_with(|| decode_at(s.pid, s.ip, factory));
                if !d.readable {
                    self.info.undecodable += 1;
                    return;
                }
                // The instruction that retired last before the interrupt is
                // the one the time went to (the usual skid of one
                // instruction); the one at the IP where it had no memory
                // operand.
                let chosen = match (&d.prev, &d.at) {
                    (Some((m, false)), _) => *m,
                    (Some((_, true)), _) => {
                        self.info.address_overwritten += 1;
                        return;
                    }
                    (None, Some(m)) => *m,
                    (None, None) => {
                        self.info.no_memory_operand += 1;
                        return;
                    }
                };
                match data_address(&chosen, &regs) {
                    Ok(a) => a,
                    Err(true) => {
                        self.info.segment_relative += 1;
                        return;
                    }
                    Err(false) => {
                        self.info.undecodable += 1;
                        return;
                    }
                }
            }
        };
        let page = addr & self.page_mask;
        if let Some(node) = s.phys.and_then(|p| self.phys.node(p)) {
            self.count(s.pid, page, from, node);
        } else {
            self.pending.push((s.pid, page, from));
        }
    }

    fn count(&mut self, pid: u32, page: u64, from: u32, to: u32) {
        *self.counts.entry((pid, page, from, to)).or_default() += 1;
        self.info.resolved += 1;
    }

    /// Finds the nodes of the pending samples' pages (`move_pages`), the
    /// last known node where the process is gone.
    fn resolve(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let pending = std::mem::take(&mut self.pending);
        let mut by_pid: HashMap<u32, Vec<u64>> = HashMap::new();
        for &(pid, page, _) in &pending {
            by_pid.entry(pid).or_default().push(page);
        }
        for (pid, mut pages) in by_pid {
            pages.sort_unstable();
            pages.dedup();
            if let Ok(status) = query_nodes(pid, &pages) {
                for (p, st) in pages.iter().zip(status) {
                    if st >= 0 {
                        self.last_node.insert((pid, *p), st as u32);
                    }
                }
            }
        }
        for (pid, page, from) in pending {
            match self.last_node.get(&(pid, page)).copied() {
                Some(node) => self.count(pid, page, from, node),
                None => self.info.unresolved_page += 1,
            }
        }
    }

    fn finish(mut self, sampler_cpu_ns: u64) -> SampleSet {
        self.resolve();
        let mut samples: Vec<PageSamples> = self
            .counts
            .into_iter()
            .map(|((pid, page, from, to), n)| PageSamples {
                pid,
                page,
                from_node: from,
                to_node: to,
                samples: n,
            })
            .collect();
        samples.sort_unstable();
        self.info.processes = self.pids.len() as u32;
        self.info.sampler_cpu_ns = sampler_cpu_ns;
        SampleSet {
            info: self.info,
            samples,
        }
    }
}

/// What a sampler collected.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleSet {
    /// How, and what was lost.
    pub info: SamplerInfo,
    /// Samples per process, page and node pair.
    pub samples: Vec<PageSamples>,
}

impl SampleSet {
    /// Writes `dir/numa/samples.csv` and `dir/numa/sampler.json` (creating
    /// `dir/numa`). Errors: the files cannot be written.
    pub fn write(&self, dir: &std::path::Path) -> Result<(), contend_trace::numa::NumaFileError> {
        let numa = dir.join(contend_trace::numa::NUMA_DIR);
        std::fs::create_dir_all(&numa).map_err(|source| {
            contend_trace::numa::NumaFileError::Io {
                path: numa.clone(),
                source,
            }
        })?;
        contend_trace::numa::histogram::write_page_samples(
            &numa.join(contend_trace::numa::SAMPLES_FILE),
            &self.samples,
        )?;
        self.info.write(dir)
    }
}

/// Where the events of a sampler come from.
enum Source {
    /// Per-CPU inherited events opened before exec.
    Launched(Vec<Ring>),
    /// Per-thread events on a running process: (tid, ring).
    Attached {
        pid: u32,
        attr: Attr,
        rings: Vec<(u32, Ring)>,
    },
}

impl Source {
    fn drain(&mut self, c: &mut Collector) {
        let rings: Box<dyn Iterator<Item = &mut Ring>> = match self {
            Source::Launched(r) => Box::new(r.iter_mut()),
            Source::Attached { rings, .. } => Box::new(rings.iter_mut().map(|(_, r)| r)),
        };
        for ring in rings {
            ring.drain(|k, m, b| c.record(k, m, b));
        }
    }

    /// Attached: opens events on threads that appeared.
    fn discover(&mut self) {
        if let Source::Attached { pid, attr, rings } = self {
            for tid in tasks(*pid) {
                if rings.iter().any(|(t, _)| *t == tid) {
                    continue;
                }
                if let Ok(fd) = perf_event_open(attr, tid as i32, -1) {
                    if let Ok(r) = Ring::new(fd) {
                        rings.push((tid, r));
                    }
                }
            }
        }
    }
}

/// The threads of process `pid`.
fn tasks(pid: u32) -> Vec<u32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().to_string_lossy().parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// A running sampler; [`NumaSampler::stop`] ends it.
pub struct NumaSampler {
    stop: mpsc::Sender<()>,
    thread: JoinHandle<SampleSet>,
}

impl NumaSampler {
    fn run(mut source: Source, mut collector: Collector) -> Result<NumaSampler, String> {
        let (stop, rx) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("contend-numa".into())
            .spawn(move || {
                loop {
                    let last = !matches!(
                        rx.recv_timeout(DRAIN_INTERVAL),
                        Err(RecvTimeoutError::Timeout)
                    );
                    source.drain(&mut collector);
                    collector.resolve();
                    if last {
                        break;
                    }
                    source.discover();
                }
                collector.finish(thread_cpu_ns())
            })
            .map_err(|e| format!("cannot start the NUMA sampler thread: {e}"))?;
        Ok(NumaSampler { stop, thread })
    }

    /// Samples the running process `pid`: per-thread events, enabled now;
    /// threads created later are found every [`DRAIN_INTERVAL`].
    ///
    /// Errors: no such process, or the event cannot be opened on any of
    /// its threads (a sentence with the reason).
    pub fn attach(pid: u32, opts: &NumaSamplerOptions) -> Result<NumaSampler, String> {
        let topo = Topology::read();
        let tids = tasks(pid);
        if tids.is_empty() {
            return Err(format!("process {pid}: no such process"));
        }
        let mut why = Vec::new();
        for spec in candidates(opts)? {
            let mut rings = Vec::new();
            let mut err = None;
            for &tid in &tids {
                match perf_event_open(&spec.attr, tid as i32, -1) {
                    Ok(fd) => match Ring::new(fd) {
                        Ok(r) => rings.push((tid, r)),
                        Err(e) => err = Some(e.to_string()),
                    },
                    Err(libc::ESRCH) => {}
                    Err(e) => err = Some(io::Error::from_raw_os_error(e).to_string()),
                }
            }
            if rings.is_empty() {
                why.push(format!(
                    "{}: {}",
                    spec.event,
                    err.unwrap_or_else(|| "no thread left".into())
                ));
                continue;
            }
            let collector = Collector::new(&spec, &topo);
            return NumaSampler::run(
                Source::Attached {
                    pid,
                    attr: spec.attr,
                    rings,
                },
                collector,
            );
        }
        Err(format!(
            "process {pid}: cannot open the sampling event: {}",
            why.join("; ")
        ))
    }

    /// Stops sampling, reads what is left and locates the last pages.
    pub fn stop(self) -> SampleSet {
        let _ = self.stop.send(());
        self.thread.join().unwrap_or_else(|_| SampleSet {
            info: SamplerInfo {
                notes: vec!["the sampler thread panicked; its samples are lost".into()],
                ..SamplerInfo::default()
            },
            samples: Vec::new(),
        })
    }
}

/// What the helper thread of [`Prepared`] hands back: the event and its
/// per-CPU buffers, or why they could not be opened.
type Opened = Result<(EventSpec, Vec<Ring>), String>;

/// The launcher's side of a launch-mode sampler, prepared before `fork`:
/// two pipes and a helper thread that opens the events on the child once
/// it has written its pid.
pub struct Prepared {
    /// Our copy of the child's write end of the pid pipe (closed after
    /// spawn so the helper sees EOF if the child never writes).
    pid_w: Option<OwnedFd>,
    /// Our copy of the child's read end of the go pipe.
    go_r: Option<OwnedFd>,
    helper: Option<JoinHandle<Opened>>,
}

/// What the child runs between `fork` and `exec`; `Copy`, so the
/// `pre_exec` hook owns it without allocating.
#[derive(Debug, Clone, Copy)]
pub struct ChildPart {
    pid_w: RawFd,
    go_r: RawFd,
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: valid out-pointer for two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fresh descriptors we now own.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

impl Prepared {
    /// Chooses the event (hardware where asked and available, else
    /// software) and starts the helper thread.
    ///
    /// Errors: no usable method, pipes or thread cannot be created.
    pub fn new(opts: &NumaSamplerOptions) -> Result<Prepared, String> {
        let specs = candidates(opts)?;
        let (pid_r, pid_w) = pipe().map_err(|e| format!("NUMA sampler: {e}"))?;
        let (go_r, go_w) = pipe().map_err(|e| format!("NUMA sampler: {e}"))?;
        let cpus = online_cpu_list();
        let helper = std::thread::Builder::new()
            .name("contend-numa-open".into())
            .spawn(move || {
                let mut buf = [0u8; 4];
                // SAFETY: reading 4 bytes into a 4-byte buffer.
                let n = loop {
                    let n = unsafe { libc::read(pid_r.as_raw_fd(), buf.as_mut_ptr().cast(), 4) };
                    if n >= 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                        break n;
                    }
                };
                if n != 4 {
                    return Err("the program never reached exec".to_string());
                }
                let pid = u32::from_ne_bytes(buf);
                let result = open_per_cpu(specs, pid, &cpus);
                // SAFETY: writing one byte from a live buffer.
                unsafe { libc::write(go_w.as_raw_fd(), [1u8].as_ptr().cast(), 1) };
                result
            })
            .map_err(|e| format!("NUMA sampler: cannot start a thread: {e}"))?;
        Ok(Prepared {
            pid_w: Some(pid_w),
            go_r: Some(go_r),
            helper: Some(helper),
        })
    }

    /// The child's part, for its `pre_exec` hook.
    pub fn child_part(&self) -> ChildPart {
        ChildPart {
            pid_w: self.pid_w.as_ref().map_or(-1, |f| f.as_raw_fd()),
            go_r: self.go_r.as_ref().map_or(-1, |f| f.as_raw_fd()),
        }
    }

    /// After the child was started (its pid is `pid`): waits for the
    /// helper and starts sampling.
    ///
    /// Errors: the events could not be opened (why, as a sentence).
    pub fn start(mut self) -> Result<NumaSampler, String> {
        self.pid_w = None;
        self.go_r = None;
        let helper = self.helper.take().expect("started once");
        let (spec, rings) = helper
            .join()
            .map_err(|_| "the NUMA sampler's helper thread panicked".to_string())??;
        let topo = Topology::read();
        let collector = Collector::new(&spec, &topo);
        NumaSampler::run(Source::Launched(rings), collector)
    }
}

impl Drop for Prepared {
    fn drop(&mut self) {
        // Closing our ends lets a helper still waiting see EOF; it is not
        // joined (it ends by itself).
        self.pid_w = None;
        self.go_r = None;
    }
}

impl ChildPart {
    /// In the child between `fork` and `exec`: tells the helper its pid
    /// and waits (at most 10 s) until the events are open, so sampling
    /// starts with the program. Async-signal-safe (system calls only);
    /// never fails: without an answer the program runs unsampled.
    pub fn handshake(&self) {
        if self.pid_w < 0 {
            return;
        }
        // SAFETY: getpid/write/poll/read on descriptors this process
        // holds, from stack buffers.
        unsafe {
            let pid = libc::getpid() as u32;
            let bytes = pid.to_ne_bytes();
            if libc::write(self.pid_w, bytes.as_ptr().cast(), 4) != 4 {
                return;
            }
            let mut p = libc::pollfd {
                fd: self.go_r,
                events: libc::POLLIN,
                revents: 0,
            };
            if libc::poll(&mut p, 1, 10_000) == 1 {
                let mut b = [0u8; 1];
                libc::read(self.go_r, b.as_mut_ptr().cast(), 1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_parse_in_the_kernels_order() {
        let mut b = Vec::new();
        b.extend_from_slice(&0x401000u64.to_ne_bytes()); // ip
        b.extend_from_slice(&42u32.to_ne_bytes()); // pid
        b.extend_from_slice(&43u32.to_ne_bytes()); // tid
        b.extend_from_slice(&1u32.to_ne_bytes()); // cpu
        b.extend_from_slice(&0u32.to_ne_bytes()); // res
        b.extend_from_slice(&2u64.to_ne_bytes()); // abi 64
        for r in 0..NREGS as u64 {
            b.extend_from_slice(&(100 + r).to_ne_bytes());
        }
        let s = parse_sample(&b, SAMPLE_IP | SAMPLE_TID | SAMPLE_CPU | SAMPLE_REGS_USER).unwrap();
        assert_eq!((s.ip, s.pid, s.cpu), (0x401000, 42, 1));
        assert_eq!(s.regs.unwrap()[16], 116);
        assert!(parse_sample(&b[..18], SAMPLE_IP | SAMPLE_TID | SAMPLE_CPU).is_none());
    }

    /// `mov rax, [rbx + rcx*8 + 0x10]`, `mov eax, fs:[0x28]`, `add rax,
    /// rbx`: the address from the registers, TLS, no memory.
    #[test]
    fn memory_operands_from_registers() {
        let mut f = InstructionInfoFactory::new();
        let decode = |bytes: &[u8], f: &mut InstructionInfoFactory| {
            let mut d = Decoder::with_ip(64, bytes, 0x1000, DecoderOptions::NONE);
            let i = d.decode();
            f.info(&i).used_memory().first().copied()
        };
        let mut regs = [0u64; NREGS];
        regs[1] = 0x7000_0000; // rbx
        regs[2] = 3; // rcx
        let m = decode(&[0x48, 0x8b, 0x44, 0xcb, 0x10], &mut f).unwrap();
        assert_eq!(data_address(&m, &regs), Ok(0x7000_0000 + 3 * 8 + 0x10));
        let m = decode(&[0x64, 0x8b, 0x04, 0x25, 0x28, 0, 0, 0], &mut f).unwrap();
        assert_eq!(data_address(&m, &regs), Err(true));
        assert!(decode(&[0x48, 0x01, 0xd8], &mut f).is_none());
        // RIP-relative: `mov rax, [rip + 0x100]` at 0x1000 (7 bytes).
        let m = decode(&[0x48, 0x8b, 0x05, 0x00, 0x01, 0, 0], &mut f).unwrap();
        assert_eq!(data_address(&m, &regs), Ok(0x1000 + 7 + 0x100));
    }

    /// The instruction before a sampled address is found by decoding
    /// backwards, here in this process's own memory: 64 NOPs, `mov rax,
    /// [rbx + rcx*8 + 0x10]`, `add rax, rbx`, `mov rax, [rax]`, `dec ecx`.
    #[test]
    fn the_instruction_before_the_sample() {
        let mut code = vec![0x90u8; 64];
        code.extend_from_slice(&[0x48, 0x8b, 0x44, 0xcb, 0x10]); // 64..69
        code.extend_from_slice(&[0x48, 0x01, 0xd8]); // 69..72
        code.extend_from_slice(&[0x48, 0x8b, 0x00]); // 72..75
        code.extend_from_slice(&[0xff, 0xc9]); // 75..77
        code.extend_from_slice(&[0x90; 32]);
        let base = code.as_ptr() as u64;
        let mut f = InstructionInfoFactory::new();
        let pid = std::process::id();
        // Sampled at `add`: the load before it, its registers intact.
        let d = decode_at(pid, base + 69, &mut f);
        assert!(d.readable && d.at.is_none());
        let (m, overwritten) = d.prev.unwrap();
        assert!(!overwritten);
        let mut regs = [0u64; NREGS];
        regs[1] = 0x5000; // rbx
        regs[2] = 2; // rcx
        assert_eq!(data_address(&m, &regs), Ok(0x5000 + 16 + 0x10));
        // Sampled at `dec`: the chase load wrote its own address register.
        let d = decode_at(pid, base + 75, &mut f);
        assert!(d.prev.unwrap().1);
        // Sampled at `mov rax, [rax]`: `add` before has no memory operand,
        // the load at the IP has.
        let d = decode_at(pid, base + 72, &mut f);
        assert!(d.prev.is_none() && d.at.is_some());
        drop(code);
    }

    /// The whole path on this process: a child of the test spins over a
    /// buffer under the software sampler, attached.
    #[test]
    fn attach_samples_a_busy_process() {
        let opts = NumaSamplerOptions {
            method: MethodChoice::Software,
            period_ns: 100_000,
            ..NumaSamplerOptions::default()
        };
        let mut child = std::process::Command::new("/bin/sh")
            .args(["-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"])
            .spawn()
            .unwrap();
        let s = NumaSampler::attach(child.id(), &opts).unwrap();
        let _ = child.wait();
        let set = s.stop();
        assert!(set.info.samples > 0, "{:?}", set.info);
        assert_eq!(
            set.info.samples,
            set.info.resolved
                + set.info.no_memory_operand
                + set.info.undecodable
                + set.info.segment_relative
                + set.info.unresolved_page
                + set.info.address_overwritten
        );
    }
}
