//! What this machine offers the sandbox, read without confining anything (for the doctor and
//! for the errors): the Landlock ABI, seccomp, unprivileged user namespaces, and for each
//! layer the exact way out when it is missing.

use super::Layer;

/// The oldest Landlock ABI the sandbox accepts: 3 (Linux 6.2) is the first that can refuse
/// `truncate`, without which a confined command could empty any file it can open.
pub const MIN_LANDLOCK_ABI: i32 = 3;

/// The Landlock ABI version of the running kernel, or why there is none.
#[cfg(target_os = "linux")]
pub fn landlock_abi() -> Result<i32, String> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute pointer, size 0 and the VERSION flag, the call only
    // returns the ABI number (or an error); no memory is read or written.
    #[allow(unsafe_code)]
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if abi >= 1 {
        return Ok(abi as i32);
    }
    let err = std::io::Error::last_os_error();
    Err(match err.raw_os_error() {
        Some(libc::ENOSYS) => "the kernel is built without Landlock".to_string(),
        Some(libc::EOPNOTSUPP) => "Landlock is built in but not enabled at boot".to_string(),
        _ => format!("Landlock cannot be queried: {err}"),
    })
}

#[cfg(not(target_os = "linux"))]
pub fn landlock_abi() -> Result<i32, String> {
    Err("not Linux".to_string())
}

/// Whether the kernel offers seccomp filters (it lists the actions it supports).
pub(crate) fn seccomp_available() -> bool {
    std::path::Path::new("/proc/sys/kernel/seccomp/actions_avail").exists()
}

/// What forbids unprivileged user namespaces here, when a sysctl does (then the fix names it).
pub fn userns_restriction() -> Option<&'static str> {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
    };
    if read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").as_deref() == Some("1") {
        return Some("kernel.apparmor_restrict_unprivileged_userns=0");
    }
    if read("/proc/sys/kernel/unprivileged_userns_clone").as_deref() == Some("0") {
        return Some("kernel.unprivileged_userns_clone=1");
    }
    if read("/proc/sys/user/max_user_namespaces").as_deref() == Some("0") {
        return Some("user.max_user_namespaces=15000");
    }
    None
}

/// The way out when `layer` is missing: the setting to change, and `--sandbox off` (the
/// user's explicit choice to run unconfined).
pub(crate) fn fix(layer: Layer) -> String {
    match layer {
        Layer::Landlock => format!(
            "use a kernel with Landlock ABI {MIN_LANDLOCK_ABI} or newer (Linux 6.2+, with \
             `landlock` in the `lsm=` boot parameter), or run with `--sandbox off`"
        ),
        Layer::Seccomp => "allow seccomp filters (a container runtime may forbid them), or run \
                           with `--sandbox off`"
            .to_string(),
        Layer::NoNewPrivs | Layer::Capabilities => "run with `--sandbox off`".to_string(),
        Layer::UserNamespace => match userns_restriction() {
            Some(sysctl) => format!(
                "allow unprivileged user namespaces (`sudo sysctl {sysctl}`), or run with \
                 `--sandbox off`"
            ),
            None => "allow unprivileged user namespaces (a container may need \
                     `--security-opt seccomp=unconfined` or a user-namespace-enabled runtime), \
                     or run with `--sandbox off`"
                .to_string(),
        },
        Layer::Platform => {
            "the sandbox is Linux only: run with `--sandbox off` to run commands unconfined"
                .to_string()
        }
    }
}

/// The error of a platform where nothing can be enforced.
#[cfg(not(target_os = "linux"))]
pub(crate) fn platform() -> Unavailable {
    Unavailable {
        layer: Layer::Platform,
        reason: format!("no sandbox on {}", std::env::consts::OS),
        fix: fix(Layer::Platform),
    }
}
