//! The two kinds of glob a permission rule uses: over plain text (a tool name, a command's
//! text: `*` matches anything, spaces and `/` included) and over a workspace-relative path
//! (`*` and `?` stay inside one folder name, `**` spans folders). Pure functions of strings.

/// Whether `text` matches `pattern`, where `*` matches any run of characters and `?` one.
pub(crate) fn text(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    wildcard(&p, &t)
}

/// Whether the workspace-relative `path` (folders separated by `/`) matches `pattern`, or lies
/// inside a folder that does: a rule on a folder covers what it holds. A pattern without a
/// `/` matches a name at any depth (`.env*` covers `config/.env.local`), as in `.gitignore`;
/// one with a `/` is anchored at the workspace root (a leading `/` or `./` is dropped).
pub(crate) fn path(pattern: &str, path: &str) -> bool {
    let pattern = pattern.trim_start_matches("./").trim_start_matches('/');
    let mut pats: Vec<&str> = pattern.split('/').filter(|s| !s.is_empty()).collect();
    if !pattern.contains('/') {
        pats.insert(0, "**");
    }
    let parts: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    (1..=parts.len()).any(|end| segments(&pats, &parts[..end]))
}

/// Pattern segments against path segments, `**` matching zero or more whole segments.
fn segments(pats: &[&str], parts: &[&str]) -> bool {
    match pats.split_first() {
        None => parts.is_empty(),
        Some((&"**", rest)) => (0..=parts.len()).any(|skip| segments(rest, &parts[skip..])),
        Some((first, rest)) => match parts.split_first() {
            Some((part, others)) => {
                let p: Vec<char> = first.chars().collect();
                let t: Vec<char> = part.chars().collect();
                wildcard(&p, &t) && segments(rest, others)
            }
            None => false,
        },
    }
}

/// The classic wildcard match with one backtracking point: linear in practice, never
/// exponential, whatever a rule or a command looks like. Inside one path segment there is no
/// `/` to cross, so the same match serves both kinds of glob.
fn wildcard(p: &[char], t: &[char]) -> bool {
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

#[cfg(test)]
mod tests {
    use super::{path, text};

    #[test]
    fn a_text_star_crosses_spaces_and_slashes() {
        assert!(text("git *", "git push origin main"));
        assert!(text("cat */x", "cat a/b/x"));
        assert!(text("ls?", "ls1"));
        assert!(!text("ls?", "ls"));
        assert!(!text("git *", "gitk"));
    }

    #[test]
    fn many_stars_do_not_backtrack_exponentially() {
        let pattern = "*a*a*a*a*a*a*a*a*a*a*b";
        let subject = "a".repeat(5000);
        assert!(!text(pattern, &subject));
    }

    #[test]
    fn a_path_pattern_without_a_slash_matches_a_name_at_any_depth() {
        assert!(path(".env*", "config/.env.local"));
        assert!(path("*.pem", "keys/deep/server.pem"));
        assert!(!path("*.pem", "keys/pem.txt"));
    }

    #[test]
    fn a_path_pattern_with_a_slash_is_anchored_and_covers_what_a_folder_holds() {
        assert!(path("/secrets", "secrets/a/b.txt"));
        assert!(path("./src/*.rs", "src/main.rs"));
        assert!(!path("src/*.rs", "lib/src/main.rs"));
        assert!(
            !path("src/*.rs", "src/a/main.rs"),
            "* stays inside one folder"
        );
        assert!(path("src/**/main.rs", "src/a/b/main.rs"));
        assert!(
            path("src/**/main.rs", "src/main.rs"),
            "** may match no folder"
        );
    }
}
