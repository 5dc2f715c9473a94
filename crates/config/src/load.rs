//! Configuration files: read line by line (never whole: a table of a million routes is not held as text beside
//! the configuration it becomes) and applied with a [`Builder`], with the secret of an `sr hmac set KEYID ALGO`
//! line without `secret` taken from standard input, or refused.

use crate::{Builder, Config, ConfigError};
use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};

/// Where the secret of an `sr hmac set KEYID ALGO` line without `secret` comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StdinSecret {
    /// The first line of standard input, read (once) when the file has such a line and standard input is not a
    /// terminal; from a terminal nothing is read, and the line is then an error of the configuration.
    Read,
    /// Nowhere: a file with such a line is refused ([`LoadError::StdinSecretRefused`]). For a reload, standard
    /// input having been read, and consumed, when the file was first loaded.
    Refuse,
    /// Nowhere, because standard input carries something else (`lwt6 pcap ... -`: the capture): a file with such
    /// a line is refused ([`LoadError::StdinSecretTaken`]).
    Taken,
}

/// Why a configuration file was not loaded. Each message names the file (and the line) it is about.
#[derive(Debug)]
pub enum LoadError {
    /// The file could not be opened or read.
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        error: std::io::Error,
    },
    /// A line is not UTF-8.
    NotUtf8 {
        /// The file.
        path: PathBuf,
        /// The line (1-based).
        line: usize,
        /// The column of the first invalid byte (1-based).
        column: usize,
    },
    /// Standard input, which holds the HMAC secret, could not be read.
    StdinSecret(std::io::Error),
    /// A line wants the HMAC secret from standard input and the loader was told not to read it
    /// ([`StdinSecret::Refuse`]).
    StdinSecretRefused {
        /// The line (1-based).
        line: usize,
    },
    /// A line wants the HMAC secret from standard input, which carries something else ([`StdinSecret::Taken`]).
    StdinSecretTaken {
        /// The line (1-based).
        line: usize,
    },
    /// A line is not a valid configuration line (the error names line, token and reason).
    Config {
        /// The file.
        path: PathBuf,
        /// What is wrong, and where.
        error: ConfigError,
    },
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Io { path, error } => write!(f, "{}: {error}", path.display()),
            LoadError::NotUtf8 { path, line, column } => write!(
                f,
                "{}: line {line}: not UTF-8 (invalid byte at column {column})",
                path.display()
            ),
            LoadError::StdinSecret(e) => write!(f, "reading the HMAC secret from stdin: {e}"),
            LoadError::StdinSecretRefused { line } => write!(
                f,
                "line {line}: the HMAC secret comes from standard input, which a reload cannot read again: restart the router"
            ),
            LoadError::StdinSecretTaken { line } => write!(
                f,
                "line {line}: the HMAC secret would come from standard input, which carries the capture: put the secret in the file (secret S)"
            ),
            LoadError::Config { path, error } => write!(f, "{}: {error}", path.display()),
        }
    }
}

impl std::error::Error for LoadError {}

/// Whether a line (comment cut) is `sr hmac set KEYID ALGO` without `secret`: its secret is standard input's.
fn wants_stdin_secret(line: &str) -> bool {
    let line = line.split('#').next().unwrap_or("");
    line.contains("hmac set") && !line.split_whitespace().any(|t| t == "secret")
}

/// Calls `f` with each line of `path` and its number (1-based), stopping at the first error.
fn for_each_line(
    path: &Path,
    f: &mut dyn FnMut(usize, &str) -> Result<(), LoadError>,
) -> Result<(), LoadError> {
    let at = |error| LoadError::Io {
        path: path.to_path_buf(),
        error,
    };
    let file = std::fs::File::open(path).map_err(at)?;
    // Lines end with LF, CR LF or a CR alone: numbered as an editor shows them.
    for (i, raw) in crate::lines::Reader::new(std::io::BufReader::new(file)).enumerate() {
        let raw = raw.map_err(at)?;
        let line = std::str::from_utf8(&raw).map_err(|e| LoadError::NotUtf8 {
            path: path.to_path_buf(),
            line: i + 1,
            column: e.valid_up_to() + 1,
        })?;
        f(i + 1, line)?;
    }
    Ok(())
}

/// Reads and parses the configuration file at `path`, line by line (the file is read twice: is a secret from
/// standard input needed, then the lines themselves). `stdin` says what happens to an `sr hmac set` line without
/// `secret`.
pub fn load_file(path: &Path, stdin: StdinSecret) -> Result<Config, LoadError> {
    let mut wanted_at = None;
    for_each_line(path, &mut |n, l| {
        if wanted_at.is_none() && wants_stdin_secret(l) {
            wanted_at = Some(n);
        }
        Ok(())
    })?;
    let mut secret = None;
    match (wanted_at, stdin) {
        (Some(line), StdinSecret::Refuse) => return Err(LoadError::StdinSecretRefused { line }),
        (Some(line), StdinSecret::Taken) => return Err(LoadError::StdinSecretTaken { line }),
        (Some(_), StdinSecret::Read) if !std::io::stdin().is_terminal() => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .map_err(LoadError::StdinSecret)?;
            secret = Some(s.lines().next().unwrap_or("").to_string());
        }
        _ => {}
    }
    let mut b = Builder::new();
    if let Some(s) = &secret {
        b = b.with_stdin_secret(s);
    }
    let located = |error| LoadError::Config {
        path: path.to_path_buf(),
        error,
    };
    for_each_line(path, &mut |n, l| b.line(n, l).map_err(located))?;
    b.finish().map_err(located)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdin_secret_lines() {
        assert!(wants_stdin_secret("sr hmac set 1 sha256"));
        assert!(!wants_stdin_secret("sr hmac set 1 sha256 secret s"));
        assert!(!wants_stdin_secret("# sr hmac set 1 sha256"));
        assert!(!wants_stdin_secret("route add fd00::/64 dev r1"));
    }
}
