use contend_trace::{LockTrace, Phase};
use std::collections::HashMap;
fn main() {
    for p in std::env::args().skip(1) {
        let t = LockTrace::open(std::path::Path::new(&p)).unwrap();
        for th in &t.threads {
            let mut open: HashMap<u64, u32> = HashMap::new();
            let mut last: Vec<String> = Vec::new();
            let mut bad = Vec::new();
            t.for_each_op(th, |op, _, _| {
                last.push(format!(
                    "{:?} {:?} obj {:x} site {:x} t {}",
                    op.primitive, op.phase, op.object, op.site, op.ticks
                ));
                if last.len() > 12 {
                    last.remove(0);
                }
                match op.phase {
                    Phase::Immediate | Phase::Acquired | Phase::Untimed => {
                        *open.entry(op.object).or_default() += 1
                    }
                    Phase::Release if op.primitive != contend_trace::Primitive::Semaphore => {
                        let e = open.entry(op.object).or_default();
                        if *e == 0 {
                            println!("tid {} unmatched:\n  {}", th.tid, last.join("\n  "));
                            bad.push(op.object);
                        } else {
                            *e -= 1;
                        }
                    }
                    _ => {}
                }
            });
            for b in bad {
                for c in &th.counted {
                    if c.object == b {
                        println!("  counted entry: {:x?}", c);
                    }
                }
                println!(
                    "  thread has {} count entries, by-site {}",
                    th.counted.len(),
                    th.counted.iter().filter(|c| c.object == 1).count()
                );
            }
        }
    }
}
