//! Link options the system may or may not support, decided by trying them: the two size
//! options of the `minicode` binary (docs/performance.md, "Binary size"). It must never fail a
//! build: when a probe cannot run or says no, the binary is linked as before. It is Cargo's build
//! script (`package.build` in Cargo.toml), not a module of the crate.
//!
//! - Packed relative relocations (RELR). A position-independent executable carries one 24-byte
//!   `R_X86_64_RELATIVE` entry per pointer in its data (vtables, string tables, `&'static`
//!   data): about 37,000 of them, 0.88 MB of `.rela.dyn` in minicode. `-z pack-relative-relocs`
//!   stores them as a bitmap of a few KB and keeps the binary position-independent (ASLR
//!   unchanged). It needs a linker that knows the option (GNU ld 2.38, LLD 15) and, where the
//!   binary runs, a dynamic loader that applies `DT_RELR` (glibc 2.36).
//! - No unwind tables when panics abort. With `panic = "abort"` (the release profile) nothing
//!   unwinds, yet rustc still emits `.eh_frame` for every function (0.87 MB), and the profile
//!   cannot switch that off (`-C force-unwind-tables=no` is a rustc flag, and flags set in
//!   `.cargo/config.toml` do not reach `cargo install`). A linker script that only discards the
//!   section does it at link time. What is lost: the stack trace `RUST_BACKTRACE=1` prints
//!   after a panic message (the message itself stays) and unwinding by debuggers and
//!   profilers in a stripped binary, which had no symbols to show anyway.
//!
//! Each probe builds and runs a tiny Rust program with the same rustc, linker and flags as the
//! binary, so a linker that ignores an option or a loader that skips the packed table is
//! caught here rather than by the user: `cargo install` on an older system gets the plain
//! link. A cross build (target other than host) cannot run its probes and gets the plain link
//! too. `MINICODE_PLAIN_LINK=1` asks for the plain link (a binary built here to run on a system
//! with an older glibc, or profiled with DWARF unwinding).

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The option as rustc passes it to the linker (through the C compiler driver, to LLD or GNU ld).
const RELR: &str = "-Wl,-z,pack-relative-relocs";

/// Added to the linker's own layout (`INSERT`), not replacing it: only `.eh_frame` goes.
const DISCARD_UNWIND: &str = "SECTIONS { /DISCARD/ : { *(.eh_frame) } }\nINSERT AFTER .text;\n";

/// A program with a table of pointers, each needing a relative relocation: if the loader did
/// not apply a packed table, the pointers are wrong and the program crashes or exits with 1.
const PROBE: &str = "static WORDS: [&str; 2] = [\"packed\", \"relocations\"];\n\
                     fn main() {\n\
                         let words = std::hint::black_box(&WORDS);\n\
                         println!(\"{}\", words[0]);\n\
                         std::process::exit(if words[1].starts_with('r') { 0 } else { 1 });\n\
                     }\n";

fn main() {
    println!("cargo:rerun-if-changed=src/build.rs");
    for var in [
        "RUSTC_LINKER",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_PROFILE_RELEASE_PANIC",
        "MINICODE_PLAIN_LINK",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let probe = Probe::new();
    let packed = probe.as_ref().is_some_and(|p| p.works("relr", &[RELR]));
    if packed {
        println!("cargo:rustc-link-arg-bins={RELR}");
    }
    // Only where panics abort: with unwinding (tests, debug builds) the tables are needed.
    // Cargo does not tell a build script the profile's panic strategy (`CARGO_CFG_PANIC` is the
    // target's default, always "unwind" here), so this relies on Cargo.toml: the release profile,
    // and `bench` that inherits from it, abort; the dev and test profiles unwind.
    let aborts = env::var("PROFILE").is_ok_and(|profile| profile == "release")
        && !env::var("CARGO_PROFILE_RELEASE_PANIC").is_ok_and(|panic| panic != "abort");
    if let Some(probe) = probe.filter(|_| aborts)
        && let Some(script) = probe.write("discard_unwind.ld", DISCARD_UNWIND)
    {
        let arg = format!("-Wl,-T,{}", script.display());
        if probe.works("unwind", &[&arg]) {
            println!("cargo:rustc-link-arg-bins={arg}");
        }
    }
    // What was decided, for the test that reads the binary's sections (tests/it/binary_layout.rs).
    let answer = if packed { "yes" } else { "no" };
    println!("cargo:rustc-env=MINICODE_LINK_RELR={answer}");
}

/// Where probe programs are built, when this build can run them at all.
struct Probe {
    out: PathBuf,
}

impl Probe {
    fn new() -> Option<Probe> {
        if env::var_os("MINICODE_PLAIN_LINK").is_some() {
            return None;
        }
        let target = env::var("TARGET").ok()?;
        if target != env::var("HOST").ok()? || !target.contains("-linux-gnu") {
            return None;
        }
        let out = PathBuf::from(env::var_os("OUT_DIR")?);
        Some(Probe { out })
    }

    /// Writes `text` to `name` in the build's output folder.
    fn write(&self, name: &str, text: &str) -> Option<PathBuf> {
        let path = self.out.join(name);
        std::fs::write(&path, text).ok().map(|()| path)
    }

    /// Whether the probe program links with `link_args` without warnings and runs correctly.
    fn works(&self, name: &str, link_args: &[&str]) -> bool {
        let Some(source) = self.write(&format!("{name}_probe.rs"), PROBE) else {
            return false;
        };
        let program = self.out.join(format!("{name}_probe"));
        links(&source, &program, link_args) && runs(&program)
    }
}

/// Builds the probe as the binary is built: the same rustc, linker and flags (so the same
/// linker: rustc's own LLD by default, or whatever the configuration chooses), panics aborting
/// as in the release profile, warnings fatal (a linker that does not know an option may warn
/// and go on).
fn links(source: &Path, program: &Path, link_args: &[&str]) -> bool {
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let mut command = Command::new(rustc);
    if let Ok(flags) = env::var("CARGO_ENCODED_RUSTFLAGS") {
        command.args(flags.split('\x1f').filter(|flag| !flag.is_empty()));
    }
    if let Ok(linker) = env::var("RUSTC_LINKER") {
        command.arg(format!("-Clinker={linker}"));
    }
    command.args(["--edition=2021", "-Cpanic=abort", "-Cdebuginfo=0"]);
    for arg in link_args {
        command.arg(format!("-Clink-arg={arg}"));
    }
    command
        .arg("-Clink-arg=-Wl,--fatal-warnings")
        .arg("-o")
        .arg(program)
        .arg(source)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

fn runs(program: &Path) -> bool {
    Command::new(program)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}
