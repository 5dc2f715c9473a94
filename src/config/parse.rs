//! The line parser.

use super::{Config, ConfigError};

/// Parses a whole configuration file. `sr hmac set KEYID ALGO` without `secret S` is an error here
/// (there is no stdin to read); see [`parse_with_stdin`].
pub fn parse(text: &str) -> Result<Config, ConfigError> {
    parse_with_stdin(text, None)
}

/// Like [`parse`], but `sr hmac set KEYID ALGO` lines without `secret` take their secret from `stdin_secret`
/// (the first line of standard input, trailing newline removed), as `echo S | ip sr hmac set ...` does.
/// Only one such line may use it.
pub fn parse_with_stdin(text: &str, stdin_secret: Option<&str>) -> Result<Config, ConfigError> {
    todo!()
}
