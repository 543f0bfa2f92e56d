//! Bounded reads of the files an operator names: TLS material, the accounts file and the
//! configuration files. A path that names a FIFO, a device or a directory is refused before
//! anything waits on it (the open is non-blocking, so even a FIFO swapped in between the check
//! and the open cannot hold the thread), and a file larger than its cap is refused rather than
//! read whole, so a mistaken or hostile path can neither block a thread for ever nor fill
//! memory. Symbolic links are followed: certificates are commonly mounted through them.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::path::Path;

/// The largest TLS, accounts or configuration file read (4 MiB): a PEM chain, a CA bundle or
/// an accounts file is a few KiB to a few hundred KiB.
pub(crate) const MAX_SMALL_FILE: u64 = 4 << 20;

fn not_regular() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "not a regular file (a directory, FIFO, socket or device)",
    )
}

/// Opens the regular file at `path` for reading; anything else is refused without blocking.
pub(crate) fn open_regular(path: &Path) -> io::Result<File> {
    if !std::fs::metadata(path)?.is_file() {
        return Err(not_regular());
    }
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path)?;
    // Checked again on what was opened: the path may have changed since.
    if !file.metadata()?.is_file() {
        return Err(not_regular());
    }
    Ok(file)
}

/// The bytes of the regular file at `path`, refused if it holds more than `cap` bytes.
pub(crate) fn read_capped(path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    let file = open_regular(path)?;
    let too_large = |len: u64| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("the file has {len} bytes or more, over the limit of {cap} bytes"),
        )
    };
    let len = file.metadata()?.len();
    if len > cap {
        return Err(too_large(len));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    // One byte more than the cap tells a file that grew since the check.
    file.take(cap + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// [`read_capped`] with [`MAX_SMALL_FILE`].
pub(crate) fn read_small(path: &Path) -> io::Result<Vec<u8>> {
    read_capped(path, MAX_SMALL_FILE)
}
