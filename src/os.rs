//! What ledgerd asks of the operating system beyond the standard library:
//! thread priorities (the sync thread gives way to the server loop).

/// Lowers the calling thread's CPU priority (nice 10, and a 0.1 ms
/// scheduler slice where the kernel has them; the fetch and verify threads
/// it starts inherit both), so that on a busy machine the server thread
/// answers queries first and a catch-up only slows itself down.
///
/// Nice alone gives the server its share, not its turn: Linux's EEVDF
/// scheduler (6.6 and later) lets a running thread finish its slice
/// (about 1.5 ms on two cores, then up to a 4 ms tick) before a woken one
/// gets the core. With a 0.1 ms slice a sync thread gives way at once.
///
/// The short slice cuts both ways: a woken sync thread may take a core
/// from a nice-0 thread (EEVDF lets a shorter slice preempt) and, on a
/// kernel built without forced preemption, keep it until the next tick.
/// SCHED_BATCH, which never preempts on waking, was measured against this
/// and read no faster (docs/PERFORMANCE.md, "Where the reads wait").
pub fn yield_to_the_server() {
    const NICE: i32 = 10;
    /// `struct sched_attr` of sched_setattr(2).
    #[repr(C)]
    struct SchedAttr {
        size: u32,
        policy: u32,
        flags: u64,
        nice: i32,
        priority: u32,
        runtime: u64,
        deadline: u64,
        period: u64,
    }
    let attr = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        policy: libc::SCHED_OTHER as u32,
        flags: 0,
        nice: NICE,
        priority: 0,
        // The slice, for SCHED_OTHER (kernels before 6.12 ignore it).
        runtime: 100_000,
        deadline: 0,
        period: 0,
    };
    // SAFETY: gettid reads nothing; sched_setattr reads `attr`, which
    // lives until it returns; setpriority only reads its integer arguments.
    let result = unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        if libc::syscall(libc::SYS_sched_setattr, tid, &attr as *const SchedAttr, 0) == 0 {
            0
        } else {
            libc::setpriority(libc::PRIO_PROCESS, tid, NICE)
        }
    };
    if result != 0 {
        log::debug!(
            "sync thread keeps its CPU priority: {}",
            std::io::Error::last_os_error()
        );
    }
}
