//! A `std::sync::Mutex` on the heap (in an `Arc`), whose futex word has
//! no symbol, handed over ROUNDS times: main holds it for HOLD_MS while
//! the worker waits in lock(); then once the other way, so that main's
//! last wait (the end of the critical path) is on it. For the futex test
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

#[inline(never)]
fn contend_on_lock(lock: Arc<Mutex<u64>>) -> u64 {
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
    for i in 0..ROUNDS {
        let g = lock.lock().unwrap();
        ROUND.store(2 * i + 1, Ordering::Release);
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
