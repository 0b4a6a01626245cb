//! The private network namespace of a call with the network off: it holds only a loopback
//! interface, which this brings up, so a test server a command starts on 127.0.0.1 (or ::1)
//! answers its own clients, while nothing outside the namespace (the host's loopback services,
//! the model server, minicode's daemon, the internet) has a route from it. Done with one
//! `ioctl` on a datagram socket: no `ip` program is needed.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Brings `lo` up in the caller's network namespace (needs `CAP_NET_ADMIN` there: the helper
/// holds it in the user namespace that owns the new network namespace).
pub(super) fn up() -> std::io::Result<()> {
    // SAFETY: socket takes integer arguments; a non-negative result is a new descriptor.
    #[allow(unsafe_code)]
    let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the descriptor was just returned to us and is owned by nothing else.
    #[allow(unsafe_code)]
    let socket = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: `ifreq` is a plain C struct; zeroed is a valid value for it.
    #[allow(unsafe_code)]
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo\0") {
        *slot = *byte as libc::c_char;
    }
    ioctl(&socket, libc::SIOCGIFFLAGS, &mut request)?;
    // SAFETY: SIOCGIFFLAGS filled the flags member of the union.
    #[allow(unsafe_code)]
    unsafe {
        request.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
    }
    ioctl(&socket, libc::SIOCSIFFLAGS, &mut request)
}

fn ioctl(socket: &OwnedFd, request: libc::Ioctl, ifreq: &mut libc::ifreq) -> std::io::Result<()> {
    // SAFETY: an interface request on an open socket, with a valid `ifreq` the kernel reads
    // and (for SIOCGIFFLAGS) writes.
    #[allow(unsafe_code)]
    let done = unsafe { libc::ioctl(socket.as_raw_fd(), request, ifreq as *mut libc::ifreq) };
    if done != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
