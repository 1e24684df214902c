//! The /proc/self/fd scanner: finding the file descriptors tiny_http holds
//! for one client, so that the server can shut a connection down (tiny_http
//! has no API to close a connection), and holding those sockets by a
//! duplicate fd so that a shutdown never reaches a later connection.

use std::collections::{HashMap, HashSet};
use std::mem;
use std::net::{Shutdown, SocketAddr};
use std::os::unix::io::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::time::Duration;

use socket2::SockRef;

/// The local (or, with `peer`, the remote) address of socket `fd`.
fn sock_name(fd: i32, peer: bool) -> Option<SocketAddr> {
    // SAFETY: the fd is only borrowed for these two calls; a stale fd just
    // makes them fail.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    let socket = SockRef::from(&fd);
    let name = if peer {
        socket.peer_addr()
    } else {
        socket.local_addr()
    };
    name.ok()?.as_socket()
}

fn open_fds() -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return Vec::new();
    };
    let fds = dir.flatten();
    fds.filter_map(|entry| entry.file_name().to_str()?.parse().ok())
        .collect()
}

/// One open socket as (fd, inode): the inode tells it apart from a later
/// socket that is given the same fd number.
pub(crate) type Socket = (i32, u64);

/// Which sockets of a peer an operation may touch. A peer address names one
/// connection only while that connection is open: once the server has closed
/// one (the loop remembers its socket inodes), a new connection from the same
/// address and port may exist next to what is left of the old one.
#[derive(Debug, Clone, Default)]
pub(crate) enum Which {
    /// Every socket whose peer is the address.
    #[default]
    All,
    /// Those of the address, except these inodes (a closed connection).
    Except(Vec<u64>),
    /// Exactly the sockets with these inodes, whatever their peer (the
    /// closed connection itself: its peer address may no longer be readable).
    Only(Vec<u64>),
}

/// (inode, is socket) of an fd, or None if it is closed.
fn fd_inode(fd: i32) -> Option<(u64, bool)> {
    // SAFETY: fstat on an integer fd; a stale fd just fails.
    let mut st: libc::stat = unsafe { mem::zeroed() };
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return None;
    }
    Some((
        st.st_ino as u64,
        st.st_mode & libc::S_IFMT == libc::S_IFSOCK,
    ))
}

/// Accepted sockets of our listener, found by scanning /proc/self/fd.
/// An fd -> (inode, peer) cache keeps a rescan at one fstat per open fd.
#[derive(Default)]
pub(crate) struct FdTable {
    cache: HashMap<i32, (u64, Option<SocketAddr>)>,
}

impl FdTable {
    /// Rescans; returns the number of distinct peers connected to `local`.
    pub(crate) fn scan(&mut self, local: SocketAddr) -> usize {
        let fds = open_fds();
        let mut fresh = HashMap::with_capacity(fds.len());
        for fd in fds {
            let Some((ino, is_sock)) = fd_inode(fd) else {
                continue;
            };
            let peer = match self.cache.get(&fd) {
                Some(&(cached_ino, peer)) if cached_ino == ino => peer,
                _ if is_sock && sock_name(fd, false) == Some(local) => sock_name(fd, true),
                _ => None,
            };
            fresh.insert(fd, (ino, peer));
        }
        self.cache = fresh;
        self.peers().len()
    }

    /// Sorted distinct peers of the last scan.
    pub(crate) fn peers(&self) -> Vec<SocketAddr> {
        let mut peers: Vec<SocketAddr> = self.cache.values().filter_map(|v| v.1).collect();
        peers.sort_unstable();
        peers.dedup();
        peers
    }

    /// The sockets of `peer` as (fd, inode), rescanned now. Call it while
    /// the connection is still held open (its request or writer alive): the
    /// peer address then names exactly one connection. Later, the address
    /// alone may name a new one (loopback clients reuse a port as soon as the
    /// old connection is in TIME_WAIT), and the fd number may be a new
    /// connection's: act on the result through [`HeldSocket`].
    pub(crate) fn sockets_of(&mut self, local: SocketAddr, peer: SocketAddr) -> Vec<Socket> {
        self.scan(local);
        self.cache
            .iter()
            .filter(|(_, v)| v.1 == Some(peer))
            .map(|(fd, v)| (*fd, v.0))
            .filter(|(fd, _)| sock_name(*fd, true) == Some(peer))
            .collect()
    }

    /// [`FdTable::sockets_of`], narrowed by `which`.
    pub(crate) fn sockets_which(
        &mut self,
        local: SocketAddr,
        peer: SocketAddr,
        which: &Which,
    ) -> Vec<Socket> {
        match which {
            Which::All => self.sockets_of(local, peer),
            Which::Except(closed) => {
                let mut found = self.sockets_of(local, peer);
                found.retain(|(_, ino)| !closed.contains(ino));
                found
            }
            Which::Only(inodes) => {
                self.scan(local);
                self.cache
                    .iter()
                    .filter(|(_, v)| inodes.contains(&v.0))
                    .map(|(fd, v)| (*fd, v.0))
                    // Sockets only: a file on another filesystem may have
                    // the same inode number.
                    .filter(|(fd, ino)| fd_inode(*fd) == Some((*ino, true)))
                    .collect()
            }
        }
    }

    /// Whether an open fd (as of the last scan) is a socket with one of `inodes`.
    pub(crate) fn has_any(&self, inodes: &[u64]) -> bool {
        self.cache
            .iter()
            .any(|(fd, v)| inodes.contains(&v.0) && fd_inode(*fd) == Some((v.0, true)))
    }

    /// The sockets of `peer` that `which` allows, each held by a duplicate
    /// fd (see [`HeldSocket`]). Call it while the connection is still held
    /// open (its request or writer alive), so the peer address names exactly
    /// this connection.
    pub(crate) fn hold_sockets_which(
        &mut self,
        local: SocketAddr,
        peer: SocketAddr,
        which: &Which,
    ) -> Vec<HeldSocket> {
        let mut inodes = HashSet::new();
        self.sockets_which(local, peer, which)
            .into_iter()
            .filter(|(_, ino)| inodes.insert(*ino))
            .filter_map(|(fd, ino)| HeldSocket::hold(fd, ino))
            .collect()
    }

    /// Sockets of our listener (one fd each) whose receive queue holds bytes
    /// that no one has read yet.
    pub(crate) fn unread(&self) -> Vec<Socket> {
        let mut seen = HashSet::new();
        self.cache
            .iter()
            .filter(|(_, (ino, peer))| peer.is_some() && seen.insert(*ino))
            .filter(|(fd, _)| has_unread_bytes(**fd))
            .map(|(fd, (ino, _))| (*fd, *ino))
            .collect()
    }
}

/// Whether bytes wait unread in the receive queue of socket `fd` (FIONREAD).
fn has_unread_bytes(fd: i32) -> bool {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int; a stale fd just fails.
    unsafe { libc::ioctl(fd, libc::FIONREAD, &mut n) == 0 && n > 0 }
}

/// Whether `socket`'s fd still is that socket and has bytes waiting unread.
/// (A stale answer costs at most one needless throw-away connection.)
pub(crate) fn still_unread(socket: Socket) -> bool {
    fd_inode(socket.0) == Some((socket.1, true)) && has_unread_bytes(socket.0)
}

/// One accepted socket, held open by our own duplicate of its fd.
///
/// A shutdown through a raw fd number can reach the wrong connection: between
/// checking which socket an fd is and calling shutdown(2), tiny_http may close
/// that fd and accept a new connection that is given the same number (seen in
/// CI under load: a fresh connection got a FIN 0.3 ms after it opened). A
/// duplicate is ours alone, so it names the same socket until we drop it.
#[derive(Debug)]
pub(crate) struct HeldSocket(OwnedFd, u64);

impl HeldSocket {
    /// Duplicates `fd` if it still is the socket with inode `ino` (checked on
    /// the duplicate, which no one else can close or reuse).
    pub(crate) fn hold(fd: i32, ino: u64) -> Option<HeldSocket> {
        // SAFETY: borrowed only to duplicate it (F_DUPFD_CLOEXEC, into a
        // new fd that we then own); a stale `fd` just fails.
        let owned = unsafe { BorrowedFd::borrow_raw(fd) }
            .try_clone_to_owned()
            .ok()?;
        (fd_inode(owned.as_raw_fd()) == Some((ino, true))).then_some(HeldSocket(owned, ino))
    }

    /// The socket's inode: what tells this connection apart from a later
    /// one from the same peer address.
    pub(crate) fn inode(&self) -> u64 {
        self.1
    }

    /// shutdown(2) with `how`; it does not release the fd.
    pub(crate) fn shutdown(&self, how: Shutdown) {
        // A socket the peer has already reset has nothing left to shut.
        let _ = SockRef::from(&self.0).shutdown(how);
    }
}

/// shutdown(2) every socket of one client: `Write` sends FIN after the
/// queued response, `Read` makes tiny_http's next read return end-of-file
/// (it then drops the connection and closes its fds).
pub(crate) fn shutdown_peer(local: SocketAddr, peer: SocketAddr, which: &Which, how: Shutdown) {
    for socket in FdTable::default().hold_sockets_which(local, peer, which) {
        socket.shutdown(how);
    }
}

/// Closes the fds of a connection whose tiny_http objects were deliberately
/// leaked (see `body::dispose`): nothing else will ever close them, so their
/// numbers cannot be given to another connection meanwhile (the reason the
/// other helpers go through [`HeldSocket`]).
///
/// Its fds (tiny_http keeps two per connection) are each re-checked
/// (getpeername, or its inode for [`Which::Only`]), so a reused fd number is
/// not hit.
pub(crate) fn close_leaked_peer(local: SocketAddr, peer: SocketAddr, which: &Which) {
    for (fd, _) in FdTable::default().sockets_which(local, peer, which) {
        // SAFETY: only fds owned by leaked (never dropped) objects reach
        // here: we take them over, and dropping closes them.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let _ = SockRef::from(&fd).shutdown(Shutdown::Both);
    }
}

/// SO_LINGER {on, 0} on every socket of one client: the close that follows
/// sends a reset instead of a FIN.
pub(crate) fn reset_on_close(local: SocketAddr, peer: SocketAddr, which: &Which) {
    for socket in FdTable::default().hold_sockets_which(local, peer, which) {
        // As with shutdown: a socket already reset needs no reset.
        let _ = SockRef::from(&socket.0).set_linger(Some(Duration::ZERO));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use socket2::{Domain, Socket, Type};
    use std::io::{self, Read, Write};
    use std::net::{Ipv4Addr, TcpListener, TcpStream};

    /// A client socket bound to `port` (SO_REUSEADDR) and connected to `to`.
    fn connect_from(port: u16, to: SocketAddr) -> io::Result<TcpStream> {
        let socket = Socket::new(Domain::IPV4, Type::STREAM, None)?;
        socket.set_reuse_address(true)?;
        socket.bind(&SocketAddr::from((Ipv4Addr::LOCALHOST, port)).into())?;
        socket.connect(&to.into())?;
        Ok(socket.into())
    }

    #[test]
    fn a_held_socket_never_reaches_a_new_connection_from_the_same_port_or_fd() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let local = listener.local_addr().unwrap();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();

        let mut first = connect_from(port, local).unwrap();
        let (served, peer) = listener.accept().unwrap();
        let old_fd = served.as_raw_fd();
        let held = FdTable::default().hold_sockets_which(local, peer, &Which::All);
        assert_eq!(held.len(), 1, "{held:?}");
        // The close as the server makes it: FIN first, so the client may
        // reuse its port at once; then the owner (tiny_http) closes its fd.
        held[0].shutdown(Shutdown::Write);
        let mut rest = Vec::new();
        first.read_to_end(&mut rest).unwrap();
        drop(first);
        drop(served);

        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        let mut second = loop {
            match connect_from(port, local) {
                Ok(s) => break s,
                Err(_) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => panic!("cannot reconnect from port {port}: {e}"),
            }
        };
        let (mut served2, peer2) = listener.accept().unwrap();
        // The premise: the new connection has the old one's peer address (and
        // usually the old fd number), so a close by address or by number
        // would hit it.
        assert_eq!(peer2, peer);
        eprintln!(
            "old fd {old_fd}, new fd {} (same number: {})",
            served2.as_raw_fd(),
            served2.as_raw_fd() == old_fd
        );

        // The second stage of the old connection's close, then its end.
        held[0].shutdown(Shutdown::Both);
        drop(held);
        served2.write_all(b"still open").unwrap();
        let mut got = [0u8; 10];
        second.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"still open");

        // Holding the new connection does reach it.
        let now = FdTable::default().hold_sockets_which(local, peer, &Which::All);
        assert_eq!(now.len(), 1, "{now:?}");
        now[0].shutdown(Shutdown::Write);
        let mut rest = Vec::new();
        second.read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty(), "{rest:?}");
    }

    #[test]
    fn holding_a_socket_by_a_stale_fd_number_is_refused() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let local = listener.local_addr().unwrap();
        let _client = std::net::TcpStream::connect(local).unwrap();
        let (served, _) = listener.accept().unwrap();
        let fd = served.as_raw_fd();
        let (ino, is_sock) = fd_inode(fd).unwrap();
        assert!(is_sock);
        assert!(HeldSocket::hold(fd, ino).is_some());
        // The same fd number with another inode (a socket that took the
        // number over) is not held.
        assert!(HeldSocket::hold(fd, ino + 1).is_none());
        drop(served);
        assert!(HeldSocket::hold(fd, ino).is_none(), "a closed fd was held");
    }
}
