//! A `std::sync::Mutex` on the heap (in an `Arc`), whose futex word has
//! no symbol, handed over ROUNDS times: main holds it for HOLD_MS while
//! the worker waits in lock(); then once the other way, so that main's
//! last wait (the end of the critical path) is on it. The holder starts
//! its hold only once the other thread sleeps (its state in
//! /proc/self/task/TID/stat: blocked in the mutex's futex wait), so every
//! round is a futex wait however late a loaded machine runs the waiter
//! (a waiter descheduled for the whole hold took the lock free). For the futex test
//! that names such a word after the line of the program that waits on it
//! (crates/contend-cli/tests/e2e/futex.rs). Built with `rustc -O -g`.
//!
//! Prints one line of key=value: the rounds and the worker's lock time
//! (ns, its own clock).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

const ROUNDS: usize = 6;
const HOLD_MS: u64 = 5;

static ROUND: AtomicUsize = AtomicUsize::new(0);
/// The worker's thread id + 1 (0 until it has started; 1 if its id could
/// not be read, and the holders then do not wait for the sleep).
static WORKER_TID: AtomicUsize = AtomicUsize::new(0);

/// This thread's kernel id, from /proc/thread-self (PID/task/TID); 0 if
/// it cannot be read.
fn own_tid() -> usize {
    std::fs::read_link("/proc/thread-self")
        .ok()
        .and_then(|p| p.file_name()?.to_str()?.parse().ok())
        .unwrap_or(0)
}

/// Waits until thread `tid` of this process sleeps (state S after the
/// `)` that closes its name), at most 5 s: the only sleep the other
/// thread can be in here is the mutex's futex wait.
fn until_asleep(tid: usize) {
    if tid == 0 {
        return;
    }
    let path = format!("/proc/self/task/{tid}/stat");
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        if let Ok(stat) = std::fs::read_to_string(&path) {
            if stat
                .rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('S'))
            {
                return;
            }
        }
        thread::yield_now();
    }
}

#[inline(never)]
fn contend_on_lock(lock: Arc<Mutex<u64>>) -> u64 {
    WORKER_TID.store(own_tid() + 1, Ordering::Release);
    let mut waited = 0u64;
    for i in 0..ROUNDS {
        while ROUND.load(Ordering::Acquire) != 2 * i + 1 {
            std::hint::spin_loop();
        }
        let t0 = Instant::now();
        let mut g = lock.lock().unwrap(); // HEAP_LOCK_SITE
        waited += t0.elapsed().as_nanos() as u64;
        *g += 1;
        drop(g);
        ROUND.store(2 * i + 2, Ordering::Release);
    }
    let g = lock.lock().unwrap();
    ROUND.store(2 * ROUNDS + 1, Ordering::Release);
    until_asleep(std::process::id() as usize); // main's thread id is the pid
    thread::sleep(Duration::from_millis(HOLD_MS));
    drop(g);
    waited
}

fn main() {
    let lock = Arc::new(Mutex::new(0u64));
    let worker = {
        let lock = Arc::clone(&lock);
        thread::spawn(move || contend_on_lock(lock))
    };
    let worker_tid = loop {
        match WORKER_TID.load(Ordering::Acquire) {
            0 => std::hint::spin_loop(),
            tid => break tid - 1,
        }
    };
    for i in 0..ROUNDS {
        let g = lock.lock().unwrap();
        ROUND.store(2 * i + 1, Ordering::Release);
        until_asleep(worker_tid);
        thread::sleep(Duration::from_millis(HOLD_MS));
        drop(g); // HEAP_MAIN_UNLOCK_SITE
        // (the worker may be past 2i + 2 already, in its last round)
        while ROUND.load(Ordering::Acquire) < 2 * i + 2 {
            std::hint::spin_loop();
        }
    }
    while ROUND.load(Ordering::Acquire) != 2 * ROUNDS + 1 {
        std::hint::spin_loop();
    }
    drop(lock.lock().unwrap()); // HEAP_MAIN_LOCK_SITE
    let waited = worker.join().unwrap();
    println!("rounds={ROUNDS} lock_wait_ns={waited}");
}
