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
/// kernel built without forced preemption, keep it until the next tick:
/// [`give_way`] bounds that to 0.2 ms. SCHED_BATCH (never preempts on
/// waking) and SCHED_IDLE (always preempted) were measured against this and
/// read no faster (docs/PERFORMANCE.md, "Where the reads wait").
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

/// How much CPU a sync thread may use at a stretch before [`give_way`]
/// yields the core.
const STRETCH: std::time::Duration = std::time::Duration::from_micros(200);

/// Called between items of work (a block, a slot) by the sync thread and the
/// threads it starts: once every 0.2 ms, yields the core to any thread that
/// is waiting for it.
///
/// The priority set by [`yield_to_the_server`] decides who goes first only
/// when the scheduler looks, and a kernel built without forced preemption
/// looks at a tick (4 ms here) or when the running thread blocks. A server
/// thread woken while a sync thread computes could wait out that tick; with
/// these yields it waits 0.2 ms at most. A yield with nothing else to run
/// returns at once; the clock read between them costs tens of nanoseconds.
/// True when it yielded.
pub fn give_way() -> bool {
    use std::cell::Cell;
    use std::time::Instant;
    thread_local! {
        static SINCE: Cell<Option<Instant>> = const { Cell::new(None) };
    }
    let now = Instant::now();
    SINCE.with(|since| match since.get() {
        Some(t) if now.duration_since(t) < STRETCH => false,
        Some(_) => {
            std::thread::yield_now();
            since.set(Some(Instant::now()));
            true
        }
        None => {
            since.set(Some(now));
            false
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn give_way_yields_only_once_its_stretch_has_passed() {
        std::thread::spawn(|| {
            // A thread's first call starts its stretch.
            assert!(!give_way());
            std::thread::sleep(STRETCH + Duration::from_millis(1));
            assert!(give_way(), "a stretch has passed: it yields");
            // A busy loop of 5 ms yields at least once more, and at most
            // once per stretch.
            let start = std::time::Instant::now();
            let mut yields = 0;
            while start.elapsed() < Duration::from_millis(5) || yields == 0 {
                yields += usize::from(give_way());
            }
            let most = (start.elapsed().as_micros() / STRETCH.as_micros()) as usize;
            assert!(yields >= 1 && yields <= most, "{yields} yields in 5 ms");
        })
        .join()
        .unwrap();
    }
}
