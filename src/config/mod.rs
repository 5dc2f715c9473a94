//! Router configuration in iproute2 syntax: one command per line, `#` comments.
//!
//! The parser turns a whole file into a [`Config`] or rejects it with the first [`ConfigError`]
//! (line number, offending token, reason). Nothing is half-applied.

mod model;
mod parse;

pub use model::*;
pub use parse::{parse, parse_with_stdin};

/// A configuration error: where, which token, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// 1-based line number (0 when the error is about the file as a whole).
    pub line: usize,
    /// The offending token (may be empty when a token is missing).
    pub token: String,
    /// What is wrong, and what would be valid.
    pub reason: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.token.is_empty() {
            write!(f, "line {}: {}", self.line, self.reason)
        } else {
            write!(f, "line {}: '{}': {}", self.line, self.token, self.reason)
        }
    }
}

impl std::error::Error for ConfigError {}
