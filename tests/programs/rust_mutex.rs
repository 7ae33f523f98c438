//! Rust's std::sync::Mutex and Condvar, which wait on futexes through
//! glibc's syscall(SYS_futex, ...), with known waits, for the futex test
//! (crates/contend-cli/tests/e2e/futex.rs). Built with `rustc -O -g`.
//!
//! 1. hand-over: main holds LOCK for HOLD_MS while the worker waits in
//!    LOCK.lock(), ROUNDS times; the worker times each lock() call with
//!    its own clock.
//! 2. producer/consumer: the consumer waits on a Condvar for ITEMS items
//!    that the producer makes every PERIOD_MS: condition waits, not lock
//!    waits.
//!
//! Prints one line of key=value: rounds, the worker's measured lock time
//! (ns) and the items consumed.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

const ROUNDS: usize = 8;
const HOLD_MS: u64 = 10;
const ITEMS: usize = 5;
const PERIOD_MS: u64 = 3;

static LOCK: Mutex<u64> = Mutex::new(0);
static ROUND: AtomicUsize = AtomicUsize::new(0);
static QUEUE: Mutex<Vec<usize>> = Mutex::new(Vec::new());
static READY: Condvar = Condvar::new();

#[inline(never)]
fn contend_on_lock() -> u64 {
    let mut waited = 0u64;
    for i in 0..ROUNDS {
        while ROUND.load(Ordering::Acquire) != 2 * i + 1 {
            std::hint::spin_loop();
        }
        let t0 = Instant::now();
        let mut g = LOCK.lock().unwrap(); // RUST_LOCK_SITE
        waited += t0.elapsed().as_nanos() as u64;
        *g += 1;
        drop(g);
        ROUND.store(2 * i + 2, Ordering::Release);
    }
    waited
}

#[inline(never)]
fn consume() -> usize {
    let mut got = 0;
    let mut q = QUEUE.lock().unwrap();
    while got < ITEMS {
        while q.is_empty() {
            q = READY.wait(q).unwrap(); // RUST_WAIT_SITE
        }
        got += q.drain(..).count();
    }
    got
}

fn main() {
    let worker = thread::spawn(contend_on_lock);
    for i in 0..ROUNDS {
        let g = LOCK.lock().unwrap();
        ROUND.store(2 * i + 1, Ordering::Release);
        thread::sleep(Duration::from_millis(HOLD_MS));
        drop(g);
        while ROUND.load(Ordering::Acquire) != 2 * i + 2 {
            std::hint::spin_loop();
        }
    }
    let waited = worker.join().unwrap();

    let consumer = thread::spawn(consume);
    for i in 0..ITEMS {
        thread::sleep(Duration::from_millis(PERIOD_MS));
        QUEUE.lock().unwrap().push(i);
        READY.notify_one();
    }
    let consumed = consumer.join().unwrap();
    println!(
        "rounds={ROUNDS} hold_ms={HOLD_MS} lock_wait_ns={waited} items={ITEMS} consumed={consumed}"
    );
}
