//! Hand-picked cases for the splitter, each one a way the shell's grammar could hide a
//! command; `tests/it/shell_oracle.rs` checks thousands of generated lines against bash.

use super::split;

fn programs(line: &str) -> Vec<String> {
    split(line)
        .commands
        .into_iter()
        .map(|c| c.program)
        .collect()
}

fn known(line: &str) -> Vec<String> {
    let script = split(line);
    assert_eq!(script.unknown, None, "{line:?}");
    script.commands.into_iter().map(|c| c.program).collect()
}

fn unknown(line: &str) {
    assert!(split(line).unknown.is_some(), "{line:?} should be unknown");
}

#[test]
fn ansi_c_quotes_end_where_bash_ends_them() {
    assert_eq!(known("echo $'\\'' ; touch x #'"), ["echo", "touch"]);
    assert_eq!(known("$'al\\tpha' x"), ["al\tpha"]);
    assert_eq!(known("echo $'a\\\\' ; rm x"), ["echo", "rm"]);
    // An escape whose value the splitter does not compute makes the command word unknown.
    unknown("$'\\x61lpha'");
    assert_eq!(known("echo $'\\x27' ; rm x"), ["echo", "rm"]);
}

#[test]
fn locale_quotes_read_like_double_quotes() {
    assert_eq!(known("$\"alpha\" x; beta"), ["alpha", "beta"]);
    assert_eq!(known("echo \"$'\" ; rm x"), ["echo", "rm"]);
}

#[test]
fn here_documents_hide_their_body_and_nothing_after_it() {
    let script = split("cat <<'EOF'\nrm -rf x; it's\nEOF\nbeta");
    assert_eq!(script.unknown, None);
    assert!(script.opaque.is_some());
    let programs: Vec<_> = script.commands.iter().map(|c| c.program.as_str()).collect();
    assert_eq!(programs, ["cat", "beta"]);
    assert_eq!(known("cat <<-E\n\tx\n\tE\nrm y"), ["cat", "rm"]);
    assert_eq!(known("cat <<A <<B\na\nA\nb\nB\nrm y"), ["cat", "rm"]);
    // An unquoted body whose line ends in a backslash joins the next one.
    assert_eq!(known("cat <<E\nx\\\nE\nE\nrm y"), ["cat", "rm"]);
    unknown("cat <<E\n$(rm x)\nE");
    unknown("cat <<E\n`rm x`\nE");
}

#[test]
fn arithmetic_is_not_mistaken_for_a_here_document() {
    assert_eq!(known("(( x << 2 ))\nrm y"), ["rm"]);
    assert_eq!(known("echo $(( 1 << 2 ))\nrm y"), ["echo", "rm"]);
    // Two subshells, not arithmetic.
    assert_eq!(programs("((alpha) ; (beta))"), ["alpha", "beta"]);
    assert_eq!(
        programs("echo $((alpha) ; (beta))"),
        ["alpha", "beta", "echo"]
    );
    unknown("echo $(( $(rm x) ))");
}

#[test]
fn substitutions_and_continuations_are_read_in_place() {
    assert_eq!(known("al\\\npha x"), ["alpha"]);
    assert_eq!(
        known("echo $(alpha ')' ; beta) gamma"),
        ["alpha", "beta", "echo"]
    );
    assert_eq!(known("echo `alpha \\`beta\\``"), ["beta", "alpha", "echo"]);
    assert_eq!(known("diff <(alpha) >(beta)"), ["alpha", "beta", "diff"]);
    assert_eq!(
        known("echo $(alpha # )\n)\nbeta"),
        ["alpha", "echo", "beta"]
    );
}

#[test]
fn words_that_expand_in_command_position_are_unknown() {
    unknown("$X -rf y");
    unknown("al{pha,} x");
    unknown("~/bin/tool");
    unknown("r* x");
    unknown("echo ${x:-'}'} ; rm y");
    assert_eq!(known("echo $X ${HOME} *.rs"), ["echo"]);
    assert_eq!(
        known("{ alpha; } && [ -f x ] && [[ -n y ]]"),
        ["alpha", "[", "[["]
    );
}

#[test]
fn keywords_assignments_and_descriptors_are_told_apart() {
    assert_eq!(known("X=1 Y=2 alpha"), ["alpha"]);
    assert_eq!(known("'X'=1 alpha"), ["X=1"]);
    assert_eq!(known("\\if alpha"), ["if"]);
    assert_eq!(known("time -p alpha"), ["alpha"]);
    // In a pipeline's later commands `time` is a program, not the keyword.
    assert_eq!(
        known("beta |& time -p alpha || time beta"),
        ["beta", "time", "beta"]
    );
    assert_eq!(known("{fd}>log alpha 2>&1"), ["alpha"]);
    assert_eq!(known("a[1]=x alpha"), ["alpha"]);
    assert_eq!(known("alpha\r"), ["alpha\r"]);
}

#[test]
fn builtins_that_run_commands_report_them() {
    assert_eq!(known("eval \"r\"\"m x\""), ["eval", "rm"]);
    assert_eq!(known("command -p alpha"), ["command", "alpha"]);
    assert_eq!(known("command -v alpha"), ["command"]);
    assert_eq!(known("exec -a name alpha"), ["exec", "alpha"]);
    assert_eq!(known("builtin eval 'rm x'"), ["builtin", "eval", "rm"]);
    unknown("eval $X");
    unknown("source ./script.sh");
    unknown(". ./script.sh");
    unknown("trap 'rm x' EXIT");
}

#[test]
fn redirections_are_collected_and_not_words() {
    let script = split("make 2>&1 > build.log >>'log 2' &> all <in");
    assert_eq!(script.commands[0].text, "make");
    assert_eq!(script.writes, ["build.log", "log 2", "all"]);
    assert_eq!(script.opaque, None);
}
