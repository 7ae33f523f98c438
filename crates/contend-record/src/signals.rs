//! Stop signals: [`Interrupt`] catches them for the commands that end
//! cleanly on Ctrl-C (attach mode, `contend scale`, `contend stress`), and
//! the launcher forwards them to its target while [`crate::record`] runs.

/// The stop signal [`Interrupt`] caught, 0 for none.
static CAUGHT_STOP_SIGNAL: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

extern "C" fn on_stop_signal(sig: libc::c_int) {
    CAUGHT_STOP_SIGNAL.store(sig, std::sync::atomic::Ordering::SeqCst);
}

/// Catches `SIGINT`, `SIGTERM` and `SIGHUP` so that they end a recording,
/// an experiment or the memory contention generator cleanly instead of
/// killing the launcher (attach mode, `contend scale`, `contend stress`).
/// A signal that was ignored when it began stays ignored; the previous
/// dispositions are restored when it is dropped. Process-wide: use one at
/// a time.
pub struct Interrupt {
    previous: Vec<(libc::c_int, libc::sigaction)>,
}

impl Interrupt {
    /// Installs the handler and clears any signal caught before.
    pub fn begin() -> Interrupt {
        CAUGHT_STOP_SIGNAL.store(0, std::sync::atomic::Ordering::SeqCst);
        let mut previous = Vec::new();
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            // SAFETY: sigaction with valid pointers; the handler only
            // stores to an atomic.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, std::ptr::null(), &mut old) != 0
                    || old.sa_sigaction == libc::SIG_IGN
                {
                    continue;
                }
                let mut new: libc::sigaction = std::mem::zeroed();
                new.sa_sigaction = on_stop_signal as *const () as libc::sighandler_t;
                new.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut new.sa_mask);
                if libc::sigaction(sig, &new, &mut old) == 0 {
                    previous.push((sig, old));
                }
            }
        }
        Interrupt { previous }
    }

    /// The signal caught since [`Interrupt::begin`], if any.
    pub fn caught(&self) -> Option<i32> {
        let s = CAUGHT_STOP_SIGNAL.load(std::sync::atomic::Ordering::SeqCst);
        (s != 0).then_some(s)
    }
}

impl Drop for Interrupt {
    fn drop(&mut self) {
        for (sig, old) in self.previous.drain(..) {
            // SAFETY: restores a disposition sigaction returned.
            unsafe { libc::sigaction(sig, &old, std::ptr::null_mut()) };
        }
    }
}

/// How many stop signals (`SIGINT`, `SIGTERM`, `SIGHUP`) the launcher has
/// received and forwarded to a target of [`record`](crate::record) since
/// it started. A caller running several recordings (`contend scale`)
/// compares the count before and after a run to tell a user's Ctrl-C from
/// the program's own ending, even when the program catches the signal and
/// exits 0.
pub fn stop_signals_seen() -> u64 {
    forward::STOP_SIGNALS_SEEN.load(std::sync::atomic::Ordering::SeqCst)
}

/// Forwarding of termination signals from the launcher to its targets.
///
/// Process-wide state, because signal dispositions are: every running
/// [`record`] call holds a slot with its child's pid; the handlers are
/// installed while at least one call runs and the previous dispositions
/// restored after the last one ends.
pub(crate) mod forward {
    use std::sync::atomic::{AtomicI32, AtomicU64, Ordering::SeqCst};
    use std::sync::Mutex;

    /// Stop signals (`SIGINT`, `SIGTERM`, `SIGHUP`) the handler has seen
    /// since the process started (see [`super::stop_signals_seen`]).
    pub(super) static STOP_SIGNALS_SEEN: AtomicU64 = AtomicU64::new(0);

    /// Signals forwarded to the target.
    const SIGNALS: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];
    const SLOTS: usize = 32;
    /// Slot states besides a pid (> 0).
    const FREE: i32 = 0;
    const STARTING: i32 = -1;
    const ENDED: i32 = -2;

    static CHILD: [AtomicI32; SLOTS] = [const { AtomicI32::new(FREE) }; SLOTS];
    /// A signal that arrived while the slot was STARTING.
    static PENDING: [AtomicI32; SLOTS] = [const { AtomicI32::new(0) }; SLOTS];

    struct Installed {
        users: usize,
        previous: Vec<(libc::c_int, libc::sigaction)>,
    }

    static STATE: Mutex<Installed> = Mutex::new(Installed {
        users: 0,
        previous: Vec::new(),
    });

    /// One target's registration; dropping it unregisters.
    pub(crate) struct Forwarding {
        slot: Option<usize>,
    }

    impl Forwarding {
        /// Registers a target about to be started; signals arriving before
        /// [`Forwarding::started`] are held and delivered then.
        pub(crate) fn begin() -> Forwarding {
            let mut state = STATE.lock().unwrap_or_else(|e| e.into_inner());
            let slot = (0..SLOTS).find(|&i| {
                CHILD[i]
                    .compare_exchange(FREE, STARTING, SeqCst, SeqCst)
                    .is_ok()
            });
            if state.users == 0 {
                state.previous = install();
            }
            state.users += 1;
            Forwarding { slot }
        }

        /// The target runs as `pid`: forward from now on.
        pub(crate) fn started(&self, pid: u32) {
            let Some(i) = self.slot else { return };
            let pid = pid as i32;
            CHILD[i].store(pid, SeqCst);
            let sig = PENDING[i].swap(0, SeqCst);
            if sig != 0 {
                // SAFETY: plain syscall.
                unsafe { libc::kill(pid, sig) };
            }
        }

        /// The target has exited (not yet reaped): stop forwarding.
        pub(crate) fn ended(&self) {
            if let Some(i) = self.slot {
                CHILD[i].store(ENDED, SeqCst);
            }
        }
    }

    impl Drop for Forwarding {
        fn drop(&mut self) {
            let mut state = STATE.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(i) = self.slot {
                PENDING[i].store(0, SeqCst);
                CHILD[i].store(FREE, SeqCst);
            }
            state.users -= 1;
            if state.users == 0 {
                for (sig, old) in state.previous.drain(..) {
                    // SAFETY: restores a disposition sigaction returned.
                    unsafe { libc::sigaction(sig, &old, std::ptr::null_mut()) };
                }
            }
        }
    }

    /// Installs the handler for every signal that is not ignored; returns
    /// the replaced dispositions.
    fn install() -> Vec<(libc::c_int, libc::sigaction)> {
        let mut previous = Vec::new();
        for sig in SIGNALS {
            // SAFETY: sigaction with valid pointers; the handler only uses
            // atomics and async-signal-safe syscalls.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, std::ptr::null(), &mut old) != 0
                    || old.sa_sigaction == libc::SIG_IGN
                {
                    // Ignored stays ignored, for us and for the target.
                    continue;
                }
                let mut new: libc::sigaction = std::mem::zeroed();
                new.sa_sigaction = handler as *const () as libc::sighandler_t;
                new.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
                libc::sigemptyset(&mut new.sa_mask);
                if libc::sigaction(sig, &new, &mut old) == 0 {
                    previous.push((sig, old));
                }
            }
        }
        previous
    }

    extern "C" fn handler(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
        if sig != libc::SIGQUIT {
            STOP_SIGNALS_SEEN.fetch_add(1, SeqCst);
        }
        // SAFETY: the kernel passes a valid siginfo with SA_SIGINFO.
        let from_terminal = !info.is_null() && unsafe { (*info).si_code } == libc::SI_KERNEL;
        // SAFETY: errno is thread-local; saved and restored around the
        // syscalls below.
        let errno = unsafe { *libc::__errno_location() };
        for i in 0..SLOTS {
            let pid = CHILD[i].load(SeqCst);
            if pid == STARTING {
                PENDING[i].store(sig, SeqCst);
                // Started meanwhile? Then whoever swaps first sends it.
                let pid = CHILD[i].load(SeqCst);
                if pid > 0 {
                    let held = PENDING[i].swap(0, SeqCst);
                    if held != 0 {
                        // SAFETY: plain syscall.
                        unsafe { libc::kill(pid, held) };
                    }
                }
            } else if pid > 0 {
                // SAFETY: plain syscalls.
                unsafe {
                    // The terminal signals its whole foreground process
                    // group, which includes a target still in ours.
                    if from_terminal && libc::getpgid(pid) == libc::getpgrp() {
                        continue;
                    }
                    libc::kill(pid, sig);
                }
            }
        }
        // SAFETY: see above.
        unsafe { *libc::__errno_location() = errno };
    }
}
