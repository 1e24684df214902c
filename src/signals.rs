//! SIGINT / SIGTERM handling without a signal handler: the signals are blocked
//! and a dedicated thread waits for them with sigwait(3).

/// Blocks SIGINT and SIGTERM in the calling thread (and so in every thread it
/// starts afterwards: call this first thing in `main`), then starts a thread
/// that waits for either and calls `f` once.
pub fn on_stop(f: impl FnOnce() + Send + 'static) {
    // SAFETY: sigset manipulation on a local set; pthread_sigmask on this thread.
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    };
    let spawned = std::thread::Builder::new()
        .name("ledgerd-signals".into())
        .spawn(move || {
            let mut sig: libc::c_int = 0;
            // SAFETY: `set` is a valid, initialised sigset; `sig` is a valid out pointer.
            let rc = unsafe { libc::sigwait(&set, &mut sig) };
            if rc == 0 {
                log::info!("received signal {sig}, stopping");
                f();
            }
        });
    if let Err(e) = spawned {
        log::warn!("cannot start the signal thread: {e}");
    }
}
