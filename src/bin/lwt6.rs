//! The `lwt6` command line.
use clap::Parser;
use lwt6::cli::stdio;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;

fn main() -> ExitCode {
    // Large tables in mappings of their own, so that a router gives back what a deleted batch freed.
    lwt6::io::heap::map_large_blocks();
    let cli = match lwt6::cli::Cli::try_parse() {
        Ok(c) => c,
        // --help, --version and usage errors: printed as clap prints them, but a lost write is an error too.
        Err(e) => {
            let code = u8::try_from(e.exit_code()).unwrap_or(1);
            // Styled on a terminal only, as clap prints it.
            let tty = if e.use_stderr() {
                std::io::stderr().is_terminal()
            } else {
                std::io::stdout().is_terminal()
            };
            let text = if tty {
                e.render().ansi().to_string()
            } else {
                e.render().to_string()
            };
            let written = if e.use_stderr() {
                let mut o = std::io::stderr().lock();
                o.write_all(text.as_bytes()).and_then(|()| o.flush())
            } else {
                let mut o = std::io::stdout().lock();
                o.write_all(text.as_bytes()).and_then(|()| o.flush())
            };
            return match written {
                Ok(()) => ExitCode::from(code),
                Err(w) if w.kind() == std::io::ErrorKind::BrokenPipe => {
                    ExitCode::from(stdio::EXIT_PIPE)
                }
                Err(w) => {
                    let on = if e.use_stderr() {
                        "standard error"
                    } else {
                        "standard output"
                    };
                    stdio::warn(&format!(
                        "{on}: {w}: lost the text above (help, version or usage)"
                    ));
                    ExitCode::from(code.max(1))
                }
            };
        }
    };
    match lwt6::cli::run(cli).and_then(|()| stdio::flush_stdout()) {
        Ok(()) if stdio::stderr_lost() => ExitCode::from(stdio::EXIT_STDERR_LOST),
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            if !f.message.is_empty() {
                stdio::warn(&f.message);
            }
            ExitCode::from(f.code)
        }
    }
}
