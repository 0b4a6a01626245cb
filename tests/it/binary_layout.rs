//! How the built binary is laid out, read from its ELF section headers: the size work of
//! issue 35 (item 9) that lives in the link, not in the code. The relative relocations of the
//! position-independent binary are packed (`.relr.dyn`) wherever the build script found the
//! linker and the C library able to do it, and `.ci/run` holds the release binary to 12 MB.

use std::fs::File;
use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::Path;

/// One section of an ELF64 little-endian file: its name and its size in the file.
struct Section {
    name: String,
    size: u64,
}

fn u16_at(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(bytes[at..at + 2].try_into().unwrap())
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

fn read_at(file: &mut File, offset: u64, len: usize) -> Vec<u8> {
    let mut buf = vec![0; len];
    file.seek(SeekFrom::Start(offset)).unwrap();
    file.read_exact(&mut buf).unwrap();
    buf
}

/// The sections of the ELF64 little-endian executable at `path` (only its headers are read:
/// a debug build is hundreds of MB).
fn sections(path: &Path) -> Vec<Section> {
    let mut file = File::open(path).unwrap();
    let header = read_at(&mut file, 0, 64);
    assert_eq!(&header[..4], b"\x7fELF", "not an ELF file");
    assert_eq!((header[4], header[5]), (2, 1), "not ELF64 little-endian");
    let (table, entry, count, names) = (
        u64_at(&header, 0x28),
        usize::from(u16_at(&header, 0x3A)),
        usize::from(u16_at(&header, 0x3C)),
        usize::from(u16_at(&header, 0x3E)),
    );
    let headers = read_at(&mut file, table, entry * count);
    let field = |i: usize, at: usize| u64_at(&headers, i * entry + at);
    let strings = read_at(&mut file, field(names, 24), field(names, 32) as usize);
    (0..count)
        .map(|i| {
            let start = u32_at(&headers, i * entry) as usize;
            let end = start + strings[start..].iter().position(|&b| b == 0).unwrap();
            Section {
                name: String::from_utf8_lossy(&strings[start..end]).into_owned(),
                size: field(i, 32),
            }
        })
        .collect()
}

fn size_of(sections: &[Section], name: &str) -> Option<u64> {
    sections.iter().find(|s| s.name == name).map(|s| s.size)
}

#[test]
fn relative_relocations_are_packed_where_the_system_supports_it() {
    // src/build.rs links and runs a probe program and says here what it found.
    let probed = option_env!("MINICODE_LINK_RELR");
    assert!(
        probed.is_some(),
        "src/build.rs did not report whether packed relocations are supported"
    );
    let binary = Path::new(env!("CARGO_BIN_EXE_minicode"));
    let found = sections(binary);
    let packed = size_of(&found, ".relr.dyn");
    let plain = size_of(&found, ".rela.dyn").unwrap_or(0);
    if probed == Some("yes") {
        let packed = packed.expect("the binary has no .relr.dyn section");
        // Left in .rela.dyn: the relocations that are not relative (symbols of libc), a few
        // hundred; the tens of thousands of relative ones went into the packed table.
        assert!(
            plain < 64 * 1024,
            ".rela.dyn still holds {plain} bytes (.relr.dyn: {packed})"
        );
    } else {
        assert_eq!(
            packed, None,
            "packed relocations the probe said are unsupported"
        );
    }
    // The packed binary still starts and runs: the loader applied the table.
    let out = std::process::Command::new(binary)
        .arg("--version")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("minicode "));
}

#[test]
fn ci_holds_the_release_binary_to_twelve_million_bytes() {
    let ci =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/run")).unwrap();
    assert!(
        ci.lines().any(|line| line.trim() == "budget=12000000"),
        ".ci/run's size check is not at 12,000,000 bytes"
    );
}
