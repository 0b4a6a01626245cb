//! Permission rules: `allow`, `ask` and `deny` lists of `tool(pattern)` rules from the user's
//! config (and a trusted workspace's), and the one decision they give for a tool call. Deny
//! beats ask beats allow. Pure: it reads no file and knows no tool; the agent asks it about
//! each call and the file tools about each path they would show.
//!
//! A rule is `name` (a tool-name glob, e.g. `mcp_github__*`: the whole tool) or
//! `name(pattern)` for `bash` (a glob over each simple command's text) and the file tools
//! (a path glob relative to the workspace), and `fetch(domain:HOST)` for web pages (a glob
//! over the host name: `domain:docs.rs` is that host only, `domain:*.docs.rs` its
//! subdomains). `read` rules cover every tool that shows files (`read`, `list`, `search`);
//! `write` rules cover `write` and `edit`.

mod glob;
pub mod shell;

use std::fmt;

use crate::chat::Builtin;

/// What a rule does to the calls it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Action {
    Allow,
    Ask,
    Deny,
}

impl Action {
    /// The config list this action's rules come from.
    pub(crate) fn list(self) -> &'static str {
        match self {
            Action::Allow => "allow",
            Action::Ask => "ask",
            Action::Deny => "deny",
        }
    }
}

/// One parsed rule, with where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub(crate) action: Action,
    /// The rule as written, e.g. `bash(git status*)`.
    pub text: String,
    /// Where it came from, as shown to the user (a config file's path).
    pub(crate) origin: String,
    tool: String,
    /// The built-in tool `tool` names, if it names one: the rule's family (`read`, `write`)
    /// and whether it may take a pattern follow from it.
    builtin: Option<Builtin>,
    pattern: Option<String>,
}

/// Why a rule could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleError {
    pub(crate) rule: String,
    pub(crate) reason: &'static str,
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rule `{}`: {}",
            crate::sanitize::visible(&self.rule),
            self.reason
        )
    }
}

/// The tools whose rules may carry a pattern: the shell, the file tools and `fetch`.
const PATTERNED: [Builtin; 5] = [
    Builtin::Bash,
    Builtin::Read,
    Builtin::Write,
    Builtin::Edit,
    Builtin::Fetch,
];

/// What starts the pattern of a `fetch` rule: the host it names follows.
const DOMAIN: &str = "domain:";

impl Rule {
    /// Parses `name` or `name(pattern)`.
    pub fn parse(text: &str, action: Action, origin: &str) -> Result<Rule, RuleError> {
        let error = |reason| RuleError {
            rule: text.to_string(),
            reason,
        };
        let trimmed = text.trim();
        let (tool, pattern) = match trimmed.split_once('(') {
            None => (trimmed, None),
            Some((tool, rest)) => {
                let pattern = rest
                    .strip_suffix(')')
                    .ok_or_else(|| error("a pattern must end with `)`"))?;
                if pattern.trim().is_empty() {
                    return Err(error("the pattern between the parentheses is empty"));
                }
                (tool, Some(pattern.to_string()))
            }
        };
        if tool.is_empty() {
            return Err(error("it names no tool"));
        }
        if !tool
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '*' | '?'))
        {
            return Err(error(
                "a tool name may hold only letters, digits, `_`, `-`, `.`, `*` and `?`",
            ));
        }
        let builtin = Builtin::of(tool);
        if pattern.is_some() && !builtin.is_some_and(|b| PATTERNED.contains(&b)) {
            return Err(error(
                "only bash, read, write, edit and fetch rules take a pattern; other tools are \
                 named whole (a tool-name glob such as `mcp_github__*` is fine)",
            ));
        }
        if builtin == Some(Builtin::Fetch)
            && pattern
                .as_deref()
                .is_some_and(|p| p.strip_prefix(DOMAIN).is_none_or(|h| h.trim().is_empty()))
        {
            return Err(error(
                "a fetch rule names a host: `fetch(domain:docs.rs)` or `fetch(domain:*.docs.rs)`",
            ));
        }
        Ok(Rule {
            action,
            text: trimmed.to_string(),
            origin: origin.to_string(),
            tool: tool.to_string(),
            builtin,
            pattern,
        })
    }

    /// The host glob of a `fetch(domain:…)` rule.
    fn domain(&self) -> Option<&str> {
        (self.builtin == Some(Builtin::Fetch))
            .then(|| self.pattern.as_deref()?.strip_prefix(DOMAIN))
            .flatten()
            .map(str::trim)
    }

    /// Whether the rule speaks about calls of `tool` at all.
    fn covers_tool(&self, tool: &str) -> bool {
        let called = Builtin::of(tool);
        match self.builtin {
            Some(Builtin::Read) => matches!(
                called,
                Some(Builtin::Read | Builtin::List | Builtin::Search | Builtin::Find)
            ),
            Some(Builtin::Write) => matches!(called, Some(Builtin::Write | Builtin::Edit)),
            _ => glob::text(&self.tool, tool),
        }
    }
}

/// What the rules say about one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict<'a> {
    /// No rule matches: the usual approval applies.
    None,
    /// Every part is allowed: runs without asking (protected paths still ask).
    Allow,
    /// Asked every time, even after "always" and under `--yes`.
    Ask(&'a Rule),
    /// Refused without asking.
    Deny(&'a Rule),
    /// A `bash` line the splitter cannot read with certainty, while deny or ask rules are in
    /// force for `bash`: asked every time (even under `--yes`), since it may hide what they
    /// cover. The reason is what the splitter could not read.
    Unread(&'static str),
}

/// What a call touches, as the rules see it.
#[derive(Debug, Clone, Copy)]
pub enum Target<'a> {
    /// A `bash` command line.
    Command(&'a str),
    /// A file tool's path, relative to the workspace with `/` separators; `None` when it lies
    /// outside (then only rules without a pattern match).
    Path(Option<&'a str>),
    /// A `fetch` call's host name or address (lowercase, an IPv6 address without brackets):
    /// `fetch(domain:…)` rules match it.
    Domain(&'a str),
    /// Any other call: only rules without a pattern match.
    Call,
}

/// The rules in force, in the order they were read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rules {
    rules: Vec<Rule>,
}

impl Rules {
    pub fn new(rules: Vec<Rule>) -> Self {
        Self { rules }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Adds a rule after the others (the session's "always" answers grow so).
    pub(crate) fn push(&mut self, rule: Rule) {
        if !self.rules.contains(&rule) {
            self.rules.push(rule);
        }
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Rule> {
        self.rules.iter()
    }

    /// The verdict for a call of `tool` on `target`. `protected` says whether a file a command
    /// writes through a redirection is a protected path (such a command is never allowed
    /// without asking).
    pub fn check(
        &self,
        tool: &str,
        target: Target<'_>,
        protected: &dyn Fn(&str) -> bool,
    ) -> Verdict<'_> {
        let rules: Vec<&Rule> = self.rules.iter().filter(|r| r.covers_tool(tool)).collect();
        if rules.is_empty() {
            return Verdict::None;
        }
        match target {
            Target::Command(line) => command_verdict(&rules, line, protected),
            Target::Path(path) => {
                let hit = |r: &&Rule| match (&r.pattern, path) {
                    (None, _) => true,
                    (Some(p), Some(path)) => glob::path(p, path),
                    (Some(_), None) => false,
                };
                strongest(rules.iter().copied().filter(|r| hit(r)))
            }
            Target::Domain(host) => strongest(rules.iter().copied().filter(|r| match r.domain() {
                None => r.pattern.is_none(),
                Some(pattern) => glob::text(pattern, host),
            })),
            Target::Call => strongest(rules.iter().copied().filter(|r| r.pattern.is_none())),
        }
    }

    /// Whether an allow rule names `host` itself (`fetch(domain:127.0.0.1)`, not a bare
    /// `fetch` nor `domain:*`) and no deny rule covers it: what lets `fetch` reach a private,
    /// loopback or link-local address.
    pub fn names_host(&self, host: &str) -> bool {
        let covers = |r: &&Rule| {
            r.covers_tool(Builtin::Fetch.name())
                && r.domain()
                    .is_some_and(|p| !p.trim_matches('*').is_empty() && glob::text(p, host))
        };
        let denied = self.rules.iter().any(|r| {
            r.action == Action::Deny
                && r.covers_tool(Builtin::Fetch.name())
                && (r.pattern.is_none() || covers(&r))
        });
        !denied
            && self
                .rules
                .iter()
                .filter(covers)
                .any(|r| r.action == Action::Allow)
    }

    /// Whether any `read(…)` rule denies paths.
    pub(crate) fn denies_reads(&self) -> bool {
        self.rules.iter().any(|r| {
            r.action == Action::Deny && r.builtin == Some(Builtin::Read) && r.pattern.is_some()
        })
    }

    /// The deny rule that keeps a tool that shows files (`read`, `list`, `search`) from
    /// showing `path` (workspace-relative), if one does.
    pub fn read_denied(&self, path: &str) -> Option<&Rule> {
        self.rules.iter().find(|r| {
            r.action == Action::Deny
                && r.builtin == Some(Builtin::Read)
                && r.pattern.as_deref().is_some_and(|p| glob::path(p, path))
        })
    }
}

/// Deny beats ask beats allow among the rules that match.
fn strongest<'a>(matching: impl Iterator<Item = &'a Rule>) -> Verdict<'a> {
    match matching.max_by_key(|r| r.action) {
        None => Verdict::None,
        Some(r) if r.action == Action::Deny => Verdict::Deny(r),
        Some(r) if r.action == Action::Ask => Verdict::Ask(r),
        Some(_) => Verdict::Allow,
    }
}

/// A command line: denied or asked when any of its simple commands is; allowed only when
/// every one is allowed and nothing makes it opaque or writes a protected path.
fn command_verdict<'a>(
    rules: &[&'a Rule],
    line: &str,
    protected: &dyn Fn(&str) -> bool,
) -> Verdict<'a> {
    let script = shell::split(line);
    let matches = |r: &Rule, text: &str| r.pattern.as_deref().is_none_or(|p| glob::text(p, text));
    let against = |action: Action| {
        rules.iter().copied().find(|r| {
            r.action == action
                && (matches(r, line.trim())
                    || script
                        .commands
                        .iter()
                        .any(|c| matches(r, &c.text) || matches(r, &c.bare)))
        })
    };
    if let Some(rule) = against(Action::Deny) {
        return Verdict::Deny(rule);
    }
    if let Some(rule) = against(Action::Ask) {
        return Verdict::Ask(rule);
    }
    if let Some(reason) = script.unknown
        && rules.iter().any(|r| r.action != Action::Allow)
    {
        return Verdict::Unread(reason);
    }
    let allowed = script.opaque.is_none()
        && script.unknown.is_none()
        && !script.commands.is_empty()
        && !script.writes.iter().any(|w| protected(w))
        && script.commands.iter().all(|c| {
            rules
                .iter()
                .any(|r| r.action == Action::Allow && matches(r, &c.text))
        });
    if allowed {
        Verdict::Allow
    } else {
        Verdict::None
    }
}

/// The rule "always" may save for a `fetch` of `host`: that host only.
pub fn suggest_domain(host: &str) -> Option<String> {
    let ok = !host.is_empty()
        && !host.contains(['(', ')', '*', '?', '\n', ' '])
        && host.chars().all(|c| c.is_ascii_graphic());
    ok.then(|| format!("fetch({DOMAIN}{host})"))
}

/// The rule "always" may save for a call of `tool`: for `bash`, the first simple command's
/// program and its first argument unless that is an option (`cargo test --lib` →
/// `bash(cargo test*)`); for any other tool, the tool. `None` when no safe rule can be
/// written (an empty command, or words a rule cannot hold).
pub fn suggest(tool: &str, command: Option<&str>) -> Option<String> {
    if Builtin::of(tool) != Some(Builtin::Bash) {
        return Rule::parse(tool, Action::Allow, "").ok().map(|r| r.text);
    }
    let script = shell::split(command?);
    if script.unknown.is_some() {
        return None;
    }
    let first = script.commands.first()?;
    let mut words = first.text.split(' ');
    let program = words.next().filter(|w| !w.is_empty())?;
    let prefix = match words.next() {
        Some(arg) if !arg.starts_with('-') && !arg.is_empty() => format!("{program} {arg}"),
        _ => program.to_string(),
    };
    if prefix.contains(['(', ')', '*', '?', '\n']) {
        return None;
    }
    Some(format!("bash({prefix}*)"))
}
