//! The `minicode` binary: parse arguments, run, exit. The only place that exits.

use std::io::Write;

fn main() -> std::process::ExitCode {
    // `--version` alone is what scripts and health checks run: it is answered before clap
    // builds its parser (the whole command tree), so it costs little more than starting a
    // process. The text is what clap prints for it.
    let mut argv = std::env::args_os().skip(1);
    // A `bash` command's supervisor: minicode started itself again for it (no parsing, no
    // configuration, no output of its own).
    if let (Some(flag), Some(_tag), Some(launch), Some(command), None) = (
        argv.next(),
        argv.next(),
        argv.next(),
        argv.next(),
        argv.next(),
    ) && flag == minicode::cli::SUPERVISOR_ARG
    {
        return minicode::cli::supervise(&launch, &command);
    }
    let mut argv = std::env::args_os().skip(1);
    if let (Some(flag), None) = (argv.next(), argv.next())
        && (flag == "--version" || flag == "-V")
    {
        // A reader that went away (`| true`) is not an error: nothing to report.
        let _ = writeln!(std::io::stdout(), "minicode {}", env!("CARGO_PKG_VERSION"));
        return std::process::ExitCode::SUCCESS;
    }
    let args = match minicode::cli::parse() {
        Ok(args) => args,
        Err(e) => {
            // --help and --version are not errors; everything else is a usage error (exit 2).
            let _ = e.print();
            return if e.use_stderr() {
                std::process::ExitCode::from(minicode::cli::EXIT_USAGE)
            } else {
                std::process::ExitCode::SUCCESS
            };
        }
    };
    minicode::cli::run(args)
}
