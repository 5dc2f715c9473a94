//! The router's error: a message for people.

/// Why the router did not start, stopped in error, or why a control request failed: a message that names what
/// failed (the file and line, the interface, the socket) and, where there is one, the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    message: String,
}

impl Error {
    /// An error saying `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Error {
            message: message.into(),
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<lwt6_config::LoadError> for Error {
    fn from(e: lwt6_config::LoadError) -> Self {
        Error::new(e.to_string())
    }
}

/// An [`Error`] saying `message` (shorthand for the many places that build one).
pub(crate) fn fail(message: impl Into<String>) -> Error {
    Error::new(message)
}
