//! One writer per data dir: the lock every process that writes a ledger
//! takes before it writes anything.
//!
//! The lock is an advisory `flock(LOCK_EX)` on `ledgerd.lock` in the data
//! dir, taken by [`super::Ledger::open`] for every ledger opened for writing
//! (a node, `import`, `rollback`), so there is one code path. The kernel
//! releases it when its file is closed, on any exit, `kill -9` included: a
//! lock file left behind by a dead process is free again. The holder writes
//! its PID into the file, so a second writer can say who holds it.
//! Readers (`serve-readonly`, `export`) take no lock and are unaffected.
//!
//! LMDB's own `lock.mdb` cannot serve: every process with the environment
//! open, readers included, holds a shared lock on it, and LMDB lets two
//! writer processes open one environment (its write lock is taken per
//! transaction, not per process), which is how two nodes on one data dir
//! used to interleave their writes.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use super::LedgerError;

/// The lock file's name in a data dir.
pub const LOCK_FILE: &str = "ledgerd.lock";

/// The writer lock of one data dir, held while this value lives.
#[derive(Debug)]
pub struct WriterLock {
    _file: File,
}

impl WriterLock {
    /// Takes the data dir's writer lock, or says which process holds it.
    /// Never waits.
    pub fn take(dir: &Path) -> Result<WriterLock, LedgerError> {
        let path = dir.join(LOCK_FILE);
        let io_err = |source: io::Error| LedgerError::Io {
            path: path.clone(),
            source,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io_err)?;
        if !try_flock(&file, libc::LOCK_EX).map_err(io_err)? {
            return Err(LedgerError::InUse {
                path: dir.to_path_buf(),
                pid: read_pid(&mut file),
            });
        }
        file.set_len(0).map_err(io_err)?;
        file.rewind().map_err(io_err)?;
        writeln!(file, "{}", std::process::id()).map_err(io_err)?;
        Ok(WriterLock { _file: file })
    }

    /// Whether some process holds the writer lock of `dir`, and which.
    /// `Some(None)`: held, by a process that has not written its PID yet.
    pub fn holder(dir: &Path) -> io::Result<Option<Option<u32>>> {
        let mut file = match File::open(dir.join(LOCK_FILE)) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        if try_flock(&file, libc::LOCK_SH)? {
            // Free: our shared lock goes when `file` is dropped.
            return Ok(None);
        }
        Ok(Some(read_pid(&mut file)))
    }
}

/// `flock(operation)` without waiting: true when taken, false when another
/// process holds a lock that conflicts.
fn try_flock(file: &File, operation: libc::c_int) -> io::Result<bool> {
    // SAFETY: flock takes a file descriptor `file` owns and an integer; it
    // touches no memory.
    if unsafe { libc::flock(file.as_raw_fd(), operation | libc::LOCK_NB) } == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    match e.kind() {
        io::ErrorKind::WouldBlock => Ok(false),
        _ => Err(e),
    }
}

/// The pid of another process that has the LMDB environment in `dir` open
/// (`Some(None)` when the lock does not say which), from the `fcntl` lock
/// LMDB keeps on byte 0 of `lock.mdb` while a process has it open. Ask
/// before opening the environment in this process: closing any descriptor
/// of `lock.mdb` would drop this process's own lock.
pub fn environment_holder(dir: &Path) -> std::io::Result<Option<Option<i32>>> {
    use std::os::unix::io::AsRawFd;
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(dir.join("lock.mdb"))
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    // SAFETY: a zeroed `flock` is a valid value; fcntl(F_GETLK) reads and
    // writes only `lock`, which outlives the call.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = libc::F_WRLCK as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    lock.l_start = 0;
    lock.l_len = 1;
    let rc = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETLK, &mut lock) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    if lock.l_type == libc::F_UNLCK as libc::c_short {
        return Ok(None);
    }
    Ok(Some((lock.l_pid > 0).then_some(lock.l_pid)))
}

/// The PID the holder wrote, if it has written it yet.
fn read_pid(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

/// Removes the `--ephemeral` data dirs under `parent` (named
/// `{prefix}{pid}-...`) whose process is gone and whose writer lock is
/// free: the dirs a `kill -9` left behind. A dir whose process is alive, or
/// whose lock is held, is kept; so is anything not named so. Returns the
/// dirs removed.
pub fn remove_stale_ephemeral(parent: &Path, prefix: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(prefix))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let path = entry.path();
        if pid == std::process::id() || process_alive(pid) {
            continue;
        }
        if !matches!(WriterLock::holder(&path), Ok(None)) {
            continue;
        }
        match std::fs::remove_dir_all(&path) {
            Ok(()) => removed.push(path),
            Err(e) => log::debug!("stale ephemeral dir {} not removed: {e}", path.display()),
        }
    }
    removed
}

/// Whether a process with this PID exists (one we may not signal counts).
fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 checks only that the process exists; nothing is sent.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_writer_lock_on_one_dir_is_refused_naming_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let first = WriterLock::take(dir.path()).unwrap();
        match WriterLock::take(dir.path()) {
            Err(LedgerError::InUse { path, pid }) => {
                assert_eq!(path, dir.path());
                assert_eq!(pid, Some(std::process::id()));
            }
            other => panic!("a second lock was not refused: {other:?}"),
        }
        let holder = WriterLock::holder(dir.path()).unwrap();
        assert_eq!(holder, Some(Some(std::process::id())));
        drop(first);
        assert_eq!(WriterLock::holder(dir.path()).unwrap(), None);
        WriterLock::take(dir.path()).unwrap();
    }

    #[test]
    fn only_ephemeral_dirs_of_dead_processes_are_removed() {
        let parent = tempfile::tempdir().unwrap();
        // PIDs above the kernel's maximum (4194304) belong to no process.
        let dead = parent.path().join("eph-4999999-0-1");
        let alive = parent
            .path()
            .join(format!("eph-{}-0-2", std::process::id()));
        let held = parent.path().join("eph-4999998-0-3");
        let other = parent.path().join("something-4999999");
        for d in [&dead, &alive, &held, &other] {
            std::fs::create_dir(d).unwrap();
        }
        let _lock = WriterLock::take(&held).unwrap();
        let removed = remove_stale_ephemeral(parent.path(), "eph-");
        assert_eq!(removed, vec![dead.clone()]);
        assert!(!dead.exists());
        assert!(alive.exists() && held.exists() && other.exists());
    }
}
