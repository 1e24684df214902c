//! The listening socket: its options (accept queue, timeouts that Linux
//! copies into every accepted socket), binding with SO_REUSEPORT, and the
//! open-files limit. The sockets tiny_http accepts are found and shut by
//! [`super::fds`].

use std::io;
use std::net::{Shutdown, SocketAddr, TcpListener};
use std::time::Duration;

use socket2::{Domain, SockRef, Socket, Type};

/// A timeout as SO_RCVTIMEO/SO_SNDTIMEO take it: zero would mean "never", so
/// it becomes the shortest timeout there is.
fn timeout(d: Duration) -> Option<Duration> {
    Some(d.max(Duration::from_micros(1)))
}

/// The accept queue asked for (see `configure_listener`).
const LISTEN_BACKLOG: i32 = 4096;

/// Options set on the listening socket. Linux copies them into every accepted
/// socket, which is the only way to reach tiny_http's sockets before it uses them.
pub(crate) fn configure_listener(
    listener: &TcpListener,
    read_timeout: Duration,
    send_timeout: Duration,
) -> io::Result<()> {
    let socket = SockRef::from(listener);
    // A longer accept queue than std's 128 (the kernel caps it at
    // net.core.somaxconn): tiny_http starts a thread per connection, and
    // when a burst of connections outruns that, a full queue drops SYNs and
    // each dropped client waits a 1 s retransmit (2,000 connections at once
    // took 10 s with 128, well under 1 s with 4096). Calling listen(2) again
    // on a listening socket only changes the backlog.
    socket.listen(LISTEN_BACKLOG)?;
    socket.set_tcp_nodelay(true)?;
    // Per-read timeout of accepted sockets (idle keep-alive, slow headers, slow
    // bodies). It also makes accept() time out: see `Supervisor` in mod.rs.
    socket.set_read_timeout(timeout(read_timeout))?;
    // Per-send() timeout of accepted sockets: bounds how long one send() may
    // block the loop; off-loop writers retry until their own deadline.
    socket.set_write_timeout(timeout(send_timeout))?;
    Ok(())
}

/// Binds a listener with SO_REUSEADDR and SO_REUSEPORT set (the first
/// address that binds wins), so other processes can bind the same port.
pub(crate) fn bind_reuse_port(addrs: &[SocketAddr]) -> io::Result<TcpListener> {
    let mut last = io::Error::new(io::ErrorKind::InvalidInput, "no address to bind");
    for addr in addrs {
        // The socket is close-on-exec, and closed when dropped on failure.
        let bound = Socket::new(Domain::for_address(*addr), Type::STREAM, None).and_then(|s| {
            s.set_reuse_address(true)?;
            s.set_reuse_port(true)?;
            s.bind(&(*addr).into())?;
            s.listen(1024)?;
            Ok(s)
        });
        match bound {
            Ok(socket) => return Ok(socket.into()),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// Closes the listening socket for every fd that shares it (on Linux,
/// shutdown(2) of a listening socket does that), so new connections are
/// refused now, not whenever tiny_http's accept thread drops its copy.
pub(crate) fn stop_listening(listener: &TcpListener) {
    // A failure leaves nothing to do: the socket closes with its last fd.
    let _ = SockRef::from(listener).shutdown(Shutdown::Both);
}

/// TCP_NODELAY only (used by the baseline example, so the comparison is fair).
pub fn set_nodelay_on_listener(listener: &TcpListener) -> io::Result<()> {
    SockRef::from(listener).set_tcp_nodelay(true)
}

/// Raises the soft RLIMIT_NOFILE to the hard limit; returns the new soft limit.
pub(crate) fn raise_nofile_limit() -> io::Result<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain syscalls on a local struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return Err(io::Error::last_os_error());
        }
        if lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
    }
    #[allow(clippy::unnecessary_cast)] // rlim_t is not u64 everywhere
    let cur = lim.rlim_cur as u64;
    Ok(cur)
}
