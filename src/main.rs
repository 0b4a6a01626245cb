//! The `minicode` binary: parse arguments, run, exit. The only place that exits.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let args = match minicode::cli::Args::try_parse() {
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
