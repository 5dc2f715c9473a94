//! The `lwt6` command line.
use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = lwt6::cli::Cli::parse();
    match lwt6::cli::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("lwt6: {}", f.message);
            ExitCode::from(f.code)
        }
    }
}
