//! What a one-shot run does before its first request, seen from outside: work it does not
//! need must not be done. The system's root certificates (hundreds of files, most of a short
//! run's instructions, issue 35) are read only when a TLS connection may be made.

use std::ffi::CString;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::support::binary::{command, write_config};
use crate::support::mock_openai::{MockServer, text_reply};

/// A FIFO given as `SSL_CERT_FILE`, which notes whether anyone opened it for reading before
/// [`CertWatch::opened`] was asked.
struct CertWatch {
    path: PathBuf,
    opened: Arc<AtomicBool>,
    done: Arc<AtomicBool>,
    writer: std::thread::JoinHandle<()>,
}

impl CertWatch {
    fn new(dir: &Path) -> CertWatch {
        let path = dir.join("certs.pem");
        let c = CString::new(path.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let (opened, done) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let writer = {
            let (path, opened, done) = (path.clone(), opened.clone(), done.clone());
            // Opening a FIFO to write waits for a reader: minicode's, or the test's own at the
            // end. Closing it at once gives the reader an empty file, so nothing hangs.
            std::thread::spawn(move || {
                let mut file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
                if !done.load(Ordering::SeqCst) {
                    opened.store(true, Ordering::SeqCst);
                }
                let _ = file.write_all(b"");
            })
        };
        CertWatch {
            path,
            opened,
            done,
            writer,
        }
    }

    /// Whether the FIFO was opened by the run; unblocks the writer thread either way.
    fn opened(self) -> bool {
        // Give a reader that just opened the FIFO a moment to be seen by the writer.
        std::thread::sleep(std::time::Duration::from_millis(50));
        self.done.store(true, Ordering::SeqCst);
        let _ = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&self.path);
        self.writer.join().unwrap();
        self.opened.load(Ordering::SeqCst)
    }
}

#[test]
fn a_plain_http_run_never_reads_the_root_certificates() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_in_thread(vec![text_reply("hello there", 4)]);
    write_config(dir.path(), &server);
    let watch = CertWatch::new(dir.path());
    let out = command(dir.path())
        .env("SSL_CERT_FILE", &watch.path)
        .env_remove("SSL_CERT_DIR")
        .args(["say hello"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "hello there");
    assert!(
        !watch.opened(),
        "an http:// server needs no root certificates, yet they were read"
    );
}

#[test]
fn an_https_server_still_gets_the_root_certificates() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens there: the run fails, but only after building its TLS client.
    let server = MockServer::start_in_thread(vec![]);
    write_config(dir.path(), &server);
    let config = dir.path().join(".minicode/config.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, text.replace("http://", "https://")).unwrap();
    let watch = CertWatch::new(dir.path());
    let mut child = command(dir.path())
        .env("SSL_CERT_FILE", &watch.path)
        .env_remove("SSL_CERT_DIR")
        .args(["say hello"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The certificates are read while the client is built, before any request; the run then
    // fails its handshakes with retries, which need not be waited for.
    let started = std::time::Instant::now();
    while !watch.opened.load(Ordering::SeqCst)
        && started.elapsed() < std::time::Duration::from_secs(30)
        && child.try_wait().unwrap().is_none()
    {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        watch.opened(),
        "an https:// server needs the root certificates, yet they were not read"
    );
}
