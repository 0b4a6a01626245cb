//! Dropping every capability before the command starts. In its user namespace the helper holds
//! every capability, and a command that runs as uid 0 there (root outside, in a container or
//! CI) would keep them across `exec`: enough to clone the workspace mount without its
//! read-only binds or make device nodes. So the bounding, ambient, inheritable, permitted and
//! effective sets are all emptied: even an `exec` as root then gains nothing.

use super::unavailable;
use crate::sandbox::{Layer, Unavailable};

/// `_LINUX_CAPABILITY_VERSION_3`: two 32-bit words per set.
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct Header {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Data {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

pub(super) fn drop_all() -> Result<(), Unavailable> {
    let fail = |what: &str| {
        let err = std::io::Error::last_os_error();
        unavailable(Layer::Capabilities, format!("{what}: {err}"))
    };
    // SAFETY: prctl with integer arguments only; each changes a set of this process.
    #[allow(unsafe_code)]
    unsafe {
        // EINVAL: a kernel without ambient capabilities (before 4.3) has none to clear.
        if libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        ) != 0
            && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL)
        {
            return Err(fail("clearing the ambient capabilities"));
        }
        for cap in 0..64 {
            if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 {
                // EINVAL: past the kernel's last capability; every one before it is dropped.
                if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
                    break;
                }
                return Err(fail("dropping the bounding set"));
            }
        }
    }
    let mut header = Header {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let data = [Data::default(); 2];
    // SAFETY: capset reads a version-3 header and two data words, both valid for the call.
    #[allow(unsafe_code)]
    let done =
        unsafe { libc::syscall(libc::SYS_capset, &mut header as *mut Header, data.as_ptr()) };
    if done != 0 {
        return Err(fail("emptying the capability sets"));
    }
    Ok(())
}
