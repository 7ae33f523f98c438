//! # contend-meters
//!
//! The run-time side of `contend` (Fowler et al., *Adaptive Threading
//! Using Counter-Based Performance Introspection*, RENCI 2011: RCRdaemon,
//! its blackboard, MAESTRO's throttling and RCRTool): meters of
//! shared-resource contention computed many times a second while programs
//! run, published in a shared-memory blackboard with high and low
//! triggers for applications and runtimes to read (`contend meters`;
//! docs/meters.md), watched live (`contend watch`), and stored in a
//! recording (`contend record --meters`, [`record`]) for `contend report`.
//!
//! - [`probe`]: the pointer-chasing memory-latency probe (pChase);
//! - [`calibration`]: bandwidth from latency through a curve measured with
//!   the memory contention generator (`contend meters calibrate`);
//! - [`system`] (`/proc` meters), [`hardware`] (PMU meters where they
//!   exist), [`uncore`] (memory bandwidth from memory-controller counters
//!   where the kernel exposes them), [`locks`] (lock meters of processes `contend record` records,
//!   read from their traces as they are written);
//! - [`trigger`]: short-term windows and triggers with hysteresis;
//! - [`engine`]: every meter at its rate; [`daemon`]: `contend meters`;
//!   [`detach`]: `contend meters --daemon` (double fork, pid file);
//!   [`record`]: the meter recorder for `contend record --meters`;
//! - [`layout`] and [`blackboard`]: the shared region (one definition in
//!   `collector/include/contend/meters.h`), its seqlocked writer and
//!   readers.
//!
//! Design constraints: this crate runs beside live processes and never
//! touches them: it reads `/proc`, the lock traces the collector writes
//! and the counters of the kernel, and writes only its blackboard or the
//! recording's meters file. The offline analyses (`contend`) do not
//! depend on it; they read `meters.cmts` through `contend-trace`.
#![deny(missing_docs)]

pub mod blackboard;
pub mod calibration;
pub mod daemon;
pub mod detach;
pub mod engine;
pub mod hardware;
pub mod layout;
pub mod locks;
pub mod probe;
pub mod record;
pub mod system;
pub mod trigger;
pub mod uncore;

pub use blackboard::{path_of, Blackboard, BlackboardError, Reader, DEFAULT_NAME};
pub use engine::{Engine, EngineOptions};
