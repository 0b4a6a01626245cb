//! The one sanitiser every frontend uses: controls, escape sequences and characters that hide
//! or reorder text never come through; emoji sequences and scripts that need a joiner do; text
//! that arrives in pieces is exactly as safe as the whole; stdout that is not a terminal keeps
//! the model's bytes.

use minicode::sanitize::{Stream, for_clipboard, json_escaped, sanitize, visible};

/// Nothing in the result can start an escape sequence or hide text.
fn assert_inert(text: &str) {
    for c in text.chars() {
        let n = c as u32;
        assert!(
            c == '\n' || !(n < 0x20 || (0x7f..=0x9f).contains(&n)),
            "control {c:?} in {text:?}"
        );
        assert!(
            !matches!(n, 0x200b | 0x200e | 0x200f | 0x202a..=0x202e | 0x2066..=0x2069 | 0x061c | 0xfeff),
            "invisible {c:?} in {text:?}"
        );
    }
}

#[test]
fn escape_sequences_csi_osc_and_c1_controls_are_made_inert() {
    let hostile = "clear\x1b[2J title\x1b]0;pwned\x07 clip\x1b]52;c;ZXZpbA==\x1b\\ \
                   csi8\u{9b}31m dcs\u{90}q\u{9c} del\x7f bell\x07 back\x08";
    let clean = sanitize(hostile);
    assert_inert(&clean);
    assert!(clean.contains("clear␛[2J"), "{clean}");
    assert!(clean.contains("title␛]0;pwned\u{fffd}"), "{clean}");
    assert!(clean.contains("csi8\u{fffd}31m"), "{clean}");
}

#[test]
fn carriage_returns_are_dropped_and_tabs_become_spaces() {
    assert_eq!(sanitize("a\tb\r\nsafe\rHIDDEN"), "a    b\nsafeHIDDEN");
}

#[test]
fn bidi_controls_and_zero_width_characters_are_shown_as_replacements() {
    for c in [
        '\u{202a}',
        '\u{202b}',
        '\u{202c}',
        '\u{202d}',
        '\u{202e}',
        '\u{2066}',
        '\u{2067}',
        '\u{2068}',
        '\u{2069}',
        '\u{200e}',
        '\u{200f}',
        '\u{061c}',
        '\u{200b}',
        '\u{2060}',
        '\u{feff}',
        '\u{180e}',
        '\u{3164}',
        '\u{e0001}',
    ] {
        let clean = sanitize(&format!("rm -rf /tmp/x{c}y"));
        assert_eq!(clean, "rm -rf /tmp/x\u{fffd}y", "U+{:04X}", c as u32);
    }
    // The Trojan Source shape: an RLO that makes a comment look like code.
    let trojan = "if access_level != \"user\u{202e} \u{2066}// Check if admin\u{2069} \u{2066}\" {";
    assert_inert(&sanitize(trojan));
    // Line and paragraph separators are line breaks.
    assert_eq!(sanitize("a\u{2028}b\u{2029}c"), "a\nb\nc");
}

#[test]
fn emoji_sequences_and_scripts_keep_their_joiners_and_selectors() {
    for text in [
        "👩\u{200d}💻 works",                                       // ZWJ sequence
        "👨\u{200d}👩\u{200d}👧",                                   // family
        "🏳\u{fe0f}\u{200d}🌈",                                      // selector then joiner
        "👩🏽\u{200d}🔬",                                             // skin tone then joiner
        "❤\u{fe0f} 1\u{fe0f}\u{20e3}",                              // selectors, keycap
        "🏴\u{e0067}\u{e0062}\u{e0073}\u{e0063}\u{e0074}\u{e007f}", // flag of Scotland
        "می\u{200c}خواهم",                                          // Persian ZWNJ
        "क्\u{200d}ष",                                               // Devanagari ZWJ
        "plain ünïcode 中文",
    ] {
        assert_eq!(sanitize(text), text);
    }
}

#[test]
fn joiners_selectors_and_tags_that_could_hide_text_are_replaced() {
    // A joiner inside an ASCII word makes two different strings look the same.
    assert_eq!(sanitize("pass\u{200d}wd"), "pass\u{fffd}wd");
    assert_eq!(sanitize("\u{200c}lead"), "\u{fffd}lead");
    // One selector after a character is presentation; a run of them smuggles bytes.
    assert_eq!(
        sanitize("a\u{fe0f}\u{fe01}\u{e0100}b"),
        "a\u{fe0f}\u{fffd}\u{fffd}b"
    );
    // Tag characters spell hidden ASCII ("hi") unless they form a flag after 🏴.
    assert_eq!(sanitize("x\u{e0068}\u{e0069}"), "x\u{fffd}\u{fffd}");
    assert_eq!(
        sanitize("🏴\u{e0067}\u{e007f}\u{e0067}"),
        "🏴\u{e0067}\u{e007f}\u{fffd}"
    );
}

#[test]
fn streamed_pieces_are_sanitised_exactly_like_the_whole_text() {
    let texts = [
        "red\x1b[31mtext\x1b]52;c;ZXZpbA==\x07 end",
        "👩\u{200d}💻 and 🏴\u{e0067}\u{e0062}\u{e007f} and pass\u{200d}wd",
        "\u{9b}2J\r\n\t\u{202e}abc\u{2069}❤\u{fe0f}\u{fe0f}",
        "ESC at the end\x1b",
    ];
    for text in texts {
        let whole = sanitize(text);
        let chars: Vec<char> = text.chars().collect();
        // Every split into two pieces (an ESC at the end of the first piece included)...
        for i in 0..=chars.len() {
            let (a, b): (String, String) =
                (chars[..i].iter().collect(), chars[i..].iter().collect());
            let mut stream = Stream::default();
            let first = stream.push(&a);
            assert_inert(&first);
            let joined = first + &stream.push(&b);
            assert_eq!(joined, whole, "split at {i} of {text:?}");
        }
        // ...and one character at a time.
        let mut stream = Stream::default();
        let pieces: String = chars.iter().map(|c| stream.push(&c.to_string())).collect();
        assert_eq!(pieces, whole, "{text:?}");
    }
}

#[test]
fn clipboard_text_keeps_tabs_and_loses_controls() {
    let text = "all:\n\tcc x.c\r\n\x1b[201~rm -rf ~\r\u{202e}";
    assert_eq!(
        for_clipboard(text),
        "all:\n\tcc x.c\n␛[201~rm -rf ~\u{fffd}"
    );
}

#[test]
fn json_for_a_terminal_escapes_what_could_act_on_it_and_means_the_same() {
    let value = serde_json::json!({"text": "a\u{9b}2J\u{7f}\u{202e}b👩\u{200d}💻\u{e0068}"});
    let line = serde_json::to_string(&value).unwrap();
    let escaped = json_escaped(&line);
    assert!(
        !escaped.contains('\u{9b}') && !escaped.contains('\u{202e}'),
        "{escaped}"
    );
    assert!(
        escaped.contains("\\u009b") && escaped.contains("\\u202e"),
        "{escaped}"
    );
    assert!(
        escaped.contains("\\udb40\\udc68"),
        "a tag as a surrogate pair: {escaped}"
    );
    let back: serde_json::Value = serde_json::from_str(&escaped).unwrap();
    assert_eq!(back, value);
}

#[test]
fn names_from_files_show_hidden_characters_as_escapes() {
    assert_eq!(visible("evil\u{202e}txt.exe"), "evil\\u{202e}txt.exe");
    assert_eq!(visible("a\x1b[2Jb"), "a\\u{1b}[2Jb");
    assert_eq!(visible("plain ünïcode"), "plain ünïcode");
}

#[test]
fn piped_stdout_keeps_the_models_bytes_exactly() {
    use crate::support::mock_openai::{MockServer, text_reply};
    use std::os::unix::process::CommandExt;
    let reply = "raw \x1b[1mbold\x1b[0m \u{9b}31m \u{202e}rtl\r\n\tend";
    let server = MockServer::start_in_thread(vec![text_reply(reply, 3)]);
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_minicode"));
    cmd.current_dir(dir.path())
        .args(["--base-url", &server.base_url(), "--model", "m", "go"])
        .stdin(std::process::Stdio::null());
    crate::support::binary::isolate(&mut cmd, dir.path());
    // SAFETY: setsid only detaches the child from the test's terminal.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    // Scripts get exactly what the model said; only the terminal gets the inert form.
    assert_eq!(String::from_utf8(out.stdout).unwrap(), format!("{reply}\n"));
    assert_inert(&String::from_utf8_lossy(&out.stderr));
}
