//! Whether a process owns a listening TCP socket on a port, from Linux's `/proc`: the
//! listening sockets of the port are found by inode in `/proc/net/tcp` and `/proc/net/tcp6`,
//! and matched against the sockets among the process's open files (`/proc/<pid>/fd`).
//!
//! A takeover asks this before it signals anyone: a PID that merely names a `namesrv` may be
//! a server of another cluster on another port. Reading another process's `fd` directory
//! needs the same user (or root), as signalling it does.

use std::collections::HashSet;
use std::io;

/// The inodes of the TCP sockets listening on `port` (any address, IPv4 or IPv6).
fn listening_inodes(port: u16) -> io::Result<HashSet<u64>> {
    let mut inodes = HashSet::new();
    let mut read_any = false;
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        // tcp6 is absent on a kernel without IPv6.
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        read_any = true;
        inodes.extend(
            text.lines()
                .skip(1)
                .filter_map(|l| listening_inode(l, port)),
        );
    }
    if !read_any {
        return Err(io::Error::other("cannot read /proc/net/tcp"));
    }
    Ok(inodes)
}

/// The inode of a `/proc/net/tcp` line's socket if it listens on `port`:
/// `sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode …`, with the
/// local address as `HEXADDR:HEXPORT` and the state `0A` for LISTEN.
fn listening_inode(line: &str, port: u16) -> Option<u64> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let (local, state, inode) = (fields.get(1)?, fields.get(3)?, fields.get(9)?);
    let (_, hex_port) = local.rsplit_once(':')?;
    let listens = *state == "0A" && u16::from_str_radix(hex_port, 16).ok()? == port;
    listens.then(|| inode.parse().ok()).flatten()
}

/// Whether process `pid` has a socket listening on `port` among its open files. An error
/// when that cannot be told (no such process, not ours to inspect).
pub(super) fn listens_on(pid: u32, port: u16) -> io::Result<bool> {
    let inodes = listening_inodes(port)?;
    for entry in std::fs::read_dir(format!("/proc/{pid}/fd"))? {
        // A descriptor closed while we look is simply not a listener any more.
        let Ok(target) = entry.and_then(|e| std::fs::read_link(e.path())) else {
            continue;
        };
        let inode = target
            .to_str()
            .and_then(|t| t.strip_prefix("socket:["))
            .and_then(|t| t.strip_suffix(']'))
            .and_then(|t| t.parse::<u64>().ok());
        if inode.is_some_and(|i| inodes.contains(&i)) {
            return Ok(true);
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proc_net_tcp_line_names_its_listening_socket() {
        let listen = "   0: 0100007F:2694 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 41234 1 0000000000000000 100 0 0 10 0";
        assert_eq!(listening_inode(listen, 9876), Some(41234));
        assert_eq!(listening_inode(listen, 9877), None);
        // The same port, connected (state 01): not a listener.
        let established = listen.replace(" 0A ", " 01 ");
        assert_eq!(listening_inode(&established, 9876), None);
        assert_eq!(listening_inode("garbage", 9876), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_listens_on_its_own_port_only() {
        let mine = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = mine.local_addr().unwrap().port();
        let me = std::process::id();
        assert!(listens_on(me, port).unwrap());
        // A port this process listened on and closed.
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let closed_port = closed.local_addr().unwrap().port();
        drop(closed);
        assert!(!listens_on(me, closed_port).unwrap());
        assert!(listens_on(u32::MAX, port).is_err(), "no such process");
    }
}
