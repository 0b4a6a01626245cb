//! The network with the network off (issue 33, item 5): each confined call has a network
//! namespace of its own with loopback up, so a test server a command starts on 127.0.0.1
//! answers a client of the same call, while a server on the host's 127.0.0.1 stays
//! unreachable (with `--network` it is reached: the host's network is used). The kernel here
//! has Landlock, seccomp and unprivileged user namespaces; `python3` and `curl` are installed.

use crate::support::binary::{output_text as text, sandboxed};
use crate::support::workspace;

/// Starts `python3 -m http.server` on 127.0.0.1:`port` in the background and fetches its
/// index with curl once it answers (up to 10 s).
fn serve_and_fetch(port: u16) -> String {
    format!(
        "python3 -m http.server --bind 127.0.0.1 {port} >/dev/null 2>&1 &
for i in $(seq 100); do
  code=$(curl -s -m 1 -o /dev/null -w '%{{http_code}}' http://127.0.0.1:{port}/) && break
  sleep 0.1
done
echo \"status=$code\""
    )
}

#[test]
fn a_test_server_and_its_client_in_one_call_talk_over_loopback() {
    let (_tmp, ws) = workspace();
    std::fs::write(ws.join("index.html"), "hello\n").unwrap();
    let out = sandboxed(&ws, &[], &serve_and_fetch(18431));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("status=200"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_server_on_the_hosts_loopback_is_unreachable_without_network_and_reached_with_it() {
    let (_tmp, ws) = workspace();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            use std::io::Write;
            let mut stream = stream;
            let _ = stream.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n");
        }
    });
    let fetch =
        format!("curl -s -m 5 -o /dev/null -w 'status=%{{http_code}}' http://127.0.0.1:{port}/");
    let off = sandboxed(&ws, &[], &fetch);
    assert_ne!(off.status.code(), Some(0), "{}", text(&off));
    assert!(!text(&off).contains("status=200"), "{}", text(&off));
    let on = sandboxed(&ws, &["--network"], &fetch);
    assert!(text(&on).contains("status=200"), "{}", text(&on));
}

#[test]
fn calls_keep_their_own_loopback_and_a_port_is_free_again_in_the_next() {
    // The namespace is the call's: the port a server held in one call is free in the next,
    // since the server ended with its call.
    let (_tmp, ws) = workspace();
    for _ in 0..2 {
        let out = sandboxed(&ws, &[], &serve_and_fetch(18432));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("status=200"),
            "{}",
            text(&out)
        );
    }
}
